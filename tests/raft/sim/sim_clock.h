// SimClock: one simulated server's clocks, derived from raft_fixture's
// global simulated time (the "real" time of the simulation, in ms).
//
// - The wall clock (what commands carry for people to read: history times)
//   is real time plus an offset, as an NTP-disciplined clock is: the offset
//   is bounded and may step, but it does not grow with time; or, with the
//   nemesis's day jumps, a day off either way (decision 0037).
// - The monotonic clock (TTL timers) runs at a rate off by drift_ppm, as a
//   crystal does. Our TTL guarantee assumes this rate error is bounded; it
//   assumes nothing about offsets between servers' monotonic clocks, which
//   are never compared.
// Pure value type.
#pragma once

#include <cstdint>

#include "common/types.h"

namespace tenure::sim {

using RealMs = std::int64_t;  // raft_fixture time: the simulation's true time

class SimClock {
 public:
  // Unix ms at simulated time 0 (2023-11-14): realistic stamps.
  static constexpr UnixMs kEpochUnixMs = UnixMs(1'700'000'000'000);

  SimClock() = default;
  // mono_base_ms: what its monotonic clock reads at simulated time 0.
  SimClock(DurationMs wall_offset_ms, std::int64_t drift_ppm, std::int64_t mono_base_ms)
      : wall_offset_ms_(wall_offset_ms), drift_ppm_(drift_ppm), mono_anchor_ms_(mono_base_ms) {}

  UnixMs Wall(RealMs real_ms) const { return kEpochUnixMs + real_ms + wall_offset_ms_; }
  // Never decreases as real_ms grows (|drift| < 10^6 ppm).
  MonoMs Mono(RealMs real_ms) const {
    return mono_anchor_ms_ + (real_ms - real_anchor_ms_) * (1'000'000 + drift_ppm_) / 1'000'000;
  }

  // Changes the rate from `now` on, keeping the monotonic clock continuous.
  void SetDrift(RealMs now_ms, std::int64_t drift_ppm) {
    mono_anchor_ms_ = Mono(now_ms);
    real_anchor_ms_ = now_ms;
    drift_ppm_ = drift_ppm;
  }
  // An NTP step of the wall clock; the monotonic clock does not move.
  void SetWallOffset(DurationMs offset_ms) { wall_offset_ms_ = offset_ms; }

  DurationMs wall_offset_ms() const { return wall_offset_ms_; }
  std::int64_t drift_ppm() const { return drift_ppm_; }

 private:
  DurationMs wall_offset_ms_ = 0;  // wall minus real time
  std::int64_t drift_ppm_ = 0;
  MonoMs mono_anchor_ms_;
  RealMs real_anchor_ms_ = 0;
};

}  // namespace tenure::sim
