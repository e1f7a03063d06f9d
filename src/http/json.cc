#include "http/json.h"

#include <algorithm>
#include <limits>

#include "common/base64.h"
#include "common/rfc3339.h"

namespace tenure::http::json {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendUnicodeEscape(std::string* out, unsigned code) {
  *out += "\\u";
  *out += kHex[(code >> 12) & 0xf];
  *out += kHex[(code >> 8) & 0xf];
  *out += kHex[(code >> 4) & 0xf];
  *out += kHex[code & 0xf];
}

// Length of the valid UTF-8 sequence at text[i], or 0 if invalid.
std::size_t Utf8Length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  std::size_t n;
  unsigned min;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    min = 0x10000;
  } else
    return 0;
  if (i + n > text.size()) return 0;
  unsigned code = c & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return n;
}

void AppendUint(std::string* out, std::uint64_t v) {
  char buf[24];
  char* end = buf + sizeof buf;
  char* p = end;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  out->append(p, static_cast<std::size_t>(end - p));
}

void AppendInt(std::string* out, std::int64_t v) {
  if (v < 0) {
    *out += '-';
    AppendUint(out, static_cast<std::uint64_t>(-(v + 1)) + 1);
  } else {
    AppendUint(out, static_cast<std::uint64_t>(v));
  }
}

void AppendStringArray(std::string* out, const std::vector<std::string>& items) {
  *out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) *out += ',';
    AppendString(out, items[i]);
  }
  *out += ']';
}

}  // namespace

namespace {

// Printable ASCII that Go's encoder writes as is.
bool IsPlain(unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&';
}

}  // namespace

void AppendString(std::string* out, std::string_view text) {
  *out += '"';
  std::size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (IsPlain(c)) {  // append the whole plain run at once
      std::size_t end = i + 1;
      while (end < text.size() && IsPlain(static_cast<unsigned char>(text[end]))) ++end;
      out->append(text.data() + i, end - i);
      i = end;
      continue;
    }
    switch (c) {
      case '"':
        *out += "\\\"";
        ++i;
        continue;
      case '\\':
        *out += "\\\\";
        ++i;
        continue;
      case '\n':
        *out += "\\n";
        ++i;
        continue;
      case '\r':
        *out += "\\r";
        ++i;
        continue;
      case '\t':
        *out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x80) {  // other control bytes and < > &
      AppendUnicodeEscape(out, c);
      ++i;
      continue;
    }
    std::size_t n = Utf8Length(text, i);
    if (n == 0) {
      *out += "\\ufffd";
      ++i;
      continue;
    }
    // U+2028 and U+2029 are escaped by Go for JavaScript safety.
    if (n == 3 && c == 0xe2 && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(text[i + 2]) & 0xfe) == 0xa8) {
      AppendUnicodeEscape(out, 0x2028u | (static_cast<unsigned char>(text[i + 2]) & 1u));
    } else {
      out->append(text.data() + i, n);
    }
    i += n;
  }
  *out += '"';
}

std::size_t StringSize(std::string_view text) {
  std::size_t size = 2;  // the quotes
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (IsPlain(c)) {
      ++size;
      ++i;
      continue;
    }
    if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t') {
      size += 2;
      ++i;
      continue;
    }
    if (c < 0x80) {
      size += 6;
      ++i;
      continue;
    }
    const std::size_t n = Utf8Length(text, i);
    if (n == 0) {
      size += 6;
      ++i;
      continue;
    }
    const bool line_separator = n == 3 && c == 0xe2 &&
                                static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                                (static_cast<unsigned char>(text[i + 2]) & 0xfe) == 0xa8;
    size += line_separator ? 6 : n;
    i += n;
  }
  return size;
}

namespace {

std::size_t UintSize(std::uint64_t v) {
  std::size_t digits = 1;
  while (v >= 10) {
    v /= 10;
    ++digits;
  }
  return digits;
}

}  // namespace

std::size_t KvEntrySize(const state::KvEntry& entry, bool with_value) {
  constexpr std::string_view kFixed =
      "{\"LockIndex\":,\"Key\":,\"Flags\":,\"Value\":,\"CreateIndex\":,\"ModifyIndex\":}";
  std::size_t size = kFixed.size() + UintSize(entry.lock_index) + StringSize(entry.key) +
                     UintSize(entry.flags) + UintSize(entry.create_index.value()) +
                     UintSize(entry.modify_index.value());
  if (with_value && !entry.value.empty()) {
    size += 2 + (entry.value.size() + 2) / 3 * 4;  // quoted, padded base64
  } else {
    size += 4;  // null
  }
  if (!entry.session.empty()) {
    constexpr std::string_view kLocked = ",\"Session\":,\"Fence\":";
    size += kLocked.size() + StringSize(entry.session.view()) + UintSize(entry.fence.value());
  }
  return size;
}

void AppendKvEntry(std::string* out, const state::KvEntry& entry, bool with_value) {
  *out += "{\"LockIndex\":";
  AppendUint(out, entry.lock_index);
  *out += ",\"Key\":";
  AppendString(out, entry.key);
  *out += ",\"Flags\":";
  AppendUint(out, entry.flags);
  *out += ",\"Value\":";
  if (with_value && !entry.value.empty()) {
    *out += '"';
    *out += Base64Encode(entry.value);
    *out += '"';
  } else {
    *out += "null";
  }
  if (!entry.session.empty()) {
    *out += ",\"Session\":";
    AppendString(out, entry.session.view());
    *out += ",\"Fence\":";
    AppendUint(out, entry.fence.value());
  }
  *out += ",\"CreateIndex\":";
  AppendUint(out, entry.create_index.value());
  *out += ",\"ModifyIndex\":";
  AppendUint(out, entry.modify_index.value());
  *out += '}';
}

void AppendSession(std::string* out, const state::Session& s) {
  *out += "{\"ID\":";
  AppendString(out, s.id.view());
  *out += ",\"Name\":";
  AppendString(out, s.name);
  *out += ",\"Node\":";
  AppendString(out, s.node);
  *out += ",\"LockDelay\":";
  AppendInt(out, s.lock_delay_ns);
  *out += ",\"Behavior\":";
  *out += s.behavior == state::Behavior::kDelete ? "\"delete\"" : "\"release\"";
  *out += ",\"TTL\":";
  AppendString(out, s.ttl);
  *out += ",\"NodeChecks\":";
  AppendStringArray(out, s.node_checks);
  *out += ",\"ServiceChecks\":";
  if (s.service_checks.empty()) {
    *out += "null";
  } else {
    *out += '[';
    for (std::size_t i = 0; i < s.service_checks.size(); ++i) {
      if (i) *out += ',';
      *out += "{\"ID\":";
      AppendString(out, s.service_checks[i].id);
      *out += ",\"Namespace\":";
      AppendString(out, s.service_checks[i].ns);
      *out += '}';
    }
    *out += ']';
  }
  if (!s.checks.empty()) {
    *out += ",\"Checks\":";
    AppendStringArray(out, s.checks);
  }
  *out += ",\"CreateIndex\":";
  AppendUint(out, s.create_index.value());
  *out += ",\"ModifyIndex\":";
  AppendUint(out, s.modify_index.value());
  *out += '}';
}

std::string KvEntries(const std::vector<const state::KvEntry*>& entries) {
  std::string out = "[";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ',';
    AppendKvEntry(&out, *entries[i]);
  }
  out += ']';
  return out;
}

std::string Sessions(const std::vector<const state::Session*>& sessions) {
  return *Sessions(sessions, std::numeric_limits<std::size_t>::max());
}

std::optional<std::string> Sessions(const std::vector<const state::Session*>& sessions,
                                    std::size_t max_bytes) {
  if (max_bytes < 2) return std::nullopt;
  std::string out = "[";
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    if (i) out += ',';
    AppendSession(&out, *sessions[i]);
    if (out.size() + 1 > max_bytes) return std::nullopt;  // with the closing ]
  }
  out += ']';
  return out;
}

void AppendAclToken(std::string* out, const state::AclToken& token, const state::AclTable& table,
                    bool show_secret) {
  *out += "{\"AccessorID\":";
  AppendString(out, token.accessor_id);
  *out += ",\"SecretID\":";
  AppendString(out, show_secret ? std::string_view(token.secret_id) : "<hidden>");
  *out += ",\"Description\":";
  AppendString(out, token.description);
  *out += ",\"Policies\":[";
  bool first = true;
  for (const std::string& id : token.policy_ids) {
    const state::AclPolicy* policy = table.FindPolicy(id);
    if (policy == nullptr) continue;  // deleted since: Consul leaves it out too
    if (!first) *out += ',';
    first = false;
    *out += "{\"ID\":";
    AppendString(out, policy->id);
    *out += ",\"Name\":";
    AppendString(out, policy->name);
    *out += '}';
  }
  *out += "],\"Local\":";
  *out += token.local ? "true" : "false";
  if (token.expiration_time != UnixMs()) {
    *out += ",\"ExpirationTime\":";
    AppendString(out, FormatRfc3339(token.expiration_time));
  }
  *out += ",\"CreateTime\":";
  AppendString(out, FormatRfc3339(token.create_time));
  *out += ",\"CreateIndex\":" + std::to_string(token.create_index.value());
  *out += ",\"ModifyIndex\":" + std::to_string(token.modify_index.value()) + "}";
}

void AppendAclPolicy(std::string* out, const state::AclPolicy& policy, bool with_rules) {
  *out += "{\"ID\":";
  AppendString(out, policy.id);
  *out += ",\"Name\":";
  AppendString(out, policy.name);
  *out += ",\"Description\":";
  AppendString(out, policy.description);
  if (with_rules) {
    *out += ",\"Rules\":";
    AppendString(out, policy.rules);
  }
  *out += ",\"CreateIndex\":" + std::to_string(policy.create_index.value());
  *out += ",\"ModifyIndex\":" + std::to_string(policy.modify_index.value()) + "}";
}

std::string Strings(const std::vector<std::string>& strings) {
  std::string out;
  AppendStringArray(&out, strings);
  return out;
}

std::string TxnOutcome(const state::TxnOutcome& outcome) {
  std::string out;
  if (outcome.ok()) {
    out = "{\"Results\":[";
    for (std::size_t i = 0; i < outcome.results.size(); ++i) {
      if (i) out += ',';
      out += "{\"KV\":";
      AppendKvEntry(&out, outcome.results[i].entry, outcome.results[i].with_value);
      out += '}';
    }
    out += "],\"Errors\":null}";
    return out;
  }
  out = "{\"Results\":null,\"Errors\":[";
  for (std::size_t i = 0; i < outcome.errors.size(); ++i) {
    if (i) out += ',';
    out += "{\"OpIndex\":";
    AppendUint(&out, outcome.errors[i].op_index);
    out += ",\"What\":";
    AppendString(&out, outcome.errors[i].what);
    out += '}';
  }
  out += "]}";
  return out;
}

std::optional<std::string> Pretty(std::string_view compact, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(max_bytes, compact.size() + compact.size() / 2));
  int depth = 0;
  auto newline = [&](int indent) {
    out += '\n';
    out.append(static_cast<std::size_t>(std::max(indent, 0)) * 4, ' ');
  };
  for (std::size_t i = 0; i < compact.size(); ++i) {
    const char c = compact[i];
    switch (c) {
      case '"': {  // copy the string, escapes and all
        std::size_t end = i + 1;
        while (end < compact.size() && compact[end] != '"') end += compact[end] == '\\' ? 2 : 1;
        out.append(compact.substr(i, std::min(end, compact.size() - 1) - i + 1));
        i = end;
        break;
      }
      case '{':
      case '[':
        out += c;
        if (i + 1 < compact.size() && (compact[i + 1] == '}' || compact[i + 1] == ']')) {
          out += compact[++i];  // {} and [] stay on one line
        } else {
          newline(++depth);
        }
        break;
      case '}':
      case ']':
        newline(--depth);
        out += c;
        break;
      case ',':
        out += c;
        newline(depth);
        break;
      case ':':
        out += ": ";
        break;
      case ' ':
      case '\n':
      case '\r':
      case '\t':
        break;  // compact input has none outside strings; drop any
      default:
        out += c;
    }
    if (out.size() > max_bytes) return std::nullopt;
  }
  out += '\n';
  if (out.size() > max_bytes) return std::nullopt;
  return out;
}

}  // namespace tenure::http::json
