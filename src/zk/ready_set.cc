#include "zk/ready_set.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <string>

#include "common/log.h"

namespace tenure::zk {

namespace asio = boost::asio;

ReadySet::ReadySet(asio::io_context& io, Deliver deliver) : io_(io), deliver_(std::move(deliver)) {}

ReadySet::~ReadySet() { *alive_ = false; }

Status ReadySet::Open() {
  if (descriptor_ != nullptr) return Status::Ok();
  const int fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) {
    return Status::Unavailable(std::string("epoll_create1 for the ZooKeeper port: ") +
                               std::strerror(errno));
  }
  descriptor_ = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
  Wait();
  return Status::Ok();
}

void ReadySet::Remove(int fd) {
  if (descriptor_ != nullptr) ::epoll_ctl(descriptor_->native_handle(), EPOLL_CTL_DEL, fd, nullptr);
}

bool ReadySet::Add(int fd, std::uint64_t number) {
  if (descriptor_ == nullptr) {
    errno = EBADF;
    return false;
  }
  epoll_event event{};
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  event.data.u64 = number;
  return ::epoll_ctl(descriptor_->native_handle(), EPOLL_CTL_ADD, fd, &event) == 0;
}

void ReadySet::Wait() {
  std::weak_ptr<bool> alive = alive_;
  descriptor_->async_wait(
      asio::posix::stream_descriptor::wait_read, [this, alive](boost::system::error_code ec) {
        if (alive.expired() || !*alive.lock()) return;
        if (ec) {
          // Only a closed descriptor ends the wait: the port is going away.
          if (ec != asio::error::operation_aborted) {
            log::Warn("zk", "waiting on the connections' events: " + ec.message());
          }
          return;
        }
        Drain();
      });
}

void ReadySet::Drain() {
  epoll_event events[kBatch];
  const int n = ::epoll_wait(descriptor_->native_handle(), events, kBatch, 0);
  // Interrupted: the events still queued are taken at once, as after a
  // full batch (a wait would need an edge that was already used).
  const bool again = n == kBatch || (n < 0 && errno == EINTR);
  for (int i = 0; i < n; ++i) {
    const std::uint32_t what = events[i].events;
    deliver_(events[i].data.u64, (what & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0,
             (what & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0,
             (what & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
  }
  if (!again) return Wait();
  // The rest at once, after what the loop has queued.
  std::weak_ptr<bool> alive = alive_;
  asio::post(io_, [this, alive] {
    if (!alive.expired() && *alive.lock()) Drain();
  });
}

}  // namespace tenure::zk
