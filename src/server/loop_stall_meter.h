// LoopStallMeter: how long the loop thread keeps everything else waiting
// (docs/metrics.md, tenure_loop_stall_seconds; decision 0046). Every
// kTickMs a timer is due; how late it fires is the time the loop spent on
// something else past that moment (a handler, an apply, a large answer), the
// wait a raft heartbeat or a client arriving then would have had. Each
// lateness goes into a histogram, the worst is kept, and one of 100 ms or
// more is logged.
//
// It measures the real loop, so it reads the steady clock itself (not the
// Server's Clock, which tests may drive by hand). Loop thread only.
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

#include "common/histogram.h"
#include "common/log_limiter.h"

namespace tenure::server {

class LoopStallMeter {
 public:
  static constexpr int kTickMs = 10;
  // A stall this long is logged (at most 10 lines a minute): a fifth of the
  // default election timeout.
  static constexpr double kWarnSeconds = 0.1;

  explicit LoopStallMeter(boost::asio::io_context& io);
  ~LoopStallMeter();
  LoopStallMeter(const LoopStallMeter&) = delete;
  LoopStallMeter& operator=(const LoopStallMeter&) = delete;

  void Start();
  void Stop();

  const Histogram& stalls() const { return stalls_; }
  double worst_seconds() const { return worst_seconds_; }

 private:
  void Arm();

  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point due_;
  Histogram stalls_;
  double worst_seconds_ = 0;
  bool running_ = false;
  LogLimiter warn_limiter_{10, "server: "};
  std::shared_ptr<LoopStallMeter*> alive_ = std::make_shared<LoopStallMeter*>(this);
};

}  // namespace tenure::server
