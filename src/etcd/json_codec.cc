#include "etcd/json_codec.h"

#include <charconv>
#include <limits>
#include <optional>

namespace tenure::etcd {
namespace {

// A JSON number or string holding an integer, as protobuf's JSON reads one:
// digits with an optional sign; an exponent or a fraction of zeros is
// refused (etcd's clients write integers as strings anyway).
bool ParseInteger(const ConfigValue& value, bool allow_negative, std::uint64_t* magnitude,
                  bool* negative) {
  if (value.kind != ConfigValue::Kind::kString && value.kind != ConfigValue::Kind::kNumber) {
    return false;
  }
  std::string_view text = value.text;
  *negative = !text.empty() && text.front() == '-';
  if (*negative) {
    if (!allow_negative) return false;
    text.remove_prefix(1);
  }
  if (text.empty() || text.size() > 20) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *magnitude);
  return ec == std::errc() && end == text.data() + text.size();
}

// Standard base64, or the URL-safe alphabet, padded or not.
std::optional<std::string> DecodeBase64(std::string text) {
  for (char& c : text) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (text.size() % 4 != 0) text.push_back('=');
  return Base64Decode(text);
}

}  // namespace

std::string JsonCamelName(std::string_view proto_name) {
  std::string out;
  bool upper = false;
  for (char c : proto_name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out.push_back(upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
    upper = false;
  }
  return out;
}

std::string ReadJsonObject(std::string_view text, ConfigValue* out) {
  std::size_t open = 0;
  for (char c : text) open += c == '{' || c == '[';
  if (open > kMaxJsonObjects) return "too many messages";
  JsonReadOptions options;
  options.max_depth = 3 * 34 + 8;  // a txn 32 deep: an object, a list and an op per level
  options.depth_counts_scalars = false;
  JsonReadError error;
  if (!ReadJson(text, options, out, &error)) {
    return error.kind == JsonReadErrorKind::kTooDeep ? "messages nested too deep"
                                                     : "malformed JSON";
  }
  return "";
}

bool JsonFieldDecoder::Take(std::string_view name) {
  if (matched_ || !error_->empty()) return false;
  if (member_.name != name && member_.name != JsonCamelName(name)) return false;
  matched_ = true;
  return true;
}

bool JsonFieldDecoder::UnsignedNumber(std::string_view name, std::uint64_t* out) {
  bool negative = false;
  if (!ParseInteger(member_.value, false, out, &negative)) {
    Fail("bad value " + member_.value.text + " of " + std::string(name));
    return false;
  }
  return true;
}

void JsonFieldDecoder::Int64(std::uint32_t /*n*/, std::string_view name, std::int64_t& v) {
  if (!Take(name)) return;
  std::uint64_t magnitude = 0;
  bool negative = false;
  const std::uint64_t max = std::numeric_limits<std::int64_t>::max();
  if (!ParseInteger(member_.value, true, &magnitude, &negative) ||
      magnitude > max + (negative ? 1 : 0)) {
    return Fail("bad value " + member_.value.text + " of " + std::string(name));
  }
  v = negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
}

void JsonFieldDecoder::Uint64(std::uint32_t /*n*/, std::string_view name, std::uint64_t& v) {
  if (!Take(name)) return;
  UnsignedNumber(name, &v);
}

void JsonFieldDecoder::Bool(std::uint32_t /*n*/, std::string_view name, bool& v) {
  if (!Take(name)) return;
  if (member_.value.kind != ConfigValue::Kind::kBool) {
    return Fail("bad value " + member_.value.text + " of " + std::string(name));
  }
  v = member_.value.boolean;
}

void JsonFieldDecoder::Bytes(std::uint32_t /*n*/, std::string_view name, std::string& v) {
  if (!Take(name)) return;
  std::optional<std::string> bytes;
  if (member_.value.kind == ConfigValue::Kind::kString) bytes = DecodeBase64(member_.value.text);
  if (!bytes) return Fail("bad base64 in " + std::string(name));
  v = std::move(*bytes);
}

void JsonFieldDecoder::String(std::uint32_t /*n*/, std::string_view name, std::string& v) {
  if (!Take(name)) return;
  if (member_.value.kind != ConfigValue::Kind::kString) {
    return Fail("bad value " + member_.value.text + " of " + std::string(name));
  }
  v = member_.value.text;
}

void JsonFieldDecoder::BytesList(std::uint32_t /*n*/, std::string_view name,
                                 std::vector<std::string>& v) {
  if (!Take(name)) return;
  if (member_.value.kind != ConfigValue::Kind::kList) {
    return Fail(std::string(name) + " is not a list");
  }
  for (const ConfigValue& item : member_.value.items) {
    std::optional<std::string> bytes;
    if (item.kind == ConfigValue::Kind::kString) bytes = DecodeBase64(item.text);
    if (!bytes) return Fail("bad base64 in " + std::string(name));
    v.push_back(std::move(*bytes));
  }
}

void JsonFieldDecoder::Strings(std::uint32_t /*n*/, std::string_view name,
                               std::vector<std::string>& v) {
  if (!Take(name)) return;
  if (member_.value.kind != ConfigValue::Kind::kList) {
    return Fail(std::string(name) + " is not a list");
  }
  for (const ConfigValue& item : member_.value.items) {
    if (item.kind != ConfigValue::Kind::kString) {
      return Fail("bad value " + item.text + " of " + std::string(name));
    }
    v.push_back(item.text);
  }
}

}  // namespace tenure::etcd
