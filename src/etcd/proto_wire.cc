#include "etcd/proto_wire.h"

namespace tenure::etcd {

std::size_t ProtoWriter::VarintBytes(std::uint64_t v, char* to) {
  std::size_t n = 0;
  while (v >= 0x80) {
    to[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  to[n++] = static_cast<char>(v);
  return n;
}

// One append, not a push_back a byte (each of which checks the capacity).
void ProtoWriter::Varint(std::uint64_t v) {
  char bytes[kVarintBytesMax];
  out_->append(bytes, VarintBytes(v, bytes));
}

void ProtoWriter::EndNested(std::size_t at) {
  const std::size_t body = out_->size() - at - 1;
  char length[kVarintBytesMax];
  const std::size_t n = VarintBytes(body, length);
  if (n > 1) out_->insert(at + 1, n - 1, '\0');  // the body moves up to make room
  out_->replace(at, n, length, n);
}

void ProtoWriter::Tag(std::uint32_t field, WireType type) {
  Varint((std::uint64_t{field} << 3) | static_cast<std::uint64_t>(type));
}

bool ProtoReader::ReadVarint(std::uint64_t* v) {
  std::uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= in_.size()) return false;
    const auto byte = static_cast<std::uint8_t>(in_[pos_++]);
    result |= std::uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;  // more than 10 bytes
}

bool ProtoReader::Next() {
  if (failed_ || pos_ >= in_.size()) return false;
  std::uint64_t tag = 0;
  if (!ReadVarint(&tag) || tag > 0xffffffffu) {
    failed_ = true;
    return false;
  }
  field_ = static_cast<std::uint32_t>(tag >> 3);
  const auto type = static_cast<std::uint8_t>(tag & 7);
  // Field numbers run from 1 to 2^29 - 1; groups are proto2's.
  if (field_ == 0 || field_ >= (1u << 29) || type == 3 || type == 4 || type > 5) {
    failed_ = true;
    return false;
  }
  type_ = static_cast<WireType>(type);
  return true;
}

std::uint64_t ProtoReader::Varint() {
  std::uint64_t v = 0;
  if (type_ != WireType::kVarint || !ReadVarint(&v)) failed_ = true;
  return failed_ ? 0 : v;
}

std::string_view ProtoReader::Bytes() {
  std::uint64_t n = 0;
  if (type_ != WireType::kLength || !ReadVarint(&n) || n > in_.size() - pos_) {
    failed_ = true;
    return {};
  }
  std::string_view out = in_.substr(pos_, static_cast<std::size_t>(n));
  pos_ += static_cast<std::size_t>(n);
  return out;
}

void ProtoReader::Skip() {
  switch (type_) {
    case WireType::kVarint:
      Varint();
      return;
    case WireType::kLength:
      Bytes();
      return;
    case WireType::kFixed64:
    case WireType::kFixed32: {
      const std::size_t n = type_ == WireType::kFixed64 ? 8 : 4;
      if (in_.size() - pos_ < n) {
        failed_ = true;
      } else {
        pos_ += n;
      }
      return;
    }
    case WireType::kStartGroup:
    case WireType::kEndGroup:
      failed_ = true;
      return;
  }
}

}  // namespace tenure::etcd
