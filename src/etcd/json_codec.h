// The JSON coder of etcd's gateway (decision 0048 section 5): walks a
// message's field list (etcd/messages.h) as etcd 3.4's grpc-gateway writes
// and reads protobuf's JSON: proto field names, 64-bit integers as strings,
// bytes in base64, enums by name, fields at their default left out (a set
// oneof member is written even when zero, as protobuf's own encoding does).
// Reading takes either name style (proto's, or lowerCamelCase), integers as
// strings or numbers, enums by name or number, null as absent; a member no
// field has is skipped. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/base64.h"
#include "common/config_text.h"
#include "common/json_string.h"
#include "etcd/messages.h"

namespace tenure::etcd {

// protobuf's JSON name of a field: lowerCamelCase of its proto name.
std::string JsonCamelName(std::string_view proto_name);

class JsonEncoder {
 public:
  explicit JsonEncoder(std::string* out) : out_(out) {}

  void Int64(std::uint32_t /*n*/, std::string_view name, const std::int64_t& v) {
    if (v != 0) Quoted(name, std::to_string(v));
  }
  void Uint64(std::uint32_t /*n*/, std::string_view name, const std::uint64_t& v) {
    if (v != 0) Quoted(name, std::to_string(v));
  }
  void Bool(std::uint32_t /*n*/, std::string_view name, const bool& v) {
    if (!v) return;
    Name(name);
    out_->append("true");
  }
  void Bytes(std::uint32_t /*n*/, std::string_view name, const std::string& v) {
    if (!v.empty()) Quoted(name, Base64Encode(v));
  }
  void String(std::uint32_t /*n*/, std::string_view name, const std::string& v) {
    if (v.empty()) return;
    Name(name);
    json::AppendString(out_, v);
  }
  template <typename E, std::size_t N>
  void Enum(std::uint32_t /*n*/, std::string_view name, const E& v,
            const std::array<std::string_view, N>& names) {
    const auto value = static_cast<std::size_t>(v);
    if (value == 0) return;
    if (value < N) {
      Quoted(name, std::string(names[value]));
    } else {
      Name(name);
      out_->append(std::to_string(value));
    }
  }
  template <typename M>
  void Message(std::uint32_t /*n*/, std::string_view name, const M& m) {
    Name(name);
    Nested(m);
  }
  template <typename M>
  void Optional(std::uint32_t n, std::string_view name, const M& m, const bool& present) {
    if (present) Message(n, name, m);
  }
  template <typename M>
  void Messages(std::uint32_t /*n*/, std::string_view name, const std::vector<M>& ms) {
    if (ms.empty()) return;
    Name(name);
    out_->push_back('[');
    for (std::size_t i = 0; i < ms.size(); ++i) {
      if (i > 0) out_->push_back(',');
      Nested(ms[i]);
    }
    out_->push_back(']');
  }
  template <typename M, typename K>
  void Oneof(std::uint32_t n, std::string_view name, const M& m, const K& kind, K which) {
    if (kind == which) Message(n, name, m);
  }
  template <typename M, typename K>
  void Oneof(std::uint32_t n, std::string_view name, const std::vector<M>& m, const K& kind,
             K which) {
    if (kind == which) Message(n, name, m.empty() ? M() : m.front());
  }
  // A body of a ResponseOp, led by its header holding only `revision`
  // (present even when empty, as etcd's applier makes every one).
  template <typename M, typename K>
  void OneofWithRevision(std::uint32_t /*n*/, std::string_view name, const M& m, const K& kind,
                         K which, const std::int64_t& revision) {
    if (kind != which) return;
    Name(name);
    JsonEncoder inner(out_);
    out_->push_back('{');
    inner.Message(1, "header", ResponseHeader{.revision = revision});
    Fields(inner, m);
    out_->push_back('}');
  }
  template <typename M, typename K>
  void OneofWithRevision(std::uint32_t n, std::string_view name, const std::vector<M>& m,
                         const K& kind, K which, const std::int64_t& revision) {
    OneofWithRevision(n, name, m.empty() ? M() : m.front(), kind, which, revision);
  }
  template <typename K>
  void OneofInt64(std::uint32_t /*n*/, std::string_view name, const std::int64_t& v, const K& kind,
                  K which) {
    if (kind == which) Quoted(name, std::to_string(v));
  }
  template <typename K>
  void OneofBytes(std::uint32_t /*n*/, std::string_view name, const std::string& v, const K& kind,
                  K which) {
    if (kind == which) Quoted(name, Base64Encode(v));
  }

  void BytesList(std::uint32_t /*n*/, std::string_view name, const std::vector<std::string>& v) {
    List(name, v, [](const std::string& item) { return Base64Encode(item); });
  }
  void Strings(std::uint32_t /*n*/, std::string_view name, const std::vector<std::string>& v) {
    List(name, v, [](const std::string& item) { return item; });
  }
  template <typename E, std::size_t N>
  void EnumList(std::uint32_t /*n*/, std::string_view name, const std::vector<E>& v,
                const std::array<std::string_view, N>& names) {
    List(name, v, [&](E e) { return std::string(names[static_cast<std::size_t>(e)]); });
  }

  template <typename M>
  void Nested(const M& m) {
    JsonEncoder inner(out_);
    out_->push_back('{');
    Fields(inner, m);
    out_->push_back('}');
  }

 private:
  void Name(std::string_view name) {
    if (!first_) out_->push_back(',');
    first_ = false;
    out_->push_back('"');
    out_->append(name);  // proto names need no escaping
    out_->append("\":");
  }
  void Quoted(std::string_view name, const std::string& text) {
    Name(name);
    json::AppendString(out_, text);
  }
  template <typename T, typename Text>
  void List(std::string_view name, const std::vector<T>& items, Text text) {
    if (items.empty()) return;
    Name(name);
    out_->push_back('[');
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_->push_back(',');
      json::AppendString(out_, text(items[i]));
    }
    out_->push_back(']');
  }

  std::string* out_;
  bool first_ = true;
};

// Appends `m` as one JSON object.
template <typename M>
void EncodeJson(const M& m, std::string* out) {
  JsonEncoder(out).Nested(m);
}

// Reads `text` as one JSON value, nesting bounded, and refuses one with more
// objects and lists than a request may hold messages (kMaxJsonObjects)
// before it builds the tree. Returns the empty string, or why it refused.
std::string ReadJsonObject(std::string_view text, ConfigValue* out);
inline constexpr std::size_t kMaxJsonObjects = 8192;

// Reads one object's member into whichever field it names.
class JsonFieldDecoder {
 public:
  JsonFieldDecoder(const ConfigMember& member, std::string* error)
      : member_(member), error_(error) {}
  bool matched() const { return matched_; }

  void Int64(std::uint32_t /*n*/, std::string_view name, std::int64_t& v);
  void Uint64(std::uint32_t /*n*/, std::string_view name, std::uint64_t& v);
  void Bool(std::uint32_t /*n*/, std::string_view name, bool& v);
  void Bytes(std::uint32_t /*n*/, std::string_view name, std::string& v);
  void String(std::uint32_t /*n*/, std::string_view name, std::string& v);
  template <typename E, std::size_t N>
  void Enum(std::uint32_t /*n*/, std::string_view name, E& v,
            const std::array<std::string_view, N>& names) {
    if (!Take(name)) return;
    const ConfigValue& value = member_.value;
    if (value.kind == ConfigValue::Kind::kString) {
      for (std::size_t i = 0; i < N; ++i) {
        if (names[i] == value.text) {
          v = static_cast<E>(i);
          return;
        }
      }
      return Fail("unknown value " + value.text + " of " + std::string(name));
    }
    std::uint64_t number = 0;
    if (!UnsignedNumber(name, &number)) return;
    if (number >= N) return Fail("unknown value " + value.text + " of " + std::string(name));
    v = static_cast<E>(number);
  }
  template <typename M>
  void Message(std::uint32_t /*n*/, std::string_view name, M& m) {
    if (Take(name)) DecodeObject(member_.value, m, error_);
  }
  template <typename M>
  void Optional(std::uint32_t /*n*/, std::string_view name, M& m, bool& present) {
    if (!Take(name)) return;
    present = true;
    DecodeObject(member_.value, m, error_);
  }
  template <typename M>
  void Messages(std::uint32_t /*n*/, std::string_view name, std::vector<M>& ms) {
    if (!Take(name)) return;
    if (member_.value.kind != ConfigValue::Kind::kList) {
      return Fail(std::string(name) + " is not a list");
    }
    for (const ConfigValue& item : member_.value.items) {
      DecodeObject(item, ms.emplace_back(), error_);
      if (!error_->empty()) return;
    }
  }
  template <typename M, typename K>
  void Oneof(std::uint32_t /*n*/, std::string_view name, M& m, K& kind, K which) {
    if (!Take(name)) return;
    kind = which;
    DecodeObject(member_.value, m, error_);
  }
  template <typename M, typename K>
  void Oneof(std::uint32_t /*n*/, std::string_view name, std::vector<M>& m, K& kind, K which) {
    if (!Take(name)) return;
    kind = which;
    if (m.empty()) m.emplace_back();
    DecodeObject(member_.value, m.front(), error_);
  }
  template <typename M, typename K>
  void OneofWithRevision(std::uint32_t /*n*/, std::string_view name, M& m, K& kind, K which,
                         std::int64_t& revision) {
    if (!Take(name)) return;
    kind = which;
    ObjectWithHeader(m, revision);
  }
  template <typename M, typename K>
  void OneofWithRevision(std::uint32_t /*n*/, std::string_view name, std::vector<M>& m, K& kind,
                         K which, std::int64_t& revision) {
    if (!Take(name)) return;
    kind = which;
    if (m.empty()) m.emplace_back();
    ObjectWithHeader(m.front(), revision);
  }
  // A ResponseOp's body: its header's revision, then its own fields.
  template <typename M>
  void ObjectWithHeader(M& m, std::int64_t& revision) {
    Response<M> headed;
    DecodeObject(member_.value, headed, error_);
    m = std::move(headed.body);
    revision = headed.header.revision;
  }
  template <typename K>
  void OneofInt64(std::uint32_t n, std::string_view name, std::int64_t& v, K& kind, K which) {
    const bool was = matched_;
    Int64(n, name, v);
    if (!was && matched_) union_seen_ = static_cast<int>(which);
    (void)kind;
  }
  template <typename K>
  void OneofBytes(std::uint32_t n, std::string_view name, std::string& v, K& kind, K which) {
    const bool was = matched_;
    Bytes(n, name, v);
    if (!was && matched_) union_seen_ = static_cast<int>(which);
    (void)kind;
  }
  void BytesList(std::uint32_t /*n*/, std::string_view name, std::vector<std::string>& v);
  void Strings(std::uint32_t /*n*/, std::string_view name, std::vector<std::string>& v);
  template <typename E, std::size_t N>
  void EnumList(std::uint32_t /*n*/, std::string_view name, std::vector<E>& v,
                const std::array<std::string_view, N>& names) {
    if (!Take(name)) return;
    if (member_.value.kind != ConfigValue::Kind::kList) {
      return Fail(std::string(name) + " is not a list");
    }
    for (const ConfigValue& item : member_.value.items) {
      std::size_t i = 0;
      while (i < N && !(item.kind == ConfigValue::Kind::kString && names[i] == item.text) &&
             !(item.kind == ConfigValue::Kind::kNumber && item.text == std::to_string(i))) {
        ++i;
      }
      if (i == N) return Fail("unknown value " + item.text + " of " + std::string(name));
      v.push_back(static_cast<E>(i));
    }
  }
  int union_seen() const { return union_seen_; }

  // Decodes a JSON object into *m; null leaves it as it is.
  template <typename M>
  static void DecodeObject(const ConfigValue& value, M& m, std::string* error) {
    if (value.kind == ConfigValue::Kind::kNull) return;
    if (value.kind != ConfigValue::Kind::kObject) {
      *error = "expected an object";
      return;
    }
    int union_seen = -1;
    for (const ConfigMember& member : value.members) {
      if (member.value.kind == ConfigValue::Kind::kNull) continue;
      JsonFieldDecoder field(member, error);
      Fields(field, m);
      if (!error->empty()) return;
      if (field.union_seen() >= 0) union_seen = field.union_seen();
    }
    NormalizeDecoded(m, union_seen);
  }

 private:
  bool Take(std::string_view name);
  void Fail(std::string why) {
    if (error_->empty()) *error_ = std::move(why);
  }
  bool UnsignedNumber(std::string_view name, std::uint64_t* out);

  const ConfigMember& member_;
  std::string* error_;
  bool matched_ = false;
  int union_seen_ = -1;
};

// Reads `text` (one JSON object) into *m. Returns the empty string, or why
// the text was refused.
template <typename M>
std::string DecodeJson(std::string_view text, M* m) {
  ConfigValue value;
  std::string error = ReadJsonObject(text, &value);
  if (error.empty()) JsonFieldDecoder::DecodeObject(value, *m, &error);
  return error;
}

}  // namespace tenure::etcd
