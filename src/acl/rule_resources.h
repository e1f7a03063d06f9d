// The resources of Consul's ACL rules language: which names a policy's
// rules may use at the top level, whether each takes a label
// (`key "a/b" { ... }`) or a plain disposition (`operator = "read"`), and
// where the rules tenure enforces go in Rules. Those tenure does not serve
// (service, event, query, keyring, mesh, ...) are checked and dropped.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "acl/rules.h"

namespace tenure::acl {

struct ResourceInfo {
  std::string_view name;
  bool labeled;
  bool prefix;
  bool allows_list;                                // key and key_prefix only
  bool has_intentions;                             // service rules may also set `intentions`
  std::vector<LabeledRule> Rules::*labeled_rules;  // enforced labeled resources
  std::optional<Disposition> Rules::*single_rule;  // enforced unlabeled resources
};

// The resource called `name`, or nullptr.
const ResourceInfo* FindResource(std::string_view name);

// The error for a top-level name that is not a resource.
std::string UnknownResource(std::string_view name);

}  // namespace tenure::acl
