// A ZooKeeper connection's bytes as frames: a 4-byte big-endian length,
// then that many bytes. And the four-letter words monitoring sends instead
// of a first frame ("ruok", "srvr", "mntr"...): ZooKeeper reads the first
// 4 bytes of a new connection as a length, and as a word when they spell
// one it knows. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zk/protocol.h"

namespace tenure::zk {

class FrameSplitter {
 public:
  // Adds bytes the connection read; then Next() until it answers false.
  // After an error they are dropped: the connection is ending.
  void Feed(std::string_view bytes) {
    if (!failed_) buffer_.append(bytes);
  }
  // The next whole frame (without its length), if there is one. After an
  // error, always false.
  bool Next(std::string* frame);
  // Set once a length was below 0 or above kFrameBytesMax: the connection
  // ends unanswered, as ZooKeeper's does.
  // (The text is made when asked: a connection holds only the length.)
  bool failed() const { return failed_; }
  std::string error() const;
  // Bytes held: at most one frame being read, and what came after it.
  std::size_t buffered() const { return buffer_.size() - at_; }
  // Those bytes, handed out and forgotten (a connection spliced to the
  // leader passes them on as they came).
  std::string TakeRest() {
    std::string rest = buffer_.substr(at_);
    buffer_.clear();
    at_ = 0;
    return rest;
  }

 private:
  std::string buffer_;
  std::size_t at_ = 0;  // where the next frame's length starts
  std::int32_t bad_length_ = 0;
  bool failed_ = false;
};

// Appends `frame` to `out` with its 4-byte big-endian length before it:
// what FrameSplitter reads back.
void AppendFrame(std::string* out, std::string_view frame);

// The word the first 4 bytes of a connection spell, if ZooKeeper 3.8 knows
// it (conf, cons, crst, dirs, dump, envi, gtmk, hash, isro, mntr, ruok,
// srst, srvr, stat, stmk, wchc, wchp, wchs); nullopt: read them as a
// frame's length. (ZooKeeper also knows telnet's close sequence,
// 0xfff4fffd, which closes; read as a length it is negative, and the
// connection ends all the same.)
std::optional<std::string_view> FourLetterWord(std::string_view first4);

}  // namespace tenure::zk
