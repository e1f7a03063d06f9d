// ZooKeeper's side of tenure_vs (ZooKeeper 3.8, or tenure's ZooKeeper port):
// durable znode sets (setData, the equivalent of a KV put), watch fan-out
// (getData with a watch on one znode, then one setData), the recipes' lock
// cycle on one hot lock (kazoo's and Curator's: an ephemeral sequential
// node, the lowest leads, each waiter watching its predecessor), and
// session connect and close, and the server's memory per idle session.
// Every client is one session on its own TCP connection (zk_conn.h), all on
// one asio thread.
#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // before Boost: asio/awaitable.hpp uses std::exchange
#include <vector>

#include "driver.h"
#include "loop.h"
#include "zk_conn.h"

namespace tenure::vs {
namespace {

using bench::Loop;

// ZooKeeper's largest session timeout at its default tickTime (2 s x 20).
constexpr int kSessionTimeoutMs = 40'000;
constexpr int kNodeExists = -110;
constexpr int kNoNode = -101;
constexpr int kEphemeralSequential = 3;
constexpr int kNodeDeleted = 2;

Result Failed(std::string error) {
  Result r;
  r.error = std::move(error);
  return r;
}

// The timed phase's length, --seconds.
Clock::duration PhaseLength(const Options& o) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
}

asio::ip::tcp::endpoint Endpoint(const std::string& addr) {
  std::size_t colon = addr.rfind(':');
  return {asio::ip::make_address(addr.substr(0, colon)),
          static_cast<unsigned short>(std::stoi(addr.substr(colon + 1)))};
}

// Sessions plus a pinger for the idle ones (a real client pings at a third
// of the session timeout when it has nothing else to send).
class Sessions {
 public:
  Sessions(Loop& loop, asio::ip::tcp::endpoint ep, int n) : loop_(loop), pinger_(loop.ioc()) {
    for (int i = 0; i < n; ++i) conns_.push_back(std::make_unique<ZkConn>(loop.ioc(), ep));
  }
  ~Sessions() { pinger_.cancel(); }

  // Opens every session (in parallel: each is a write on the server).
  bool Open(std::string* error) {
    std::size_t done = 0, failed = 0;
    for (auto& c : conns_) {
      if (!c->Connect(kSessionTimeoutMs, error, [&](bool ok) {
            ++done;
            if (!ok) ++failed;
            if (done == conns_.size()) loop_.Finish();
          })) {
        return false;
      }
    }
    SchedulePing();  // now: the first sessions must live while the last ones open
    if (!loop_.RunUntil([&] { return done == conns_.size(); }, std::chrono::seconds(120))) {
      *error = fmt::format("only {} of {} sessions opened within 120 s", done, conns_.size());
      return false;
    }
    if (failed > 0) {
      for (auto& c : conns_) {
        if (c->failed()) *error = "session: " + c->error();
      }
      return false;
    }
    return true;
  }

  ZkConn& operator[](std::size_t i) { return *conns_[i]; }
  std::size_t size() const { return conns_.size(); }

 private:
  void SchedulePing() {
    pinger_.expires_after(std::chrono::seconds(2));
    pinger_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      auto idle_since =
          std::chrono::steady_clock::now() - std::chrono::milliseconds(kSessionTimeoutMs / 3);
      for (auto& c : conns_) {
        if (c->connected() && !c->failed() && c->last_send() < idle_since) c->Ping();
      }
      SchedulePing();
    });
  }

  Loop& loop_;
  asio::steady_timer pinger_;
  std::vector<std::unique_ptr<ZkConn>> conns_;
};

// Runs `n` pipelined requests made by `issue(i, done)` on the loop and waits.
bool RunAll(Loop& loop, int n, const std::function<void(int, ZkConn::Callback)>& issue,
            std::string* error) {
  int done = 0;
  std::string first;
  for (int i = 0; i < n; ++i) {
    issue(i, [&](int err, std::string_view body) {
      if (err != 0 && err != kNodeExists && first.empty()) {
        first = fmt::format("error {}{}", err, err == -1000 ? ": " + std::string(body) : "");
      }
      if (++done == n) loop.Finish();
    });
  }
  if (!loop.RunUntil([&] { return done == n; }, std::chrono::seconds(120))) {
    *error = fmt::format("only {} of {} setup requests answered within 120 s", done, n);
    return false;
  }
  if (!first.empty()) *error = "setup: " + first;
  return first.empty();
}

Result RunKvPut(Loop& loop, const Options& o) {
  Sessions s(loop, Endpoint(o.addr), o.clients);
  std::string error;
  if (!s.Open(&error)) return Failed(error);
  if (!RunAll(
          loop, 1, [&](int, ZkConn::Callback cb) { s[0].Create("/bench", "", false, cb); },
          &error) ||
      !RunAll(
          loop, o.keys,
          [&](int k, ZkConn::Callback cb) {
            s[0].Create(fmt::format("/bench/k{:04}", k), "", false, cb);
          },
          &error)) {
    return Failed(error);
  }
  std::vector<std::string> paths;
  for (int k = 0; k < o.keys; ++k) paths.push_back(fmt::format("/bench/k{:04}", k));
  std::string value(static_cast<std::size_t>(o.value_bytes), 'v');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>('a' + i % 26);

  Phase p;
  p.latency_ns.reserve(1'000'000);
  Clock::time_point start = Clock::now(), deadline = start + PhaseLength(o);
  Clock::time_point last = start;
  std::uint64_t started = 0;
  int active = 0;
  std::vector<std::uint64_t> rng(s.size());
  std::function<void(std::size_t)> start_op = [&](std::size_t c) {
    ++started;
    Clock::time_point t0 = Clock::now();
    rng[c] = rng[c] * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::string& path = paths[(rng[c] >> 33) % paths.size()];
    s[c].SetData(path, value, [&, c, t0](int err, std::string_view) {
      Clock::time_point now = Clock::now();
      last = now;
      if (err != 0) {
        if (p.errors++ == 0) p.first_error = fmt::format("setData: error {} {}", err, s[c].error());
      } else {
        ++p.ok;
        p.latency_ns.push_back((now - t0).count());
        if (now < deadline && started < o.max_ops) return start_op(c);
      }
      if (--active == 0) loop.Finish();
    });
  };
  for (std::size_t c = 0; c < s.size(); ++c) {
    rng[c] = c + 1;
    ++active;
    start_op(c);
  }
  if (!loop.RunUntil([&] { return active == 0; }, PhaseLength(o) + std::chrono::seconds(30))) {
    return Failed(fmt::format("{} setData requests still in flight 30 s after the phase", active));
  }
  p.seconds = std::chrono::duration<double>(last - start).count();
  Result r;
  AddPhase(&r, p);
  return r;
}

// W sessions each set a data watch on /bench/wake (getData with watch=true;
// the watch is registered once the reply arrives), then one setData from
// another session. ZooKeeper's watches fire once, so every round re-arms
// them (not timed), as a ZooKeeper client does.
Result RunWatch(Loop& loop, const Options& o) {
  constexpr std::string_view kPath = "/bench-wake";
  Sessions writer(loop, Endpoint(o.addr), 1);
  std::string error;
  if (!writer.Open(&error)) return Failed("writer: " + error);
  if (!RunAll(
          loop, 1, [&](int, ZkConn::Callback cb) { writer[0].Create(kPath, "initial", false, cb); },
          &error)) {
    return Failed(error);
  }
  long rss_before = RssKiB(o.server_pid);
  Sessions watchers(loop, Endpoint(o.addr), o.watchers);
  if (!watchers.Open(&error)) return Failed("watchers: " + error);

  std::vector<std::int64_t> wake_ns, last_ns;
  std::size_t errors = 0, woken = 0;
  std::string first_error;
  bool fired = false;
  Clock::time_point fire_time;
  std::int64_t round_last = 0;
  for (std::size_t i = 0; i < watchers.size(); ++i) {
    watchers[i].OnWatch([&, i](int type, std::string_view path) {
      std::int64_t ns = (Clock::now() - fire_time).count();
      ++woken;
      if (!fired || type != 3 || path != kPath) {
        if (errors++ == 0)
          first_error =
              fmt::format("watcher {}: event type {} on '{}' (fired {})", i, type, path, fired);
      } else {
        wake_ns.push_back(ns);
        round_last = std::max(round_last, ns);
      }
      if (woken == watchers.size()) loop.Finish();
    });
  }
  long rss_parked = -1;
  for (int round = 0; round < o.rounds && errors == 0; ++round) {
    woken = 0;
    fired = false;
    round_last = 0;
    if (!RunAll(
            loop, static_cast<int>(watchers.size()),
            [&](int i, ZkConn::Callback cb) {
              watchers[static_cast<std::size_t>(i)].GetData(kPath, true, cb);
            },
            &error)) {
      return Failed(fmt::format("round {}: arming watches: {}", round, error));
    }
    if (round == 0) rss_parked = RssKiB(o.server_pid);
    fire_time = Clock::now();
    fired = true;
    bool acked = false;
    writer[0].SetData(kPath, fmt::format("round-{}", round), [&](int err, std::string_view) {
      if (err != 0 && errors++ == 0) first_error = fmt::format("waking setData: error {}", err);
      acked = true;
      if (woken == watchers.size()) loop.Finish();
    });
    if (!loop.RunUntil([&] { return acked && woken == watchers.size(); },
                       std::chrono::seconds(60))) {
      return Failed(fmt::format("round {}: {} of {} watchers notified within 60 s of the write",
                                round, woken, watchers.size()));
    }
    last_ns.push_back(round_last);
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
  }
  if (errors > 0) r.error = fmt::format("{} errors; first: {}", errors, first_error);
  return r;
}

// One hot lock taken and released as the recipes do (kazoo's Lock,
// Curator's InterProcessMutex): create an ephemeral sequential node under
// the lock's path, read the children; the lowest holds, so delete it (the
// release) and start again; otherwise set an exists watch on the node just
// below ours and read the children again when it goes (or at once if it
// went already). An operation is the whole cycle, create sent to delete
// answered; the handoff is the release sent to the next holder's children
// answer showing it lowest.
Result RunLockHot(Loop& loop, const Options& o) {
  constexpr std::string_view kLock = "/bench-lock";
  Sessions s(loop, Endpoint(o.addr), o.clients);
  std::string error;
  if (!s.Open(&error)) return Failed(error);
  if (!RunAll(
          loop, 1, [&](int, ZkConn::Callback cb) { s[0].Create(kLock, "", false, cb); }, &error)) {
    return Failed(error);
  }
  Phase p;
  p.latency_ns.reserve(1'000'000);
  HandoffClock handoff;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + PhaseLength(o);
  Clock::time_point last = start;
  std::uint64_t started = 0;
  int active = 0;
  struct Contender {
    std::string node;     // our node's name under the lock
    std::string waiting;  // the predecessor's path whose deletion we wait for
    Clock::time_point t0;
  };
  std::vector<Contender> c(s.size());
  std::function<void(std::size_t)> cycle, look;
  // A contender that fails leaves its node behind, which would hold up
  // every later one: the run ends at the first failure, with its error.
  auto fail = [&](std::size_t i, std::string what, int err) {
    if (p.errors++ == 0) p.first_error = fmt::format("{}: error {} {}", what, err, s[i].error());
    --active;
    loop.Finish();
  };
  cycle = [&](std::size_t i) {
    ++started;
    c[i].t0 = Clock::now();
    c[i].waiting.clear();
    s[i].CreateMode(std::string(kLock) + "/lock-", "", kEphemeralSequential,
                    [&, i](int err, std::string_view body) {
                      if (err != 0) return fail(i, "create", err);
                      const std::string path = ZkConn::ParseString(body);
                      c[i].node = path.substr(path.rfind('/') + 1);
                      look(i);
                    });
  };
  look = [&](std::size_t i) {
    s[i].GetChildren(kLock, false, [&, i](int err, std::string_view body) {
      if (err != 0) return fail(i, "getChildren", err);
      std::vector<std::string> names = ZkConn::ParseStrings(body);
      std::sort(names.begin(), names.end());  // one prefix, 10-digit suffixes
      auto mine = std::lower_bound(names.begin(), names.end(), c[i].node);
      if (mine == names.end() || *mine != c[i].node) return fail(i, "our node is gone", 0);
      if (mine != names.begin()) {
        c[i].waiting = std::string(kLock) + "/" + *(mine - 1);
        s[i].Exists(c[i].waiting, true, [&, i](int e, std::string_view) {
          if (e == kNoNode) return look(i);  // it went before the watch was set
          if (e != 0) fail(i, "exists", e);
        });
        return;
      }
      handoff.Acquired();
      handoff.Released();
      s[i].Delete(std::string(kLock) + "/" + c[i].node, -1, [&, i](int e, std::string_view) {
        if (e != 0) return fail(i, "delete", e);
        const Clock::time_point now = Clock::now();
        last = now;
        ++p.ok;
        p.latency_ns.push_back((now - c[i].t0).count());
        if (now < deadline && started < o.max_ops) return cycle(i);
        if (--active == 0) loop.Finish();
      });
    });
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    s[i].OnWatch([&, i](int type, std::string_view path) {
      if (type == kNodeDeleted && !c[i].waiting.empty() && path == c[i].waiting) {
        c[i].waiting.clear();
        look(i);
      }
    });
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    ++active;
    cycle(i);
  }
  if (!loop.RunUntil([&] { return active == 0 || p.errors > 0; },
                     PhaseLength(o) + std::chrono::seconds(60))) {
    return Failed(fmt::format("{} lock cycles still in flight 60 s after the phase", active));
  }
  if (p.errors > 0) return Failed("lock cycle: " + p.first_error);
  p.seconds = std::chrono::duration<double>(last - start).count();
  Result r;
  AddPhase(&r, p);
  handoff.AddTo(&r);
  return r;
}

// Sessions opened and closed: each client connects (TCP and a
// ConnectRequest, which the server answers once the session is created:
// a replicated write), sends closeSession and waits for its answer (the
// session's end, another write), then starts again on a new connection.
Result RunSessionPairs(Loop& loop, const Options& o) {
  const asio::ip::tcp::endpoint ep = Endpoint(o.addr);
  Phase p;
  p.latency_ns.reserve(1'000'000);
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + PhaseLength(o);
  Clock::time_point last = start;
  std::uint64_t started = 0;
  int active = 0;
  // Every connection lives to the end: its handlers may still run after
  // the server closed it.
  std::vector<std::unique_ptr<ZkConn>> conns;
  auto fail = [&](std::string what) {
    if (p.errors++ == 0) p.first_error = std::move(what);
    if (--active == 0) loop.Finish();
  };
  std::function<void()> pair = [&] {
    ++started;
    const Clock::time_point t0 = Clock::now();
    conns.push_back(std::make_unique<ZkConn>(loop.ioc(), ep));
    ZkConn* conn = conns.back().get();
    std::string error;
    if (!conn->Connect(kSessionTimeoutMs, &error, [&, conn, t0](bool ok) {
          if (!ok) return fail("connect: " + conn->error());
          conn->CloseSession([&, t0](int err, std::string_view) {
            if (err != 0) return fail(fmt::format("closeSession: error {}", err));
            const Clock::time_point now = Clock::now();
            last = now;
            ++p.ok;
            p.latency_ns.push_back((now - t0).count());
            if (now < deadline && started < o.max_ops) return pair();
            if (--active == 0) loop.Finish();
          });
        })) {
      fail(error);
    }
  };
  for (int i = 0; i < o.clients; ++i) {
    ++active;
    pair();
  }
  if (!loop.RunUntil([&] { return active == 0; }, PhaseLength(o) + std::chrono::seconds(60))) {
    return Failed(fmt::format("{} session pairs still in flight 60 s after the phase", active));
  }
  p.seconds = std::chrono::duration<double>(last - start).count();
  Result r;
  AddPhase(&r, p);
  return r;
}

// Server RSS per idle session: --count sessions opened (each its own
// connection, as a ZooKeeper session needs one) and kept alive by pings;
// the server's RSS before and 2 s after the last one opened.
Result RunIdleRss(Loop& loop, const Options& o) {
  const long before = RssKiB(o.server_pid);
  if (before < 0) return Failed("cannot read the server's VmRSS (--server-pid)");
  Sessions s(loop, Endpoint(o.addr), o.count);
  std::string error;
  const Clock::time_point start = Clock::now();
  if (!s.Open(&error)) return Failed(error);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  loop.RunUntil([] { return false; }, std::chrono::seconds(2));
  const long after = RssKiB(o.server_pid);
  Result r;
  r.Add("created", static_cast<double>(s.size()));
  r.Add("create_per_s", seconds > 0 ? static_cast<double>(s.size()) / seconds : 0);
  r.Add("rss_before_mib", before / 1024.0);
  r.Add("rss_after_mib", after / 1024.0);
  r.Add("bytes_per_item", static_cast<double>(after - before) * 1024.0 / o.count);
  return r;
}

}  // namespace

Result RunZk(const Options& o) {
  Loop loop;
  if (o.workload == "kv_put") return RunKvPut(loop, o);
  if (o.workload == "watch") return RunWatch(loop, o);
  if (o.workload == "lock_hot") return RunLockHot(loop, o);
  if (o.workload == "session_pairs") return RunSessionPairs(loop, o);
  if (o.workload == "idle_rss") return RunIdleRss(loop, o);
  return Failed("zk: workload " + o.workload + " is not measured on ZooKeeper");
}

}  // namespace tenure::vs
