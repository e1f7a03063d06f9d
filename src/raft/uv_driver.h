// UvDriver: runs a libuv loop from a Boost.Asio io_context on the same thread,
// so raft's I/O and the rest of the server share one thread of logic.
//
// How: libuv's whole state is reachable through one epoll fd
// (uv_backend_fd) plus one timeout (uv_backend_timeout). The driver waits
// for that fd to become readable and arms an asio timer for the timeout; when
// either fires it runs uv_run(UV_RUN_NOWAIT) once and re-arms. Measured in
// an early spike (about 5 % cost, no lost wake-ups). Rules kept here:
//  - the first uv_run happens before any wait: libuv adds watchers to epoll
//    lazily inside uv_run, so waiting first could wait forever;
//  - uv_backend_timeout() == 0 means "run again now" (pending callbacks,
//    closing handles, watchers not yet in epoll): it is posted, never waited;
//  - uv_loop_alive() is checked first, since a dead loop also reports 0;
//  - uv_update_time() comes before uv_backend_timeout(), which is relative to
//    the cached loop time (otherwise uv timers fire late by the time asio
//    handlers took);
//  - the stream_descriptor is release()d, never closed: the fd is libuv's.
//
// After every uv_run the after_run hook runs (the Node polls raft there).
// When the loop has no more live handles the driver stops for good and calls
// on_loop_dead (from inside an asio handler, never from inside uv_run).
//
// Loop thread only. Asio only: no Beast in this layer.
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "raft/raft_c.h"

namespace tenure::raft {

class UvDriver {
 public:
  struct Hooks {
    std::function<void()> after_run;     // after each uv_run(NOWAIT)
    std::function<void()> on_loop_dead;  // once, when uv_loop_alive() became 0
  };

  UvDriver(boost::asio::io_context& io, uv_loop_t* loop, Hooks hooks);
  // Cancels waits and releases (does not close) libuv's epoll fd.
  ~UvDriver();
  UvDriver(const UvDriver&) = delete;
  UvDriver& operator=(const UvDriver&) = delete;

  // Posts the first uv_run; everything after that is event-driven.
  void Start();
  // Call after touching libuv from outside its callbacks (raft_apply,
  // raft_barrier, raft_close...): new timers, writes queued to epoll later, or
  // closing handles change what the loop waits for.
  void Poke();

  bool stopped() const { return stopped_; }
  std::uint64_t runs() const { return runs_; }

 private:
  using Clock = std::chrono::steady_clock;

  void RunUv();
  void Arm();
  void PostRun();
  void Shutdown();

  boost::asio::io_context& io_;
  uv_loop_t* loop_;
  Hooks hooks_;
  boost::asio::posix::stream_descriptor fd_;  // uv_backend_fd, released at the end
  boost::asio::steady_timer timer_;
  // Handlers capture a weak_ptr to this so a handler that outlives the driver
  // (already queued when it was destroyed) does nothing.
  std::shared_ptr<UvDriver*> self_;
  Clock::time_point timer_deadline_ = Clock::time_point::max();
  std::uint64_t runs_ = 0;
  bool started_ = false;
  bool fd_waiting_ = false;
  bool run_posted_ = false;
  bool in_run_ = false;
  bool stopped_ = false;
};

}  // namespace tenure::raft
