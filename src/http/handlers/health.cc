// GET /v1/operator/autopilot/health (Consul's shape), /v1/agent/health/live
// and /v1/agent/health/ready (tenure's probes). Thresholds and who may call
// them: server/health.h, docs/operations.md "Health".
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "common/consul_texts.h"
#include "common/rfc3339.h"
#include "http/api.h"

namespace tenure::http {
namespace {

// A Go time.Duration's text, as Consul's ReadableDuration writes it, for
// whole milliseconds: "0s", "40ms", "1.5s", "2m3.5s". Never heard: "-1ns".
std::string GoDuration(DurationMs ms) {
  if (ms < 0) return "-1ns";
  if (ms == 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::string out;
  if (ms >= 3'600'000) out += std::to_string(ms / 3'600'000) + "h";
  if (ms >= 60'000) out += std::to_string(ms / 60'000 % 60) + "m";
  DurationMs rest = ms % 60'000;
  std::string seconds = std::to_string(rest / 1000);
  if (rest % 1000 != 0) {
    std::string fraction = fmt::format("{:03}", rest % 1000);
    while (fraction.back() == '0') fraction.pop_back();
    seconds += "." + fraction;
  }
  return out + seconds + "s";
}

}  // namespace

// The leader's view (the route forwards there). 200 when every server is
// healthy, 429 otherwise, as Consul. With ?stale on a follower, which has
// no one's replication to report: Consul's "No cluster leader".
void Api::AutopilotHealth(const CallPtr& call) {
  if (call->Deny(call->caller.can().OperatorRead(), "")) return;
  if (!server_.IsLeader()) {
    call->ReplyError(consul::NoClusterLeader());
    return;
  }
  const std::vector<raft::ServerInfo> configuration = server_.RaftConfiguration();
  const server::ClusterHealth health = server::EvaluateCluster(
      configuration, server_.Replication(), server_.NodeId(), server_.LastLogIndex());
  const std::uint64_t term = server_.Health().term;
  const UnixMs now = server_.clock().NowUnixMs();
  const DurationMs alive_ms = server_.options().raft.election_timeout_ms;
  nlohmann::json servers = nlohmann::json::array();
  for (std::size_t i = 0; i < health.servers.size(); ++i) {
    const server::ServerHealth& one = health.servers[i];
    const state::Member* member = server_.store().FindMember(one.id);
    std::string name = member != nullptr ? member->name : "";
    if (one.id == server_.NodeId()) name = server_.options().node_name;
    const bool alive = one.last_contact_ms >= 0 && one.last_contact_ms <= alive_ms;
    servers.push_back(
        {{"ID", std::to_string(one.id)},
         {"Name", name},
         {"Address", configuration[i].address},
         {"SerfStatus", alive ? "alive" : "failed"},
         {"Version", "1.17.0"},
         {"Leader", one.leader},
         {"LastContact", GoDuration(one.last_contact_ms)},
         {"LastTerm", term},
         {"LastIndex", one.last_index},
         {"Healthy", one.healthy},
         {"Voter", one.voter},
         {"StableSince", FormatRfc3339(health_history_.Note(term, one.id, one.healthy, now))}});
  }
  nlohmann::json out = {{"Healthy", health.healthy},
                        {"FailureTolerance", health.failure_tolerance},
                        {"Servers", servers}};
  call->Reply(HttpResponse::Json(out.dump(), health.healthy ? 200 : 429));
}

// Answers while the process serves HTTP at all.
void Api::HealthLive(const CallPtr& call) { call->Reply(HttpResponse::Text(200, "ok\n")); }

// 200 "ok" when this server can serve consistent requests, else 503 with
// why not (server::NotReadyReason).
void Api::HealthReady(const CallPtr& call) {
  const std::string why = server::NotReadyReason(server::ReadinessOf(server_));
  if (why.empty()) {
    call->Reply(HttpResponse::Text(200, "ok\n"));
    return;
  }
  call->Reply(HttpResponse::Text(503, "not ready: " + why + "\n"));
}

}  // namespace tenure::http
