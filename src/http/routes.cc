// The route table: one line per endpoint, as Consul's http_register.go.
// Prefix routes end in '/'; the rest of the path is the handler's argument.
#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "common/consul_texts.h"
#include "common/limits.h"
#include "common/strings.h"
#include "http/api.h"
#include "http/forwarder.h"

namespace tenure::http {
namespace {

// kPost routes take POST with their `put` handler (Consul's operator endpoints).
enum Method : unsigned { kGet = 1, kPut = 2, kDelete = 4, kPost = 8 };

// Where a route is answered on a follower (decision 0008).
enum Where : unsigned {
  kHere,    // by whichever server gets it (status, agent, this server's view)
  kLeader,  // by the leader, as Consul: forwarded, except GETs with ?stale
};

struct Route {
  std::string_view path;
  unsigned methods;
  Where where;
  void (Api::*get)(const CallPtr&);
  void (Api::*put)(const CallPtr&);
  void (Api::*del)(const CallPtr&);
  // Changes the cluster (Consul's operator:write): with ACLs off, closed to
  // callers without the -operator-token-file secret (decision 0012,
  // docs/security.md); with ACLs on, the handler checks operator:write.
  bool operator_write = false;
  // Whether the request's token is resolved before the handler runs (a
  // secret no token has is refused with 403 "ACL not found"). Consul leaves
  // /v1/status and the bootstrap alone.
  bool resolves_token = true;
};

constexpr std::array<Route, 29> kRoutes = {{
    {"/v1/kv/", kGet | kPut | kDelete, kLeader, &Api::KvGet, &Api::KvPut, &Api::KvDelete},
    {"/v1/txn", kPut, kLeader, nullptr, &Api::Txn, nullptr},
    {"/v1/session/create", kPut, kLeader, nullptr, &Api::SessionCreate, nullptr},
    {"/v1/session/destroy/", kPut, kLeader, nullptr, &Api::SessionDestroy, nullptr},
    {"/v1/session/renew/", kPut, kLeader, nullptr, &Api::SessionRenew, nullptr},
    {"/v1/session/info/", kGet, kLeader, &Api::SessionInfo, nullptr, nullptr},
    {"/v1/session/node/", kGet, kLeader, &Api::SessionNode, nullptr, nullptr},
    {"/v1/session/list", kGet, kLeader, &Api::SessionList, nullptr, nullptr},
    {"/v1/status/leader", kGet, kHere, &Api::StatusLeader, nullptr, nullptr, false, false},
    {"/v1/status/peers", kGet, kHere, &Api::StatusPeers, nullptr, nullptr, false, false},
    {"/v1/agent/self", kGet, kHere, &Api::AgentSelf, nullptr, nullptr},
    {"/v1/operator/raft/transfer-leader", kPost, kLeader, nullptr, &Api::TransferLeader, nullptr,
     true},
    {"/v1/operator/raft/configuration", kGet, kHere, &Api::RaftConfiguration, nullptr, nullptr},
    {"/v1/operator/raft/peer", kDelete, kLeader, nullptr, nullptr, &Api::RaftPeerRemove, true},
    {"/v1/operator/autopilot/health", kGet, kLeader, &Api::AutopilotHealth, nullptr, nullptr},
    // Probes (handlers/health.cc): no token, so that load balancers and
    // Kubernetes can call them; they tell nothing but "ok" or why not.
    {"/v1/agent/health/live", kGet, kHere, &Api::HealthLive, nullptr, nullptr, false, false},
    {"/v1/agent/health/ready", kGet, kHere, &Api::HealthReady, nullptr, nullptr, false, false},
    // ACLs (handlers/acl.cc). ACL reads go to the leader too, as in Consul.
    {"/v1/acl/bootstrap", kPut, kLeader, nullptr, &Api::AclBootstrap, nullptr, false, false},
    {"/v1/acl/token", kPut, kLeader, nullptr, &Api::AclTokenCreate, nullptr},
    {"/v1/acl/token/", kGet | kPut | kDelete, kLeader, &Api::AclTokenRead, &Api::AclTokenUpdate,
     &Api::AclTokenDelete},
    {"/v1/acl/tokens", kGet, kLeader, &Api::AclTokenList, nullptr, nullptr},
    {"/v1/acl/policy", kPut, kLeader, nullptr, &Api::AclPolicyCreate, nullptr},
    {"/v1/acl/policy/", kGet | kPut | kDelete, kLeader, &Api::AclPolicyRead, &Api::AclPolicyUpdate,
     &Api::AclPolicyDelete},
    {"/v1/acl/policies", kGet, kLeader, &Api::AclPolicyList, nullptr, nullptr},
    // Metrics (handlers/metrics.cc, docs/metrics.md): agent:read, as Consul's.
    {"/v1/agent/metrics", kGet, kHere, &Api::AgentMetrics, nullptr, nullptr},
    {"/metrics", kGet, kHere, &Api::AgentMetrics, nullptr, nullptr},
    // Snapshots (handlers/snapshot.cc, docs/snapshots.md): acl:write with
    // ACLs on (Consul's rule: they hold every secret); with ACLs off the
    // operator token, for reading too (the file holds any ACL state).
    {"/v1/snapshot", kGet | kPut, kLeader, &Api::SnapshotSave, &Api::SnapshotRestore, nullptr,
     true},
    // tenure's own (docs/history.md): key:read on the key, like a KV read.
    {"/v1/tenure/history/", kGet, kLeader, &Api::LockHistory, nullptr, nullptr},
    // The waiters of a key's fair-acquire queue (decision 0027): key:read.
    {"/v1/tenure/queue/", kGet, kLeader, &Api::QueueWaiters, nullptr, nullptr},
}};

// How long a follower waits for the leader's answer: a blocking query's wait
// plus its jitter (wait/16) plus slack, otherwise as long as a client would.
DurationMs ForwardTimeoutMs(const QueryOptions& options, const HttpRequest& request) {
  constexpr DurationMs kSlackMs = 10'000;
  constexpr DurationMs kPlainMs = 30'000;
  // A fair acquire (?acquire&queue) waits up to ?wait on the leader.
  if (request.method == "PUT" && request.HasQuery("queue")) return options.wait_ms + kSlackMs;
  if (options.index.is_none()) return kPlainMs;
  return options.wait_ms + options.wait_ms / limits::kBlockingJitterFraction + kSlackMs;
}

// Consul lists OPTIONS first, then the route's methods.
std::string AllowHeader(unsigned methods) {
  std::string allow = "OPTIONS";
  if (methods & kGet) allow += ",GET";
  if (methods & kPut) allow += ",PUT";
  if (methods & kDelete) allow += ",DELETE";
  if (methods & kPost) allow += ",POST";
  return allow;
}

const Route* FindRoute(std::string_view path, std::string* arg) {
  for (const Route& route : kRoutes) {
    if (route.path.back() == '/') {
      if (StartsWith(path, route.path)) {
        *arg = std::string(path.substr(route.path.size()));
        return &route;
      }
    } else if (path == route.path) {
      arg->clear();
      return &route;
    }
  }
  return nullptr;
}

}  // namespace

// Consul's order (agent/http.go): ?token=, then X-Consul-Token, then
// Authorization: Bearer (the scheme in any case). Empty values are skipped.
std::string_view RequestToken(const HttpRequest& request) {
  if (auto query = request.Query("token"); query && !query->empty()) return *query;
  if (std::string_view header = request.TokenHeader(); !header.empty()) return header;
  if (std::string_view auth = request.AuthorizationHeader();
      auth.size() > 7 && EqualsIgnoreCase(auth.substr(0, 7), "Bearer ")) {
    std::string_view bearer = auth.substr(7);
    while (!bearer.empty() && bearer.front() == ' ') bearer.remove_prefix(1);
    return bearer;
  }
  return {};
}

// With ACLs off, a write that changes the cluster needs the secret of
// -operator-token-file; without that flag nobody may. The answers are
// Consul's for an anonymous caller and an unknown token.
bool Api::MaySendLargeBody(const HttpRequest& request) {
  // PUT /v1/snapshot carries a whole snapshot file (docs/snapshots.md).
  if (request.method != "PUT" ||
      std::string_view(request.target).substr(0, request.target.find('?')) != "/v1/snapshot") {
    return false;
  }
  if (!server_.acl_config().enabled) return !CheckOperatorToken(request).has_value();
  Result<server::Caller> caller = server_.ResolveCaller(RequestToken(request));
  return caller.ok() && caller->can().AclWrite().allowed();
}

bool Api::IsParkedRead(const HttpRequest& request) {
  return request.method == "GET" || request.method == "HEAD" ||
         (request.method == "PUT" && request.HasQuery("queue"));
}

std::optional<HttpResponse> Api::CheckOperatorToken(const HttpRequest& request) const {
  std::string_view token = RequestToken(request);
  const std::string& expected = server_.options().operator_token;
  if (token.empty()) {
    return ErrorResponse(
        consul::PermissionDenied(consul::kAnonymousAccessorId, "operator:write", ""));
  }
  if (expected.empty() || !ConstantTimeEquals(token, expected)) {
    return ErrorResponse(consul::AclNotFound());
  }
  return std::nullopt;
}

void Api::Handle(HttpRequest request, std::shared_ptr<Responder> responder) {
  auto call = std::make_shared<Call>();
  call->request = std::make_unique<HttpRequest>(std::move(request));
  call->responder = std::move(responder);
  call->default_deny = server_.acl_config().default_policy == acl::DefaultPolicy::kDeny;
  const std::string& path = call->request->path;
  call->builder = Builder();
  if (metrics_.enabled()) {
    call->metrics = &metrics_;
    call->endpoint = EndpointOf(path);
  }

  // The dashboard's static files: no token, no forwarding (handlers/ui.cc).
  if (IsUiPath(path)) {
    Ui(call);
    return;
  }
  const Route* route = FindRoute(path, &call->arg);
  if (route == nullptr) {
    // Go's mux redirects a prefix route's path without its trailing slash.
    for (const Route& r : kRoutes) {
      if (r.path.back() == '/' && path + "/" == r.path) {
        HttpResponse redirect = HttpResponse::Text(301, "");
        redirect.headers.emplace_back("Location", std::string(r.path));
        call->Reply(std::move(redirect));
        return;
      }
    }
    // The root redirects to the dashboard, as Consul's does to its UI.
    if (path == "/") {
      HttpResponse redirect = HttpResponse::Text(
          301, "tenure server: Consul-compatible API under /v1/, dashboard at /ui/\n");
      redirect.headers.emplace_back("Location", "/ui/");
      call->Reply(std::move(redirect));
      return;
    }
    call->Reply(HttpResponse::Text(404, std::string(consul::kNotAnApiPath)));
    return;
  }

  const std::string& method = call->request->method;
  void (Api::*handler)(const CallPtr&) = nullptr;
  if (method == "GET" && (route->methods & kGet)) handler = route->get;
  if (method == "PUT" && (route->methods & kPut)) handler = route->put;
  if (method == "DELETE" && (route->methods & kDelete)) handler = route->del;
  if (method == "POST" && (route->methods & kPost)) handler = route->put;
  if (method == "OPTIONS") {
    HttpResponse ok = HttpResponse::Text(200, "");
    ok.content_type.clear();
    ok.headers.emplace_back("Allow", AllowHeader(route->methods));
    call->Reply(std::move(ok));
    return;
  }
  if (handler == nullptr) {
    HttpResponse not_allowed = HttpResponse::Text(405, "method " + method + " not allowed");
    not_allowed.headers.emplace_back("Allow", AllowHeader(route->methods));
    call->Reply(std::move(not_allowed));
    return;
  }

  if (route->operator_write && !server_.acl_config().enabled) {
    if (std::optional<HttpResponse> denied = CheckOperatorToken(*call->request)) {
      call->Reply(std::move(*denied));
      return;
    }
  }
  auto options = ParseQueryOptions(*call->request);
  if (!options.ok()) {
    call->ReplyError(options.status());
    return;
  }
  call->options = *options;
  if (auto dc = call->request->Query("dc");
      dc && !dc->empty() && *dc != server_.options().datacenter) {
    call->ReplyError(consul::NoPathToDatacenter());
    return;
  }
  if (route->where == kLeader && !server_.IsLeader() && !(method == "GET" && call->options.stale)) {
    // One hop only: whoever forwarded this thought we lead, and we do not.
    if (call->request->Header(kForwardedByHeader)) {
      call->ReplyError(consul::NoClusterLeader());
      return;
    }
    std::shared_ptr<Responder> to_client = call->responder;
    if (call->metrics != nullptr) {
      metrics_.CountForwarded(call->endpoint);
      to_client = std::make_shared<CountingResponder>(std::move(to_client), &metrics_,
                                                      call->endpoint, method);
    }
    forwarder_->Forward(*call->request, std::move(to_client),
                        ForwardTimeoutMs(call->options, *call->request));
    return;
  }
  // The server that answers decides: a follower forwards the token with the
  // request and the leader resolves it (Consul's forwarding does the same).
  if (route->resolves_token) {
    Result<server::Caller> caller = server_.ResolveCaller(RequestToken(*call->request));
    if (!caller.ok()) {
      call->ReplyError(caller.status());
      return;
    }
    call->caller = std::move(*caller);
  }
  (this->*handler)(call);
}

}  // namespace tenure::http
