// Clock: the only way code outside src/state learns the time, so tests can
// substitute their own. The state machine never reads a clock: the leader
// stamps commands with NowUnixMs() before proposing them.
#pragma once

#include "common/types.h"

namespace tenure {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonoMs NowMonoMs() const = 0;  // monotonic, for timers
  virtual UnixMs NowUnixMs() const = 0;  // wall clock, for command stamps
};

class RealClock final : public Clock {
 public:
  MonoMs NowMonoMs() const override;
  UnixMs NowUnixMs() const override;
};

}  // namespace tenure
