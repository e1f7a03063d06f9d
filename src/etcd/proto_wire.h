// Protobuf's wire format (proto3), as much as etcd's messages use: varint
// fields (int64 as two's complement, uint64, bool, enums), length-delimited
// fields (bytes, strings, nested messages, packed enums), and fixed32/64
// fields read only to be skipped. Pure: bytes in, bytes out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tenure::etcd {

enum class WireType : std::uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLength = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Appends fields to a string. Nested messages are encoded into a scratch
// string first, then written as a length-delimited field.
class ProtoWriter {
 public:
  explicit ProtoWriter(std::string* out) : out_(out) {}
  void Varint(std::uint64_t v);
  void Tag(std::uint32_t field, WireType type);
  void VarintField(std::uint32_t field, std::uint64_t v) {
    Tag(field, WireType::kVarint);
    Varint(v);
  }
  void LengthField(std::uint32_t field, std::string_view bytes) {
    Tag(field, WireType::kLength);
    Varint(bytes.size());
    out_->append(bytes);
  }
  // A nested message written in place, without a buffer of its own: its
  // tag and a length byte now, returning where that byte is; then its
  // fields; then EndNested writes the length, moving the body up where it
  // needs more than one byte (128 bytes or more), so the output is
  // protobuf's canonical one.
  std::size_t BeginNested(std::uint32_t field) {
    Tag(field, WireType::kLength);
    out_->push_back('\0');
    return out_->size() - 1;
  }
  void EndNested(std::size_t at);

  static constexpr std::size_t kVarintBytesMax = 10;
  // Writes `v` as a varint at `to` (room for kVarintBytesMax); its length.
  static std::size_t VarintBytes(std::uint64_t v, char* to);

 private:
  std::string* out_;
};

// The part of ProtoWriter's interface the encoder uses, counting the bytes
// it would write instead of writing them (ProtoSize: etcd's request-size
// rule measures a request as it would be encoded). A nested message's
// length is counted as ProtoWriter writes it: a byte at BeginNested, more
// at EndNested when the body needs them.
class ProtoCounter {
 public:
  explicit ProtoCounter(std::size_t* count) : count_(count) {}
  void VarintField(std::uint32_t field, std::uint64_t v) {
    *count_ += TagSize(field) + VarintSize(v);
  }
  void LengthField(std::uint32_t field, std::string_view bytes) {
    *count_ += TagSize(field) + VarintSize(bytes.size()) + bytes.size();
  }
  std::size_t BeginNested(std::uint32_t field) {
    *count_ += TagSize(field);
    return (*count_)++;
  }
  void EndNested(std::size_t at) { *count_ += VarintSize(*count_ - at - 1) - 1; }

 private:
  static std::size_t VarintSize(std::uint64_t v) {
    std::size_t n = 1;
    for (; v >= 0x80; v >>= 7) ++n;
    return n;
  }
  // Every wire type fits in the tag's low 3 bits, so it never adds a byte.
  static std::size_t TagSize(std::uint32_t field) { return VarintSize(std::uint64_t{field} << 3); }

  std::size_t* count_;
};

// Reads the fields of one message in order. Every read is bounded by the
// input; a malformed tag, a varint over 10 bytes, a length past the end, a
// field number 0 or a group (which proto3 never writes) sets failed() and
// ends the message.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view in) : in_(in) {}
  // Reads the next field's tag; false at the end of the input or on failure.
  bool Next();
  std::uint32_t field() const { return field_; }
  WireType type() const { return type_; }
  // The current field's value. A call that does not match the field's wire
  // type fails the reader.
  std::uint64_t Varint();
  std::string_view Bytes();
  // Skips the current field's value, whatever its type.
  void Skip();
  // The elements of a packed repeated field, read from a reader over its
  // bytes: one varint, false if malformed.
  bool ReadPackedVarint(std::uint64_t* v) { return ReadVarint(v); }
  bool at_end() const { return pos_ >= in_.size(); }
  void Fail() { failed_ = true; }
  bool failed() const { return failed_; }

 private:
  bool ReadVarint(std::uint64_t* v);
  std::string_view in_;
  std::size_t pos_ = 0;
  std::uint32_t field_ = 0;
  WireType type_ = WireType::kVarint;
  bool failed_ = false;
};

}  // namespace tenure::etcd
