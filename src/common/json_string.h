// JSON strings as Go's encoding/json writes them (HTML-safe: < > & as \u003c
// \u003e \u0026; U+2028/U+2029 escaped; invalid UTF-8 as \ufffd), so that
// Consul's clients see byte-for-byte what Consul sends, and the log's JSON
// lines read the same. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tenure::json {

// Appends `text` as a quoted JSON string.
void AppendString(std::string* out, std::string_view text);
// The exact size AppendString writes for `text`, without writing it.
std::size_t StringSize(std::string_view text);

}  // namespace tenure::json
