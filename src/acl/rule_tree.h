// The rules of one labeled resource (keys, sessions, nodes or agents) in a
// radix tree, so a check walks the name once instead of every rule: the
// Authorizer's index. Each tree node holds at most one exact and one prefix
// rule for the label spelled by the path to it; rules added twice for the
// same label and kind are merged as Consul merges them (MergeDispositions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acl/rules.h"

namespace tenure::acl {

class RuleTree {
 public:
  RuleTree();

  // Adds a rule. Seal() must follow the last Add, before any lookup.
  void Add(std::string_view label, bool prefix, Disposition disposition);
  void Seal();

  // The rule that decides for `name`: the exact rule for it if there is one,
  // else the prefix rule with the longest label that `name` begins with
  // (a prefix rule "" matches every name); nullopt when no rule matches.
  std::optional<Disposition> Find(std::string_view name) const;

  // The prefix rule with the longest label that `name` begins with, exact
  // rules left out.
  std::optional<Disposition> LongestPrefixRule(std::string_view name) const;

  // Whether any rule, exact or prefix, whose label begins with `prefix`
  // grants less than write (read, list or deny).
  bool AnyLessThanWriteUnder(std::string_view prefix) const;
  // Whether any rule, exact or prefix, whose label begins with `prefix`
  // denies.
  bool AnyDenyUnder(std::string_view prefix) const;

  // Distinct (label, exact or prefix) rules held.
  std::size_t rule_count() const { return rule_count_; }

 private:
  struct Node {
    std::string edge;                     // the bytes from the parent to this node
    std::vector<std::uint32_t> children;  // by the first byte of their edge, ascending
    std::optional<Disposition> exact;
    std::optional<Disposition> prefix;
    bool less_than_write = false;  // this node or one below holds a rule below write
    bool deny = false;             // this node or one below holds a deny
  };

  // The child of `node` whose edge starts with `byte`, or nullptr.
  const Node* Child(const Node& node, char byte) const;
  // Whether `flag` is set on the node that `prefix` ends at or inside.
  bool AnyUnder(std::string_view prefix, bool Node::*flag) const;
  std::optional<std::size_t> ChildIndex(const Node& node, char byte) const;

  std::vector<Node> nodes_;  // nodes_[0] is the root: the empty label
  std::size_t rule_count_ = 0;
  bool sealed_ = false;
};

}  // namespace tenure::acl
