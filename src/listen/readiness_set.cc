#include "listen/readiness_set.h"

#include <fmt/format.h>
#include <sys/epoll.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/log.h"

namespace tenure::listen {

namespace asio = boost::asio;

struct ReadinessSet::State {
  State(asio::io_context& io_context, OnBatch callback) : io(io_context), on_batch(callback) {}

  asio::io_context& io;
  OnBatch on_batch;
  std::unique_ptr<asio::posix::stream_descriptor> poll;  // made by the first Add
  bool armed = false;                                    // a wait or a drain is pending
  bool stopped = false;
};

namespace {

using State = ReadinessSet::State;

void Drain(const std::shared_ptr<State>& state);

// Waits until the set has events, or drains it again at once when the last
// drain may have left some (a full batch). Either way a wait is queued before
// control returns to the loop, so no edge of the set is missed.
void Arm(const std::shared_ptr<State>& state, bool drain_now) {
  if (state->armed || state->poll == nullptr) return;
  state->armed = true;
  auto drain = [weak = std::weak_ptr<State>(state)] {
    const auto alive = weak.lock();
    if (alive == nullptr || alive->poll == nullptr) return;  // stopped meanwhile
    alive->armed = false;
    Drain(alive);
  };
  if (drain_now) {
    asio::post(state->io, std::move(drain));
    return;
  }
  state->poll->async_wait(asio::posix::descriptor_base::wait_read,
                          [drain = std::move(drain)](const boost::system::error_code& ec) {
                            if (!ec) drain();
                          });
}

void Drain(const std::shared_ptr<State>& state) {
  epoll_event events[ReadinessSet::kBatch];
  int n = 0;
  do {
    n = ::epoll_wait(state->poll->native_handle(), events, ReadinessSet::kBatch, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    log::Warn("http", fmt::format("epoll_wait: {}", std::strerror(errno)));
    n = 0;
  }
  ReadinessSet::Ready batch[ReadinessSet::kBatch];
  for (int i = 0; i < n; ++i) batch[i] = {events[i].data.ptr, events[i].events};
  if (n > 0) state->on_batch(std::span<const ReadinessSet::Ready>(batch, std::size_t(n)));
  Arm(state, /*drain_now=*/n == ReadinessSet::kBatch);
}

}  // namespace

ReadinessSet::ReadinessSet(asio::io_context& io, OnBatch on_batch)
    : state_(std::make_shared<State>(io, on_batch)) {}

ReadinessSet::~ReadinessSet() { Stop(); }

bool ReadinessSet::Add(int fd, void* owner) {
  if (state_->poll == nullptr) {
    if (state_->stopped) {
      errno = ESHUTDOWN;
      return false;
    }
    const int poll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (poll_fd < 0) return false;
    state_->poll = std::make_unique<asio::posix::stream_descriptor>(state_->io, poll_fd);
    Arm(state_, /*drain_now=*/false);
  }
  epoll_event event{};
  // Edge-triggered, both directions, once: a wait is only a flag then.
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  event.data.ptr = owner;
  return ::epoll_ctl(state_->poll->native_handle(), EPOLL_CTL_ADD, fd, &event) == 0;
}

void ReadinessSet::Remove(int fd) {
  if (state_->poll != nullptr) {
    ::epoll_ctl(state_->poll->native_handle(), EPOLL_CTL_DEL, fd, nullptr);
  }
}

void ReadinessSet::Stop() {
  state_->stopped = true;
  if (state_->poll == nullptr) return;
  boost::system::error_code ignored;
  state_->poll->close(ignored);  // its pending wait completes, aborted
  state_->poll.reset();
  state_->armed = false;
}

}  // namespace tenure::listen
