// Workloads: see workloads.h. Each Run* function connects its clients to the
// server it is given, runs one phase to a time or count limit, and turns the
// outcome into metrics. Setup phases (creating the sessions a phase needs)
// are not timed.
#include "workloads.h"

#include <fmt/format.h>

#include <algorithm>

#include "closed_loop.h"
#include "tenure_api.h"

namespace tenure::bench {
namespace {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

Clock::duration Seconds(double s) {
  return duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

double Ms(double ns) { return ns / 1e6; }

RunResult Failed(std::string error) {
  RunResult r;
  r.error = std::move(error);
  return r;
}

// CPU used by the server and by this process around a measured phase: tells
// whether the server was CPU-bound (near 100 % of its one loop thread) or
// waiting (on the disk, on the client).
struct CpuSample {
  double server = 0;
  double server_main = 0;
  double self = 0;
};

CpuSample SampleCpu(const ServerProcess& server) {
  return {server.CpuSeconds(), server.MainThreadCpuSeconds(), SelfCpuSeconds()};
}

void AddCpu(RunResult* r, const CpuSample& before, const CpuSample& after, double seconds) {
  if (seconds <= 0) return;
  if (before.server_main >= 0 && after.server_main >= 0) {
    r->Add("server_main_cpu_pct", "server main thread CPU, % of one core",
           (after.server_main - before.server_main) / seconds * 100, 0);
  }
  if (before.server >= 0 && after.server >= 0) {
    r->Add("server_cpu_pct", "server CPU (all threads), % of one core",
           (after.server - before.server) / seconds * 100, 0);
  }
  r->Add("bench_cpu_pct", "bench CPU, % of one core", (after.self - before.self) / seconds * 100,
         0);
}

// Rate, latency percentiles and CPU of one closed-loop phase.
RunResult ThroughputResult(LoopOutcome& out, const std::string& unit, const CpuSample& before,
                           const CpuSample& after) {
  RunResult r;
  double rate = out.seconds > 0 ? static_cast<double>(out.ok) / out.seconds : 0;
  std::sort(out.latency_ns.begin(), out.latency_ns.end());
  r.Add(unit + "_per_s", unit + "/s", rate, 0);
  r.Add("p50_ms", "p50 latency, ms", Ms(SortedPercentile(out.latency_ns, 0.50)), 3);
  r.Add("p99_ms", "p99 latency, ms", Ms(SortedPercentile(out.latency_ns, 0.99)), 3);
  r.Add("max_ms", "max latency, ms", Ms(SortedPercentile(out.latency_ns, 1.0)), 1);
  r.Add("count", unit + " done", static_cast<double>(out.ok), 0);
  AddCpu(&r, before, after, out.seconds);
  if (out.errors > 0) {
    r.error = fmt::format("{} errors; first: {}", out.errors, out.first_error);
  } else if (out.ok == 0) {
    r.error = "zero throughput";
  }
  return r;
}

// --- KV puts --------------------------------------------------------------

class KvPut : public ClosedLoop {
 public:
  KvPut(Loop& loop, asio::ip::tcp::endpoint endpoint, int clients, const Settings& s)
      : ClosedLoop(loop, endpoint, clients), value_(static_cast<std::size_t>(s.value_bytes), 'v') {
    for (int k = 0; k < s.keys; ++k) targets_.push_back(fmt::format("/v1/kv/bench/k{:04}", k));
    // Printable and varied, so the value is not all one byte.
    for (std::size_t i = 0; i < value_.size(); ++i) value_[i] = static_cast<char>('a' + i % 26);
  }

 protected:
  void StartOp(Client& c) override {
    const std::string& target = targets_[NextRandom(&c.rng) % targets_.size()];
    c.conn->Send("PUT", target, value_, [this, &c](const HttpResponse& r) {
      if (r.status == 200 && r.body == "true") {
        FinishOp(c, {});
      } else {
        FinishOp(c, Unexpected("kv put", r));
      }
    });
  }

 private:
  std::vector<std::string> targets_;
  std::string value_;
};

RunResult RunKvPut(Loop& loop, ServerProcess& server, const Settings& s, int clients) {
  KvPut w(loop, server.http_endpoint(), clients, s);
  std::string error;
  if (!w.Connect(&error)) return Failed(error);
  CpuSample before = SampleCpu(server);
  LoopOutcome out = w.Run(Seconds(s.seconds), s.max_ops);
  CpuSample after = SampleCpu(server);
  return ThroughputResult(out, "puts", before, after);
}

// --- Sessions -------------------------------------------------------------

class SessionPairs : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;

 protected:
  void StartOp(Client& c) override {
    c.conn->Send("PUT", "/v1/session/create", R"({"TTL":"30s"})",
                 [this, &c](const HttpResponse& r) {
                   std::string id = r.status == 200 ? ParseId(r.body) : "";
                   if (id.empty()) return FinishOp(c, Unexpected("session create", r));
                   c.session = "/v1/session/destroy/" + id;
                   c.conn->Send("PUT", c.session, {}, [this, &c](const HttpResponse& d) {
                     if (d.status == 200 && d.body == "true") {
                       FinishOp(c, {});
                     } else {
                       FinishOp(c, Unexpected("session destroy", d));
                     }
                   });
                 });
  }
};

RunResult RunSessionPairs(Loop& loop, ServerProcess& server, const Settings& s, int clients) {
  SessionPairs w(loop, server.http_endpoint(), clients);
  std::string error;
  if (!w.Connect(&error)) return Failed(error);
  CpuSample before = SampleCpu(server);
  LoopOutcome out = w.Run(Seconds(s.seconds), s.max_ops);
  CpuSample after = SampleCpu(server);
  return ThroughputResult(out, "pairs", before, after);
}

RunResult RunRenew(Loop& loop, ServerProcess& server, const Settings& s, int clients) {
  std::string error;
  std::vector<std::string> ids;
  {
    // TTL sessions, as a renewing client has; 30 s outlives any phase because
    // each one is renewed every few milliseconds.
    // Setup is not timed: create with 64 connections whatever the renewing
    // client count, so a 1-client run does not wait on 1,000 serial writes.
    SessionCreator creator(loop, server.http_endpoint(), std::min(64, s.renew_sessions),
                           R"({"Name":"bench-renew","TTL":"30s"})", &ids);
    if (!creator.Connect(&error)) return Failed(error);
    LoopOutcome made =
        creator.Run(std::chrono::seconds(60), static_cast<std::uint64_t>(s.renew_sessions));
    if (made.errors > 0 || ids.size() != static_cast<std::size_t>(s.renew_sessions)) {
      return Failed(fmt::format("setup: created {} of {} sessions: {}", ids.size(),
                                s.renew_sessions, made.first_error));
    }
  }
  Renewer w(loop, server.http_endpoint(), clients);
  if (!w.Connect(&error)) return Failed(error);
  // Client i renews sessions i, i + clients, ...: every session is renewed,
  // and no two clients renew the same one.
  for (std::size_t i = 0; i < ids.size(); ++i) {
    Client& c = w.clients()[i % w.clients().size()];
    c.targets.push_back("/v1/session/renew/" + ids[i]);
  }
  for (Client& c : w.clients()) {
    if (c.targets.empty()) c.targets.push_back("/v1/session/renew/" + ids[0]);
  }
  CpuSample before = SampleCpu(server);
  LoopOutcome out = w.Run(Seconds(s.seconds), s.max_ops);
  CpuSample after = SampleCpu(server);
  return ThroughputResult(out, "renewals", before, after);
}

// --- Locks ----------------------------------------------------------------

// Each client has its own session and its own key, so every acquire succeeds
// at once: this measures the write path of a lock, not contention.
class LockCycle : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;
  bool setup = true;

 protected:
  void StartOp(Client& c) override {
    if (setup) {
      // No TTL: nothing may expire during a long run; lock-delay does not
      // apply to an explicit release.
      c.conn->Send("PUT", "/v1/session/create", R"({"Name":"bench-lock"})",
                   [this, &c](const HttpResponse& r) {
                     std::string id = r.status == 200 ? ParseId(r.body) : "";
                     if (id.empty()) return FinishOp(c, Unexpected("session create", r));
                     std::string key = fmt::format("/v1/kv/bench/lock/{}", c.index);
                     c.targets = {key + "?acquire=" + id, key + "?release=" + id};
                     FinishOp(c, {});
                   });
      return;
    }
    c.conn->Send("PUT", c.targets[0], "held", [this, &c](const HttpResponse& r) {
      if (r.status != 200 || r.body != "true") return FinishOp(c, Unexpected("acquire", r));
      c.conn->Send("PUT", c.targets[1], {}, [this, &c](const HttpResponse& rel) {
        if (rel.status == 200 && rel.body == "true") {
          FinishOp(c, {});
        } else {
          FinishOp(c, Unexpected("release", rel));
        }
      });
    });
  }
};

RunResult RunLockCycle(Loop& loop, ServerProcess& server, const Settings& s, int clients) {
  LockCycle w(loop, server.http_endpoint(), clients);
  std::string error;
  if (!w.Connect(&error)) return Failed(error);
  LoopOutcome made = w.Run(std::chrono::seconds(60), static_cast<std::uint64_t>(clients));
  if (made.errors > 0 || made.ok != static_cast<std::uint64_t>(clients)) {
    return Failed("setup: " + made.first_error);
  }
  w.setup = false;
  CpuSample before = SampleCpu(server);
  LoopOutcome out = w.Run(Seconds(s.seconds), s.max_ops);
  CpuSample after = SampleCpu(server);
  return ThroughputResult(out, "cycles", before, after);
}

// --- Blocking-query wake-ups ----------------------------------------------

class WakeBench {
 public:
  WakeBench(Loop& loop, const ServerProcess& server, int watchers)
      : loop_(loop),
        server_(server),
        writer_(loop.ioc(), server.http_endpoint()),
        control_(loop.ioc(), server.http_endpoint()) {
    asio::ip::tcp::endpoint endpoint = server.http_endpoint();
    for (int i = 0; i < watchers; ++i) {
      watchers_.push_back(std::make_unique<HttpConn>(loop.ioc(), endpoint));
    }
  }

  ~WakeBench() {
    for (auto& w : watchers_) w->Close();
    writer_.Close();
    control_.Close();
    loop_.Drain();
  }

  RunResult Run(int rounds) {
    std::string error;
    for (std::size_t i = 0; i < watchers_.size(); ++i) {
      if (!watchers_[i]->Connect(&error)) {
        return Failed(fmt::format("connect watcher {}: {}", i, error));
      }
    }
    if (!writer_.Connect(&error) || !control_.Connect(&error)) return Failed("connect: " + error);

    OwnedResponse put = Request(loop_, writer_, "PUT", kKey, "initial");
    if (put.status != 200) return Failed(fmt::format("initial put: {} {}", put.status, put.body));
    OwnedResponse get = Request(loop_, control_, "GET", kKey);
    if (get.status != 200 || get.consul_index == 0) {
      return Failed(fmt::format("initial get: {} {}", get.status, get.body));
    }
    index_ = get.consul_index;

    RunResult result;
    std::vector<std::int64_t> park_ns;
    for (int round = 0; round < rounds && errors_ == 0; ++round) {
      if (!RunRound(round, &park_ns, &result.note)) break;
    }

    std::sort(wake_ns_.begin(), wake_ns_.end());
    std::sort(last_ns_.begin(), last_ns_.end());
    std::sort(ack_ns_.begin(), ack_ns_.end());
    std::sort(fanout_ns_.begin(), fanout_ns_.end());
    std::sort(park_ns.begin(), park_ns.end());
    // Every wake-up is one answered blocking query (bench/acl_instructions.py
    // counts instructions per wake-up).
    result.Add("count", "watcher wake-ups", static_cast<double>(wake_ns_.size()), 0);
    result.Add("wake_p50_ms", "wake p50, ms", Ms(SortedPercentile(wake_ns_, 0.50)), 3);
    result.Add("wake_p99_ms", "wake p99, ms", Ms(SortedPercentile(wake_ns_, 0.99)), 3);
    result.Add("wake_max_ms", "wake max, ms", Ms(SortedPercentile(wake_ns_, 1.0)), 3);
    result.Add("last_wake_median_ms", "last watcher woken, median of rounds, ms",
               Ms(SortedPercentile(last_ns_, 0.50)), 3);
    result.Add("last_wake_max_ms", "last watcher woken, worst round, ms",
               Ms(SortedPercentile(last_ns_, 1.0)), 3);
    result.Add("write_ack_p50_ms", "the waking write's own ack p50, ms",
               Ms(SortedPercentile(ack_ns_, 0.50)), 3);
    // How long the fan-out to every watcher takes beyond committing the
    // write: separates the raft commit from the wake-up machinery.
    result.Add("fanout_median_ms", "last wake-up after the write's ack, median of rounds, ms",
               Ms(SortedPercentile(fanout_ns_, 0.50)), 3);
    if (measured_rounds_ > 0) {
      result.Add("server_cpu_per_round_ms",
                 "server main thread CPU per round (write to last wake), ms",
                 server_round_cpu_s_ * 1e3 / measured_rounds_, 2);
      result.Add("bench_cpu_per_round_ms", "bench CPU per round (write to last wake), ms",
                 bench_round_cpu_s_ * 1e3 / measured_rounds_, 2);
    }
    result.Add("park_p50_ms", "time to park all watchers p50, ms",
               Ms(SortedPercentile(park_ns, 0.50)), 1);
    result.Add("wakeups", "wake-ups measured", static_cast<double>(wake_ns_.size()), 0);
    if (errors_ > 0) {
      result.error = fmt::format("{} errors; first: {}", errors_, first_error_);
    } else if (wake_ns_.empty()) {
      result.error = "no wake-ups measured";
    }
    return result;
  }

 private:
  static constexpr std::string_view kKey = "/v1/kv/bench/wake";

  void Error(std::string what) {
    if (errors_++ == 0) first_error_ = std::move(what);
  }

  bool RunRound(int round, std::vector<std::int64_t>* park_ns, std::string* note) {
    woken_ = 0;
    fired_ = false;
    acked_ = false;
    round_last_ns_ = 0;
    next_index_ = index_;
    std::string target = fmt::format("{}?index={}&wait=60s", kKey, index_);
    Clock::time_point park_start = Clock::now();
    for (std::size_t i = 0; i < watchers_.size(); ++i) {
      watchers_[i]->Send("GET", target, {}, [this, i](const HttpResponse& r) { OnWake(i, r); });
    }

    // Confirm every watcher is parked before the write: one that arrives
    // after it would answer at once and measure nothing. The server counts
    // its parked queries in /v1/agent/self; without that count, settle.
    Clock::time_point park_deadline = park_start + std::chrono::seconds(30);
    const long want = static_cast<long>(watchers_.size());
    while (errors_ == 0) {
      OwnedResponse self = Request(loop_, control_, "GET", "/v1/agent/self");
      if (self.status != 200) {
        Error(fmt::format("round {}: GET /v1/agent/self: {} {}", round, self.status,
                          self.body.substr(0, 200)));
        break;
      }
      long parked = StatFromAgentSelf(self.body, "blocking_queries");
      if (parked >= want) {
        park_ns->push_back(duration_cast<nanoseconds>(Clock::now() - park_start).count());
        break;
      }
      if (parked < 0) {
        if (note->empty()) {
          *note = "server reports no blocking_queries count; waited 500 ms per round instead";
        }
        loop_.Sleep(std::chrono::milliseconds(500));
        break;
      }
      if (Clock::now() > park_deadline) {
        Error(
            fmt::format("round {}: only {} of {} watchers parked after 30 s", round, parked, want));
        break;
      }
      loop_.Sleep(std::chrono::milliseconds(1));
    }

    double server_cpu_before = server_.MainThreadCpuSeconds();
    double bench_cpu_before = SelfCpuSeconds();
    fire_time_ = Clock::now();
    fired_ = true;
    writer_.Send("PUT", kKey, fmt::format("round-{}", round), [this](const HttpResponse& r) {
      round_ack_ns_ = duration_cast<nanoseconds>(Clock::now() - fire_time_).count();
      ack_ns_.push_back(round_ack_ns_);
      if (r.status != 200 || r.body != "true") Error(Unexpected("waking write", r));
      acked_ = true;
      MaybeDone();
    });
    if (!loop_.RunUntil([this] { return acked_ && woken_ == watchers_.size(); },
                        std::chrono::seconds(30))) {
      Error(fmt::format("round {}: {} of {} watchers woken within 30 s of the write", round, woken_,
                        watchers_.size()));
      return false;
    }
    server_round_cpu_s_ += server_.MainThreadCpuSeconds() - server_cpu_before;
    bench_round_cpu_s_ += SelfCpuSeconds() - bench_cpu_before;
    ++measured_rounds_;
    last_ns_.push_back(round_last_ns_);
    fanout_ns_.push_back(round_last_ns_ - round_ack_ns_);
    index_ = next_index_;
    return true;
  }

  void OnWake(std::size_t i, const HttpResponse& r) {
    Clock::time_point now = Clock::now();
    ++woken_;
    if (!fired_) {
      Error(Unexpected(fmt::format("watcher {} answered before the write", i), r));
    } else {
      std::int64_t ns = duration_cast<nanoseconds>(now - fire_time_).count();
      wake_ns_.push_back(ns);
      round_last_ns_ = std::max(round_last_ns_, ns);
    }
    if (r.status != 200 || r.consul_index <= index_) {
      Error(Unexpected(fmt::format("watcher {} (index {})", i, r.consul_index), r));
    }
    next_index_ = std::max(next_index_, r.consul_index);
    MaybeDone();
  }

  void MaybeDone() {
    if (fired_ && acked_ && woken_ == watchers_.size()) loop_.Finish();
  }

  Loop& loop_;
  const ServerProcess& server_;
  std::vector<std::unique_ptr<HttpConn>> watchers_;
  HttpConn writer_;
  HttpConn control_;
  std::uint64_t index_ = 0;
  std::uint64_t next_index_ = 0;
  bool fired_ = false;
  bool acked_ = false;
  std::size_t woken_ = 0;
  Clock::time_point fire_time_;
  std::int64_t round_last_ns_ = 0;
  std::int64_t round_ack_ns_ = 0;
  std::vector<std::int64_t> wake_ns_;
  std::vector<std::int64_t> last_ns_;
  std::vector<std::int64_t> ack_ns_;
  std::vector<std::int64_t> fanout_ns_;  // last wake-up minus the write's ack, per round
  // CPU used from the write to the last wake-up, summed over rounds: splits
  // the wake latency between the server and this load generator.
  double server_round_cpu_s_ = 0;
  double bench_round_cpu_s_ = 0;
  int measured_rounds_ = 0;
  std::uint64_t errors_ = 0;
  std::string first_error_;
};

RunResult RunWake(Loop& loop, ServerProcess& server, const Settings& s) {
  WakeBench w(loop, server, s.watchers);
  return w.Run(s.rounds);
}

// --- RSS per idle session -------------------------------------------------

RunResult RunIdleSessionRss(Loop& loop, ServerProcess& server, const Settings& s, int clients) {
  long before_kib = server.RssKiB();
  if (before_kib < 0) return Failed("cannot read the server's VmRSS");
  SessionCreator w(loop, server.http_endpoint(), clients, R"({"Name":"bench-idle"})", nullptr);
  std::string error;
  if (!w.Connect(&error)) return Failed(error);
  LoopOutcome out = w.Run(Seconds(s.rss_seconds), static_cast<std::uint64_t>(s.rss_sessions));
  // Let the server finish what it defers after a burst of writes (a raft
  // snapshot, freeing applied log entries) so RSS is the idle steady state.
  loop.Sleep(std::chrono::seconds(1));
  long after_kib = server.RssKiB();

  RunResult r;
  HttpConn control(loop.ioc(), server.http_endpoint());
  if (control.Connect(&error)) {
    OwnedResponse self = Request(loop, control, "GET", "/v1/agent/self");
    long sessions = StatFromAgentSelf(self.body, "sessions");
    if (sessions >= 0 && static_cast<std::uint64_t>(sessions) != out.ok) {
      r.note = fmt::format("server reports {} sessions, {} were created", sessions, out.ok);
    }
    control.Close();
    loop.Drain();
  }
  double delta_bytes = static_cast<double>(after_kib - before_kib) * 1024.0;
  r.Add("sessions", "idle sessions created", static_cast<double>(out.ok), 0);
  r.Add("create_per_s", "creates/s while filling", out.seconds > 0 ? out.ok / out.seconds : 0, 0);
  r.Add("rss_before_mib", "RSS before, MiB", before_kib / 1024.0, 1);
  r.Add("rss_after_mib", "RSS after, MiB", after_kib / 1024.0, 1);
  r.Add("rss_delta_mib", "RSS growth, MiB", delta_bytes / (1024.0 * 1024.0), 1);
  r.Add("bytes_per_session", "bytes per idle session",
        out.ok ? delta_bytes / static_cast<double>(out.ok) : 0, 0);
  if (out.errors > 0) {
    r.error = fmt::format("{} errors; first: {}", out.errors, out.first_error);
  } else if (out.ok == 0) {
    r.error = "zero sessions created";
  } else if (out.ok < static_cast<std::uint64_t>(s.rss_sessions)) {
    r.note = fmt::format("time limit: only {} of {} sessions created", out.ok, s.rss_sessions);
  }
  return r;
}

}  // namespace

std::vector<Workload> AllWorkloads(const Settings& s) {
  const int n = s.clients;
  return {
      {"kv_put_c1", "KV put, 1 client",
       [](Loop& l, ServerProcess& p, const Settings& st) { return RunKvPut(l, p, st, 1); }},
      {fmt::format("kv_put_c{}", n), fmt::format("KV put, {} clients", n),
       [n](Loop& l, ServerProcess& p, const Settings& st) { return RunKvPut(l, p, st, n); }},
      {"lock_cycle_c1", "acquire+release, 1 client",
       [](Loop& l, ServerProcess& p, const Settings& st) { return RunLockCycle(l, p, st, 1); }},
      {fmt::format("lock_cycle_c{}", n), fmt::format("acquire+release, {} clients", n),
       [n](Loop& l, ServerProcess& p, const Settings& st) { return RunLockCycle(l, p, st, n); }},
      {fmt::format("session_pair_c{}", n), fmt::format("session create+destroy, {} clients", n),
       [n](Loop& l, ServerProcess& p, const Settings& st) { return RunSessionPairs(l, p, st, n); }},
      {fmt::format("renew_c{}", n), fmt::format("session renew, {} clients", n),
       [n](Loop& l, ServerProcess& p, const Settings& st) { return RunRenew(l, p, st, n); }},
      {fmt::format("wake_w{}", s.watchers),
       fmt::format("blocking-query wake, {} watchers", s.watchers),
       [](Loop& l, ServerProcess& p, const Settings& st) { return RunWake(l, p, st); }},
      {fmt::format("idle_rss_s{}", s.rss_sessions),
       fmt::format("RSS, {} idle sessions", s.rss_sessions),
       [n](Loop& l, ServerProcess& p, const Settings& st) {
         return RunIdleSessionRss(l, p, st, n);
       }},
  };
}

std::vector<std::string> WorkloadNotes(const Settings& s) {
  return {
      fmt::format("Every workload of every run gets a fresh `tenure server` (new temporary data "
                  "dir, free loopback ports), started by the benchmark and killed after it; it "
                  "must be leader and commit a probe write first."),
      fmt::format("Clients are closed-loop HTTP/1.1 keep-alive connections on ONE load-generator "
                  "thread, sharing the machine's cores with the server. Throughput = completed "
                  "operations / time from the first start to the last completion; no new "
                  "operation starts after {} s or {} operations.",
                  s.seconds, s.max_ops),
      fmt::format("KV put: PUT /v1/kv/bench/kNNNN with a {}-byte value, keys uniformly random "
                  "over {} names; each put is a durable raft write. Latency per put.",
                  s.value_bytes, s.keys),
      "acquire+release: each client creates its own TTL-less session (not timed) and loops "
      "PUT ?acquire=SID then PUT ?release=SID on its own key; one cycle = two durable writes. "
      "Latency per cycle.",
      "session create+destroy: PUT /v1/session/create {\"TTL\":\"30s\"} then PUT "
      "/v1/session/destroy/ID; one pair = two durable writes. Latency per pair.",
      fmt::format("session renew: {} TTL (30s) sessions created first (not timed), spread over the "
                  "clients; each client renews its own sessions round-robin with PUT "
                  "/v1/session/renew/ID (in memory on the leader, no raft write).",
                  s.renew_sessions),
      fmt::format("blocking-query wake: {} connections each park GET "
                  "/v1/kv/bench/wake?index=N&wait=60s; parking is confirmed via /v1/agent/self "
                  "Stats.tenure.blocking_queries; then one PUT to the key. Wake latency = from "
                  "sending the PUT to each watcher's complete response (includes the raft commit "
                  "of the write and the load generator reading {} sockets in turn). {} rounds; "
                  "percentiles are over all wake-ups.",
                  s.watchers, s.watchers, s.rounds),
      fmt::format("RSS: VmRSS of the server from /proc/PID/status after start (probe write "
                  "done), then {} TTL-less sessions created by {} clients, 1 s idle, VmRSS again; "
                  "bytes per session = growth / sessions (includes the raft log entries the "
                  "server still holds in memory).",
                  s.rss_sessions, s.clients),
      "CPU rows: user+system CPU time during the timed phase as a percentage of one core, for "
      "the server's main thread (HTTP, raft and the state machine all run on it: near 100 % "
      "means the server is CPU-bound), for the whole server process (adds libraft's disk I/O "
      "threads), and for the load generator.",
  };
}

}  // namespace tenure::bench
