#include "acl/rule_tree.h"

#include <algorithm>
#include <utility>

#include "common/assert.h"

namespace tenure::acl {

namespace {

unsigned char Byte(char c) { return static_cast<unsigned char>(c); }

std::size_t CommonPrefixLength(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

RuleTree::RuleTree() : nodes_(1) {}

std::optional<std::size_t> RuleTree::ChildIndex(const Node& node, char byte) const {
  const auto it = std::lower_bound(
      node.children.begin(), node.children.end(), Byte(byte),
      [this](std::uint32_t child, unsigned char b) { return Byte(nodes_[child].edge[0]) < b; });
  if (it == node.children.end() || nodes_[*it].edge[0] != byte) return std::nullopt;
  return static_cast<std::size_t>(it - node.children.begin());
}

const RuleTree::Node* RuleTree::Child(const Node& node, char byte) const {
  const std::optional<std::size_t> slot = ChildIndex(node, byte);
  return slot.has_value() ? &nodes_[node.children[*slot]] : nullptr;
}

void RuleTree::Add(std::string_view label, bool prefix, Disposition disposition) {
  sealed_ = false;
  // Indexes only: nodes_ grows below, which moves its elements.
  std::uint32_t current = 0;
  std::size_t pos = 0;
  while (pos < label.size()) {
    const std::string_view rest = label.substr(pos);
    const std::optional<std::size_t> slot = ChildIndex(nodes_[current], rest[0]);
    if (!slot.has_value()) {  // a new leaf for the rest of the label
      const auto leaf = static_cast<std::uint32_t>(nodes_.size());
      nodes_.emplace_back();
      nodes_[leaf].edge = std::string(rest);
      auto& children = nodes_[current].children;
      const auto at = std::lower_bound(
          children.begin(), children.end(), Byte(rest[0]),
          [this](std::uint32_t child, unsigned char b) { return Byte(nodes_[child].edge[0]) < b; });
      children.insert(at, leaf);
      current = leaf;
      pos = label.size();
      break;
    }
    const std::uint32_t child = nodes_[current].children[*slot];
    const std::size_t common = CommonPrefixLength(nodes_[child].edge, rest);
    if (common < nodes_[child].edge.size()) {
      // Split the edge: current -> middle (the common part) -> child (the rest).
      const auto middle = static_cast<std::uint32_t>(nodes_.size());
      nodes_.emplace_back();
      nodes_[middle].edge = nodes_[child].edge.substr(0, common);
      nodes_[middle].children.push_back(child);
      nodes_[child].edge.erase(0, common);
      nodes_[current].children[*slot] = middle;  // same first byte: the order holds
      current = middle;
    } else {
      current = child;
    }
    pos += common;
  }
  std::optional<Disposition>& rule = prefix ? nodes_[current].prefix : nodes_[current].exact;
  if (rule.has_value()) {
    rule = MergeDispositions(*rule, disposition);
  } else {
    rule = disposition;
    ++rule_count_;
  }
}

void RuleTree::Seal() {
  // less_than_write bottom-up: a pre-order by an explicit stack (a long
  // chain of labels must not recurse), then the nodes in reverse.
  std::vector<std::uint32_t> order;
  order.reserve(nodes_.size());
  std::vector<std::uint32_t> stack = {0};
  while (!stack.empty()) {
    const std::uint32_t index = stack.back();
    stack.pop_back();
    order.push_back(index);
    for (const std::uint32_t child : nodes_[index].children) stack.push_back(child);
  }
  TENURE_ASSERT(order.size() == nodes_.size());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node& node = nodes_[*it];
    auto below = [](const std::optional<Disposition>& rule) {
      return rule.has_value() && *rule != Disposition::kWrite;
    };
    auto denies = [](const std::optional<Disposition>& rule) {
      return rule.has_value() && *rule == Disposition::kDeny;
    };
    node.less_than_write = below(node.exact) || below(node.prefix);
    node.deny = denies(node.exact) || denies(node.prefix);
    for (const std::uint32_t child : node.children) {
      node.less_than_write = node.less_than_write || nodes_[child].less_than_write;
      node.deny = node.deny || nodes_[child].deny;
    }
  }
  sealed_ = true;
}

std::optional<Disposition> RuleTree::Find(std::string_view name) const {
  TENURE_ASSERT(sealed_);
  const Node* node = &nodes_[0];
  std::size_t pos = 0;
  std::optional<Disposition> longest_prefix;
  for (;;) {
    if (pos == name.size() && node->exact.has_value()) return node->exact;
    if (node->prefix.has_value()) longest_prefix = node->prefix;
    if (pos == name.size()) return longest_prefix;
    const Node* child = Child(*node, name[pos]);
    if (child == nullptr || name.substr(pos).substr(0, child->edge.size()) != child->edge) {
      return longest_prefix;
    }
    node = child;
    pos += child->edge.size();
  }
}

std::optional<Disposition> RuleTree::LongestPrefixRule(std::string_view name) const {
  TENURE_ASSERT(sealed_);
  const Node* node = &nodes_[0];
  std::size_t pos = 0;
  std::optional<Disposition> longest_prefix;
  for (;;) {
    if (node->prefix.has_value()) longest_prefix = node->prefix;
    if (pos == name.size()) return longest_prefix;
    const Node* child = Child(*node, name[pos]);
    if (child == nullptr || name.substr(pos).substr(0, child->edge.size()) != child->edge) {
      return longest_prefix;
    }
    node = child;
    pos += child->edge.size();
  }
}

bool RuleTree::AnyLessThanWriteUnder(std::string_view prefix) const {
  return AnyUnder(prefix, &Node::less_than_write);
}

bool RuleTree::AnyDenyUnder(std::string_view prefix) const { return AnyUnder(prefix, &Node::deny); }

bool RuleTree::AnyUnder(std::string_view prefix, bool Node::*flag) const {
  TENURE_ASSERT(sealed_);
  const Node* node = &nodes_[0];
  std::size_t pos = 0;
  for (;;) {
    if (pos == prefix.size()) return node->*flag;
    const Node* child = Child(*node, prefix[pos]);
    if (child == nullptr) return false;
    const std::string_view rest = prefix.substr(pos);
    if (rest.size() < child->edge.size()) {
      // The prefix ends inside this edge: every label below starts with it, or none does.
      return child->edge.compare(0, rest.size(), rest) == 0 && child->*flag;
    }
    if (rest.substr(0, child->edge.size()) != child->edge) return false;
    node = child;
    pos += child->edge.size();
  }
}

}  // namespace tenure::acl
