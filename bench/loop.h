// Loop: the benchmark's one io_context, plus the few ways the orchestration
// code waits on it (run until a workload says it is done, sleep, drain).
//
// Every connection, timer and callback of the load generator lives on this
// one thread: the machine has two cores and the server needs one of them, so
// a multi-threaded client would only measure its own lock contention.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>  // before Boost: asio/awaitable.hpp uses std::exchange

#include "http_conn.h"

namespace tenure::bench {

using Clock = std::chrono::steady_clock;

class Loop {
 public:
  Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  asio::io_context& ioc() { return ioc_; }

  // Runs handlers until Finish() is called or `limit` passes. Returns false
  // on timeout (outstanding operations are left pending; close their
  // connections and Drain()). A Finish() that came before Run returns at once.
  bool Run(Clock::duration limit);
  // Runs until done() holds, returning false if `limit` passes first.
  // done() is checked whenever a Run ends, so a stray Finish() cannot end
  // the wait early; callbacks call Finish() when done() may have become true.
  bool RunUntil(const std::function<bool()>& done, Clock::duration limit);
  // Ends the current (or next) Run. Called by workload code when its
  // completion condition holds.
  void Finish();
  // Runs every handler that is ready now, e.g. the aborted operations of
  // connections just closed, so they can be destroyed safely. Forgets any
  // Finish() those handlers made: it belongs to a wait that is over.
  void Drain();
  // Waits while still serving handlers (so responses are timestamped on time).
  void Sleep(Clock::duration d);

 private:
  asio::io_context ioc_;
  asio::steady_timer limit_timer_;
  asio::steady_timer sleep_timer_;
  std::uint64_t generation_ = 0;
  bool finished_ = false;
};

// A response copied out of the connection's buffer, for setup and control
// requests whose speed does not matter.
struct OwnedResponse {
  int status = 0;  // < 0: transport error or timeout, the text is in body
  std::uint64_t consul_index = 0;
  std::string body;
};

// Sends one request and runs the loop until its response (or `limit`).
OwnedResponse Request(Loop& loop, HttpConn& conn, std::string_view method, std::string_view target,
                      std::string_view body = {}, Clock::duration limit = std::chrono::seconds(30));

}  // namespace tenure::bench
