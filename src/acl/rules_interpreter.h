// From the tree of a policy's rules text (acl/rules_text.h) to the Rules
// tenure enforces: every top-level member a resource, every rule a block
// with a policy, checked as Consul checks them. The same tree from HCL or
// JSON gives the same Rules and the same errors.
#pragma once

#include <string_view>

#include "acl/rules.h"
#include "common/config_text.h"
#include "common/status.h"

namespace tenure::acl {

// `text` is what `top` was read from, for the lines and columns of errors.
Result<Rules> InterpretRules(std::string_view text, const ConfigValue& top);

}  // namespace tenure::acl
