// Consul's other config format, HCL, for what a config file of settings
// uses: `key = value`, blocks `name { ... }` (or `name = { ... }`), lists,
// quoted strings, numbers, true and false, and #, // and /* */ comments.
// Parsed into the JSON reader's tree (config_json.h), with lines, so one
// reader applies both formats. A block given twice at one level is one
// block (`acl { enabled = true }` then `acl { default_policy = "deny" }`);
// an attribute given twice is refused, as in JSON. Block labels
// (`service "web" { }`) and heredocs are not settings and are refused.
// Pure: text in, tree out.
#pragma once

#include <string_view>

#include "agent/config_json.h"
#include "common/status.h"

namespace tenure::agent {

// Errors are kInvalidArgument "NAME:LINE: why".
Result<JsonNode> ParseHclWithLines(std::string_view name, std::string_view text);

}  // namespace tenure::agent
