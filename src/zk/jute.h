// ZooKeeper's jute serialization, as its client protocol uses it:
// big-endian int (4 bytes) and long (8), boolean (1 byte, 0 or 1), buffer
// and ustring (an int length, then the bytes; -1 is null: kazoo writes an
// empty string so), vector (an int count, then the elements; -1 is null). Records are fields in
// order, with no tags and no framing of their own (docs/zookeeper-compat.md, "Wire").
//
// Each record (zk/records.h) lists its fields once in a `Fields(v, r)`
// function; JuteReader and JuteWriter are the two visitors that walk it,
// so a record's layout is written in one place. Pure: bytes in, bytes out.
//
// A boolean reads any non-zero byte as true (Java's readBoolean) and
// writes 1. Reading is bounded by its input: a length or count past the
// bytes left, or a count above the reader's element limit fails the reader with a message naming
// the field and the byte, and every later read is skipped, so a caller checks failed() once at the
// end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tenure::zk {

class JuteWriter {
 public:
  explicit JuteWriter(std::string* out) : out_(out) {}

  void Int(std::string_view, std::int32_t v) { PutBig(static_cast<std::uint32_t>(v), 4); }
  void Long(std::string_view, std::int64_t v) { PutBig(static_cast<std::uint64_t>(v), 8); }
  void Bool(std::string_view, bool v) { out_->push_back(v ? '\1' : '\0'); }
  void Buffer(std::string_view name, const std::string& bytes) { Bytes(name, bytes); }
  void String(std::string_view name, const std::string& text) { Bytes(name, text); }
  // A trailing optional field (ConnectRequest's readOnly): written if set.
  void OptionalBool(std::string_view name, const std::optional<bool>& v) {
    if (v.has_value()) Bool(name, *v);
  }
  template <typename R>
  void Record(std::string_view, const R& record) {
    Fields(*this, const_cast<R&>(record));  // the writer only reads
  }
  void Strings(std::string_view name, const std::vector<std::string>& list) {
    Int(name, static_cast<std::int32_t>(list.size()));
    for (const std::string& s : list) Bytes(name, s);
  }
  template <typename R>
  void Records(std::string_view name, const std::vector<R>& list) {
    Int(name, static_cast<std::int32_t>(list.size()));
    for (const R& r : list) Record(name, r);
  }
  // For the visitors: writers never fail.
  bool failed() const { return false; }

 private:
  void Bytes(std::string_view, std::string_view bytes) {
    PutBig(static_cast<std::uint32_t>(bytes.size()), 4);
    out_->append(bytes);
  }
  // One append a field: a byte at a time cost a Stat's 68 bytes about
  // 2,000 instructions (callgrind, bench/etcd_instructions.py --apis zk).
  void PutBig(std::uint64_t v, int bytes) {
    char big[8];
    for (int i = 0; i < bytes; ++i) {
      big[i] = static_cast<char>((v >> (8 * (bytes - 1 - i))) & 0xff);
    }
    out_->append(big, static_cast<std::size_t>(bytes));
  }
  std::string* out_;
};

struct Acl;
struct ClientInfo;
// The fewest bytes one element of a vector takes on the wire: a count that
// cannot fit in the bytes left is refused before any room is taken.
constexpr std::size_t WireBytesMin(const Acl*) { return 12; }  // perms, scheme, id
constexpr std::size_t WireBytesMin(const ClientInfo*) { return 8; }
constexpr std::size_t WireBytesMin(const std::string*) { return 4; }

class JuteReader {
 public:
  // `elements_max`: the most elements any one vector may announce. Each
  // element needs its bytes too (WireBytesMin), so the input bounds them
  // anyway: decoded, a frame holds at most about 8.5 times its bytes (an
  // empty string is 4 bytes on the wire and a 32-byte std::string here).
  explicit JuteReader(std::string_view in, std::size_t elements_max = kElementsMax)
      : in_(in), elements_max_(elements_max) {}

  static constexpr std::size_t kElementsMax = 1 << 20;
  // The reader keeps a view: never of a temporary.
  explicit JuteReader(std::string&&, std::size_t = kElementsMax) = delete;

  void Int(std::string_view name, std::int32_t& v);
  void Long(std::string_view name, std::int64_t& v);
  void Bool(std::string_view name, bool& v);
  // A null buffer or string (length -1) reads as empty; was_null() tells.
  // Another negative length fails, as ZooKeeper's checkLength refuses it.
  void Buffer(std::string_view name, std::string& bytes) { Bytes(name, bytes); }
  void String(std::string_view name, std::string& text) { Bytes(name, text); }
  void OptionalBool(std::string_view name, std::optional<bool>& v);
  template <typename R>
  void Record(std::string_view, R& record) {
    if (!failed_) Fields(*this, record);
  }
  void Strings(std::string_view name, std::vector<std::string>& list);
  // A vector whose count is negative reads as empty, as ZooKeeper's
  // generated code loops over it (was_null() tells); its elements' room
  // is taken at once, the count bounded by the bytes left.
  template <typename R>
  void Records(std::string_view name, std::vector<R>& list) {
    const std::size_t count = Count(name, WireBytesMin(static_cast<R*>(nullptr)));
    const bool null = was_null_;
    list.clear();
    list.reserve(count);
    for (std::size_t i = 0; i < count && !failed_; ++i) Record(name, list.emplace_back());
    if (failed_) list.clear();
    was_null_ = null;
  }

  bool failed() const { return failed_; }
  // What failed: "jute: <field> at byte <n>: <why>".
  const std::string& error() const { return error_; }
  bool was_null() const { return was_null_; }
  std::size_t position() const { return at_; }
  std::size_t remaining() const { return in_.size() - at_; }
  bool at_end() const { return at_ == in_.size(); }
  void Fail(std::string_view name, std::string_view why);

 private:
  void Bytes(std::string_view name, std::string& out);
  bool Take(std::string_view name, std::size_t bytes);
  std::uint64_t GetBig(std::size_t bytes);
  std::size_t Count(std::string_view name, std::size_t element_bytes_min);

  std::string_view in_;
  std::size_t elements_max_;
  std::size_t at_ = 0;
  bool failed_ = false;
  bool was_null_ = false;
  std::string error_;
};

// The whole of `bytes` as one record R; nullopt (and `*error` set) if it
// does not parse or bytes are left over.
template <typename R>
std::optional<R> DecodeRecord(std::string_view bytes, std::string* error = nullptr) {
  JuteReader reader(bytes);
  R record{};
  Fields(reader, record);
  if (!reader.failed() && !reader.at_end()) {
    reader.Fail("record", std::to_string(reader.remaining()) + " bytes after its end");
  }
  if (reader.failed()) {
    if (error != nullptr) *error = reader.error();
    return std::nullopt;
  }
  return record;
}

template <typename R>
void EncodeRecord(const R& record, std::string* out) {
  JuteWriter writer(out);
  writer.Record("record", record);
}

template <typename R>
std::string EncodeRecord(const R& record) {
  std::string out;
  EncodeRecord(record, &out);
  return out;
}

}  // namespace tenure::zk
