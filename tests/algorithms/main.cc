// tenure_algos: leader election by bully, ring, leases, a Redis-style lock
// and tenure, under the same seeded faults (docs/algorithms.md). Prints one
// JSON object per run, one per line; exits 1 if the raft simulation's
// checkers caught a broken invariant in a tenure run.
//
//   tenure_algos --approach bully --schedule partition --seed 3 [--timeline]
//   tenure_algos --approach all --schedule all --seed 1 --seeds 20
#include <fmt/core.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/algos.h"

namespace {

using namespace tenure::algos;

int Usage() {
  fmt::print(stderr,
             "usage: tenure_algos [--approach NAME|all] [--schedule NAME|all] [--seed N] "
             "[--seeds K] [--timeline]\n  approaches:");
  for (Approach a : AllApproaches()) fmt::print(stderr, " {}", Name(a));
  fmt::print(stderr, "\n  schedules:");
  for (Schedule s : AllSchedules()) fmt::print(stderr, " {}", Name(s));
  fmt::print(stderr, "\n");
  return 2;
}

std::string Json(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  std::string approach = "all", schedule = "all";
  std::uint64_t seed = 1, seeds = 1;
  bool timeline = false;
  bool failed = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    bool has_value = i + 1 < argc;
    if (flag == "--approach" && has_value) {
      approach = argv[++i];
    } else if (flag == "--schedule" && has_value) {
      schedule = argv[++i];
    } else if (flag == "--seed" && has_value) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--seeds" && has_value) {
      seeds = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--timeline") {
      timeline = true;
    } else {
      return Usage();
    }
  }
  std::vector<Approach> approaches;
  std::vector<Schedule> schedules;
  if (approach == "all") {
    approaches = AllApproaches();
  } else if (auto a = ParseApproach(approach)) {
    approaches = {*a};
  } else {
    fmt::print(stderr, "unknown approach {}\n", approach);
    return Usage();
  }
  if (schedule == "all") {
    schedules = AllSchedules();
  } else if (auto s = ParseSchedule(schedule)) {
    schedules = {*s};
  } else {
    fmt::print(stderr, "unknown schedule {}\n", schedule);
    return Usage();
  }
  if (seeds == 0 || seeds > 100'000) return Usage();
  for (Schedule s : schedules) {
    for (Approach a : approaches) {
      for (std::uint64_t k = seed; k < seed + seeds; ++k) {
        RunResult r = Run(a, s, k, timeline);
        const Metrics& m = r.metrics;
        std::string line = fmt::format(
            "{{\"approach\":{},\"schedule\":{},\"seed\":{},\"two_leaders_ms\":{},"
            "\"no_leader_ms\":{},\"writes_accepted\":{},\"stale_writes\":{},"
            "\"writes_refused\":{},\"messages\":{},\"elections\":{},\"plan\":{}",
            Json(Name(a)), Json(Name(s)), k, m.two_leaders_ms, m.no_leader_ms, m.writes_accepted,
            m.stale_writes, m.writes_refused, m.messages, m.elections, Json(r.plan));
        if (!r.failure.empty()) {
          line += ",\"failure\":" + Json(r.failure);
          fmt::print(stderr, "tenure_algos: {} {} seed {}: checker failed: {}\n", Name(a), Name(s),
                     k, r.failure);
          failed = true;
        }
        if (timeline) {
          line += ",\"timeline\":[";
          for (std::size_t e = 0; e < r.timeline.size(); ++e) {
            const TimelineEvent& ev = r.timeline[e];
            line +=
                fmt::format("{}[{},{},{}]", e == 0 ? "" : ",", ev.at, ev.replica, Json(ev.what));
          }
          line += "]";
        }
        fmt::print("{}}}\n", line);
        std::fflush(stdout);
      }
    }
  }
  return failed ? 1 : 0;
}
