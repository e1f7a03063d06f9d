#include "http/query_options.h"

#include "common/consul_texts.h"
#include "common/duration.h"
#include "common/limits.h"
#include "common/strings.h"

namespace tenure::http {

Result<std::uint64_t> ParseUint64(std::string_view text) {
  auto error = [&](std::string_view why) {
    return Status::Internal("strconv.ParseUint: parsing " + GoQuote(text) + ": " +
                            std::string(why));
  };
  if (text.empty()) return error("invalid syntax");
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return error("invalid syntax");
    std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return error("value out of range");
    v = v * 10 + digit;
  }
  return v;
}

Result<QueryOptions> ParseQueryOptions(const HttpRequest& request) {
  QueryOptions options;
  options.stale = request.HasQuery("stale");
  options.consistent = request.HasQuery("consistent");
  options.pretty = request.HasQuery("pretty");
  if (options.stale && options.consistent) {
    return Status::InvalidArgument(
        "Cannot specify ?stale with ?consistent, conflicting semantics.");
  }
  // Consul ignores an empty ?wait= or ?index= rather than rejecting it.
  if (auto wait = request.Query("wait"); wait && !wait->empty()) {
    auto parsed = ParseGoDuration(*wait);
    if (!parsed.ok()) return consul::InvalidWaitTime();
    DurationNs ns = *parsed;
    if (ns > 0) {
      // Clamp before converting so absurd waits cannot overflow.
      DurationMs ms = ns >= limits::kBlockingWaitMaxMs * kNsPerMs ? limits::kBlockingWaitMaxMs
                                                                  : (ns + kNsPerMs - 1) / kNsPerMs;
      options.wait_ms = ms;
    }
  }
  if (auto index = request.Query("index"); index && !index->empty()) {
    auto parsed = ParseUint64(*index);
    if (!parsed.ok()) return consul::InvalidIndex();
    options.index = LogIndex(*parsed);
  }
  if (options.wait_ms <= 0) options.wait_ms = limits::kBlockingWaitDefaultMs;
  return options;
}

}  // namespace tenure::http
