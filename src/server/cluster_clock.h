// ClusterClock: how a leader stamps the replicated clock (decision 0037).
// Leader-only soft state; pure (time is an input).
//
// The Store's clock (Store::now_ms) is the largest stamp applied. A leader
// continues it from where it stands, by its own monotonic clock: every stamp
// is the previous stamp plus the monotonic time since, and never below the
// Store's clock. No wall clock enters, so a server whose wall clock is a day
// ahead or behind stamps the same as one whose clock is right. Time between
// two leaders (the failover) is not counted, so a window on the replicated
// clock lasts at least its length in real time, give or take the monotonic
// clocks' rate error (the bound the session TTLs already assume).
//
// Elapsed time is counted within one raft term only: a stamp in a new term
// starts again from the Store's clock. A server that stamped as a follower,
// or led, was deposed and led again between two looks at its leadership,
// never counts time in which another leader's stamps also advanced the clock.
#pragma once

#include <cstdint>

#include "common/types.h"

namespace tenure::server {

class ClusterClock {
 public:
  // The stamp for a command proposed at `now_mono_ms` in raft term `term`,
  // given the Store's clock now. The first stamp after Reset(), or in a term
  // other than the last stamp's, is the Store's clock.
  ClusterMs Stamp(ClusterMs store_clock, MonoMs now_mono_ms, std::uint64_t term);
  // Forget the last stamp: leadership was lost (the next term starts from
  // the Store's clock, which another leader may have moved since).
  void Reset() { started_ = false; }

 private:
  bool started_ = false;
  std::uint64_t term_ = 0;
  ClusterMs last_stamp_;
  MonoMs last_mono_ms_;
};

}  // namespace tenure::server
