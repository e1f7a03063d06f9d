// A policy's rules text, HCL or JSON, read into the common tree
// (common/config_text.h) with the options the rules language has always had,
// and the reader's errors in the rules' words: `line 3, column 12: expected
// "=" after "policy", found "read"`. JSON errors keep the texts of the JSON
// library the rules were first read with (nlohmann::json 3.11), which
// answers and the tests pin.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/config_text.h"
#include "common/status.h"

namespace tenure::acl {

// JSON when the first character that is not white space is "{", HCL otherwise.
Result<ConfigValue> ReadRulesText(std::string_view text);

// "line L, column C: <what>" for the byte at `offset` (the end of the text
// when offset is past it), as kInvalidArgument.
Status RulesErrorAt(std::string_view text, std::size_t offset, std::string_view what);

// The errors of the two forms, in the rules' words (exposed for tests).
Status RulesHclError(std::string_view text, const HclReadError& error);
Status RulesJsonError(std::string_view text, const JsonReadError& error);

}  // namespace tenure::acl
