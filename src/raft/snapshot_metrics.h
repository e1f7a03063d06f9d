#pragma once

#include <cstdint>

#include "common/histogram.h"

namespace tenure::raft {

// Raft's own snapshots of the state machine (docs/metrics.md): libraft
// takes one every so many entries to compact the log, and a follower that
// fell behind installs the leader's.
struct SnapshotMetrics {
  Histogram encode_seconds;            // encoding the Store for one snapshot (child process)
  std::uint64_t taken = 0;             // snapshots this server encoded
  std::uint64_t last_taken_bytes = 0;  // the size of the latest
  std::uint64_t installed = 0;         // snapshots this server restored from
  std::uint64_t last_installed_bytes = 0;
  std::uint64_t installed_decoded_ahead = 0;  // of those, decoded off the loop
};

}  // namespace tenure::raft
