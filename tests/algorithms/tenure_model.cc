// tenure's way: the replicas are clients of a simulated 3-server tenure
// cluster (tests/raft/sim: the real state::Store, raft::FsmBridge and
// server::LeaderDuties on libraft's raft_fixture). Each replica does what
// `tenure elect` does (docs/leadership.md): a session with TTL T = 15 s and
// lock-delay D = 5 s, renewals every T/3 (retried every second), a blocking
// query on the key while someone else holds it, acquire when it is free,
// and leadership only while is_leader(G = 5 s) holds on its own clock. It
// writes to the data store with the fencing token of its grant, and the
// data store is the survey's FencedStorage.
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

#include "algos.h"
#include "raft/sim/cluster.h"

namespace tenure::algos {
namespace {

constexpr int kWorld = -1;
constexpr unsigned kServers = 3;
const char* const kKey = "service/app/leader";

class TenureWorld {
 public:
  TenureWorld(const Plan& plan, const Timing& timing, std::uint64_t seed, bool keep_timeline)
      : plan_(plan),
        timing_(timing),
        rng_(seed),
        net_rng_(rng_.Fork()),
        cluster_(Options(rng_)),
        recorder_(plan.replicas, keep_timeline),
        clients_(plan.replicas) {
    for (unsigned i = 0; i < n(); ++i) {
      clients_[i].drift_ppm = plan.drift_ppm[i];
      clients_[i].mono_offset = rng_.Uniform(0, 1'000'000);
    }
    side_.assign(n() + kServers, 0);
  }

  RunResult Run() {
    cluster_.Start();
    for (unsigned i = 0; i < n(); ++i) StartClient(i);
    for (const Fault& f : plan_.faults) Schedule(f);
    while (now() < plan_.duration) {
      while (!queue_.empty() && queue_.begin()->first.first <= now()) {
        auto it = queue_.begin();
        Event event = std::move(it->second);
        queue_.erase(it);
        Dispatch(event);
      }
      Observe();
      if (loss_percent_ > 0 && now() >= next_flap_) {
        SetServerLinks();
        next_flap_ = now() + kFlapMs;
      }
      cluster_.Step();
      TrackGrants();
      ServeWatches();
    }
    recorder_.Finish(plan_.duration);
    RunResult result{recorder_.metrics(), recorder_.timeline(), ""};
    if (cluster_.checkers().failed()) result.failure = cluster_.checkers().failure();
    return result;
  }

 private:
  // --- The replicas, as `tenure elect` ----------------------------------------
  struct Client {
    std::int64_t drift_ppm = 0;
    Ms mono_offset = 0;
    bool crashed = false;
    Ms paused_until = 0;
    std::uint64_t incarnation = 0;
    std::optional<std::uint64_t> decided_write;
    unsigned server = 0;  // where it sends requests; the next one after an error
    state::SessionId session;
    unsigned sessions_made = 0;
    Ms lease_end = 0;  // on its own clock
    bool holding = false;
    std::uint64_t token = 0;
    std::uint64_t renew_round = 0;
    std::uint64_t acquire_round = 0;
  };
  struct Event {
    Ms at;
    int node;  // replica, or n() + server, or kWorld
    std::uint64_t incarnation;
    std::function<void()> fn;
  };
  using Reply = std::function<void(std::function<void()>)>;
  // Which process of client i, with which session, asked.
  struct Stamp {
    std::uint64_t incarnation;
    state::SessionId session;
  };
  struct Watch {
    unsigned client;
    unsigned server;
    std::uint64_t round;
    LogIndex index;
    Ms deadline;
    Stamp stamp;
    Reply reply;
  };

  static sim::ClusterOptions Options(Rng& rng) {
    sim::ClusterOptions options;
    options.servers = kServers;
    options.ttl_multiplier = 2;
    options.drift_ppm_max = 1'000;
    options.tracked_keys = {kKey};
    for (unsigned s = 0; s < kServers; ++s) {
      options.clocks.emplace_back(rng.Uniform(-200, 200), rng.Uniform(-1'000, 1'000),
                                  rng.Uniform(0, 1'000'000));
    }
    return options;
  }

  unsigned n() const { return plan_.replicas; }
  Ms now() const { return cluster_.now(); }
  Ms ttl() const { return timing_.ttl; }
  Ms guarantee() const { return ttl() / 3; }
  Ms Local(unsigned i) const {
    return clients_[i].mono_offset + now() * (1'000'000 + clients_[i].drift_ppm) / 1'000'000;
  }
  // is_leader(G): holds the key and the lease lasts G more on its clock.
  bool IsLeader(unsigned i) const {
    const Client& c = clients_[i];
    return !c.crashed && c.holding && Local(i) + guarantee() <= c.lease_end;
  }

  void At(Ms at, int node, std::function<void()> fn) {
    std::uint64_t incarnation = 0;
    if (node >= 0 && static_cast<unsigned>(node) < n()) incarnation = clients_[node].incarnation;
    queue_.emplace(std::make_pair(at, seq_++), Event{at, node, incarnation, std::move(fn)});
  }
  void After(unsigned i, Ms local_ms, std::function<void()> fn) {
    Ms real = local_ms * 1'000'000 / (1'000'000 + clients_[i].drift_ppm);
    At(now() + real, static_cast<int>(i), std::move(fn));
  }

  void Dispatch(Event& event) {
    if (event.node >= 0 && static_cast<unsigned>(event.node) < n()) {
      Client& c = clients_[event.node];
      if (c.crashed || c.incarnation != event.incarnation) return;
      if (now() < c.paused_until) {
        event.at = c.paused_until;
        queue_.emplace(std::make_pair(event.at, seq_++), std::move(event));
        return;
      }
    } else if (event.node >= static_cast<int>(n())) {
      if (!cluster_.alive(event.node - n())) return;
    }
    event.fn();
  }

  bool Reachable(unsigned client, unsigned server) const {
    return side_[client] == side_[n() + server];
  }

  // Client i sends a request to its server; `serve` runs there and answers
  // through `reply`, whose function runs back at the client.
  void Request(unsigned i, std::function<void(unsigned, Reply)> serve) {
    unsigned s = clients_[i].server;
    recorder_.OnMessages();
    if (Lost() || !Reachable(i, s)) return;
    At(now() + Delay(), static_cast<int>(n() + s), [this, i, s, serve = std::move(serve)] {
      if (!Reachable(i, s)) return;
      serve(s, [this, i, s](std::function<void()> back) {
        recorder_.OnMessages();
        if (!cluster_.alive(s) || Lost() || !Reachable(i, s)) return;
        At(now() + Delay(), static_cast<int>(i), std::move(back));
      });
    });
  }
  bool Lost() { return loss_percent_ > 0 && net_rng_.Percent(loss_percent_); }

  // Links between servers: cut across the partition; under message loss,
  // each one-way link is down for loss% of each 100 ms (raft_fixture drops
  // whole links, not single messages).
  static constexpr Ms kFlapMs = 100;
  void SetServerLinks() {
    for (unsigned a = 0; a < kServers; ++a) {
      for (unsigned b = 0; b < kServers; ++b) {
        if (a == b) continue;
        bool cut = side_[n() + a] != side_[n() + b] || Lost();
        cluster_.Cut(a, b, cut);
      }
    }
  }
  Ms Delay() { return net_rng_.Uniform(timing_.delay_min, timing_.delay_max); }
  void NextServer(unsigned i) { clients_[i].server = (clients_[i].server + 1) % kServers; }

  void StartClient(unsigned i) {
    Client& c = clients_[i];
    c.session = state::SessionId();
    c.holding = false;
    c.lease_end = 0;
    c.server = i % kServers;
    After(i, rng_.Uniform(0, 200), [this, i] { CreateSession(i); });
    WriteLoop(i);
  }

  Stamp StampOf(unsigned i) const { return {clients_[i].incarnation, clients_[i].session}; }
  // Runs `fn` on client i only if it is still that process with that session.
  std::function<void()> Guarded(unsigned i, Stamp stamp, std::function<void()> fn) {
    return [this, i, stamp = std::move(stamp), fn = std::move(fn)] {
      const Client& c = clients_[i];
      if (c.incarnation == stamp.incarnation && c.session == stamp.session) fn();
    };
  }
  std::function<void()> Back(unsigned i, std::function<void()> fn) {
    return Guarded(i, StampOf(i), std::move(fn));
  }

  void CreateSession(unsigned i) {
    Client& c = clients_[i];
    state::Session session;
    session.id = state::SessionId(
        fmt::format("{:08x}-{:04x}-4000-8000-{:012x}", i, c.sessions_made++, c.incarnation));
    session.name = fmt::format("replica-{}", i);
    session.node = "app";
    session.ttl = fmt::format("{}s", ttl() / 1000);
    session.ttl_ns = ttl() * kNsPerMs;
    session.lock_delay_ns = 5'000 * kNsPerMs;
    session.behavior = state::Behavior::kRelease;
    Ms sent = Local(i);
    std::uint64_t round = ++c.acquire_round;
    Request(i, [this, i, session, sent, round, stamp = StampOf(i)](unsigned s, Reply reply) {
      cluster_.server(s).Propose(
          state::SessionCreate{session},
          [this, i, reply, id = session.id, sent, round, stamp](Result<state::ApplyResult> r) {
            bool ok = r.ok() && r->status.ok();
            reply(Guarded(i, stamp,
                          [this, i, ok, id, sent, round] { OnCreated(i, ok, id, sent, round); }));
          });
    });
    After(i, timing_.request_timeout, Back(i, [this, i, round] {
            if (clients_[i].acquire_round != round) return;  // answered
            NextServer(i);
            CreateSession(i);
          }));
  }

  void OnCreated(unsigned i, bool ok, const state::SessionId& id, Ms sent, std::uint64_t round) {
    Client& c = clients_[i];
    if (c.acquire_round != round) return;
    ++c.acquire_round;
    if (!ok) {
      NextServer(i);
      After(i, 1'000, Back(i, [this, i] { CreateSession(i); }));
      return;
    }
    c.session = id;
    c.lease_end = sent + LeaseFor();  // the create counts as the first renewal
    After(i, RenewInterval(), Back(i, [this, i] { Renew(i); }));
    Acquire(i);
  }

  // lease_end - sent: T (1 - rho) / (1 + rho) with rho = 1%.
  Ms LeaseFor() const { return ttl() * 99 / 101; }
  Ms RenewInterval() { return ttl() / 3 - rng_.Uniform(0, ttl() / 30); }

  void Renew(unsigned i) {
    Client& c = clients_[i];
    std::uint64_t round = ++c.renew_round;
    Ms sent = Local(i);
    state::SessionId id = c.session;
    Request(i, [this, i, id, sent, round, stamp = StampOf(i)](unsigned s, Reply reply) {
      cluster_.server(s).Renew(id, [this, i, reply, sent, round,
                                    stamp](Result<const state::Session*> r) {
        Code code = r.ok() ? Code::kOk : r.status().code();
        reply(Guarded(i, stamp, [this, i, code, sent, round] { OnRenewed(i, code, sent, round); }));
      });
    });
    // No success within r = 1 s: another renewal goes (the first may still answer).
    After(i, 1'000, Back(i, [this, i, round] {
            if (clients_[i].renew_round != round) return;
            NextServer(i);
            Renew(i);
          }));
  }

  void OnRenewed(unsigned i, Code code, Ms sent, std::uint64_t round) {
    Client& c = clients_[i];
    if (code == Code::kOk) {
      c.lease_end = std::max(c.lease_end, sent + LeaseFor());
      if (c.renew_round == round) {
        ++c.renew_round;
        After(i, RenewInterval(), Back(i, [this, i] { Renew(i); }));
      }
      return;
    }
    if (code == Code::kNotFound) {  // the session is gone: so is the lock
      c.session = state::SessionId();
      c.holding = false;
      ++c.renew_round;
      ++c.acquire_round;
      After(i, 100, Back(i, [this, i] { CreateSession(i); }));
    }
  }

  void Acquire(unsigned i) {
    Client& c = clients_[i];
    std::uint64_t round = ++c.acquire_round;
    state::KvAcquire acquire{kKey, fmt::format("replica-{}", i), 0, c.session};
    Request(i, [this, i, acquire, round, stamp = StampOf(i)](unsigned s, Reply reply) {
      cluster_.server(s).Propose(
          acquire, [this, i, reply, round, stamp](Result<state::ApplyResult> r) {
            AcquireAnswer a;
            a.reached = r.ok();
            if (r.ok()) {
              a.status_ok = r->status.ok();
              a.ok = r->ok;
              a.lock_delayed = r->lock_delayed;
              a.fence = r->fence.value();
            }
            reply(Guarded(i, stamp, [this, i, a, round] { OnAcquired(i, a, round); }));
          });
    });
    After(i, timing_.request_timeout, Back(i, [this, i, round] {
            if (clients_[i].acquire_round != round) return;
            NextServer(i);
            Acquire(i);
          }));
  }

  struct AcquireAnswer {
    bool reached = false;  // the server answered (not "no leader")
    bool status_ok = false;
    bool ok = false;
    bool lock_delayed = false;
    std::uint64_t fence = 0;
  };

  void OnAcquired(unsigned i, const AcquireAnswer& a, std::uint64_t round) {
    Client& c = clients_[i];
    if (c.acquire_round != round) return;
    ++c.acquire_round;
    if (!a.reached) {
      NextServer(i);
      After(i, 1'000, Back(i, [this, i] { Acquire(i); }));
    } else if (!a.status_ok) {  // e.g. invalid session: it expired meanwhile
      c.session = state::SessionId();
      c.holding = false;
      ++c.renew_round;
      After(i, 100, Back(i, [this, i] { CreateSession(i); }));
    } else if (a.ok) {
      c.holding = true;
      c.token = a.fence;
    } else if (a.lock_delayed) {
      After(i, 1'000, Back(i, [this, i] { Acquire(i); }));
    } else {
      WatchKey(i);
    }
  }

  // A blocking query on the key, at the raft leader; it answers when the key
  // changes, or is free, or after 5 s.
  void WatchKey(unsigned i) {
    Client& c = clients_[i];
    std::uint64_t round = ++c.acquire_round;
    Request(i, [this, i, round, stamp = StampOf(i)](unsigned s, Reply reply) {
      if (!cluster_.server(s).IsRaftLeader()) {
        reply(Guarded(i, stamp, [this, i, round] { OnWatched(i, false, round); }));
        return;
      }
      watches_.push_back(
          {i, s, round, cluster_.server(s).store().KeyIndex(kKey), now() + 5'000, stamp, reply});
    });
    After(i, 8'000, Back(i, [this, i, round] {
            if (clients_[i].acquire_round != round) return;
            NextServer(i);
            WatchKey(i);
          }));
  }

  void OnWatched(unsigned i, bool reached, std::uint64_t round) {
    Client& c = clients_[i];
    if (c.acquire_round != round) return;
    ++c.acquire_round;
    if (!reached) {
      NextServer(i);
      After(i, 1'000, Back(i, [this, i] { WatchKey(i); }));
      return;
    }
    Acquire(i);  // free or changed: try (a held key answers "no" and we watch again)
  }

  void ServeWatches() {
    std::vector<Watch> waiting;
    for (Watch& w : watches_) {
      if (!cluster_.alive(w.server)) continue;  // the connection died with it
      const state::Store& store = cluster_.server(w.server).store();
      const state::KvEntry* entry = store.FindKv(kKey);
      bool free = entry == nullptr || entry->session.empty();
      if (free || store.KeyIndex(kKey) > w.index || now() >= w.deadline) {
        unsigned i = w.client;
        std::uint64_t round = w.round;
        w.reply(Guarded(i, w.stamp, [this, i, round] { OnWatched(i, true, round); }));
      } else {
        waiting.push_back(std::move(w));
      }
    }
    watches_ = std::move(waiting);
  }

  std::vector<bool> Leads() const {
    std::vector<bool> leads(n());
    for (unsigned i = 0; i < n(); ++i) leads[i] = IsLeader(i);
    return leads;
  }

  void Observe() {
    std::vector<bool> running(n());
    for (unsigned i = 0; i < n(); ++i) {
      running[i] = !clients_[i].crashed && now() >= clients_[i].paused_until;
    }
    recorder_.Observe(now(), Leads(), running);
  }

  void WriteLoop(unsigned i) {
    After(i, timing_.write_every, [this, i] {
      if (IsLeader(i)) Write(i, clients_[i].token);
      WriteLoop(i);
    });
  }

  void Write(unsigned i, std::uint64_t token) {
    At(now() + Delay(), kWorld, [this, i, token] {
      TrackGrants();
      bool accepted = storage_.Write(token);
      recorder_.OnWrite(now(), i, token, newest_, accepted);
    });
  }

  // The ground truth: the newest grant of the key any replica of the
  // cluster has applied (committed entries only).
  void TrackGrants() {
    for (unsigned s = 0; s < kServers; ++s) {
      const state::KvEntry* entry = cluster_.server(s).store().FindKv(kKey);
      if (entry == nullptr || entry->session.empty()) continue;
      std::uint64_t fence = entry->fence.value();
      if (fence > newest_) {
        newest_ = fence;
        recorder_.OnGrant();
      }
    }
  }

  unsigned LeaderReplica() const {
    for (unsigned i = 0; i < n(); ++i) {
      if (now() >= clients_[i].paused_until && IsLeader(i)) return i;
    }
    return 0;
  }
  unsigned RaftLeader() {
    if (std::optional<unsigned> ready = cluster_.ReadyLeader()) return *ready;
    for (unsigned s = 0; s < kServers; ++s) {
      if (cluster_.alive(s) && cluster_.server(s).IsRaftLeader()) return s;
    }
    return 0;
  }

  void Schedule(const Fault& f) {
    using K = Fault::Kind;
    switch (f.kind) {
      case K::kPartition:
        // The leader, one more replica and the raft leader on one side.
        At(f.start, kWorld, [this] {
          unsigned leader = LeaderReplica();
          side_[leader] = 1;
          side_[(leader + 1) % n()] = 1;
          unsigned s = RaftLeader();
          side_[n() + s] = 1;
          SetServerLinks();
        });
        At(f.end, kWorld, [this] {
          side_.assign(n() + kServers, 0);
          SetServerLinks();
        });
        break;
      case K::kPause:
        At(f.start, kWorld, [this, f] {
          unsigned leader = LeaderReplica();
          Client& c = clients_[leader];
          if (c.crashed || now() < c.paused_until) return;
          if (IsLeader(leader)) c.decided_write = c.token;  // checked, about to write
          c.paused_until = f.end;
          At(f.end, kWorld, [this, leader] {
            Client& p = clients_[leader];
            if (p.decided_write && !p.crashed) Write(leader, *p.decided_write);
            p.decided_write.reset();
          });
        });
        break;
      case K::kCrash:
        At(f.start, kWorld, [this, f] {
          unsigned leader = LeaderReplica();
          Client& c = clients_[leader];
          if (c.crashed) return;
          c.crashed = true;
          ++c.incarnation;
          c.paused_until = 0;
          c.holding = false;
          At(f.end, kWorld, [this, leader] {
            Client& r = clients_[leader];
            r.crashed = false;
            ++r.incarnation;
            StartClient(leader);
          });
        });
        break;
      case K::kServiceCrash:
        At(f.start, kWorld, [this, f] {
          unsigned s = RaftLeader();
          if (!cluster_.alive(s)) return;
          cluster_.Kill(s);
          Ms back = std::max(f.end, now() + sim::Cluster::kDrainMs);
          At(back, kWorld, [this, s] {
            cluster_.Restart(s);  // a new process over its disk; if it cannot, it resumes
            cluster_.Revive(s);
          });
        });
        break;
      case K::kServiceClock:
        At(f.start, kWorld, [this, f] {
          unsigned s = RaftLeader();
          sim::SimClock& clock = cluster_.server(s).clock();
          DurationMs offset = clock.wall_offset_ms() + f.amount;
          clock.SetWallOffset(offset);
        });
        break;
      case K::kLoss:
        At(f.start, kWorld, [this, f] { loss_percent_ = static_cast<int>(f.amount); });
        At(f.end, kWorld, [this] {
          loss_percent_ = 0;
          SetServerLinks();
        });
        break;
    }
  }

  const Plan& plan_;
  Timing timing_;
  Rng rng_;
  Rng net_rng_;
  sim::Cluster cluster_;
  Recorder recorder_;
  std::vector<Client> clients_;
  std::vector<int> side_;  // replicas, then servers
  std::vector<Watch> watches_;
  int loss_percent_ = 0;
  Ms next_flap_ = 0;
  std::uint64_t newest_ = 0;
  std::uint64_t seq_ = 0;
  std::map<std::pair<Ms, std::uint64_t>, Event> queue_;
  FencedStorage storage_;
};

}  // namespace

RunResult RunTenure(const Plan& plan, const Timing& timing, std::uint64_t seed,
                    bool keep_timeline) {
  TenureWorld world(plan, timing, seed, keep_timeline);
  return world.Run();
}

}  // namespace tenure::algos
