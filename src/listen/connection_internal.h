// What the files of Connection (connection.cc: its life, readiness and
// deadlines; connection_read.cc: requests in and parked; connection_write.cc:
// responses out; connection_responder.cc) share. Private to them.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstddef>
#include <string_view>
#include <utility>

#include "common/limits.h"
#include "common/log.h"
#include "common/types.h"
#include "listen/connection.h"

namespace tenure::listen::connection_detail {

// Requests answered, or full 64 KiB reads of a body, in one Run before
// yielding the loop to other clients.
inline constexpr int kRequestsPerTurn = 16;
// Unparsed bytes one request may leave: a header at its limit plus one read.
inline constexpr std::size_t kPendingBytesMax =
    limits::kHttpHeaderBytesMax + ServerShared::kScratchBytes;

template <typename... Args>
void Log(fmt::format_string<Args...> format, Args&&... args) {
  log::Warn("http", fmt::format(format, std::forward<Args>(args)...));
}

// The 429 that replaces a large answer when the unsent-output budget is
// spent (HTTP/1.1 and HTTP/2 alike).
inline constexpr std::string_view kOutputBudgetFull =
    "Too many large responses are waiting for slow clients; retry later";

inline bool WouldBlock(int error) { return error == EAGAIN || error == EWOULDBLOCK; }

}  // namespace tenure::listen::connection_detail
