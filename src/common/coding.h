// Byte encoding for raft entries and snapshots: little-endian fixed-width
// integers, LEB128 varints, length-prefixed byte strings. The grammar of each
// format that uses these lives in docs/formats.md. Pure, header-only.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/types.h"

namespace tenure {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

  void PutU8(std::uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void PutBool(bool v) { PutU8(v ? 1 : 0); }
  void PutFixed64(std::uint64_t v) {
    char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_->append(bytes, 8);
  }
  void PutFixed32(std::uint32_t v) {
    char bytes[4];
    for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_->append(bytes, 4);
  }
  void PutIndex(LogIndex index) { PutVarint(index.value()); }
  void PutVarint(std::uint64_t v) {
    while (v >= 0x80) {
      PutU8(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    PutU8(static_cast<std::uint8_t>(v));
  }
  void PutSignedVarint(std::int64_t v) {  // zig-zag
    PutVarint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void PutBytes(std::string_view bytes) {
    PutVarint(bytes.size());
    out_->append(bytes.data(), bytes.size());
  }
  std::string* out() { return out_; }

 private:
  std::string* out_;
};

// Reads what ByteWriter wrote. A short or malformed input sets failed() and
// every later read returns zero/empty, so callers check once at the end.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}

  bool failed() const { return failed_; }
  // Marks the input as malformed (a value out of its range).
  void Fail() { failed_ = true; }
  bool done() const { return in_.empty(); }
  std::size_t remaining() const { return in_.size(); }

  std::uint8_t GetU8() {
    if (!Need(1)) return 0;
    auto v = static_cast<std::uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return v;
  }
  bool GetBool() {
    std::uint8_t v = GetU8();
    if (v > 1) failed_ = true;
    return v == 1;
  }
  std::uint64_t GetFixed64() {
    if (!Need(8)) return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i)
      v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(in_[i])) << (8 * i);
    in_.remove_prefix(8);
    return v;
  }
  std::uint32_t GetFixed32() {
    if (!Need(4)) return 0;
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i)
      v |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(in_[i])) << (8 * i);
    in_.remove_prefix(4);
    return v;
  }
  LogIndex GetIndex() { return LogIndex(GetVarint()); }
  std::uint64_t GetVarint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!Need(1)) return 0;
      auto byte = static_cast<std::uint8_t>(in_[0]);
      in_.remove_prefix(1);
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    failed_ = true;
    return 0;
  }
  std::int64_t GetSignedVarint() {
    std::uint64_t v = GetVarint();
    return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  std::string_view GetBytes() {
    std::uint64_t n = GetVarint();
    if (failed_ || !Need(n)) return {};
    std::string_view v = in_.substr(0, n);
    in_.remove_prefix(n);
    return v;
  }
  std::string GetString() { return std::string(GetBytes()); }

 private:
  bool Need(std::uint64_t n) {
    if (failed_ || in_.size() < n) {
      failed_ = true;
      return false;
    }
    return true;
  }
  std::string_view in_;
  bool failed_ = false;
};

// 64-bit FNV-1a, used for state digests (not for security).
inline std::uint64_t Fnv1a64(std::string_view bytes, std::uint64_t seed = 1469598103934665603ull) {
  std::uint64_t h = seed;
  for (char c : bytes) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace tenure
