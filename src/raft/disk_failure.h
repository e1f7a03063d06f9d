// Words for a failed libraft disk write, and a limiter for logging them.
// libraft's return code says only "I/O error" or "not enough space" (0.15's
// raft_strerror has no text for some codes: "unknown error"), while its
// error messages carry the detail, e.g. "write failed: -28" (a negated errno
// from libuv) or "create segment open-3: not enough space to allocate
// 8388608 bytes". Pure, loop thread only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenure::raft {

// Whether a libraft code is about the disk (then the data dir is named).
bool IsDiskFailure(int rv);

// "no space left on device (libraft: write failed: -28)"; the errno in a
// message wins, then ENOSPC for RAFT_NOSPACE or "space", then
// raft_strerror. io_message: the raft_io's errmsg; raft_message: raft's.
std::string DescribeDiskFailure(int rv, std::string_view io_message, std::string_view raft_message);

// At most one log line per interval: a full disk fails every write.
class FailureLogLimiter {
 public:
  explicit FailureLogLimiter(std::uint64_t interval_ms = 1000) : interval_ms_(interval_ms) {}
  // Whether to log now; if so, *suppressed is how many failures were not
  // logged since the last line.
  bool Admit(std::uint64_t now_ms, std::uint64_t* suppressed);

 private:
  std::uint64_t interval_ms_;
  bool logged_ = false;
  std::uint64_t last_ms_ = 0;
  std::uint64_t suppressed_ = 0;
};

}  // namespace tenure::raft
