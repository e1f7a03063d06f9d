// The quick tier of the seeded simulation: a fixed list of seeds, each a
// full run (workload, nemesis, every checker). A failure prints the command
// that reproduces it with tenure_sim. Longer runs: scripts/soak-sim.
#include <gtest/gtest.h>

#include <ostream>

#include "raft/sim/simulation.h"

namespace tenure::sim {
namespace {

struct SeedCase {
  std::uint64_t seed;
  unsigned nodes;
  int multiplier = 2;
};

// Keeps ctest's test names readable (gtest would print the bytes).
void PrintTo(const SeedCase& seed_case, std::ostream* out) {
  *out << "seed " << seed_case.seed << ", " << seed_case.nodes << " servers, multiplier "
       << seed_case.multiplier;
}

class SimSeedTest : public ::testing::TestWithParam<SeedCase> {};

TEST_P(SimSeedTest, HoldsEveryInvariant) {
  SimConfig config;
  config.seed = GetParam().seed;
  config.nodes = GetParam().nodes;
  config.ttl_multiplier = GetParam().multiplier;
  config.steps = 3'000;  // about 150 s of faults, then about 80 s to settle
  SimResult result = RunSimulation(config);
  EXPECT_TRUE(result.ok) << "FAILED seed=" << config.seed
                         << " (reproduce: " << ReproduceCommand(config) << ")\n  " << result.failure
                         << "\n--- last events ---\n"
                         << result.history;
  std::printf("%s\n", result.summary.c_str());
}

std::vector<SeedCase> Seeds() {
  std::vector<SeedCase> seeds;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) seeds.push_back({seed, 3});
  for (std::uint64_t seed = 101; seed <= 150; ++seed) seeds.push_back({seed, 5});
  // Multiplier 1: no slack for a deposed leader's renewals (decision 0011).
  for (std::uint64_t seed = 201; seed <= 240; ++seed) seeds.push_back({seed, 3, 1});
  return seeds;
}

INSTANTIATE_TEST_SUITE_P(Quick, SimSeedTest, ::testing::ValuesIn(Seeds()),
                         [](const ::testing::TestParamInfo<SeedCase>& seed_case) {
                           return "Seed" + std::to_string(seed_case.param.seed) + "Nodes" +
                                  std::to_string(seed_case.param.nodes) + "M" +
                                  std::to_string(seed_case.param.multiplier);
                         });

}  // namespace
}  // namespace tenure::sim
