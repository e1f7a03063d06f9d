#include "http/metrics.h"

#include <string>

#include "common/strings.h"

namespace tenure::http {
namespace {

constexpr std::array<std::string_view, kEndpointCount> kEndpointNames = {
    "other",    "kv",  "txn",    "session", "status",   "agent",
    "operator", "acl", "health", "metrics", "snapshot", "tenure"};
constexpr std::array<std::string_view, kMethodCount> kMethodNames = {"GET",  "PUT",     "DELETE",
                                                                     "POST", "OPTIONS", "other"};

}  // namespace

std::string_view EndpointName(Endpoint endpoint) {
  return kEndpointNames[static_cast<std::size_t>(endpoint)];
}

Endpoint EndpointOf(std::string_view path) {
  if (path == "/metrics" || path == "/v1/agent/metrics") return Endpoint::kMetrics;
  if (StartsWith(path, "/v1/agent/health/")) return Endpoint::kHealth;
  if (!StartsWith(path, "/v1/")) return Endpoint::kOther;
  std::string_view rest = path.substr(4);
  std::string_view segment = rest.substr(0, rest.find('/'));
  if (segment == "kv") return Endpoint::kKv;
  if (segment == "txn") return Endpoint::kTxn;
  if (segment == "session") return Endpoint::kSession;
  if (segment == "status") return Endpoint::kStatus;
  if (segment == "agent") return Endpoint::kAgent;
  if (segment == "operator") return Endpoint::kOperator;
  if (segment == "acl") return Endpoint::kAcl;
  if (segment == "snapshot") return Endpoint::kSnapshot;
  if (segment == "tenure") return Endpoint::kTenure;
  return Endpoint::kOther;
}

std::size_t MethodIndex(std::string_view method) {
  for (std::size_t i = 0; i + 1 < kMethodCount; ++i) {
    if (method == kMethodNames[i]) return i;
  }
  return kMethodCount - 1;
}

std::string_view MethodName(std::size_t index) { return kMethodNames[index]; }

void HttpMetrics::CountAnswer(Endpoint endpoint, std::string_view method, int status) {
  if (status == 403) ++acl_denials_;
  std::vector<StatusCount>& counts =
      answers_[static_cast<std::size_t>(endpoint)][MethodIndex(method)];
  for (StatusCount& c : counts) {
    if (c.status == status) {
      ++c.count;
      return;
    }
  }
  counts.push_back({status, 1});
}

}  // namespace tenure::http
