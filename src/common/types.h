// Basic value types shared by every layer.
//
// Units are in the names: *_ms fields are milliseconds, *_ns nanoseconds.
// LogIndex is a raft log index; Consul clients see it as CreateIndex,
// ModifyIndex, LockIndex's companion, and X-Consul-Index.
#pragma once

#include <compare>
#include <cstdint>

namespace tenure {

using LogIndex = std::uint64_t;   // raft log position; 0 means "none"
using MonoMs = std::int64_t;      // monotonic milliseconds (timers; never replicated)
using DurationMs = std::int64_t;  // a length of time in milliseconds
using DurationNs = std::int64_t;  // Go-style duration in nanoseconds

// A wall-clock instant, milliseconds since the Unix epoch: the leader's stamp
// on every command and every replicated deadline (lock-delay windows). A type
// of its own because mixing it with the monotonic clock is the bug decision
// 0010 fixed by hand: a MonoMs or a duration does not convert to it, nor it
// to them. Durations move it (+, -) and come out of a difference.
class UnixMs {
 public:
  constexpr UnixMs() = default;
  constexpr explicit UnixMs(std::int64_t ms) : ms_(ms) {}
  // For codecs and logs.
  constexpr std::int64_t ms() const { return ms_; }

  constexpr auto operator<=>(const UnixMs&) const = default;
  constexpr UnixMs operator+(DurationMs d) const { return UnixMs(ms_ + d); }
  constexpr UnixMs operator-(DurationMs d) const { return UnixMs(ms_ - d); }
  constexpr DurationMs operator-(UnixMs other) const { return ms_ - other.ms_; }

 private:
  std::int64_t ms_ = 0;
};

constexpr DurationNs kNsPerMs = 1'000'000;
constexpr DurationNs kNsPerSecond = 1'000'000'000;

}  // namespace tenure
