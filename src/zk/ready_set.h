// The ZooKeeper port's own readiness set (decision 0057): one epoll
// instance, edge-triggered, to which each connection's socket is added once
// with the connection's number; the loop waits on the set's descriptor
// alone. So a connection waiting for its client holds nothing of asio's: no
// pending wait (about 240 bytes each), no reactor state for its socket
// (about 170), which were a third of an idle session's memory.
//
// Edge-triggered: a connection is told when its socket may have become
// readable or writable, and keeps that until a read or write of its own
// answers EAGAIN (zk/connection.h). A socket leaves the set before it is
// closed. Numbers, not pointers, name the connections: one closed while a
// batch of events is delivered is not found, not touched. Loop thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <functional>
#include <memory>

#include "common/status.h"

namespace tenure::zk {

class ReadySet {
 public:
  // Called for each event: the connection's number, and whether its socket
  // may read (or hung up, or failed), may write, and had its peer's end of
  // the stream (or a hang-up, or a failure) when the event was taken.
  using Deliver =
      std::function<void(std::uint64_t number, bool readable, bool writable, bool peer_ended)>;

  ReadySet(boost::asio::io_context& io, Deliver deliver);
  ~ReadySet();
  ReadySet(const ReadySet&) = delete;
  ReadySet& operator=(const ReadySet&) = delete;

  // Makes the epoll instance and starts waiting on it.
  Status Open();
  // Adds socket `fd` (non-blocking) for connection `number`; false (errno
  // set) if the kernel refused it.
  bool Add(int fd, std::uint64_t number);
  // Takes `fd` out before it is closed: closing alone would leave it in
  // while a forked child (a snapshot's, decision 0049) holds a copy.
  void Remove(int fd);

  // Events taken from the kernel in one call; a full batch is followed by
  // another at once, so a busy set cannot starve the loop of the rest.
  static constexpr int kBatch = 256;

 private:
  void Wait();
  void Drain();

  boost::asio::io_context& io_;
  Deliver deliver_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> descriptor_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tenure::zk
