// Leader election compared: N application replicas elect a leader by one of
// six approaches under the same seeded fault schedule, in simulated time, and
// every write the leader makes to a shared data store is judged against the
// approach's own ground truth (docs/algorithms.md).
//
// Five approaches are small event-driven models (models.cc): bully, ring, a
// lease in a single store with and without a fencing data store, and a
// single-instance Redis-style SET NX PX lock. The sixth, tenure, runs the
// replicas as clients of a simulated 3-server tenure cluster built from
// tests/raft/sim (the real state::Store, FsmBridge and LeaderDuties on
// libraft's raft_fixture; tenure_model.cc).
//
// Deterministic: a run is a function of (approach, schedule, seed).
// Single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "raft/sim/rng.h"

namespace tenure::algos {

using Ms = std::int64_t;  // simulated true time
using sim::Rng;

enum class Approach { kBully, kRing, kLease, kFencedLease, kRedis, kTenure };
enum class Schedule { kPartition, kPause, kClock, kCrash, kLoss, kRandom };

const std::vector<Approach>& AllApproaches();
const std::vector<Schedule>& AllSchedules();
std::string Name(Approach approach);
std::string Name(Schedule schedule);
std::optional<Approach> ParseApproach(const std::string& name);
std::optional<Schedule> ParseSchedule(const std::string& name);

// --- The fault plan: what happens when, in true time ------------------------
// Targets are resolved when a fault starts: "the leader" is the replica that
// then believes it leads (the lowest id if several, replica 0 if none).
struct Fault {
  enum class Kind {
    kPartition,     // leader + one more replica (and tenure's raft leader) cut off
    kPause,         // the leader stops (GC, SIGSTOP) and resumes
    kCrash,         // the leader crashes, restarts at `end` as a new process
    kServiceCrash,  // the coordination store (or tenure's raft leader) crashes
    kServiceClock,  // the store's wall clock steps forward by `amount` ms
    kLoss,          // `amount` % of coordination messages are lost
  };
  Kind kind;
  Ms start = 0;
  Ms end = 0;
  std::int64_t amount = 0;
};

struct Plan {
  unsigned replicas = 5;
  Ms duration = 150'000;
  // Per replica: its clock's rate error (ppm); clocks also start at random offsets.
  std::vector<std::int64_t> drift_ppm;
  std::vector<Fault> faults;
};

// The plan of `schedule` for `seed`: scripted faults at fixed times, with
// the seed choosing delays, drifts and timer jitter; kRandom draws the
// faults themselves from the seed too.
Plan MakePlan(Schedule schedule, std::uint64_t seed);
std::string Describe(const Plan& plan);

// --- Timing shared by every approach ---------------------------------------
struct Timing {
  Ms ttl = 15'000;                  // lease / session TTL (tenure's and Consul's lock default)
  Ms write_every = 500;             // a leader writes to the data store this often
  Ms heartbeat = 1'000;             // bully and ring: leader heartbeats
  Ms failure_timeout = 3'000;       // bully and ring: no heartbeat this long = leader failed
  Ms answer_timeout = 500;          // bully: wait for ANSWER; ring: wait for an ack
  Ms request_timeout = 3'000;       // a request to a store or a server gets no answer
  Ms delay_min = 1, delay_max = 5;  // one-way network delay
};

// --- Measuring ---------------------------------------------------------------
struct Metrics {
  Ms two_leaders_ms = 0;  // >= 2 replicas believe they lead and are running
  Ms no_leader_ms = 0;    // no running replica believes it leads
  int writes_accepted = 0;
  int stale_writes = 0;       // accepted, though a newer grant existed
  int writes_refused = 0;     // refused by a fencing data store
  std::int64_t messages = 0;  // coordination messages sent (not data writes)
  int elections = 0;          // grants: leaderships the authority handed out
};

// One point of a run's timeline, for the plots.
struct TimelineEvent {
  Ms at;
  unsigned replica;
  std::string what;  // "lead", "follow", "down", "up", "write-ok", "write-stale", "write-refused"
};

// What every approach reports; it computes the metrics the same way for all.
class Recorder {
 public:
  Recorder(unsigned replicas, bool keep_timeline);
  // Each replica's state from `now` on: believes it leads, is running
  // (neither paused nor crashed).
  void Observe(Ms now, const std::vector<bool>& leads, const std::vector<bool>& running);
  // A write the data store decided on at `now`: the writer's grant, the
  // newest grant the authority has issued, and whether the store accepted.
  void OnWrite(Ms now, unsigned replica, std::uint64_t grant, std::uint64_t newest, bool accepted);
  void OnMessages(int n = 1) { metrics_.messages += n; }
  void OnGrant() { ++metrics_.elections; }
  void Finish(Ms now);
  const Metrics& metrics() const { return metrics_; }
  const std::vector<TimelineEvent>& timeline() const { return timeline_; }

 private:
  unsigned replicas_;
  bool keep_timeline_;
  Ms last_ = 0;
  int acting_ = 0;
  std::vector<bool> leads_, running_;
  Metrics metrics_;
  std::vector<TimelineEvent> timeline_;
};

// The survey's FencedStorage (docs/algorithms.md): refuses a write whose token is below the largest
// token it has seen; any accepted write raises that mark.
class FencedStorage {
 public:
  bool Write(std::uint64_t token) {
    if (token < current_) return false;
    current_ = token;
    return true;
  }

 private:
  std::uint64_t current_ = 0;
};

struct RunResult {
  Metrics metrics;
  std::vector<TimelineEvent> timeline;
  std::string plan;
  // tenure only: a broken invariant the raft simulation's checkers caught
  // (a finding about the real code, never a number); empty if none.
  std::string failure;
};

RunResult Run(Approach approach, Schedule schedule, std::uint64_t seed, bool keep_timeline);

// The five small models (models.cc) and tenure's (tenure_model.cc).
RunResult RunModel(Approach approach, const Plan& plan, const Timing& timing, std::uint64_t seed,
                   bool keep_timeline);
RunResult RunTenure(const Plan& plan, const Timing& timing, std::uint64_t seed, bool keep_timeline);

}  // namespace tenure::algos
