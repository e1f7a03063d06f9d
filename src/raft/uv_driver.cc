#include "raft/uv_driver.h"

#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include "common/assert.h"

namespace tenure::raft {

namespace asio = boost::asio;

UvDriver::UvDriver(asio::io_context& io, uv_loop_t* loop, Hooks hooks)
    : io_(io),
      loop_(loop),
      hooks_(std::move(hooks)),
      fd_(io, uv_backend_fd(loop)),
      timer_(io),
      self_(std::make_shared<UvDriver*>(this)) {}

UvDriver::~UvDriver() {
  // Queued handlers hold a weak_ptr to self_; dropping it disarms them.
  self_.reset();
  boost::system::error_code ignored;
  timer_.cancel();
  if (fd_.is_open()) {
    fd_.cancel(ignored);
    fd_.release();  // the epoll fd belongs to libuv
  }
}

void UvDriver::Start() {
  TENURE_ASSERT(!started_);
  started_ = true;
  PostRun();
}

void UvDriver::Poke() {
  // Inside RunUv the re-arm after the hook covers it.
  if (!started_ || stopped_ || in_run_) return;
  Arm();
}

void UvDriver::PostRun() {
  if (run_posted_) return;
  run_posted_ = true;
  asio::post(io_, [weak = std::weak_ptr<UvDriver*>(self_)] {
    auto self = weak.lock();
    if (!self) return;
    (*self)->run_posted_ = false;
    (*self)->RunUv();
  });
}

void UvDriver::RunUv() {
  if (stopped_) return;
  in_run_ = true;
  uv_run(loop_, UV_RUN_NOWAIT);
  ++runs_;
  if (hooks_.after_run) hooks_.after_run();
  in_run_ = false;
  Arm();
}

void UvDriver::Arm() {
  if (stopped_) return;
  if (!uv_loop_alive(loop_)) {  // a dead loop reports timeout 0: would spin
    Shutdown();
    return;
  }
  uv_update_time(loop_);  // the backend timeout is relative to the cached time
  int timeout_ms = uv_backend_timeout(loop_);
  if (timeout_ms == 0) {
    // Pending callbacks, closing handles or watchers not yet in epoll.
    PostRun();
    return;
  }
  if (!fd_waiting_) {
    fd_waiting_ = true;
    fd_.async_wait(asio::posix::stream_descriptor::wait_read,
                   [weak = std::weak_ptr<UvDriver*>(self_)](boost::system::error_code ec) {
                     auto self = weak.lock();
                     if (!self) return;
                     (*self)->fd_waiting_ = false;
                     if (!ec) (*self)->RunUv();
                   });
  }
  if (timeout_ms < 0) {  // no uv timer pending: the fd is the only wake-up
    if (timer_deadline_ != Clock::time_point::max()) {
      timer_.cancel();
      timer_deadline_ = Clock::time_point::max();
    }
    return;
  }
  Clock::time_point now = Clock::now();
  Clock::time_point deadline = now + std::chrono::milliseconds(timeout_ms);
  // An earlier wake-up is already pending: keep it and skip the syscalls.
  if (timer_deadline_ != Clock::time_point::max() && timer_deadline_ <= deadline &&
      timer_deadline_ > now) {
    return;
  }
  timer_deadline_ = deadline;
  timer_.expires_at(deadline);
  timer_.async_wait([weak = std::weak_ptr<UvDriver*>(self_)](boost::system::error_code ec) {
    if (ec) return;  // cancelled or re-armed
    auto self = weak.lock();
    if (!self) return;
    (*self)->timer_deadline_ = Clock::time_point::max();
    (*self)->RunUv();
  });
}

void UvDriver::Shutdown() {
  stopped_ = true;
  timer_.cancel();
  timer_deadline_ = Clock::time_point::max();
  boost::system::error_code ignored;
  fd_.cancel(ignored);
  fd_.release();  // never let asio close libuv's epoll fd
  if (hooks_.on_loop_dead) {
    // Not from inside this stack: the hook may destroy the driver.
    asio::post(io_, [weak = std::weak_ptr<UvDriver*>(self_)] {
      auto self = weak.lock();
      if (!self) return;
      auto hook = std::move((*self)->hooks_.on_loop_dead);
      hook();
    });
  }
}

}  // namespace tenure::raft
