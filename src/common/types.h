// Basic value types shared by every layer.
//
// Units are in the names: *_ms fields are milliseconds, *_ns nanoseconds.
#pragma once

#include <compare>
#include <cstdint>

namespace tenure {

// A raft log position; LogIndex() (0) means "none". Consul clients see it as
// CreateIndex, ModifyIndex, X-Consul-Index and tenure's fencing token (the
// grant's index, decision 0002). A type of its own because it sits beside
// counts (LockIndex, entries, sessions), terms and sizes that are integers
// too: none of them converts to it, nor it to them. Codecs and JSON use
// value(); the next position is Next().
class LogIndex {
 public:
  constexpr LogIndex() = default;
  constexpr explicit LogIndex(std::uint64_t value) : value_(value) {}
  constexpr std::uint64_t value() const { return value_; }
  constexpr bool is_none() const { return value_ == 0; }
  constexpr LogIndex Next() const { return LogIndex(value_ + 1); }

  constexpr auto operator<=>(const LogIndex&) const = default;

 private:
  std::uint64_t value_ = 0;
};

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
