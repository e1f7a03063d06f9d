// tenure's side of tenure_vs: the Consul HTTP API over the same keep-alive
// HTTP/1.1 client and one-thread loop as tenure_bench (bench/http_conn.h,
// bench/closed_loop.h). Every operation is what a Consul client sends.
#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // before Boost: asio/awaitable.hpp uses std::exchange

#include "closed_loop.h"
#include "driver.h"
#include "loop.h"
#include "tenure_api.h"

namespace tenure::vs {
namespace {

using bench::Client;
using bench::ClosedLoop;
using bench::HttpConn;
using bench::HttpResponse;
using bench::Loop;
using bench::LoopOutcome;
using bench::OwnedResponse;
using bench::ParseId;
using bench::Renewer;
using bench::SessionCreator;
using bench::StatFromAgentSelf;
using bench::Unexpected;
namespace asio = boost::asio;

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

asio::ip::tcp::endpoint Endpoint(const std::string& addr) {
  std::size_t colon = addr.rfind(':');
  return {asio::ip::make_address(addr.substr(0, colon)),
          static_cast<unsigned short>(std::stoi(addr.substr(colon + 1)))};
}

Phase ToPhase(LoopOutcome&& out) {
  Phase p;
  p.ok = out.ok;
  p.errors = out.errors;
  p.first_error = std::move(out.first_error);
  p.seconds = out.seconds;
  p.latency_ns = std::move(out.latency_ns);
  return p;
}

Result Failed(std::string error) {
  Result r;
  r.error = std::move(error);
  return r;
}

// True when a KV GET body shows the key held by a session.
bool HeldInBody(std::string_view body) {
  std::size_t at = body.find("\"Session\":\"");
  return at != std::string_view::npos && at + 11 < body.size() && body[at + 11] != '"';
}

// --- closed-loop workloads --------------------------------------------------

class KvPut : public ClosedLoop {
 public:
  KvPut(Loop& loop, asio::ip::tcp::endpoint ep, const Options& o)
      : ClosedLoop(loop, ep, o.clients), value_(static_cast<std::size_t>(o.value_bytes), 'v') {
    for (int k = 0; k < o.keys; ++k) targets_.push_back(fmt::format("/v1/kv/bench/k{:04}", k));
    for (std::size_t i = 0; i < value_.size(); ++i) value_[i] = static_cast<char>('a' + i % 26);
  }

 protected:
  void StartOp(Client& c) override {
    const std::string& target = targets_[bench::NextRandom(&c.rng) % targets_.size()];
    c.conn->Send("PUT", target, value_, [this, &c](const HttpResponse& r) {
      FinishOp(c, r.status == 200 && r.body == "true" ? "" : Unexpected("kv put", r));
    });
  }

 private:
  std::vector<std::string> targets_;
  std::string value_;
};

// The session every lock client holds: TTL 60 s (etcd's concurrency.Session
// default, the same TTL its lease gets), no lock-delay.
constexpr std::string_view kLockSession = R"({"Name":"bench-lock","TTL":"60s","LockDelay":"0s"})";

// Acquire + release cycles. many: each client its own key, so every acquire
// succeeds at once. hot: every client on one key; a refused client does what
// Consul's api.Lock does: read the key and, while it is held, park a
// blocking query on it until it changes, then try again. fair (hot only):
// the acquire carries tenure's &queue&wait=, the server parks it in the
// lock's FIFO queue and answers true when it hands the lock over; a false
// (the wait ran out) is counted as a refusal and the acquire is sent again.
class LockCycle : public ClosedLoop {
 public:
  LockCycle(Loop& loop, asio::ip::tcp::endpoint ep, int clients, bool hot, bool fair)
      : ClosedLoop(loop, ep, clients), hot_(hot), fair_(fair) {}
  bool setup = true;
  std::uint64_t refusals = 0;
  HandoffClock handoff;  // hot only

 protected:
  void StartOp(Client& c) override {
    if (setup) {
      c.conn->Send("PUT", "/v1/session/create", kLockSession, [this, &c](const HttpResponse& r) {
        std::string id = r.status == 200 ? ParseId(r.body) : "";
        if (id.empty()) return FinishOp(c, Unexpected("session create", r));
        std::string key = hot_ ? "/v1/kv/bench/hot" : fmt::format("/v1/kv/bench/lock/{}", c.index);
        std::string acquire = key + "?acquire=" + id + (fair_ ? "&queue&wait=30s" : "");
        c.targets = {acquire, key + "?release=" + id, key};
        FinishOp(c, {});
      });
      return;
    }
    Acquire(c);
  }

 private:
  void Acquire(Client& c) {
    c.conn->Send("PUT", c.targets[0], "held", [this, &c](const HttpResponse& r) {
      if (r.status != 200) return FinishOp(c, Unexpected("acquire", r));
      if (r.body == "true") {
        if (hot_ && !setup) handoff.Acquired();
        return Release(c);
      }
      if (r.body != "false") return FinishOp(c, Unexpected("acquire", r));
      ++refusals;
      if (fair_) return Acquire(c);
      Look(c);
    });
  }
  void Release(Client& c) {
    if (hot_) handoff.Released();
    c.conn->Send("PUT", c.targets[1], {}, [this, &c](const HttpResponse& r) {
      FinishOp(c, r.status == 200 && r.body == "true" ? "" : Unexpected("release", r));
    });
  }
  void Look(Client& c) {
    c.conn->Send("GET", c.targets[2], {}, [this, &c](const HttpResponse& r) {
      if (r.status != 200 && r.status != 404) return FinishOp(c, Unexpected("lock read", r));
      if (r.status == 404 || !HeldInBody(r.body)) return Acquire(c);
      std::string wait = fmt::format("{}?index={}&wait=30s", c.targets[2], r.consul_index);
      c.conn->Send("GET", wait, {}, [this, &c](const HttpResponse& w) {
        if (w.status != 200 && w.status != 404) return FinishOp(c, Unexpected("lock wait", w));
        Acquire(c);
      });
    });
  }
  bool hot_;
  bool fair_;
};

// Whether the server offers the fair acquire, asked the only way a Consul
// client can: session A takes bench/fairprobe, then session B asks for it
// with &queue&wait=1s. A server that queues parks B until the wait runs out
// (about 1 s, then false); one that ignores the parameter, as Consul does,
// answers false at once. Then A releases and both sessions are destroyed.
class FairProbe : public ClosedLoop {
 public:
  FairProbe(Loop& loop, asio::ip::tcp::endpoint ep) : ClosedLoop(loop, ep, 1) {}
  std::string answer;     // B's answer body
  double answer_ms = -1;  // how long B's acquire took

 protected:
  void StartOp(Client& c) override {
    Create(c, [this, &c](std::string a) {
      Create(c, [this, &c, a](std::string b) {
        Put(c, std::string(kKey) + "?acquire=" + a, "probe",
            [this, &c, a, b](const HttpResponse& r) {
              if (r.status != 200 || r.body != "true")
                return FinishOp(c, Unexpected("probe acquire", r));
              std::int64_t sent = MonoNs();
              Put(c, std::string(kKey) + "?acquire=" + b + "&queue&wait=1s", "probe",
                  [this, &c, a, b, sent](const HttpResponse& q) {
                    answer_ms = static_cast<double>(MonoNs() - sent) / 1e6;
                    if (q.status != 200) return FinishOp(c, Unexpected("probe queued acquire", q));
                    answer = q.body;
                    Put(c, std::string(kKey) + "?release=" + a, {},
                        [this, &c, a, b](const HttpResponse&) {
                          Put(c, "/v1/session/destroy/" + a, {},
                              [this, &c, b](const HttpResponse&) {
                                Put(c, "/v1/session/destroy/" + b, {},
                                    [this, &c](const HttpResponse&) { FinishOp(c, {}); });
                              });
                        });
                  });
            });
      });
    });
  }

 private:
  static constexpr std::string_view kKey = "/v1/kv/bench/fairprobe";
  void Put(Client& c, const std::string& target, std::string_view body,
           std::function<void(const HttpResponse&)> done) {
    c.conn->Send("PUT", target, body, std::move(done));
  }
  void Create(Client& c, std::function<void(std::string)> done) {
    c.conn->Send("PUT", "/v1/session/create", kLockSession,
                 [this, &c, done](const HttpResponse& r) {
                   std::string id = r.status == 200 ? ParseId(r.body) : "";
                   if (id.empty()) return FinishOp(c, Unexpected("probe session create", r));
                   done(id);
                 });
  }
};

class SessionPairs : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;

 protected:
  void StartOp(Client& c) override {
    c.conn->Send("PUT", "/v1/session/create", kLockSession, [this, &c](const HttpResponse& r) {
      std::string id = r.status == 200 ? ParseId(r.body) : "";
      if (id.empty()) return FinishOp(c, Unexpected("session create", r));
      c.session = "/v1/session/destroy/" + id;
      c.conn->Send("PUT", c.session, {}, [this, &c](const HttpResponse& d) {
        FinishOp(c, d.status == 200 && d.body == "true" ? "" : Unexpected("session destroy", d));
      });
    });
  }
};

// New connections: connect (over TLS: and the handshake, in full: the
// contexts keep no session to resume), one small request, close (after a
// close_notify over TLS), as a CLI invocation or a short-lived client does.
// The request is a stale read of a small key, answered by the server itself
// without a raft round, so what is measured is the connection.
constexpr std::string_view kConnKey = "/v1/kv/bench/conn";

class NewConns : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;
  std::string tls_version;  // what the first handshake negotiated

 protected:
  void StartOp(Client& c) override {
    c.conn->AsyncConnect([this, &c](const std::string& error) {
      if (!error.empty()) return FinishOp(c, "connect: " + error);
      if (tls_version.empty()) tls_version = c.conn->TlsVersion();
      c.conn->Send("GET", target_, {}, [this, &c](const HttpResponse& r) {
        std::string e = r.status == 200 ? std::string() : Unexpected("read", r);
        c.conn->Close();
        FinishOp(c, e);
      });
    });
  }

 private:
  std::string target_ = std::string(kConnKey) + "?stale";
};

Result RunKvPut(Loop& loop, const Options& o) {
  KvPut w(loop, Endpoint(o.addr), o);
  std::string error;
  if (!w.Connect(&error)) return Failed(error);
  Phase p = ToPhase(w.Run(Seconds(o.seconds), o.max_ops));
  Result r;
  AddPhase(&r, p);
  return r;
}

// The server's answer to FairProbe: empty when it offers the fair acquire,
// else why not (also an error of the probe itself).
std::string FairNotOffered(Loop& loop, const Options& o, bool* unsupported) {
  FairProbe probe(loop, Endpoint(o.addr));
  std::string error;
  if (!probe.Connect(&error)) return error;
  LoopOutcome out = probe.Run(std::chrono::seconds(30), 1);
  if (out.errors > 0 || out.ok != 1) return "fair probe: " + out.first_error;
  // Parked for the wait (1 s; Consul's jitter may shorten a wait by 1/16).
  if (probe.answer == "false" && probe.answer_ms >= 500) return {};
  *unsupported = true;
  return fmt::format(
      "the server does not offer the fair acquire: PUT ?acquire=S&queue&wait=1s on a held key "
      "was answered {} after {:.1f} ms, not parked in a queue (Consul's way only)",
      probe.answer, probe.answer_ms);
}

Result RunLock(Loop& loop, const Options& o, bool hot) {
  bool fair = o.mode == "fair";
  if (fair) {
    bool unsupported = false;
    std::string why = FairNotOffered(loop, o, &unsupported);
    if (!why.empty()) {
      Result r = Failed(why);
      r.unsupported = unsupported;
      return r;
    }
  }
  LockCycle w(loop, Endpoint(o.addr), o.clients, hot, fair);
  std::string error;
  if (!w.Connect(&error)) return Failed(error);
  LoopOutcome made = w.Run(std::chrono::seconds(60), static_cast<std::uint64_t>(o.clients));
  if (made.errors > 0 || made.ok != static_cast<std::uint64_t>(o.clients)) {
    return Failed("setup: " + made.first_error);
  }
  w.setup = false;
  Phase p = ToPhase(w.Run(Seconds(o.seconds), o.max_ops));
  Result r;
  AddPhase(&r, p);
  r.Add("refusals", static_cast<double>(w.refusals));
  if (hot) w.handoff.AddTo(&r);
  return r;
}

Result RunSessionPairs(Loop& loop, const Options& o) {
  SessionPairs w(loop, Endpoint(o.addr), o.clients);
  std::string error;
  if (!w.Connect(&error)) return Failed(error);
  Phase p = ToPhase(w.Run(Seconds(o.seconds), o.max_ops));
  Result r;
  AddPhase(&r, p);
  return r;
}

Result RunKeepalive(Loop& loop, const Options& o) {
  std::string error;
  std::vector<std::string> ids;
  {
    SessionCreator creator(loop, Endpoint(o.addr), std::min(64, o.sessions),
                           std::string(kLockSession), &ids);
    if (!creator.Connect(&error)) return Failed(error);
    LoopOutcome made =
        creator.Run(std::chrono::seconds(60), static_cast<std::uint64_t>(o.sessions));
    if (made.errors > 0 || ids.size() != static_cast<std::size_t>(o.sessions)) {
      return Failed(fmt::format("setup: created {} of {} sessions: {}", ids.size(), o.sessions,
                                made.first_error));
    }
  }
  Renewer w(loop, Endpoint(o.addr), o.clients);
  if (!w.Connect(&error)) return Failed(error);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    w.clients()[i % w.clients().size()].targets.push_back("/v1/session/renew/" + ids[i]);
  }
  for (Client& c : w.clients()) {
    if (c.targets.empty()) c.targets.push_back("/v1/session/renew/" + ids[0]);
  }
  Phase p = ToPhase(w.Run(Seconds(o.seconds), o.max_ops));
  Result r;
  AddPhase(&r, p);
  return r;
}

Result RunNewConns(Loop& loop, const Options& o) {
  {
    HttpConn setup(loop.ioc(), Endpoint(o.addr));
    std::string error;
    if (!setup.Connect(&error)) return Failed("connect: " + error);
    OwnedResponse put = bench::Request(loop, setup, "PUT", kConnKey, "x");
    if (put.status != 200) return Failed(fmt::format("setup put: {} {}", put.status, put.body));
    setup.Close();
    loop.Drain();
  }
  NewConns w(loop, Endpoint(o.addr), o.clients);
  Phase p = ToPhase(w.Run(Seconds(o.seconds), o.max_ops));
  Result r;
  AddPhase(&r, p);
  r.note = w.tls_version.empty() ? "clear text" : w.tls_version;
  return r;
}

Result RunIdleRss(Loop& loop, const Options& o) {
  long before = RssKiB(o.server_pid);
  if (before < 0) return Failed("cannot read the server's VmRSS (--server-pid)");
  // TTL sessions, as a live client has (etcd leases always have a TTL):
  // the longest TTL, so none expires while idle.
  SessionCreator w(loop, Endpoint(o.addr), 64, R"({"Name":"bench-idle","TTL":"86400s"})", nullptr);
  std::string error;
  if (!w.Connect(&error)) return Failed(error);
  LoopOutcome out = w.Run(std::chrono::seconds(300), static_cast<std::uint64_t>(o.count));
  loop.Sleep(std::chrono::seconds(2));
  long after = RssKiB(o.server_pid);
  Result r;
  r.Add("created", static_cast<double>(out.ok));
  r.Add("create_per_s", out.seconds > 0 ? static_cast<double>(out.ok) / out.seconds : 0);
  r.Add("rss_before_mib", before / 1024.0);
  r.Add("rss_after_mib", after / 1024.0);
  r.Add("bytes_per_item",
        out.ok ? static_cast<double>(after - before) * 1024.0 / static_cast<double>(out.ok) : 0);
  if (out.errors > 0) {
    r.error = fmt::format("{} errors; first: {}", out.errors, out.first_error);
  } else if (out.ok != static_cast<std::uint64_t>(o.count)) {
    r.error = fmt::format("created only {} of {} sessions in 300 s", out.ok, o.count);
  }
  return r;
}

// --- watch fan-out ------------------------------------------------------------

// W connections each park GET /v1/kv/bench/wake?index=N&wait=60s (a blocking
// query); parking is confirmed by the server's blocking_queries count in
// /v1/agent/self; then one PUT. Measured: from sending the PUT to each
// watcher's complete response.
Result RunWatch(Loop& loop, const Options& o) {
  asio::ip::tcp::endpoint ep = Endpoint(o.addr);
  constexpr std::string_view kKey = "/v1/kv/bench/wake";
  HttpConn writer(loop.ioc(), ep), control(loop.ioc(), ep);
  std::string error;
  if (!writer.Connect(&error) || !control.Connect(&error)) return Failed("connect: " + error);
  OwnedResponse put = bench::Request(loop, writer, "PUT", kKey, "initial");
  OwnedResponse get = bench::Request(loop, control, "GET", kKey);
  if (put.status != 200 || get.status != 200 || get.consul_index == 0) {
    return Failed(
        fmt::format("initial put/get: {} {} / {} {}", put.status, put.body, get.status, get.body));
  }
  long rss_before = RssKiB(o.server_pid);
  std::vector<std::unique_ptr<HttpConn>> watchers;
  for (int i = 0; i < o.watchers; ++i) {
    watchers.push_back(std::make_unique<HttpConn>(loop.ioc(), ep));
    if (!watchers.back()->Connect(&error))
      return Failed(fmt::format("connect watcher {}: {}", i, error));
  }
  std::uint64_t index = get.consul_index;
  std::vector<std::int64_t> wake_ns, last_ns;
  std::string first_error;
  std::size_t errors = 0;
  long rss_parked = -1;
  long rss_reparked = -1;  // parked again after the rounds before: the steady state
  for (int round = 0; round < o.rounds && errors == 0; ++round) {
    std::size_t woken = 0;
    bool fired = false;
    Clock::time_point fire_time;
    std::int64_t round_last = 0;
    std::uint64_t next_index = index;
    std::string target = fmt::format("{}?index={}&wait=60s", kKey, index);
    for (std::size_t i = 0; i < watchers.size(); ++i) {
      watchers[i]->Send("GET", target, {}, [&, i](const HttpResponse& r) {
        std::int64_t ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - fire_time).count();
        ++woken;
        if (!fired || r.status != 200 || r.consul_index <= index) {
          if (errors++ == 0)
            first_error = Unexpected(fmt::format("watcher {} (fired {})", i, fired), r);
        } else {
          wake_ns.push_back(ns);
          round_last = std::max(round_last, ns);
        }
        next_index = std::max(next_index, r.consul_index);
        if (woken == watchers.size()) loop.Finish();
      });
    }
    Clock::time_point park_deadline = Clock::now() + std::chrono::seconds(60);
    for (;;) {
      OwnedResponse self = bench::Request(loop, control, "GET", "/v1/agent/self");
      long parked = self.status == 200 ? StatFromAgentSelf(self.body, "blocking_queries") : -1;
      if (parked < 0)
        return Failed(fmt::format("/v1/agent/self: {} {}", self.status, self.body.substr(0, 200)));
      if (parked >= o.watchers) break;
      if (Clock::now() > park_deadline) {
        return Failed(fmt::format("round {}: only {} of {} watchers parked after 60 s", round,
                                  parked, o.watchers));
      }
      loop.Sleep(std::chrono::milliseconds(2));
    }
    if (round == 0) rss_parked = RssKiB(o.server_pid);
    if (round == o.rounds - 1) rss_reparked = RssKiB(o.server_pid);
    fire_time = Clock::now();
    fired = true;
    bool acked = false;
    writer.Send("PUT", kKey, fmt::format("round-{}", round), [&](const HttpResponse& r) {
      if (r.status != 200 || r.body != "true") {
        if (errors++ == 0) first_error = Unexpected("waking write", r);
      }
      acked = true;
      if (woken == watchers.size()) loop.Finish();
    });
    if (!loop.RunUntil([&] { return acked && woken == watchers.size(); },
                       std::chrono::seconds(60))) {
      return Failed(fmt::format("round {}: {} of {} watchers woken within 60 s of the write", round,
                                woken, watchers.size()));
    }
    last_ns.push_back(round_last);
    index = next_index;
  }
  Result r;
  std::sort(wake_ns.begin(), wake_ns.end());
  std::sort(last_ns.begin(), last_ns.end());
  r.Add("wake_p50_ms", PercentileMs(wake_ns, 0.5));
  r.Add("wake_p99_ms", PercentileMs(wake_ns, 0.99));
  r.Add("last_median_ms", PercentileMs(last_ns, 0.5));
  r.Add("last_max_ms", PercentileMs(last_ns, 1.0));
  r.Add("wakeups", static_cast<double>(wake_ns.size()));
  if (rss_before > 0 && rss_parked > 0) {
    r.Add("rss_before_mib", rss_before / 1024.0);
    r.Add("rss_parked_mib", rss_parked / 1024.0);
    r.Add("bytes_per_watcher", static_cast<double>(rss_parked - rss_before) * 1024.0 / o.watchers);
    if (rss_reparked > 0) {
      r.Add("bytes_per_watcher_reparked",
            static_cast<double>(rss_reparked - rss_before) * 1024.0 / o.watchers);
    }
  }
  if (errors > 0) r.error = fmt::format("{} errors; first: {}", errors, first_error);
  return r;
}

// --- election candidate (failover) ------------------------------------------

// A candidate as a Consul client runs it: a session with the TTL and no
// lock-delay, renewed every TTL/3 on its own connection; acquire; when
// refused, a blocking query on the key until it changes, then acquire again.
Result RunCandidate(Loop& loop, const Options& o) {
  asio::ip::tcp::endpoint ep = Endpoint(o.addr);
  HttpConn lock(loop.ioc(), ep), renew(loop.ioc(), ep);
  std::string error;
  if (!lock.Connect(&error) || !renew.Connect(&error)) return Failed("connect: " + error);
  OwnedResponse created = bench::Request(
      loop, lock, "PUT", "/v1/session/create",
      fmt::format(R"({{"Name":"bench-candidate","TTL":"{}s","LockDelay":"0s"}})", o.ttl_s));
  std::string id = created.status == 200 ? ParseId(created.body) : "";
  if (id.empty()) return Failed(fmt::format("session create: {} {}", created.status, created.body));
  const std::string key = "/v1/kv/" + o.key;
  std::string failure;
  bool waiting_printed = false;
  asio::steady_timer timer(loop.ioc());
  std::function<void()> renew_later = [&] {
    timer.expires_after(std::chrono::milliseconds(o.ttl_s * 1000 / 3));
    timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      renew.Send("PUT", "/v1/session/renew/" + id, {}, [&](const HttpResponse& r) {
        if (r.status != 200) {
          failure = Unexpected("renew", r);
          return loop.Finish();
        }
        fmt::print("RENEWED {}\n", MonoNs());
        std::fflush(stdout);
        renew_later();
      });
    });
  };
  renew_later();
  std::function<void()> acquire;
  std::function<void()> look = [&] {
    lock.Send("GET", key, {}, [&](const HttpResponse& r) {
      if (r.status != 200 && r.status != 404) {
        failure = Unexpected("read", r);
        return loop.Finish();
      }
      if (r.status == 404 || !HeldInBody(r.body)) return acquire();
      if (!waiting_printed) {
        waiting_printed = true;
        fmt::print("WAITING {}\n", MonoNs());
        std::fflush(stdout);
      }
      lock.Send("GET", fmt::format("{}?index={}&wait=60s", key, r.consul_index), {},
                [&](const HttpResponse& w) {
                  if (w.status != 200 && w.status != 404) {
                    failure = Unexpected("wait", w);
                    return loop.Finish();
                  }
                  acquire();
                });
    });
  };
  acquire = [&] {
    lock.Send("PUT", key + "?acquire=" + id, "candidate", [&](const HttpResponse& r) {
      if (r.status == 200 && r.body == "true") {
        fmt::print("HELD {}\n", MonoNs());
        std::fflush(stdout);
        return;  // hold until killed; the renewals go on
      }
      if (r.status != 200 || r.body != "false") {
        failure = Unexpected("acquire", r);
        return loop.Finish();
      }
      look();
    });
  };
  acquire();
  loop.RunUntil([&] { return !failure.empty(); }, std::chrono::hours(24));
  return Failed(failure.empty() ? "candidate ran for 24 h" : failure);
}

}  // namespace

Result RunTenure(const Options& o) {
  Loop loop;
  if (o.workload == "kv_put") return RunKvPut(loop, o);
  if (o.workload == "lock_many") return RunLock(loop, o, false);
  if (o.workload == "lock_hot") return RunLock(loop, o, true);
  if (o.workload == "session_pairs") return RunSessionPairs(loop, o);
  if (o.workload == "keepalive") return RunKeepalive(loop, o);
  if (o.workload == "watch") return RunWatch(loop, o);
  if (o.workload == "idle_rss") return RunIdleRss(loop, o);
  if (o.workload == "candidate") return RunCandidate(loop, o);
  if (o.workload == "conns") return RunNewConns(loop, o);
  return Failed("tenure: unknown workload " + o.workload);
}

}  // namespace tenure::vs
