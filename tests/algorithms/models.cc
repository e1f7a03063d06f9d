// The five small models: bully, ring, a lease in a single store (unfenced
// and fenced) and a single-instance Redis-style lock, in one event-driven
// world: a queue of timed events, a network with delays, loss and a
// partition, per-replica clocks with drift, pauses and crashes.
#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "algos.h"

namespace tenure::algos {
namespace {

constexpr int kWorld = -1;  // events of the fault plan, never deferred

class World;

// One approach's replicas (and store, if it has one).
class Model {
 public:
  virtual ~Model() = default;
  // A replica starts, at time 0 or as a new process after a crash.
  virtual void Start(unsigned i) = 0;
  // A replica's process crashed: its memory is gone.
  virtual void Forget(unsigned i) = 0;
  virtual bool Leads(unsigned i) const = 0;
  // The writer's grant (epoch or token) and the newest the authority issued.
  virtual std::uint64_t Grant(unsigned i) const = 0;
  virtual std::uint64_t Newest() const = 0;
  virtual bool fenced() const { return false; }
  // The coordination store (lease and Redis only).
  virtual void ServiceRestarted() {}
};

class World {
 public:
  World(const Plan& plan, const Timing& timing, std::uint64_t seed, bool keep_timeline)
      : plan_(plan),
        timing_(timing),
        rng_(seed),
        net_rng_(rng_.Fork()),
        recorder_(plan.replicas, keep_timeline),
        replicas_(plan.replicas) {
    for (unsigned i = 0; i < n(); ++i) {
      replicas_[i].drift_ppm = plan.drift_ppm[i];
      replicas_[i].mono_offset = rng_.Uniform(0, 1'000'000);
    }
    side_.assign(n() + 1, 0);
  }

  unsigned n() const { return plan_.replicas; }
  unsigned service() const { return n(); }  // the store's node id
  Ms now() const { return now_; }
  const Timing& timing() const { return timing_; }
  Rng& rng() { return rng_; }
  Recorder& recorder() { return recorder_; }
  Ms service_wall() const { return now_ + service_wall_offset_; }
  bool service_up() const { return !service_crashed_; }

  // Replica i's monotonic clock.
  Ms Local(unsigned i) const {
    return replicas_[i].mono_offset + now_ * (1'000'000 + replicas_[i].drift_ppm) / 1'000'000;
  }
  // Runs fn on node `node` after `local_ms` of its own clock (the store's
  // clock is exact).
  void After(int node, Ms local_ms, std::function<void()> fn) {
    Ms real = local_ms;
    if (node >= 0 && static_cast<unsigned>(node) < n()) {
      real = local_ms * 1'000'000 / (1'000'000 + replicas_[node].drift_ppm);
    }
    At(now_ + std::max<Ms>(real, 0), node, std::move(fn));
  }
  // A coordination message from `from` to `to`, handled by fn on arrival.
  void Send(int from, int to, std::function<void()> fn) {
    recorder_.OnMessages();
    if (loss_percent_ > 0 && net_rng_.Percent(loss_percent_)) return;
    if (!Reachable(from, to)) return;
    Ms delay = net_rng_.Uniform(timing_.delay_min, timing_.delay_max);
    At(now_ + delay, to, [this, from, to, fn = std::move(fn)] {
      if (Reachable(from, to)) fn();
    });
  }
  // A write to the data store, which every replica reaches (it is the
  // resource the leader protects, not part of the election).
  void Write(unsigned i, std::uint64_t grant) {
    Ms delay = net_rng_.Uniform(timing_.delay_min, timing_.delay_max);
    At(now_ + delay, kWorld, [this, i, grant] {
      bool accepted = !model_->fenced() || storage_.Write(grant);
      recorder_.OnWrite(now_, i, grant, model_->Newest(), accepted);
    });
  }
  bool Reachable(int a, int b) const { return side_[a] == side_[b]; }

  void Run(Model* model) {
    model_ = model;
    for (unsigned i = 0; i < n(); ++i) {
      model_->Start(i);
      WriteLoop(i);
    }
    for (const Fault& f : plan_.faults) Schedule(f);
    while (!queue_.empty()) {
      auto it = queue_.begin();
      if (it->first.first > plan_.duration) break;
      Event event = std::move(it->second);
      queue_.erase(it);
      now_ = event.at;
      Dispatch(event);
      Observe();
    }
    now_ = plan_.duration;
    recorder_.Finish(now_);
  }

 private:
  struct Replica {
    std::int64_t drift_ppm = 0;
    Ms mono_offset = 0;
    bool crashed = false;
    Ms paused_until = 0;
    std::uint64_t incarnation = 0;
    std::optional<std::uint64_t> decided_write;  // checked before a pause, sent after
  };
  struct Event {
    Ms at;
    int node;
    std::uint64_t incarnation;
    std::function<void()> fn;
  };

  void At(Ms at, int node, std::function<void()> fn) {
    std::uint64_t incarnation = 0;
    if (node >= 0 && static_cast<unsigned>(node) < n()) incarnation = replicas_[node].incarnation;
    if (node == static_cast<int>(service())) incarnation = service_incarnation_;
    queue_.emplace(std::make_pair(at, seq_++), Event{at, node, incarnation, std::move(fn)});
  }

  void Dispatch(Event& event) {
    if (event.node >= 0 && static_cast<unsigned>(event.node) < n()) {
      Replica& r = replicas_[event.node];
      if (r.crashed || r.incarnation != event.incarnation) return;
      if (now_ < r.paused_until) {  // a stopped process: runs it when it resumes
        event.at = r.paused_until;
        queue_.emplace(std::make_pair(event.at, seq_++), std::move(event));
        return;
      }
    } else if (event.node == static_cast<int>(service())) {
      if (service_crashed_ || event.incarnation != service_incarnation_) return;
    }
    event.fn();
  }

  void WriteLoop(unsigned i) {
    After(static_cast<int>(i), timing_.write_every, [this, i] {
      if (model_->Leads(i)) Write(i, model_->Grant(i));
      WriteLoop(i);
    });
  }

  void Observe() {
    std::vector<bool> leads(n()), running(n());
    for (unsigned i = 0; i < n(); ++i) {
      running[i] = !replicas_[i].crashed && now_ >= replicas_[i].paused_until;
      leads[i] = !replicas_[i].crashed && model_->Leads(i);
    }
    recorder_.Observe(now_, leads, running);
  }

  unsigned Leader() const {
    for (unsigned i = 0; i < n(); ++i) {
      if (!replicas_[i].crashed && now_ >= replicas_[i].paused_until && model_->Leads(i)) return i;
    }
    return 0;
  }

  void Schedule(const Fault& f) {
    using K = Fault::Kind;
    switch (f.kind) {
      case K::kPartition:
        At(f.start, kWorld, [this] {
          unsigned leader = Leader();
          side_[leader] = 1;
          side_[(leader + 1) % n()] = 1;  // the store stays with the majority
        });
        At(f.end, kWorld, [this] { side_.assign(n() + 1, 0); });
        break;
      case K::kPause:
        At(f.start, kWorld, [this, f] {
          unsigned leader = Leader();
          Replica& r = replicas_[leader];
          if (r.crashed || now_ < r.paused_until) return;
          // It had checked that it leads and was about to write: the write
          // goes out as soon as it resumes.
          if (model_->Leads(leader)) r.decided_write = model_->Grant(leader);
          r.paused_until = f.end;
          At(f.end, kWorld, [this, leader] {
            Replica& p = replicas_[leader];
            if (p.decided_write && !p.crashed) Write(leader, *p.decided_write);
            p.decided_write.reset();
          });
        });
        break;
      case K::kCrash:
        At(f.start, kWorld, [this, f] {
          unsigned leader = Leader();
          Replica& r = replicas_[leader];
          if (r.crashed) return;
          r.crashed = true;
          ++r.incarnation;
          r.paused_until = 0;
          model_->Forget(leader);
          At(f.end, kWorld, [this, leader] {
            Replica& c = replicas_[leader];
            c.crashed = false;
            ++c.incarnation;
            model_->Start(leader);
            WriteLoop(leader);
          });
        });
        break;
      case K::kServiceCrash:
        At(f.start, kWorld, [this] {
          service_crashed_ = true;
          ++service_incarnation_;
        });
        At(f.end, kWorld, [this] {
          if (!service_crashed_) return;
          service_crashed_ = false;
          ++service_incarnation_;
          model_->ServiceRestarted();
        });
        break;
      case K::kServiceClock:
        At(f.start, kWorld, [this, f] { service_wall_offset_ += f.amount; });
        break;
      case K::kLoss:
        At(f.start, kWorld, [this, f] { loss_percent_ = static_cast<int>(f.amount); });
        At(f.end, kWorld, [this] { loss_percent_ = 0; });
        break;
    }
  }

  const Plan& plan_;
  Timing timing_;
  Rng rng_;
  Rng net_rng_;
  Recorder recorder_;
  Model* model_ = nullptr;
  std::vector<Replica> replicas_;
  std::vector<int> side_;  // replicas, then the store
  int loss_percent_ = 0;
  bool service_crashed_ = false;
  std::uint64_t service_incarnation_ = 0;
  Ms service_wall_offset_ = 0;
  Ms now_ = 0;
  std::uint64_t seq_ = 0;
  std::map<std::pair<Ms, std::uint64_t>, Event> queue_;
  FencedStorage storage_;
};

// --- Bully and ring: a leader heartbeats; silence means it failed ----------------

// What bully and ring share: heartbeats (COORDINATOR every `heartbeat`),
// failure detection, and epochs. Each declaration of a leader is a new epoch
// of the ground truth, which no replica sees.
class HeartbeatModel : public Model {
 public:
  explicit HeartbeatModel(World* world) : w_(world), nodes_(world->n()) {}

  void Start(unsigned i) override {
    std::uint64_t generation = nodes_[i].generation + 1;
    nodes_[i] = Node{};
    nodes_[i].generation = generation;
    nodes_[i].last_heard = w_->Local(i);
    HeartbeatLoop(i, nodes_[i].generation);
    DetectLoop(i, nodes_[i].generation);
    StartElection(i);  // a (re)started node asks who leads
  }
  void Forget(unsigned i) override {
    std::uint64_t generation = nodes_[i].generation + 1;
    nodes_[i] = Node{};
    nodes_[i].generation = generation;
  }
  bool Leads(unsigned i) const override { return nodes_[i].leader; }
  std::uint64_t Grant(unsigned i) const override { return nodes_[i].epoch; }
  // Bully and ring have no authority that grants leadership, so "newer"
  // means: declared after the writer, and still leading.
  std::uint64_t Newest() const override {
    std::uint64_t newest = 0;
    for (const Node& node : nodes_) {
      if (node.leader) newest = std::max(newest, node.epoch);
    }
    return newest;
  }

 protected:
  struct Node {
    bool leader = false;
    bool electing = false;
    int follows = -1;
    Ms last_heard = 0;
    std::uint64_t epoch = 0;       // of its own leadership
    std::uint64_t round = 0;       // its current election
    bool answered = false;         // bully: a higher node answered this round
    std::uint64_t generation = 0;  // bumped when the process restarts
  };

  virtual void StartElection(unsigned i) = 0;

  void BecomeLeader(unsigned i) {
    Node& me = nodes_[i];
    me.electing = false;
    me.follows = static_cast<int>(i);
    if (me.leader) return;
    me.leader = true;
    me.epoch = ++epoch_;
    w_->recorder().OnGrant();
    Broadcast(i);
  }

  void Broadcast(unsigned i) {
    for (unsigned j = 0; j < w_->n(); ++j) {
      if (j == i) continue;
      w_->Send(static_cast<int>(i), static_cast<int>(j), [this, i, j] { OnCoordinator(j, i); });
    }
  }

  // `to` hears that `from` leads.
  void OnCoordinator(unsigned to, unsigned from) {
    Node& me = nodes_[to];
    if (from > to) {  // a higher one leads: follow it
      me.leader = false;
      me.electing = false;
      me.follows = static_cast<int>(from);
      me.last_heard = w_->Local(to);
      return;
    }
    // A lower one claims to lead: bully it (and, if we led, do it with a
    // new election, since there were two of us).
    if (me.leader) {
      me.leader = false;
      StartElection(to);
    } else if (!me.electing) {
      if (OutranksClaims()) {
        StartElection(to);
      } else {
        me.follows = static_cast<int>(from);
        me.last_heard = w_->Local(to);
      }
    }
  }
  // Bully: a higher node never follows a lower one. Ring: whoever the
  // ring elected is followed.
  virtual bool OutranksClaims() const = 0;

  void HeartbeatLoop(unsigned i, std::uint64_t generation) {
    w_->After(static_cast<int>(i), w_->timing().heartbeat, [this, i, generation] {
      if (nodes_[i].generation != generation) return;
      if (nodes_[i].leader) Broadcast(i);
      HeartbeatLoop(i, generation);
    });
  }

  void DetectLoop(unsigned i, std::uint64_t generation) {
    w_->After(static_cast<int>(i), 500, [this, i, generation] {
      Node& me = nodes_[i];
      if (me.generation != generation) return;
      if (!me.leader && !me.electing &&
          w_->Local(i) - me.last_heard > w_->timing().failure_timeout) {
        StartElection(i);
      }
      DetectLoop(i, generation);
    });
  }

  World* w_;
  std::vector<Node> nodes_;
  std::uint64_t epoch_ = 0;
};

class Bully : public HeartbeatModel {
 public:
  using HeartbeatModel::HeartbeatModel;

 private:
  bool OutranksClaims() const override { return true; }

  void StartElection(unsigned i) override {
    Node& me = nodes_[i];
    me.electing = true;
    me.answered = false;
    std::uint64_t round = ++me.round;
    std::uint64_t generation = me.generation;
    for (unsigned j = i + 1; j < w_->n(); ++j) {
      w_->Send(static_cast<int>(i), static_cast<int>(j), [this, i, j] { OnElection(j, i); });
    }
    w_->After(static_cast<int>(i), w_->timing().answer_timeout, [this, i, round, generation] {
      Node& m = nodes_[i];
      if (m.generation != generation || m.round != round || !m.electing) return;
      if (!m.answered) return BecomeLeader(i);
      // A higher node answered: wait for its COORDINATOR, else start over.
      w_->After(static_cast<int>(i), w_->timing().failure_timeout, [this, i, round, generation] {
        Node& again = nodes_[i];
        if (again.generation == generation && again.round == round && again.electing) {
          StartElection(i);
        }
      });
    });
  }

  void OnElection(unsigned to, unsigned from) {
    w_->Send(static_cast<int>(to), static_cast<int>(from),
             [this, from, round = nodes_[from].round] {
               if (nodes_[from].round == round) nodes_[from].answered = true;
             });
    Node& me = nodes_[to];
    if (me.leader) {
      w_->Send(static_cast<int>(to), static_cast<int>(from),
               [this, to, from] { OnCoordinator(from, to); });
    } else if (!me.electing) {
      StartElection(to);
    }
  }
};

// Ring: ELECTION(list) travels to the next live successor (each hop acked;
// an unacked hop skips to the one after); when it returns to a node already
// in the list, that node names the highest as COORDINATOR to everyone.
class Ring : public HeartbeatModel {
 public:
  using HeartbeatModel::HeartbeatModel;

 private:
  bool OutranksClaims() const override { return false; }

  void StartElection(unsigned i) override {
    nodes_[i].electing = true;
    ++nodes_[i].round;
    Forward(i, {i}, 1);
    // No COORDINATOR in time: try again.
    std::uint64_t round = nodes_[i].round, generation = nodes_[i].generation;
    w_->After(static_cast<int>(i), w_->timing().failure_timeout, [this, i, round, generation] {
      Node& me = nodes_[i];
      if (me.generation == generation && me.round == round && me.electing) StartElection(i);
    });
  }

  // Sends the list from `at` to its `hop`-th successor; skips on no ack.
  void Forward(unsigned at, std::vector<unsigned> list, unsigned hop) {
    if (hop >= w_->n()) {  // nobody else answers: it is alone
      Announce(at, list);
      return;
    }
    unsigned next = (at + hop) % w_->n();
    auto acked = std::make_shared<bool>(false);
    std::uint64_t generation = nodes_[at].generation;
    w_->Send(static_cast<int>(at), static_cast<int>(next), [this, at, next, list, acked] {
      w_->Send(static_cast<int>(next), static_cast<int>(at), [acked] { *acked = true; });
      OnElection(next, list);
    });
    w_->After(static_cast<int>(at), w_->timing().answer_timeout,
              [this, at, list, hop, acked, generation] {
                if (*acked || nodes_[at].generation != generation) return;
                Forward(at, list, hop + 1);
              });
  }

  void OnElection(unsigned to, std::vector<unsigned> list) {
    if (std::find(list.begin(), list.end(), to) != list.end()) {
      Announce(to, list);
      return;
    }
    nodes_[to].electing = true;
    list.push_back(to);
    Forward(to, std::move(list), 1);
  }

  // The list came around: the highest in it leads.
  void Announce(unsigned at, const std::vector<unsigned>& list) {
    unsigned winner = *std::max_element(list.begin(), list.end());
    if (winner == at) {
      BecomeLeader(at);
      return;
    }
    w_->Send(static_cast<int>(at), static_cast<int>(winner), [this, winner] {
      if (!nodes_[winner].leader) BecomeLeader(winner);
    });
  }
};

// --- Leases in one store: etcd-like (durable) or Redis-like (volatile) -------

struct LeaseFlavour {
  bool fenced = false;       // the data store is a FencedStorage and gets the token
  bool volatile_ = false;    // a restart empties the store (Redis without fsync)
  bool wall_expiry = false;  // expiry on the store's wall clock (Redis)
};

// The survey's LeaseBasedLeader (docs/algorithms.md): every TTL/3 the leader renews (compare the
// holder, extend) and anyone else tries put-if-absent; a leader steps down
// only when a renewal fails or gets no answer. The store grants a token
// from a counter with every acquisition.
class LeaseModel : public Model {
 public:
  LeaseModel(World* world, LeaseFlavour flavour)
      : w_(world), flavour_(flavour), nodes_(world->n()) {}

  void Start(unsigned i) override {
    std::uint64_t generation = nodes_[i].generation + 1;
    nodes_[i] = Node{};
    nodes_[i].generation = generation;
    // Replicas start at slightly different moments.
    w_->After(static_cast<int>(i), w_->rng().Uniform(0, 200),
              [this, i, generation] { Loop(i, generation); });
  }
  void Forget(unsigned i) override {
    nodes_[i].leader = false;
    ++nodes_[i].generation;
  }
  bool Leads(unsigned i) const override { return nodes_[i].leader; }
  std::uint64_t Grant(unsigned i) const override { return nodes_[i].token; }
  std::uint64_t Newest() const override { return grants_; }
  bool fenced() const override { return flavour_.fenced; }
  void ServiceRestarted() override {
    if (flavour_.volatile_) {
      holder_ = -1;
    } else {
      expires_ = Clock() + w_->timing().ttl;  // a durable lease restarts its TTL
    }
  }

 private:
  struct Node {
    bool leader = false;
    std::uint64_t token = 0;
    std::uint64_t request = 0;  // the one in flight, 0 if none
    std::uint64_t generation = 0;
  };

  Ms Clock() const { return flavour_.wall_expiry ? w_->service_wall() : w_->now(); }
  bool Held() const { return holder_ >= 0 && Clock() < expires_; }

  void Loop(unsigned i, std::uint64_t generation) {
    if (nodes_[i].generation != generation) return;
    Request(i);
    w_->After(static_cast<int>(i), w_->timing().ttl / 3,
              [this, i, generation] { Loop(i, generation); });
  }

  void Request(unsigned i) {
    Node& me = nodes_[i];
    std::uint64_t id = ++request_ids_;
    me.request = id;
    bool renew = me.leader;
    std::uint64_t token = me.token;
    int to = static_cast<int>(w_->service());
    w_->Send(static_cast<int>(i), to, [this, i, id, renew, token] {
      // At the store.
      bool ok;
      std::uint64_t granted = token;
      if (renew) {
        ok = Held() && holder_ == static_cast<int>(i) && token_ == token;
      } else {
        ok = !Held();
        if (ok) {
          holder_ = static_cast<int>(i);
          token_ = granted = ++grants_;
          w_->recorder().OnGrant();
        }
      }
      if (ok) expires_ = Clock() + w_->timing().ttl;
      w_->Send(static_cast<int>(w_->service()), static_cast<int>(i), [this, i, id, ok, granted] {
        Node& node = nodes_[i];
        if (node.request != id) return;
        node.request = 0;
        node.leader = ok;
        if (ok) node.token = granted;
      });
    });
    std::uint64_t generation = me.generation;
    w_->After(static_cast<int>(i), w_->timing().request_timeout, [this, i, id, generation] {
      Node& node = nodes_[i];
      if (node.generation != generation || node.request != id) return;
      node.request = 0;
      node.leader = false;  // no answer: the renewal failed
    });
  }

  World* w_;
  LeaseFlavour flavour_;
  std::vector<Node> nodes_;
  std::uint64_t request_ids_ = 0;
  // The store.
  int holder_ = -1;
  std::uint64_t token_ = 0;
  Ms expires_ = 0;
  std::uint64_t grants_ = 0;  // also the ground truth's newest grant
};

}  // namespace

RunResult RunModel(Approach approach, const Plan& plan, const Timing& timing, std::uint64_t seed,
                   bool keep_timeline) {
  World world(plan, timing, seed, keep_timeline);
  std::unique_ptr<Model> model;
  switch (approach) {
    case Approach::kBully:
      model = std::make_unique<Bully>(&world);
      break;
    case Approach::kRing:
      model = std::make_unique<Ring>(&world);
      break;
    case Approach::kLease:
      model = std::make_unique<LeaseModel>(&world, LeaseFlavour{});
      break;
    case Approach::kFencedLease:
      model = std::make_unique<LeaseModel>(&world, LeaseFlavour{.fenced = true});
      break;
    case Approach::kRedis:
      model = std::make_unique<LeaseModel>(&world,
                                           LeaseFlavour{.volatile_ = true, .wall_expiry = true});
      break;
    case Approach::kTenure:
      break;
  }
  world.Run(model.get());
  return RunResult{world.recorder().metrics(), world.recorder().timeline(), ""};
}

}  // namespace tenure::algos
