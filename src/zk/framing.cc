#include "zk/framing.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>

namespace tenure::zk {

void AppendFrame(std::string* out, std::string_view frame) {
  const auto n = static_cast<std::uint32_t>(frame.size());
  const char length[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  out->append(length, 4);
  out->append(frame);
}

std::string FrameSplitter::error() const {
  if (!failed_) return "";
  return fmt::format(
      "a frame of {} bytes: frames are 0 to {} bytes (jute.maxbuffer); the connection ends",
      bad_length_, kFrameBytesMax);
}

bool FrameSplitter::Next(std::string* frame) {
  if (failed_ || buffered() < 4) return false;
  std::uint32_t raw = 0;
  for (std::size_t i = 0; i < 4; ++i)
    raw = (raw << 8) | static_cast<std::uint8_t>(buffer_[at_ + i]);
  const auto length = static_cast<std::int32_t>(raw);
  if (length < 0 || static_cast<std::size_t>(length) > kFrameBytesMax) {
    failed_ = true;
    bad_length_ = length;
    buffer_.clear();
    at_ = 0;
    return false;
  }
  const auto size = static_cast<std::size_t>(length);
  if (buffered() - 4 < size) return false;
  frame->assign(buffer_, at_ + 4, size);
  at_ += 4 + size;
  // Drop what was read once it is most of the buffer, so a stream of small
  // frames does not move the rest at every one.
  if (at_ == buffer_.size()) {
    // All read: freed, so an idle connection holds no buffer.
    buffer_ = std::string();
    at_ = 0;
  } else if (at_ > buffer_.size() / 2) {
    buffer_.erase(0, at_);
    at_ = 0;
  }
  return true;
}

std::optional<std::string_view> FourLetterWord(std::string_view first4) {
  static constexpr std::array<std::string_view, 18> kWords = {
      "conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro",
      "mntr", "ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs"};
  if (first4.size() != 4) return std::nullopt;
  for (const std::string_view word : kWords) {
    if (word == first4) return word;
  }
  return std::nullopt;
}

}  // namespace tenure::zk
