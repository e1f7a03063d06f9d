// Config files as text: Consul's two formats, JSON and HCL, read by the
// common reader (common/config_text.h) into one tree whose every value and
// member knows its line, so one applier serves both (agent/config_file.h).
//
// JSON is strict RFC 8259: no comments, no trailing commas; a key twice in
// one object is an error, as a setting given twice in one file would be
// ambiguous. HCL is what a config file of settings uses: `key = value`,
// blocks `name { ... }` (or `name = { ... }`), lists, quoted strings,
// numbers, true and false, and #, // and /* */ comments. A block given twice
// at one level is one block (`acl { enabled = true }` then
// `acl { default_policy = "deny" }`); an attribute given twice is refused,
// as in JSON. Block labels (`service "web" { }`) and heredocs are not
// settings and are refused. A UTF-8 byte order mark before either is
// skipped. Both nest at most 64 levels. Pure: text in, tree out.
#pragma once

#include <string_view>

#include "common/config_text.h"
#include "common/status.h"

namespace tenure::agent {

// Errors are kInvalidArgument "NAME:LINE: why", NAME being what the caller
// calls the text (its path).
Result<ConfigValue> ParseJsonWithLines(std::string_view name, std::string_view text);
Result<ConfigValue> ParseHclWithLines(std::string_view name, std::string_view text);

// "an object", "a string", "an array", ... for messages.
std::string_view JsonKindName(ConfigValue::Kind kind);

}  // namespace tenure::agent
