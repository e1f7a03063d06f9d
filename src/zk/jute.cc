#include "zk/jute.h"

#include <fmt/format.h>

namespace tenure::zk {

void JuteReader::Fail(std::string_view name, std::string_view why) {
  if (failed_) return;
  failed_ = true;
  error_ = fmt::format("jute: {} at byte {}: {}", name, at_, why);
}

bool JuteReader::Take(std::string_view name, std::size_t bytes) {
  if (failed_) return false;
  if (remaining() < bytes) {
    Fail(name, fmt::format("needs {} bytes, {} left", bytes, remaining()));
    return false;
  }
  return true;
}

std::uint64_t JuteReader::GetBig(std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<std::uint8_t>(in_[at_ + i]);
  at_ += bytes;
  return v;
}

void JuteReader::Int(std::string_view name, std::int32_t& v) {
  if (!Take(name, 4)) return;
  v = static_cast<std::int32_t>(static_cast<std::uint32_t>(GetBig(4)));
}

void JuteReader::Long(std::string_view name, std::int64_t& v) {
  if (!Take(name, 8)) return;
  v = static_cast<std::int64_t>(GetBig(8));
}

void JuteReader::Bool(std::string_view name, bool& v) {
  if (!Take(name, 1)) return;
  v = in_[at_++] != 0;  // any non-zero byte is true, as Java's readBoolean reads it
}

void JuteReader::OptionalBool(std::string_view name, std::optional<bool>& v) {
  v.reset();
  if (failed_ || at_end()) return;
  bool value = false;
  Bool(name, value);
  if (!failed_) v = value;
}

void JuteReader::Bytes(std::string_view name, std::string& out) {
  out.clear();
  was_null_ = false;
  std::int32_t length = 0;
  Int(name, length);
  if (failed_) return;
  if (length == -1) {
    was_null_ = true;
    return;
  }
  if (length < 0) {
    at_ -= 4;
    Fail(name, fmt::format("length {} is negative", length));
    return;
  }
  const std::size_t left = remaining();
  if (static_cast<std::size_t>(length) > left) {
    at_ -= 4;
    Fail(name, fmt::format("length {} runs past the {} bytes left", length, left));
    return;
  }
  out.assign(in_.substr(at_, static_cast<std::size_t>(length)));
  at_ += static_cast<std::size_t>(length);
}

std::size_t JuteReader::Count(std::string_view name, std::size_t element_bytes_min) {
  was_null_ = false;
  std::int32_t count = 0;
  Int(name, count);
  if (failed_) return 0;
  if (count < 0) {  // -1 is null; ZooKeeper loops over any other as empty
    was_null_ = true;
    return 0;
  }
  const auto n = static_cast<std::size_t>(count);
  if (n > elements_max_) {
    at_ -= 4;
    Fail(name, fmt::format("count {} is above the limit of {}", n, elements_max_));
    return 0;
  }
  const std::size_t left = remaining();
  if (n > left / element_bytes_min) {
    at_ -= 4;
    Fail(name, fmt::format("count {} cannot fit in the {} bytes left", n, left));
    return 0;
  }
  return n;
}

void JuteReader::Strings(std::string_view name, std::vector<std::string>& list) {
  const std::size_t count = Count(name, WireBytesMin(static_cast<std::string*>(nullptr)));
  const bool null = was_null_;
  list.clear();
  list.reserve(count);
  for (std::size_t i = 0; i < count && !failed_; ++i) Bytes(name, list.emplace_back());
  if (failed_) list.clear();
  was_null_ = null;
}

}  // namespace tenure::zk
