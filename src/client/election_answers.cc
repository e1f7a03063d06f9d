// What the server's answers say, for client::Election (election_impl.h).
#include <nlohmann/json.hpp>

#include "client/election_impl.h"
#include "client/kv_pair.h"
#include "client/response.h"

namespace tenure::client {

// A 403: the token may not do what the campaign needs (ACLs). Waiting
// would not change that, so the campaign ends with the server's text.
bool IsDenied(const Result<net::ClientResponse>& result) {
  return result.ok() && result->status == 403;
}

Status Denied(const std::string& key, const net::ClientResponse& response) {
  std::string body = response.body;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return Status::PermissionDenied("campaign for " + key + ": " + body);
}

bool IsInvalidSession(const Result<net::ClientResponse>& result) {
  return result.ok() && result->status == 500 &&
         result->body.find("invalid session") != std::string::npos;
}

// The first entry of a KV GET answer (200) or "no key" (404).
Result<LeaderInfo> ParseLeader(const net::ClientResponse& response) {
  LeaderInfo info;
  if (response.status == 404) return info;
  if (response.status != 200) return Status::Unavailable(Describe(response));
  Result<std::vector<KvPair>> pairs = ParseKvPairs(response.body);
  if (!pairs.ok()) return pairs.status();
  if (pairs->empty()) return info;
  const KvPair& entry = pairs->front();
  info.exists = true;
  info.session = entry.session;
  info.value = entry.Value();
  info.fence = info.session.empty() ? 0 : entry.fence.value_or(0);
  info.modify_index = entry.modify_index;
  return info;
}

Result<Settings> ParseSettings(const net::ClientResponse& response, const std::string& prefix) {
  Settings settings;
  if (response.status == 404) return settings;
  if (response.status != 200) return Status::Unavailable(Describe(response));
  Result<std::vector<KvPair>> pairs = ParseKvPairs(response.body);
  if (!pairs.ok()) return pairs.status();
  for (const KvPair& entry : *pairs) {
    if (entry.key.size() <= prefix.size() || entry.key.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    settings[entry.key.substr(prefix.size())] = entry.Value();
  }
  return settings;
}

// Errors[].What of a 409 txn answer, joined; `first_op_failed` tells
// whether operation 0 (the guard) is among them.
std::string TxnErrors(const std::string& body, bool* first_op_failed) {
  std::string out;
  if (first_op_failed != nullptr) *first_op_failed = false;
  try {
    const nlohmann::json parsed = nlohmann::json::parse(body);
    for (const auto& error : parsed.at("Errors")) {
      if (!out.empty()) out += "; ";
      out += error.value("What", std::string());
      if (first_op_failed != nullptr && error.value("OpIndex", -1) == 0) *first_op_failed = true;
    }
  } catch (const std::exception&) {
    return body;
  }
  return out.empty() ? body : out;
}

}  // namespace tenure::client
