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

using DurationMs = std::int64_t;  // a length of time in milliseconds
using DurationNs = std::int64_t;  // Go-style duration in nanoseconds

// An instant on one named clock, in milliseconds. Each clock is a type of its
// own because mixing clocks is the bug decision 0010 fixed by hand: an
// instant of one clock does not convert to another's, nor to a MonoMs or a
// duration. Durations move it (+, -) and come out of a difference.
template <typename Clock>
class InstantMs {
 public:
  constexpr InstantMs() = default;
  constexpr explicit InstantMs(std::int64_t ms) : ms_(ms) {}
  // For codecs and logs.
  constexpr std::int64_t ms() const { return ms_; }

  // The latest instant: "never" for a deadline.
  static constexpr InstantMs Max() { return InstantMs(INT64_MAX); }

  constexpr auto operator<=>(const InstantMs&) const = default;
  constexpr InstantMs operator+(DurationMs d) const { return InstantMs(ms_ + d); }
  constexpr InstantMs operator-(DurationMs d) const { return InstantMs(ms_ - d); }
  constexpr DurationMs operator-(InstantMs other) const { return ms_ - other.ms_; }
  constexpr InstantMs& operator+=(DurationMs d) {
    ms_ += d;
    return *this;
  }
  // For test failures and logs that stream (any std::ostream).
  template <typename Stream>
  friend Stream& operator<<(Stream& out, InstantMs instant) {
    out << instant.ms_;
    return out;
  }

 private:
  std::int64_t ms_ = 0;
};

// A wall-clock instant, milliseconds since the Unix epoch: what people read
// (history times, token expiry, CreateTime). Only displayed or compared with
// a wall clock; never what decides how long a replicated window lasts.
using UnixMs = InstantMs<struct WallClockTag>;

// An instant on this process's monotonic clock (std::chrono::steady_clock):
// timers, deadlines, when something was last heard. Never replicated, and
// meaningless in another process. A length of time is a DurationMs: one
// instant minus another, or an instant moved by one.
using MonoMs = InstantMs<struct MonotonicClockTag>;

// The replicated clock (decision 0037): milliseconds of leadership, advanced
// by each leader's monotonic clock from where the Store's clock stands, so a
// wall clock that jumps a day cannot move it. Lock-delay windows are
// measured on it. Its zero and its offset from wall time mean nothing:
// compare it only with itself.
using ClusterMs = InstantMs<struct ClusterClockTag>;

constexpr DurationNs kNsPerMs = 1'000'000;
constexpr DurationNs kNsPerSecond = 1'000'000'000;

}  // namespace tenure
