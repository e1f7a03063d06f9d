// Nemesis: the faults of a simulated run, chosen by the Rng.
//
// Faults that last (healed when they end):
//   isolate     one server cut off both ways (often the leader)
//   partition   a minority cut off from the rest
//   one-way     messages from one server to another dropped
//   pause       a server killed and revived later with its state (a
//               SIGSTOPped process: a paused leader comes back believing
//               it still leads)
//   restart     a server killed, restarted over its disk (Store and soft
//               state gone), revived later
//   disk        a server's writes fail (append, term/vote, truncate); libraft
//               stops the instance, which is then restarted
// Instant faults: failed appends of the leader's next proposals, or of its
// SessionDestroy{expired} for a while (each retried a second later: a window
// in which the expiring session must get no lock), a wall-clock step, a change of
// monotonic rate within the bound, new network and disk latencies, a
// leadership transfer. Election timeouts are re-drawn all the time. With
// day_jumps, one server's wall clock now and then jumps a day ahead or
// behind, and back (decision 0037: the replicated clock must not notice).
//
// At most `max_down` servers are faulted at once, now and then one more
// (no majority for a while).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster.h"
#include "rng.h"

namespace tenure::sim {

struct NemesisOptions {
  RealMs interval_min_ms = 500;
  RealMs interval_max_ms = 6'000;
  RealMs fault_min_ms = 200;
  RealMs fault_max_ms = 15'000;
  // Clock bounds: wall offsets within +-wall_offset_max_ms, monotonic rate
  // errors within +-drift_ppm_max (what the checkers assume).
  DurationMs wall_offset_max_ms = 500;
  std::int64_t drift_ppm_max = 1'000;
  // Wall-clock jumps of plus or minus a day (off: older seeds keep their
  // schedules, as nothing is drawn for them).
  bool day_jumps = false;
};

class Nemesis {
 public:
  Nemesis(Cluster* cluster, Rng rng, NemesisOptions options);

  // Ends the faults that are over and maybe starts one.
  void Step();
  // Starts no more faults and ends every lasting one as soon as it can (a
  // restart needs its drain time first): call Step until idle().
  void HealAll();
  bool idle() const { return active_.empty(); }
  std::string Summary() const;

 private:
  enum class Kind { kIsolate, kPartition, kOneWay, kPause, kRestart, kDisk };
  struct Fault {
    Kind kind;
    unsigned target = 0;            // the server it is about
    std::vector<unsigned> servers;  // the servers it takes down or cuts off
    unsigned to = 0;                // one-way: the receiving server
    RealMs ends_at = 0;
    RealMs restart_at = 0;  // restart: when the drained server restarts
  };

  void StartOne();
  void StartLasting(Kind kind);
  void StartInstant();
  void JumpWallClock();
  void End(Fault& fault);
  void RestartIfStopped(unsigned i);
  unsigned PickTarget(const std::vector<bool>& busy);
  unsigned Down() const;
  void Count(const char* what) { ++counts_[what]; }

  Cluster* cluster_;
  Rng rng_;
  NemesisOptions options_;
  unsigned max_down_;
  RealMs next_at_ = 0;
  bool stopping_ = false;
  std::vector<Fault> active_;
  std::map<std::string, std::uint64_t> counts_;
};

}  // namespace tenure::sim
