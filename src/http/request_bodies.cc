#include "http/request_bodies.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/base64.h"
#include "common/consul_texts.h"
#include "common/duration.h"
#include "common/limits.h"
#include "common/strings.h"
#include "http/json_input.h"

namespace tenure::http {
namespace {

using Json = nlohmann::json;

Status DecodeFailed(const std::string& why) { return consul::RequestDecodeFailed(why); }

Result<std::vector<std::string>> StringList(const Json& value, std::string_view field) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  if (!value.is_array()) return DecodeFailed(std::string(field) + " must be a list of strings");
  if (value.size() > limits::kSessionChecksMax) {
    return DecodeFailed("too many " + std::string(field));
  }
  for (const Json& item : value) {
    if (!item.is_string()) return DecodeFailed(std::string(field) + " must be a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

// LockDelay: a Go duration string, or a number of nanoseconds; values under
// 1000 are taken as seconds (Consul's rule for clients that send "15").
Result<DurationNs> ParseLockDelay(const Json& value) {
  DurationNs ns = 0;
  if (value.is_string()) {
    auto parsed = ParseGoDuration(value.get<std::string>());
    if (!parsed.ok()) return DecodeFailed(std::string(parsed.status().message()));
    ns = *parsed;
  } else if (value.is_number_integer()) {
    ns = value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX
             ? INT64_MAX
             : value.get<std::int64_t>();
  } else if (value.is_number_float()) {
    double d = value.get<double>();
    if (!(d > -9.2e18 && d < 9.2e18)) return DecodeFailed("LockDelay out of range");
    ns = static_cast<DurationNs>(d);
  } else if (!value.is_null()) {
    return DecodeFailed("LockDelay must be a duration string or a number");
  }
  if (ns < 1000) ns *= kNsPerSecond;  // cannot overflow: ns < 1000
  return ns;
}

Status ParseFailed(const std::string& why) { return consul::FailedToParseBody(why); }

Result<std::uint64_t> Uint(const Json& value, std::string_view field) {
  if (value.is_null()) return std::uint64_t{0};
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  }
  return ParseFailed(std::string(field) + " must be an unsigned integer");
}

}  // namespace

Result<state::Session> ParseSessionCreate(const std::string& body, const std::string& node_name) {
  state::Session session;
  session.node = node_name;
  session.lock_delay_ns = limits::kLockDelayDefaultNs;
  session.checks.set_node({"serfHealth"});
  if (body.empty()) return session;

  Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return DecodeFailed("invalid JSON");
  if (doc.is_null()) return session;
  if (!doc.is_object()) return DecodeFailed("body must be a JSON object");

  auto string_field = [&](std::string_view name, std::string* out) -> Status {
    const Json* v = Field(doc, name);
    if (v == nullptr || v->is_null()) return Status();
    if (!v->is_string()) return DecodeFailed(std::string(name) + " must be a string");
    *out = v->get<std::string>();
    return Status();
  };
  std::string name;
  TENURE_RETURN_IF_ERROR(string_field("Name", &name));
  session.name = name;
  std::string node;
  TENURE_RETURN_IF_ERROR(string_field("Node", &node));
  if (!node.empty()) session.node = node;
  if (session.name.size() > limits::kSessionNameBytesMax ||
      session.node.size() > limits::kSessionNameBytesMax) {
    return DecodeFailed("Name and Node must be at most " +
                        std::to_string(limits::kSessionNameBytesMax) + " bytes");
  }
  if (const Json* v = Field(doc, "LockDelay")) {
    TENURE_ASSIGN_OR_RETURN(session.lock_delay_ns, ParseLockDelay(*v));
  }

  std::string behavior;
  TENURE_RETURN_IF_ERROR(string_field("Behavior", &behavior));
  if (behavior.empty() || behavior == "release") {
    session.behavior = state::Behavior::kRelease;
  } else if (behavior == "delete") {
    session.behavior = state::Behavior::kDelete;
  } else {
    return consul::InvalidBehavior(behavior);
  }

  const Json* ttl = Field(doc, "TTL");
  if (ttl != nullptr && !ttl->is_null()) {
    if (!ttl->is_string()) return DecodeFailed("TTL must be a duration string such as \"15s\"");
    session.ttl = ttl->get<std::string>();
  }
  if (!session.ttl.empty()) {
    auto parsed = ParseGoDuration(session.ttl);
    if (!parsed.ok()) {
      return consul::SessionTtlUnparsable(session.ttl, parsed.status().message());
    }
    if (*parsed != 0 &&
        (*parsed < limits::kSessionTtlMinNs || *parsed > limits::kSessionTtlMaxNs)) {
      return consul::SessionTtlOutOfRange(*parsed, FormatGoDuration(limits::kSessionTtlMinNs),
                                          FormatGoDuration(limits::kSessionTtlMaxNs));
    }
    session.ttl_ns = *parsed;
    if (session.ttl_ns == 0) session.ttl.clear();
  }

  // Consul's fixupEmptySessionChecks: an explicit empty Checks (Patroni's
  // "checks": []) means no checks at all; an omitted Checks leaves the
  // default serfHealth node check; an explicit empty NodeChecks drops Checks.
  const Json* checks = Field(doc, "Checks");
  const Json* node_checks = Field(doc, "NodeChecks");
  const Json* service_checks = Field(doc, "ServiceChecks");
  if (node_checks != nullptr) {
    TENURE_ASSIGN_OR_RETURN(std::vector<std::string> list, StringList(*node_checks, "NodeChecks"));
    session.checks.set_node(std::move(list));
  }
  if (checks != nullptr) {
    TENURE_ASSIGN_OR_RETURN(std::vector<std::string> list, StringList(*checks, "Checks"));
    session.checks.set_legacy(std::move(list));
    if (session.checks.legacy().empty()) session.checks.set_node({});
  }
  if (node_checks != nullptr && session.checks.node().empty()) session.checks.set_legacy({});
  if (service_checks != nullptr && !service_checks->is_null()) {
    if (!service_checks->is_array()) return DecodeFailed("ServiceChecks must be a list");
    // Built whole, then stored once: each setter copies the lists.
    std::vector<state::ServiceCheck> list;
    list.reserve(service_checks->size());
    for (const Json& item : *service_checks) {
      if (!item.is_object()) return DecodeFailed("ServiceChecks entries must be objects");
      state::ServiceCheck check;
      if (const Json* id = Field(item, "ID"); id && id->is_string())
        check.id = id->get<std::string>();
      if (const Json* ns = Field(item, "Namespace"); ns && ns->is_string()) {
        check.ns = ns->get<std::string>();
      }
      list.push_back(std::move(check));
    }
    session.checks.set_service(std::move(list));
  }
  // Without a catalog, the only check tenure knows is the always-passing
  // serfHealth of the server's own node; any other check does not exist.
  auto known = [](const std::string& id) { return id == "serfHealth"; };
  for (const auto& id : session.checks.legacy()) {
    if (!known(id)) return consul::MissingCheck(id);
  }
  for (const auto& id : session.checks.node()) {
    if (!known(id)) return consul::MissingCheck(id);
  }
  for (const auto& check : session.checks.service()) {
    return consul::MissingCheck(check.id);
  }
  return session;
}

Result<ParsedTxn> ParseTxn(const std::string& body) {
  Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return ParseFailed("invalid JSON");
  if (!doc.is_array()) return ParseFailed("the body must be a JSON array of operations");
  if (doc.size() > limits::kTxnOpsMax) {
    return consul::TxnTooManyOps(doc.size(), limits::kTxnOpsMax);
  }
  ParsedTxn txn;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const Json& item = doc[i];
    if (!item.is_object())
      return ParseFailed("operation " + std::to_string(i) + " is not an object");
    const Json* kv = Field(item, "KV");
    if (kv == nullptr || kv->is_null()) {
      std::string kind = item.empty() ? "empty" : item.begin().key();
      return ParseFailed("operation " + std::to_string(i) +
                         ": only KV operations are supported (got " + kind + ")");
    }
    if (!kv->is_object())
      return ParseFailed("operation " + std::to_string(i) + ": KV must be an object");
    state::TxnOp op;
    std::string verb_name;
    if (const Json* verb = Field(*kv, "Verb"); verb && verb->is_string()) {
      verb_name = verb->get<std::string>();
    }
    if (const Json* key = Field(*kv, "Key"); key && !key->is_null()) {
      if (!key->is_string()) return ParseFailed("Key must be a string");
      op.key = key->get<std::string>();
    }
    if (op.key.size() > limits::kKvKeyBytesMax) {
      return consul::KeyTooLong(op.key.size(), limits::kKvKeyBytesMax);
    }
    if (const Json* value = Field(*kv, "Value"); value && !value->is_null()) {
      if (!value->is_string()) return ParseFailed("Value must be a base64 string");
      auto decoded = Base64Decode(value->get<std::string>());
      if (!decoded)
        return ParseFailed("illegal base64 data in Value of operation " + std::to_string(i));
      if (decoded->size() > limits::kConsulValueBytesMax) {
        return consul::ValueTooLarge(op.key, decoded->size(), limits::kConsulValueBytesMax);
      }
      op.value = std::move(*decoded);
    }
    if (const Json* flags = Field(*kv, "Flags")) {
      TENURE_ASSIGN_OR_RETURN(op.flags, Uint(*flags, "Flags"));
    }
    if (const Json* index = Field(*kv, "Index")) {
      TENURE_ASSIGN_OR_RETURN(std::uint64_t value, Uint(*index, "Index"));
      op.index = LogIndex(value);
    }
    if (const Json* session = Field(*kv, "Session"); session && !session->is_null()) {
      if (!session->is_string()) return ParseFailed("Session must be a string");
      op.session = state::SessionId(session->get<std::string>());
    }
    auto verb = state::ParseTxnVerb(verb_name);
    if (!verb) {
      txn.errors.push_back({i, "unknown KV verb " + GoQuote(verb_name)});
      continue;
    }
    op.verb = *verb;
    txn.writes = txn.writes || state::IsWriteVerb(op.verb);
    txn.ops.push_back(std::move(op));
  }
  return txn;
}

Status CheckSessionId(std::string_view id) {
  if (id.empty()) return consul::MissingSession();
  if (id.size() != 36) return consul::UuidLength();
  for (std::size_t i = 0; i < id.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    char c = id[i];
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (dash ? c != '-' : !hex) return consul::InvalidUuid(id);
  }
  return Status();
}

Result<state::SessionId> ParseSessionId(std::string_view id) {
  TENURE_RETURN_IF_ERROR(CheckSessionId(id));
  return state::SessionId(std::string(id));
}

}  // namespace tenure::http
