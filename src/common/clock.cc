#include "common/clock.h"

#include <chrono>

namespace tenure {

MonoMs RealClock::NowMonoMs() const {
  return MonoMs(std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count());
}

UnixMs RealClock::NowUnixMs() const {
  return UnixMs(std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count());
}

}  // namespace tenure
