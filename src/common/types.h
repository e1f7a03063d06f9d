// Basic value types shared by every layer.
//
// Units are in the names: *_ms fields are milliseconds, *_ns nanoseconds.
// LogIndex is a raft log index; Consul clients see it as CreateIndex,
// ModifyIndex, LockIndex's companion, and X-Consul-Index.
#pragma once

#include <cstdint>

namespace tenure {

using LogIndex = std::uint64_t;   // raft log position; 0 means "none"
using UnixMs = std::int64_t;      // wall-clock milliseconds since the Unix epoch
using MonoMs = std::int64_t;      // monotonic milliseconds (timers; never replicated)
using DurationNs = std::int64_t;  // Go-style duration in nanoseconds

constexpr DurationNs kNsPerMs = 1'000'000;
constexpr DurationNs kNsPerSecond = 1'000'000'000;

}  // namespace tenure
