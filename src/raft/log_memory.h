// LogMemory: the bytes of log entries libraft holds in memory, and the
// snapshot policy that bounds them.
//
// libraft 0.15 keeps every entry in memory until a snapshot, which it takes
// every `threshold` applied entries, and keeps `trailing` entries after it;
// both are counts, so large values make memory unbounded (16,384 entries of
// 512 KiB is 8 GiB). The node mirrors the sizes of the entries libraft holds
// here and, after every loop turn, sets the threshold and trailing count
// Decide() returns: a snapshot is due as soon as the entries applied since
// the last one hold `log_bytes_max`, and the trailing entries kept hold at
// most `trailing_bytes_max`. Under a heavy write load snapshots are spaced:
// within `spacing_ms` of the last one the count threshold is doubled, since
// each snapshot forks the server (decision 0049) and the parent pays the
// fork and its copy-on-write faults (decision 0061). Pure (time is an
// input); loop thread.
#pragma once

#include <cstdint>
#include <deque>

#include "common/types.h"

namespace tenure::raft {

class LogMemory {
 public:
  LogMemory(std::uint64_t log_bytes_max, std::uint64_t trailing_bytes_max, unsigned threshold,
            unsigned trailing, std::uint64_t spacing_ms = 0);

  // The log now holds entries (first - 1, last]: entries this mirror had
  // outside that range are forgotten (a snapshot dropped them, or a
  // conflicting suffix was truncated).
  void Trim(std::uint64_t first, std::uint64_t last);
  // Entry `index` (one past the last mirrored, or the first ever) of `bytes`.
  void Append(std::uint64_t index, std::uint64_t bytes);
  // The last index mirrored (0 when empty).
  std::uint64_t last_index() const;
  std::uint64_t bytes() const;

  struct Policy {
    unsigned threshold;
    unsigned trailing;
  };
  // What to set now, given libraft's last applied index, the index of its
  // last snapshot and the milliseconds since this server took it (the
  // default: long ago, or none taken since it started).
  static constexpr std::uint64_t kLongAgo = UINT64_MAX;
  Policy Decide(std::uint64_t last_applied, std::uint64_t snapshot_index,
                std::uint64_t ms_since_snapshot = kLongAgo) const;

 private:
  // Bytes of the entries up to and including `index` (clamped to the range).
  std::uint64_t CumulativeAt(std::uint64_t index) const;

  std::uint64_t log_bytes_max_;
  std::uint64_t trailing_bytes_max_;
  unsigned threshold_;
  unsigned trailing_;
  std::uint64_t spacing_ms_;
  std::uint64_t first_ = 0;  // index of cumulative_.front()
  // Running total of bytes from some origin, one per entry in [first_, ...].
  std::deque<std::uint64_t> cumulative_;
  std::uint64_t base_ = 0;  // running total before first_
};

}  // namespace tenure::raft
