#include "raft/disk_failure.h"

#include <cctype>
#include <cerrno>
#include <cstring>

#include "raft/raft_c.h"

namespace tenure::raft {
namespace {

// The errno of the first " -N" in the message (N digits alone), or 0.
int NegatedErrno(std::string_view message) {
  for (std::size_t at = message.find('-'); at != std::string_view::npos;
       at = message.find('-', at + 1)) {
    if (at != 0 && message[at - 1] != ' ') continue;  // "open-3" is a file name
    std::size_t end = at + 1;
    int err = 0;
    while (end < message.size() && end - at <= 4 &&
           std::isdigit(static_cast<unsigned char>(message[end])) != 0) {
      err = err * 10 + (message[end] - '0');
      ++end;
    }
    const bool alone =
        end == message.size() || std::isdigit(static_cast<unsigned char>(message[end])) == 0;
    if (end > at + 1 && alone) return err;
  }
  return 0;
}

}  // namespace

bool IsDiskFailure(int rv) { return rv == RAFT_IOERR || rv == RAFT_NOSPACE || rv == RAFT_CORRUPT; }

std::string DescribeDiskFailure(int rv, std::string_view io_message,
                                std::string_view raft_message) {
  const std::string message(!io_message.empty() ? io_message : raft_message);
  std::string cause;
  if (int err = NegatedErrno(message); err != 0) {
    cause = std::strerror(err);
  } else if (rv == RAFT_NOSPACE || message.find("space") != std::string::npos) {
    cause = std::strerror(ENOSPC);
  }
  if (cause.empty()) {
    cause = raft_strerror(rv);
  } else {
    cause[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(cause[0])));
  }
  if (!message.empty()) cause += " (libraft: " + message + ")";
  return cause;
}

bool FailureLogLimiter::Admit(std::uint64_t now_ms, std::uint64_t* suppressed) {
  if (logged_ && now_ms - last_ms_ < interval_ms_) {
    ++suppressed_;
    return false;
  }
  *suppressed = suppressed_;
  logged_ = true;
  last_ms_ = now_ms;
  suppressed_ = 0;
  return true;
}

}  // namespace tenure::raft
