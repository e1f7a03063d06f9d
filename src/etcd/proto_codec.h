// The protobuf coder of etcd's messages: walks a message's field list
// (etcd/messages.h) to write it, or to read one field of it. Unknown fields
// are skipped; an enum value the .proto does not define, a field of the
// wrong wire type, nesting past kMaxProtoDepth or more than
// kMaxProtoMessages messages in one request fail the decode (each with a
// reason), so a hostile message of a few bytes cannot make us allocate much.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/messages.h"
#include "etcd/proto_wire.h"

namespace tenure::etcd {

// A txn 32 deep is 66 message levels (request, then txn and op per level).
inline constexpr int kMaxProtoDepth = 72;
// Four times the bound on compares and ops in one txn (state/etcd_check.h):
// every op is two messages, so the txn's own check answers first.
inline constexpr std::size_t kMaxProtoMessages = 4096;

// Writes a message's fields with `Writer`: ProtoWriter appends the bytes to
// a string, ProtoCounter only counts them (the same walk, so the count is
// the encoding's length by construction).
template <typename Writer>
class BasicProtoEncoder {
 public:
  template <typename Out>
  explicit BasicProtoEncoder(Out* out) : w_(out) {}

  void Int64(std::uint32_t n, std::string_view /*name*/, const std::int64_t& v) {
    if (v != 0) w_.VarintField(n, static_cast<std::uint64_t>(v));
  }
  void Uint64(std::uint32_t n, std::string_view /*name*/, const std::uint64_t& v) {
    if (v != 0) w_.VarintField(n, v);
  }
  void Bool(std::uint32_t n, std::string_view /*name*/, const bool& v) {
    if (v) w_.VarintField(n, 1);
  }
  void Bytes(std::uint32_t n, std::string_view /*name*/, const std::string& v) {
    if (!v.empty()) w_.LengthField(n, v);
  }
  void String(std::uint32_t n, std::string_view name, const std::string& v) { Bytes(n, name, v); }
  template <typename E, std::size_t N>
  void Enum(std::uint32_t n, std::string_view /*name*/, const E& v,
            const std::array<std::string_view, N>& /*names*/) {
    if (v != E{}) w_.VarintField(n, static_cast<std::uint64_t>(v));
  }
  template <typename M>
  void Message(std::uint32_t n, std::string_view /*name*/, const M& m) {
    Nested(n, m);
  }
  template <typename M>
  void Optional(std::uint32_t n, std::string_view /*name*/, const M& m, const bool& present) {
    if (present) Nested(n, m);
  }
  template <typename M>
  void Messages(std::uint32_t n, std::string_view /*name*/, const std::vector<M>& ms) {
    for (const M& m : ms) Nested(n, m);
  }
  template <typename M, typename K>
  void Oneof(std::uint32_t n, std::string_view /*name*/, const M& m, const K& kind, K which) {
    if (kind == which) Nested(n, m);
  }
  // A oneof member held as a vector of one (a type that nests itself).
  template <typename M, typename K>
  void Oneof(std::uint32_t n, std::string_view /*name*/, const std::vector<M>& m, const K& kind,
             K which) {
    if (kind == which) Nested(n, m.empty() ? M() : m.front());
  }
  // A body of a ResponseOp, led by its header holding only `revision`
  // (present even when empty, as etcd's applier makes every one).
  template <typename M, typename K>
  void OneofWithRevision(std::uint32_t n, std::string_view /*name*/, const M& m, const K& kind,
                         K which, const std::int64_t& revision) {
    if (kind != which) return;
    const std::size_t at = w_.BeginNested(n);
    Nested(1, ResponseHeader{.revision = revision});
    Fields(*this, m);
    w_.EndNested(at);
  }
  template <typename M, typename K>
  void OneofWithRevision(std::uint32_t n, std::string_view name, const std::vector<M>& m,
                         const K& kind, K which, const std::int64_t& revision) {
    OneofWithRevision(n, name, m.empty() ? M() : m.front(), kind, which, revision);
  }
  // A set oneof member is written even when zero.
  template <typename K>
  void OneofInt64(std::uint32_t n, std::string_view /*name*/, const std::int64_t& v, const K& kind,
                  K which) {
    if (kind == which) w_.VarintField(n, static_cast<std::uint64_t>(v));
  }
  template <typename K>
  void OneofBytes(std::uint32_t n, std::string_view /*name*/, const std::string& v, const K& kind,
                  K which) {
    if (kind == which) w_.LengthField(n, v);
  }
  void BytesList(std::uint32_t n, std::string_view /*name*/, const std::vector<std::string>& v) {
    for (const std::string& item : v) w_.LengthField(n, item);
  }
  void Strings(std::uint32_t n, std::string_view name, const std::vector<std::string>& v) {
    BytesList(n, name, v);
  }
  template <typename E, std::size_t N>
  void EnumList(std::uint32_t n, std::string_view /*name*/, const std::vector<E>& v,
                const std::array<std::string_view, N>& /*names*/) {
    if (v.empty()) return;
    std::string packed;
    ProtoWriter packer(&packed);
    for (E e : v) packer.Varint(static_cast<std::uint64_t>(e));
    w_.LengthField(n, packed);
  }

 private:
  template <typename M>
  void Nested(std::uint32_t n, const M& m) {
    const std::size_t at = w_.BeginNested(n);
    Fields(*this, m);
    w_.EndNested(at);
  }

  Writer w_;
};
using ProtoEncoder = BasicProtoEncoder<ProtoWriter>;

// Appends `m`'s encoding to *out.
template <typename M>
void EncodeProto(const M& m, std::string* out) {
  ProtoEncoder encoder(out);
  Fields(encoder, m);
}

// The bytes of `m`'s encoding (EncodeProto's), counted without writing
// them.
template <typename M>
std::size_t ProtoSize(const M& m) {
  std::size_t bytes = 0;
  BasicProtoEncoder<ProtoCounter> counter(&bytes);
  Fields(counter, m);
  return bytes;
}

// Reads one field (the reader's current one) into whichever member the
// field list gives that number.
class ProtoFieldDecoder {
 public:
  struct Budget {
    std::size_t messages_left = kMaxProtoMessages;
    std::string error;  // why the decode failed, when it did
  };
  ProtoFieldDecoder(ProtoReader& r, int depth, Budget& budget, int& union_seen)
      : r_(r), field_(r.field()), depth_(depth), budget_(budget), union_seen_(union_seen) {}
  bool matched() const { return matched_; }

  void Int64(std::uint32_t n, std::string_view /*name*/, std::int64_t& v) {
    if (Take(n)) v = static_cast<std::int64_t>(r_.Varint());
  }
  void Uint64(std::uint32_t n, std::string_view /*name*/, std::uint64_t& v) {
    if (Take(n)) v = r_.Varint();
  }
  void Bool(std::uint32_t n, std::string_view /*name*/, bool& v) {
    if (Take(n)) v = r_.Varint() != 0;
  }
  void Bytes(std::uint32_t n, std::string_view /*name*/, std::string& v) {
    if (Take(n)) v = std::string(r_.Bytes());
  }
  void String(std::uint32_t n, std::string_view name, std::string& v) { Bytes(n, name, v); }
  template <typename E, std::size_t N>
  void Enum(std::uint32_t n, std::string_view name, E& v,
            const std::array<std::string_view, N>& /*names*/) {
    if (!Take(n)) return;
    const std::uint64_t value = r_.Varint();
    if (value >= N) {
      Fail("unknown value " + std::to_string(static_cast<std::int64_t>(value)) + " of " +
           std::string(name));
      return;
    }
    v = static_cast<E>(value);
  }
  template <typename M>
  void Message(std::uint32_t n, std::string_view /*name*/, M& m) {
    if (Take(n)) Nested(m);
  }
  template <typename M>
  void Optional(std::uint32_t n, std::string_view /*name*/, M& m, bool& present) {
    if (!Take(n)) return;
    present = true;
    Nested(m);
  }
  template <typename M>
  void Messages(std::uint32_t n, std::string_view /*name*/, std::vector<M>& ms) {
    if (Take(n)) Nested(ms.emplace_back());
  }
  template <typename M, typename K>
  void Oneof(std::uint32_t n, std::string_view /*name*/, M& m, K& kind, K which) {
    if (!Take(n)) return;
    kind = which;
    Nested(m);
  }
  template <typename M, typename K>
  void Oneof(std::uint32_t n, std::string_view /*name*/, std::vector<M>& m, K& kind, K which) {
    if (!Take(n)) return;
    kind = which;
    if (m.empty()) m.emplace_back();
    Nested(m.front());
  }
  template <typename M, typename K>
  void OneofWithRevision(std::uint32_t n, std::string_view /*name*/, M& m, K& kind, K which,
                         std::int64_t& revision) {
    if (!Take(n)) return;
    kind = which;
    NestedWithHeader(m, revision);
  }
  template <typename M, typename K>
  void OneofWithRevision(std::uint32_t n, std::string_view /*name*/, std::vector<M>& m, K& kind,
                         K which, std::int64_t& revision) {
    if (!Take(n)) return;
    kind = which;
    if (m.empty()) m.emplace_back();
    NestedWithHeader(m.front(), revision);
  }
  // The member read last is the one set (NormalizeDecoded sorts it out).
  template <typename K>
  void OneofInt64(std::uint32_t n, std::string_view /*name*/, std::int64_t& v, K& /*kind*/,
                  K which) {
    if (!Take(n)) return;
    v = static_cast<std::int64_t>(r_.Varint());
    union_seen_ = static_cast<int>(which);
  }
  template <typename K>
  void OneofBytes(std::uint32_t n, std::string_view /*name*/, std::string& v, K& /*kind*/,
                  K which) {
    if (!Take(n)) return;
    v = std::string(r_.Bytes());
    union_seen_ = static_cast<int>(which);
  }

  void BytesList(std::uint32_t n, std::string_view /*name*/, std::vector<std::string>& v) {
    if (!Take(n)) return;
    if (budget_.messages_left == 0) return Fail("too many messages");
    --budget_.messages_left;
    v.emplace_back(r_.Bytes());
  }
  void Strings(std::uint32_t n, std::string_view name, std::vector<std::string>& v) {
    BytesList(n, name, v);
  }
  // Packed (as proto3 writes them) or one by one (as proto2 did).
  template <typename E, std::size_t N>
  void EnumList(std::uint32_t n, std::string_view name, std::vector<E>& v,
                const std::array<std::string_view, N>& /*names*/) {
    if (!Take(n)) return;
    auto add = [&](std::uint64_t value) {
      if (value >= N) {
        Fail("unknown value " + std::to_string(static_cast<std::int64_t>(value)) + " of " +
             std::string(name));
        return false;
      }
      v.push_back(static_cast<E>(value));
      return true;
    };
    if (r_.type() != WireType::kLength) {
      add(r_.Varint());
      return;
    }
    const std::string_view packed = r_.Bytes();
    if (r_.failed()) return;
    ProtoReader items(packed);
    while (!items.at_end()) {
      std::uint64_t value = 0;
      if (!items.ReadPackedVarint(&value)) return Fail("malformed protobuf");
      if (!add(value)) return;
    }
  }

  template <typename M>
  static void Decode(std::string_view in, M& m, int depth, Budget& budget) {
    ProtoReader r(in);
    int union_seen = -1;
    while (budget.error.empty() && r.Next()) {
      ProtoFieldDecoder field(r, depth, budget, union_seen);
      Fields(field, m);
      if (!field.matched()) r.Skip();
    }
    if (r.failed() && budget.error.empty()) budget.error = "malformed protobuf";
    NormalizeDecoded(m, union_seen);
  }

 private:
  bool Take(std::uint32_t n) {
    if (n != field_ || matched_ || !budget_.error.empty()) return false;
    matched_ = true;
    return true;
  }
  void Fail(std::string why) {
    if (budget_.error.empty()) budget_.error = std::move(why);
    r_.Fail();
  }
  // A ResponseOp's body: its header's revision, then its own fields.
  template <typename M>
  void NestedWithHeader(M& m, std::int64_t& revision) {
    Response<M> headed;
    Nested(headed);
    m = std::move(headed.body);
    revision = headed.header.revision;
  }
  template <typename M>
  void Nested(M& m) {
    const std::string_view bytes = r_.Bytes();
    if (r_.failed()) return;
    if (depth_ + 1 > kMaxProtoDepth) return Fail("messages nested too deep");
    if (budget_.messages_left == 0) return Fail("too many messages");
    --budget_.messages_left;
    Decode(bytes, m, depth_ + 1, budget_);
    if (!budget_.error.empty()) r_.Fail();
  }

  ProtoReader& r_;
  std::uint32_t field_;
  int depth_;
  Budget& budget_;
  int& union_seen_;
  bool matched_ = false;
};

// Decodes `in` into *m (which starts as the caller made it: proto3 merges
// into defaults). Returns the empty string, or why the bytes were refused.
template <typename M>
std::string DecodeProto(std::string_view in, M* m) {
  ProtoFieldDecoder::Budget budget;
  ProtoFieldDecoder::Decode(in, *m, 0, budget);
  return budget.error;
}

}  // namespace tenure::etcd
