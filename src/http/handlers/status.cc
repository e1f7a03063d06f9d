// /v1/status/leader, /v1/status/peers and /v1/agent/self.
#include <nlohmann/json.hpp>
#include <optional>

#include "common/consul_texts.h"
#include "common/limits.h"
#include "http/api.h"
#include "http/json.h"
#include "http/json_input.h"

namespace tenure::http {

void Api::StatusLeader(const CallPtr& call) {
  std::string body;
  json::AppendString(&body, server_.LeaderAddress());
  call->Reply(HttpResponse::Json(std::move(body)));
}

void Api::StatusPeers(const CallPtr& call) {
  call->Reply(HttpResponse::Json(json::Strings(server_.PeerAddresses())));
}

// GET /v1/operator/raft/configuration, in Consul's shape, as this server
// sees it. Node names come from the replicated member records (decision
// 0008); a server whose record is not written yet has an empty Node.
void Api::RaftConfiguration(const CallPtr& call) {
  if (call->Deny(call->caller.can().OperatorRead(), "")) return;
  nlohmann::json servers = nlohmann::json::array();
  for (const raft::ServerInfo& server : server_.RaftConfiguration()) {
    const state::Member* member = server_.store().FindMember(server.id);
    std::string node = member != nullptr ? member->name : "";
    if (server.id == server_.NodeId()) node = server_.options().node_name;
    servers.push_back({{"ID", std::to_string(server.id)},
                       {"Node", node},
                       {"HTTPAddress", member != nullptr ? member->http_address : ""},
                       {"Address", server.address},
                       {"Leader", server.leader},
                       {"Voter", server.voter},
                       {"ProtocolVersion", "3"}});
  }
  nlohmann::json out = {{"Servers", servers}, {"Index", server_.RaftConfigurationIndex()}};
  call->Reply(HttpResponse::Json(out.dump()));
}

namespace {

// ?id=N: a server's numeric -node-id. nullopt when absent; an error text
// when present but not a positive number.
Result<std::optional<std::uint64_t>> ServerIdParam(const HttpRequest& request) {
  auto given = request.Query("id");
  if (!given || given->empty()) return std::optional<std::uint64_t>();
  std::uint64_t id = 0;
  bool ok = given->size() <= 19;
  for (char c : *given) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) id = id * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok || id == 0) {
    return Status::InvalidArgument("invalid id \"" + std::string(*given) +
                                   "\": expected a server's numeric -node-id");
  }
  return std::optional<std::uint64_t>(id);
}

}  // namespace

// POST /v1/operator/raft/transfer-leader[?id=N]: Consul answers
// {"Success":true}. Ids are tenure's numeric -node-id values.
void Api::TransferLeader(const CallPtr& call) {
  if (call->Deny(call->caller.can().OperatorWrite(), "")) return;
  auto id = ServerIdParam(*call->request);
  if (call->Failed(id)) return;
  server_.TransferLeadership(id->value_or(0), [call](Status status) {
    if (!status.ok()) {
      call->ReplyError(status);
      return;
    }
    call->Reply(HttpResponse::Json("{\"Success\":true}"));
  });
}

// DELETE /v1/operator/raft/peer?id=N or ?address=HOST:PORT, as Consul.
void Api::RaftPeerRemove(const CallPtr& call) {
  if (call->Deny(call->caller.can().OperatorWrite(), "")) return;
  auto id = ServerIdParam(*call->request);
  if (call->Failed(id)) return;
  std::uint64_t target = id->value_or(0);
  if (auto address = call->request->Query("address"); target == 0 && address) {
    for (const raft::ServerInfo& server : server_.RaftConfiguration()) {
      if (server.address == *address) target = server.id;
    }
    if (target == 0) {
      call->ReplyError(Status::InvalidArgument("address \"" + std::string(*address) +
                                               "\" was not found in the Raft configuration"));
      return;
    }
  }
  if (target == 0) {
    call->ReplyError(consul::RemovePeerNeedsIdOrAddress());
    return;
  }
  server_.RemoveServer(target, [call](Status status) {
    if (!status.ok()) {
      call->ReplyError(status);
      return;
    }
    call->Reply(HttpResponse::Text(200, ""));
  });
}

// Go's Agent.Self() decodes into map[string]map[string]interface{}: every
// top-level value must be an object, and Config.NodeName must be a string
// (`consul lock` and api.Agent.NodeName depend on it). SessionTTLMin lets
// Patroni correct a too-small TTL by itself.
void Api::AgentSelf(const CallPtr& call) {
  const server::ServerOptions& options = server_.options();
  if (call->Deny(call->caller.can().AgentRead(options.node_name), options.node_name)) return;
  const server::Server::RaftHealth health = server_.Health();
  nlohmann::json self = {
      {"Config",
       {{"Datacenter", options.datacenter},
        {"PrimaryDatacenter", options.datacenter},
        {"NodeName", options.node_name},
        {"NodeID", ""},
        {"Server", true},
        {"Revision", "tenure"},
        {"Version", "1.17.0"},
        {"SessionTTLMin", limits::kSessionTtlMinNs},
        {"Product", "tenure"},
        {"ProductVersion", TENURE_VERSION}}},
      {"DebugConfig",
       {{"SessionTTLMin", limits::kSessionTtlMinNs},
        {"SessionTTLMultiplier", options.session_ttl_multiplier}}},
      {"Coord", nlohmann::json::object()},
      {"Member",
       {{"Name", options.node_name},
        {"Addr", options.raft.address.substr(0, options.raft.address.rfind(':'))},
        {"Port", 8301},
        {"Tags", {{"dc", options.datacenter}, {"role", "consul"}}},
        {"Status", 1}}},
      {"Stats",
       {{"raft",
         {{"state", health.state},
          {"term", std::to_string(health.term)},
          {"applied_index", std::to_string(server_.store().applied_index().value())},
          {"restarts", std::to_string(health.restarts)},
          {"last_failure", health.last_failure},
          {"transport_handshakes_refused", std::to_string(health.transport.handshakes_refused)},
          {"transport_connections_cut", std::to_string(health.transport.links_cut)},
          {"leaders_forgotten", std::to_string(health.transport.leaders_forgotten)},
          {"transport_votes_dropped", std::to_string(health.transport.votes_dropped)}}},
        {"tenure",
         {{"sessions", std::to_string(server_.store().session_count())},
          {"kv_entries", std::to_string(server_.store().kv_count())},
          {"blocking_queries", std::to_string(server_.waiters().size())}}}}},
      {"Meta", nlohmann::json::object()},
      {"xDS", nlohmann::json::object()},
  };
  call->Reply(HttpResponse::Json(self.dump()));
}

}  // namespace tenure::http
