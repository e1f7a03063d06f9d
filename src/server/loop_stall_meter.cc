#include "server/loop_stall_meter.h"

#include <fmt/core.h>

#include <algorithm>

#include "common/log.h"

namespace tenure::server {

LoopStallMeter::LoopStallMeter(boost::asio::io_context& io) : timer_(io) {}

LoopStallMeter::~LoopStallMeter() { alive_.reset(); }

void LoopStallMeter::Start() {
  if (running_) return;
  running_ = true;
  due_ = std::chrono::steady_clock::now();
  Arm();
}

void LoopStallMeter::Stop() {
  running_ = false;
  timer_.cancel();
}

void LoopStallMeter::Arm() {
  due_ += std::chrono::milliseconds(kTickMs);
  // After a long stall the next tick is a full period from now, not a
  // burst of ticks that are all "late" for the same stall.
  due_ = std::max(due_, std::chrono::steady_clock::now());
  timer_.expires_at(due_);
  timer_.async_wait(
      [weak = std::weak_ptr<LoopStallMeter*>(alive_)](const boost::system::error_code& ec) {
        std::shared_ptr<LoopStallMeter*> self = weak.lock();
        if (ec || self == nullptr || !(*self)->running_) return;
        LoopStallMeter& meter = **self;
        const double late =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - meter.due_).count();
        meter.stalls_.Observe(std::max(0.0, late));
        meter.worst_seconds_ = std::max(meter.worst_seconds_, late);
        if (late >= kWarnSeconds && meter.warn_limiter_.Allow("loop stalls")) {
          log::Warn("server", fmt::format("the loop thread was held {:.0f} ms: raft messages and "
                                          "clients waited that long (tenure_loop_stall_seconds)",
                                          late * 1000));
        }
        meter.Arm();
      });
}

}  // namespace tenure::server
