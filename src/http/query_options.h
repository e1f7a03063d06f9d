// Consul's common query parameters: blocking (index, wait), consistency
// (stale, consistent), dc, pretty. Presence-tested flags ignore their value,
// as Consul does (?recurse=false still recurses). Pure.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/types.h"
#include "http/listen_types.h"

namespace tenure::http {

struct QueryOptions {
  LogIndex index;          // 0 = answer at once
  DurationMs wait_ms = 0;  // clamped to limits; default applied when index > 0
  bool consistent = false;
  bool stale = false;
  bool pretty = false;
};

// 400 errors with Consul's texts: "Invalid wait time", "Invalid index",
// "Cannot specify ?stale with ?consistent, conflicting semantics."
Result<QueryOptions> ParseQueryOptions(const HttpRequest& request);

// Parses a decimal uint64 as Go's strconv.ParseUint(s, 10, 64); errors carry
// Go's text (`strconv.ParseUint: parsing "x": invalid syntax`).
Result<std::uint64_t> ParseUint64(std::string_view text);

}  // namespace tenure::http
