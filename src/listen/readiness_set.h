// ReadinessSet: one epoll set that every connection's socket joins once,
// edge-triggered for reading and writing, watched through one asio
// descriptor (decision 0035). A connection then has no reactor state and no
// pending operation of its own: waiting for readiness is a flag it keeps.
// Loop thread only.
//
// It knows nothing of connections: an owner is an opaque pointer given back
// with its events, so the ZooKeeper and etcd listeners can share it later.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <span>

namespace tenure::listen {

class ReadinessSet {
 public:
  struct Ready {
    void* owner;
    std::uint32_t events;  // EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLHUP, EPOLLERR
  };
  // Called on the loop with each batch drained from the set. Every owner in
  // it was registered when the batch was read (an owner leaves the set before
  // it goes), but one may end another while the batch runs: the callee holds
  // them all first.
  using OnBatch = void (*)(std::span<const Ready> batch);
  static constexpr int kBatch = 256;

  ReadinessSet(boost::asio::io_context& io, OnBatch on_batch);
  ~ReadinessSet();
  ReadinessSet(const ReadinessSet&) = delete;
  ReadinessSet& operator=(const ReadinessSet&) = delete;

  // Adds `fd` for both directions, once. The set itself is made by the
  // first Add. False (errno set) if the set is stopped or epoll refused.
  bool Add(int fd, void* owner);
  // Leaves the set. Call it before closing `fd`: a duplicated descriptor
  // would keep the registration, and with it the owner's pointer, alive.
  void Remove(int fd);
  // Closes the set; a pending wait completes aborted, so nothing keeps the
  // loop running. Add fails from now on.
  void Stop();

  struct State;  // defined in the .cc file

 private:
  std::shared_ptr<State> state_;  // shared with the pending wait
};

}  // namespace tenure::listen
