// Percent-encoding for request targets. Pure.
#pragma once

#include <string>
#include <string_view>

namespace tenure::net {

// A KV key for a URL path: unreserved characters (A-Z a-z 0-9 - . _ ~) and
// '/' stay, every other byte becomes %XX.
std::string EscapeKeyPath(std::string_view key);
// A query value or a single path segment: only unreserved characters stay
// ('/' too is escaped).
std::string EscapeQueryValue(std::string_view value);

}  // namespace tenure::net
