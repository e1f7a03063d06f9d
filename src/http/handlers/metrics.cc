// GET /v1/agent/metrics and /metrics (docs/metrics.md, decision 0023). The
// one file that sees prometheus-cpp: at scrape time it reads what the layers
// counted (server::ServerMetrics, http::HttpMetrics) and the gauges the
// Server knows, and writes Prometheus' text with prometheus::TextSerializer,
// or Consul's JSON shape for /v1/agent/metrics without ?format=prometheus.
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/etcd_texts.h"
#include "common/histogram.h"
#include "http/api.h"
#include "raft/io_destroy_offload.h"
#include "server/loop_stall_meter.h"

namespace tenure::http {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// One metric family, whatever the output format.
struct Family {
  std::string name;
  std::string help;
  prometheus::MetricType type;
  struct Point {
    Labels labels;
    double value = 0;                      // counters and gauges
    const Histogram* histogram = nullptr;  // histograms
  };
  std::vector<Point> points;
};

class Families {
 public:
  void Gauge(std::string name, std::string help, double value, Labels labels = {}) {
    Add(std::move(name), std::move(help), prometheus::MetricType::Gauge)
        .points.push_back({std::move(labels), value, nullptr});
  }
  void Counter(std::string name, std::string help, double value, Labels labels = {}) {
    Add(std::move(name), std::move(help), prometheus::MetricType::Counter)
        .points.push_back({std::move(labels), value, nullptr});
  }
  void Histo(std::string name, std::string help, const Histogram& histogram) {
    Add(std::move(name), std::move(help), prometheus::MetricType::Histogram)
        .points.push_back({{}, 0, &histogram});
  }
  const std::vector<Family>& all() const { return families_; }

 private:
  // A name seen before adds a point to its family (one HELP and TYPE each).
  Family& Add(std::string name, std::string help, prometheus::MetricType type) {
    for (Family& f : families_) {
      if (f.name == name) return f;
    }
    families_.push_back({std::move(name), std::move(help), type, {}});
    return families_.back();
  }
  std::vector<Family> families_;
};

double Bool(bool b) { return b ? 1 : 0; }

Families Collect(const server::Server& server, const HttpMetrics& http) {
  const server::ServerMetrics& m = server.metrics();
  Families f;
  // Raft.
  f.Gauge("tenure_raft_leader_present", "1 when this server knows a cluster leader.",
          Bool(server.KnownLeader()));
  f.Gauge("tenure_raft_is_leader", "1 when this server is the raft leader.",
          Bool(server.IsLeader()));
  const server::Server::RaftHealth health = server.Health();
  f.Gauge("tenure_raft_term", "The current raft term.", static_cast<double>(health.term));
  f.Gauge("tenure_raft_commit_index", "The highest raft index this server knows committed.",
          static_cast<double>(server.CommitIndex()));
  f.Gauge("tenure_raft_applied_index", "The raft index of the last entry applied here.",
          static_cast<double>(server.AppliedRaftIndex()));
  f.Gauge("tenure_raft_last_log_index", "The last entry of this server's raft log.",
          static_cast<double>(server.LastLogIndex()));
  f.Gauge("tenure_raft_last_contact_seconds",
          "Since this follower last heard from the leader (0 on the leader).",
          static_cast<double>(server.LastContactMs()) / 1000.0);
  const char* changes = "Times this server became leader or stopped leading.";
  f.Counter("tenure_raft_leadership_changes_total", changes,
            static_cast<double>(m.leadership_gained), {{"change", "gained"}});
  f.Counter("tenure_raft_leadership_changes_total", changes, static_cast<double>(m.leadership_lost),
            {{"change", "lost"}});
  f.Counter("tenure_raft_leaders_forgotten_total",
            "Times this follower forgot its leader because that leader's raft connections all "
            "closed, and so could vote for a new one at once.",
            static_cast<double>(health.transport.leaders_forgotten));
  f.Counter("tenure_raft_restarts_total", "Raft instances restarted after breaking.",
            static_cast<double>(health.restarts));
  f.Counter("tenure_raft_aio_contexts_offloaded_total",
            "Kernel AIO contexts of closed raft log segments destroyed on a background thread "
            "instead of the loop thread.",
            static_cast<double>(raft::IoDestroysReaped()));
  f.Counter("tenure_raft_proposals_committed_total",
            "Commands this server proposed that committed and applied.",
            static_cast<double>(m.proposals_committed));
  f.Counter("tenure_raft_proposals_failed_total",
            "Commands this server proposed that did not commit (no leader, disk, shutdown).",
            static_cast<double>(m.proposals_failed));
  f.Gauge("tenure_raft_proposals_pending", "Commands proposed here and not answered yet.",
          static_cast<double>(m.proposals_pending));
  if (const server::LoopStallMeter* meter = server.loop_stall_meter(); meter != nullptr) {
    f.Histo("tenure_loop_stall_seconds",
            "How late the loop thread served a timer due every 10 ms: the time it spent on one "
            "thing while raft messages and clients waited.",
            meter->stalls());
    f.Gauge("tenure_loop_stall_max_seconds", "The longest such wait since this server started.",
            meter->worst_seconds());
  }
  f.Histo("tenure_raft_commit_duration_seconds",
          "From handing a command to raft to its apply here: log append and fsync, "
          "replication to a quorum, apply.",
          m.commit_seconds);
  f.Histo("tenure_raft_apply_duration_seconds",
          "Decoding one committed entry and applying it to the state machine, on this server.",
          m.apply_seconds);
  f.Histo("tenure_raft_log_append_duration_seconds",
          "One write of entries to this server's raft log, from handing them to the disk to "
          "their being written and synced.",
          m.log_append_seconds);
  f.Counter("tenure_raft_snapshots_taken_total",
            "Raft snapshots of the state machine this server took to compact its log.",
            static_cast<double>(m.snapshots.taken));
  f.Gauge("tenure_raft_snapshot_last_size_bytes",
          "The size of the latest raft snapshot this server took (0: none yet).",
          static_cast<double>(m.snapshots.last_taken_bytes));
  f.Histo("tenure_raft_snapshot_encode_duration_seconds",
          "Encoding the state machine for one raft snapshot, in a child process (on the loop "
          "thread only when the fork failed).",
          m.snapshots.encode_seconds);
  f.Counter("tenure_raft_snapshots_installed_total",
            "Raft snapshots this server restored its state from (sent by a leader, or at start).",
            static_cast<double>(m.snapshots.installed));
  f.Counter("tenure_raft_snapshot_installs_decoded_ahead_total",
            "Raft snapshots sent by the leader that this server decoded while writing their file, "
            "off the loop thread.",
            static_cast<double>(m.snapshots.installed_decoded_ahead));
  f.Gauge("tenure_raft_snapshot_installed_size_bytes",
          "The size of the latest raft snapshot this server restored from (0: none yet).",
          static_cast<double>(m.snapshots.last_installed_bytes));
  // etcd's API (docs/etcd-compat.md), when served.
  for (const auto& [call, count] : m.etcd_calls) {
    f.Counter("tenure_etcd_grpc_calls_total",
              "etcd gRPC calls ended, by method and gRPC status code.", static_cast<double>(count),
              {{"method", std::string(call.first)},
               {"code", std::string(etcd_texts::GrpcCodeName(call.second))}});
  }
  if (server.history() != nullptr) {
    f.Gauge("tenure_etcd_watchers", "etcd watchers served by this server.",
            static_cast<double>(m.etcd_watchers));
  }
  // ZooKeeper's port (docs/zookeeper-compat.md), when served.
  for (const auto& [request, count] : m.zk_requests) {
    f.Counter("tenure_zk_requests_total",
              "ZooKeeper requests answered, by op and ZooKeeper's error code.",
              static_cast<double>(count),
              {{"op", std::string(request.first)}, {"code", std::string(request.second)}});
  }
  if (m.zk_served) {
    f.Gauge("tenure_zk_connections", "ZooKeeper client connections open on this server.",
            static_cast<double>(m.zk_connections));
    f.Gauge("tenure_zk_watches", "ZooKeeper watches this server holds for its clients.",
            static_cast<double>(m.zk_watches));
  }
  // Sessions and locks.
  f.Gauge("tenure_sessions_active", "Sessions in the replicated state.",
          static_cast<double>(server.store().session_count()));
  std::size_t held = 0;
  for (const state::Session* session : server.store().ListSessions()) {
    if (const auto* keys = server.store().HeldKeys(session->id)) held += keys->size();
  }
  f.Gauge("tenure_locks_held", "Keys held by a session (locks) in the replicated state.",
          static_cast<double>(held));
  f.Counter("tenure_sessions_created_total", "Sessions created by this server's proposals.",
            static_cast<double>(m.sessions_created));
  const char* destroyed = "Sessions ended by this server's proposals, by cause.";
  f.Counter("tenure_sessions_destroyed_total", destroyed, static_cast<double>(m.sessions_destroyed),
            {{"cause", "request"}});
  f.Counter("tenure_sessions_destroyed_total", destroyed, static_cast<double>(m.sessions_expired),
            {{"cause", "ttl_expired"}});
  const char* renewals = "Session renewals answered by this server, by result.";
  f.Counter("tenure_session_renewals_total", renewals, static_cast<double>(m.renewals),
            {{"result", "ok"}});
  f.Counter("tenure_session_renewals_total", renewals, static_cast<double>(m.renewals_failed),
            {{"result", "failed"}});
  f.Counter("tenure_lock_grants_total", "Acquires (KV or txn lock) that got the lock.",
            static_cast<double>(m.lock_grants));
  const char* refusals = "Acquires refused, by reason.";
  f.Counter("tenure_lock_refusals_total", refusals, static_cast<double>(m.lock_refused_held),
            {{"reason", "held"}});
  f.Counter("tenure_lock_refusals_total", refusals, static_cast<double>(m.lock_refused_lock_delay),
            {{"reason", "lock_delay"}});
  f.Counter("tenure_fence_check_failures_total", "Txn check-fence operations that failed.",
            static_cast<double>(m.fence_check_failures));
  // Blocking queries.
  f.Gauge("tenure_blocking_queries_parked", "Blocking queries waiting for a change.",
          static_cast<double>(server.waiters().size()));
  f.Histo("tenure_blocking_query_wake_duration_seconds",
          "From an apply that woke parked queries to each one's answer.", m.blocking_wake_seconds);
  // HTTP.
  const char* requests = "HTTP answers by endpoint class, method and status code.";
  bool any = false;
  for (std::size_t e = 0; e < kEndpointCount; ++e) {
    for (std::size_t method = 0; method < kMethodCount; ++method) {
      for (const HttpMetrics::StatusCount& c : http.answers(static_cast<Endpoint>(e), method)) {
        any = true;
        f.Counter("tenure_http_requests_total", requests, static_cast<double>(c.count),
                  {{"endpoint", std::string(EndpointName(static_cast<Endpoint>(e)))},
                   {"method", std::string(MethodName(method))},
                   {"code", std::to_string(c.status)}});
      }
    }
  }
  if (!any) f.Counter("tenure_http_requests_total", requests, 0);  // keeps the family listed
  const char* forwarded = "Requests this follower forwarded to the leader, by endpoint class.";
  // The classes with leader-routed endpoints (routes.cc), the only ones forwarded.
  for (Endpoint e : {Endpoint::kKv, Endpoint::kTxn, Endpoint::kSession, Endpoint::kOperator,
                     Endpoint::kAcl, Endpoint::kSnapshot, Endpoint::kTenure}) {
    f.Counter("tenure_http_forwarded_requests_total", forwarded,
              static_cast<double>(http.forwarded(e)), {{"endpoint", std::string(EndpointName(e))}});
  }
  f.Counter("tenure_acl_denials_total", "Answers 403 (ACL denied, unknown token).",
            static_cast<double>(http.acl_denials()));
  return f;
}

std::string PrometheusText(const Families& families) {
  std::vector<prometheus::MetricFamily> out;
  for (const Family& family : families.all()) {
    prometheus::MetricFamily mf;
    mf.name = family.name;
    mf.help = family.help;
    mf.type = family.type;
    for (const Family::Point& point : family.points) {
      prometheus::ClientMetric metric;
      for (const auto& [name, value] : point.labels) metric.label.push_back({name, value});
      if (family.type == prometheus::MetricType::Counter) metric.counter.value = point.value;
      if (family.type == prometheus::MetricType::Gauge) metric.gauge.value = point.value;
      if (point.histogram != nullptr) {
        const Histogram& h = *point.histogram;
        metric.histogram.sample_count = h.count();
        metric.histogram.sample_sum = h.sum();
        for (std::size_t i = 0; i < Histogram::kBounds.size(); ++i) {
          metric.histogram.bucket.push_back({h.cumulative(i), Histogram::kBounds[i]});
        }
        metric.histogram.bucket.push_back({h.count(), std::numeric_limits<double>::infinity()});
      }
      mf.metric.push_back(std::move(metric));
    }
    out.push_back(std::move(mf));
  }
  return prometheus::TextSerializer().Serialize(out);
}

// Consul's /v1/agent/metrics shape: Timestamp, Gauges, Points, Counters and
// Samples, each metric with Name, its value(s) and Labels. Counters carry
// totals since the server started (Count and Sum); histograms are Samples
// with Count, Sum (seconds) and Mean.
std::string ConsulJson(const Families& families) {
  nlohmann::json gauges = nlohmann::json::array();
  nlohmann::json counters = nlohmann::json::array();
  nlohmann::json samples = nlohmann::json::array();
  for (const Family& family : families.all()) {
    for (const Family::Point& point : family.points) {
      nlohmann::json labels = nlohmann::json::object();
      for (const auto& [name, value] : point.labels) labels[name] = value;
      if (family.type == prometheus::MetricType::Gauge) {
        gauges.push_back({{"Name", family.name}, {"Value", point.value}, {"Labels", labels}});
      } else if (family.type == prometheus::MetricType::Counter) {
        counters.push_back({{"Name", family.name},
                            {"Count", static_cast<std::uint64_t>(point.value)},
                            {"Sum", point.value},
                            {"Labels", labels}});
      } else if (point.histogram != nullptr) {
        const Histogram& h = *point.histogram;
        double mean = h.count() == 0 ? 0 : h.sum() / static_cast<double>(h.count());
        samples.push_back({{"Name", family.name},
                           {"Count", h.count()},
                           {"Sum", h.sum()},
                           {"Mean", mean},
                           {"Labels", labels}});
      }
    }
  }
  // Go's time.Time String() form, as Consul writes it, in UTC.
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[64];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S +0000 UTC", &tm);
  nlohmann::json out = {{"Timestamp", stamp},
                        {"Gauges", gauges},
                        {"Points", nlohmann::json::array()},
                        {"Counters", counters},
                        {"Samples", samples}};
  return out.dump();
}

}  // namespace

void Api::AgentMetrics(const CallPtr& call) {
  const std::string& node = server_.options().node_name;
  if (call->Deny(call->caller.can().AgentRead(node), node)) return;
  if (!metrics_.enabled()) {
    call->Reply(HttpResponse::Text(404, "metrics are disabled on this server (-disable-metrics)"));
    return;
  }
  const Families families = Collect(server_, metrics_);
  auto format = call->request->Query("format");
  if (call->request->path == "/metrics" || (format && *format == "prometheus")) {
    HttpResponse text = HttpResponse::Text(200, PrometheusText(families));
    text.content_type = "text/plain; version=0.0.4; charset=utf-8";
    call->Reply(std::move(text));
    return;
  }
  if (format && !format->empty()) {
    call->ReplyError(Status::InvalidArgument("unknown format \"" + std::string(*format) +
                                             "\": expected prometheus, or none for JSON"));
    return;
  }
  call->Reply(HttpResponse::Json(ConsulJson(families)));
}

}  // namespace tenure::http
