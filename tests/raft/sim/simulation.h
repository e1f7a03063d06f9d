// The seeded simulation: one run of a Cluster with a Workload and a Nemesis,
// every invariant checked by the Checkers as it goes.
//
// A run is a pure function of its SimConfig: the seed draws the cluster's
// settings (snapshot sizes, clocks), the workload and the faults, and
// nothing reads the wall clock or std::random_device. The same config always
// gives the same run, so a failure's seed reproduces it.
//
// Shape of a run: `steps` steps, each letting the nemesis and the clients
// act and then advancing simulated time by 1-100 ms; then every fault is
// healed, clients stop, and the run waits long enough for every unrenewed
// session to expire and every replica to catch up, and checks both.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace tenure::sim {

struct SimConfig {
  std::uint64_t seed = 1;
  std::uint64_t steps = 3'000;
  unsigned nodes = 0;  // 3 or 5; 0: drawn from the seed
  int ttl_multiplier = 2;
  std::int64_t drift_ppm_max = 1'000;  // the monotonic clocks' rate bound
  std::int64_t pause_max_ms = 15'000;  // longest pause, isolation or cut
  unsigned acl_percent = 0;            // WorkloadOptions::acl_percent
  unsigned queue_percent = 0;          // WorkloadOptions::queue_percent
  bool day_jumps = false;              // NemesisOptions::day_jumps
  unsigned restore_percent = 0;        // WorkloadOptions::restore_percent
  unsigned lease_percent = 0;          // WorkloadOptions::lease_percent
  std::FILE* trace = nullptr;          // echo every history line here
};

struct SimResult {
  bool ok = true;
  std::string failure;  // the first violation
  std::string history;  // the last history lines before it
  std::string summary;  // what the run did
};

SimResult RunSimulation(const SimConfig& config);

// "build/tests/tenure_sim --seed N --steps S --nodes K ..." for this run
// (`program` replaces the binary's path when given).
std::string ReproduceCommand(const SimConfig& config, const std::string& program = "");

}  // namespace tenure::sim
