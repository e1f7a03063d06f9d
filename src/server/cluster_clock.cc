#include "server/cluster_clock.h"

#include <algorithm>

namespace tenure::server {

ClusterMs ClusterClock::Stamp(ClusterMs store_clock, MonoMs now_mono_ms, std::uint64_t term) {
  ClusterMs stamp = store_clock;
  if (started_ && term == term_) {
    // A monotonic clock does not go back; if it ever seemed to, count nothing.
    const DurationMs elapsed_ms = std::max<DurationMs>(now_mono_ms - last_mono_ms_, 0);
    stamp = std::max(store_clock, last_stamp_ + elapsed_ms);
  }
  started_ = true;
  term_ = term;
  last_stamp_ = stamp;
  last_mono_ms_ = now_mono_ms;
  return stamp;
}

}  // namespace tenure::server
