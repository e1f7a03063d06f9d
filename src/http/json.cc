#include "http/json.h"

#include <algorithm>
#include <limits>

#include "common/base64.h"
#include "common/rfc3339.h"

namespace tenure::http::json {
namespace {

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

void AppendSession(std::string* out, const state::Session& s,
                   std::optional<std::int64_t> ttl_remaining_ns) {
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
  if (ttl_remaining_ns) {
    *out += ",\"TTLRemaining\":";
    AppendInt(out, *ttl_remaining_ns);
  }
  *out += ",\"NodeChecks\":";
  AppendStringArray(out, s.checks.node());
  *out += ",\"ServiceChecks\":";
  if (s.checks.service().empty()) {
    *out += "null";
  } else {
    *out += '[';
    for (std::size_t i = 0; i < s.checks.service().size(); ++i) {
      if (i) *out += ',';
      *out += "{\"ID\":";
      AppendString(out, s.checks.service()[i].id);
      *out += ",\"Namespace\":";
      AppendString(out, s.checks.service()[i].ns);
      *out += '}';
    }
    *out += ']';
  }
  if (!s.checks.legacy().empty()) {
    *out += ",\"Checks\":";
    AppendStringArray(out, s.checks.legacy());
  }
  *out += ",\"CreateIndex\":";
  AppendUint(out, s.create_index.value());
  *out += ",\"ModifyIndex\":";
  AppendUint(out, s.modify_index().value());
  *out += '}';
}

namespace {

// The JSON array of entries, each reached through `entry_of` (pointers into
// the Store, or copies made for a builder thread).
template <typename Entries, typename EntryOf>
std::string KvEntryArray(const Entries& entries, EntryOf entry_of) {
  std::string out = "[";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ',';
    AppendKvEntry(&out, entry_of(entries[i]));
  }
  out += ']';
  return out;
}

}  // namespace

std::string KvEntries(const std::vector<const state::KvEntry*>& entries) {
  return KvEntryArray(entries, [](const state::KvEntry* e) -> const state::KvEntry& { return *e; });
}

std::string KvEntries(const std::vector<state::KvEntry>& entries) {
  return KvEntryArray(entries, [](const state::KvEntry& e) -> const state::KvEntry& { return e; });
}

std::string Sessions(const std::vector<const state::Session*>& sessions) {
  return *Sessions(sessions, std::numeric_limits<std::size_t>::max());
}

std::optional<std::string> Sessions(const std::vector<const state::Session*>& sessions,
                                    std::size_t max_bytes, const TtlRemaining& ttl_remaining) {
  if (max_bytes < 2) return std::nullopt;
  std::string out = "[";
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    if (i) out += ',';
    AppendSession(&out, *sessions[i], ttl_remaining ? ttl_remaining(*sessions[i]) : std::nullopt);
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
