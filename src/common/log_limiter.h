// LogLimiter: at most `per_minute` log lines a minute from one source (a
// stranger's refused connections, failed TLS handshakes), then one line
// saying how many were left out. One thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenure {

class LogLimiter {
 public:
  // Summary lines read "<prefix>N more <what> in the last minute not logged".
  LogLimiter(int per_minute, std::string prefix)
      : per_minute_(per_minute), prefix_(std::move(prefix)) {}
  // True if a line may be printed now; prints the summary of the skipped
  // ones first when a new minute starts.
  bool Allow(std::string_view what);

 private:
  int per_minute_;
  std::string prefix_;
  std::int64_t window_start_ms_ = -1;
  int printed_ = 0;
  int skipped_ = 0;
};

}  // namespace tenure
