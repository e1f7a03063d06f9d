#include "common/log_limiter.h"

#include <chrono>
#include <cstdio>

namespace tenure {

bool LogLimiter::Allow(std::string_view what) {
  constexpr std::int64_t kWindowMs = 60'000;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  if (window_start_ms_ < 0 || now - window_start_ms_ >= kWindowMs) {
    if (skipped_ > 0) {
      std::fprintf(stderr, "%s%d more %.*s in the last minute not logged\n", prefix_.c_str(),
                   skipped_, static_cast<int>(what.size()), what.data());
    }
    window_start_ms_ = now;
    printed_ = 0;
    skipped_ = 0;
  }
  if (printed_ < per_minute_) {
    ++printed_;
    return true;
  }
  ++skipped_;
  return false;
}

}  // namespace tenure
