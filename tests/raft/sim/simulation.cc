#include "simulation.h"

#include <fmt/core.h>

#include "cluster.h"
#include "nemesis.h"
#include "rng.h"
#include "workload.h"

namespace tenure::sim {
namespace {

constexpr RealMs kElectAfterHealMs = 60'000;
constexpr RealMs kCatchUpMs = 60'000;

ClusterOptions DrawCluster(const SimConfig& config, const WorkloadOptions& workload,
                           const NemesisOptions& nemesis, Rng& rng, unsigned nodes) {
  ClusterOptions options;
  options.servers = nodes;
  options.ttl_multiplier = config.ttl_multiplier;
  options.drift_ppm_max = config.drift_ppm_max;
  options.reap_period_ms = 20'000;
  // Replicas compare digests at run time as real servers do (no draw from
  // the seed's generator: older seeds keep their schedules).
  options.checkpoint_period_ms = 5'000;
  // Small snapshots: they are taken and installed often, and raft_fixture
  // copies the leader's whole log at every step, so long logs are slow.
  options.snapshot_threshold = static_cast<unsigned>(rng.Uniform(16, 512));
  options.snapshot_trailing = static_cast<unsigned>(rng.Uniform(1, 128));
  for (unsigned i = 0; i < nodes; ++i) {
    options.clocks.emplace_back(
        rng.Uniform(-nemesis.wall_offset_max_ms, nemesis.wall_offset_max_ms),
        rng.Uniform(-config.drift_ppm_max, config.drift_ppm_max), rng.Uniform(0, 1'000'000'000));
  }
  options.tracked_keys = workload.lock_keys;
  options.tracked_keys.insert(options.tracked_keys.end(), workload.kv_keys.begin(),
                              workload.kv_keys.end());
  return options;
}

// After the faults: heal, let clients stop, wait until every unrenewed
// session must have expired and every replica caught up; check both.
void Settle(Cluster& cluster, Workload& workload, Nemesis& nemesis,
            const WorkloadOptions& workload_options, const SimConfig& config) {
  Checkers& checkers = cluster.checkers();
  nemesis.HealAll();
  while (!nemesis.idle() && !checkers.failed()) {
    nemesis.Step();
    workload.Step();
    cluster.Advance(50);
  }
  for (RealMs until = cluster.now() + 5'000; cluster.now() < until && !checkers.failed();) {
    workload.Step();
    cluster.Advance(50);
  }
  workload.Quiesce();
  std::optional<unsigned> leader = cluster.StepUntilReadyLeader(kElectAfterHealMs);
  if (!leader) {
    checkers.Fail(cluster.now(), "no leader a minute after every fault was healed");
    return;
  }
  DurationMs expire_ms = workload_options.ttl_max_ms * config.ttl_multiplier;
  cluster.Advance(expire_ms * (1'000'000 + config.drift_ppm_max) / 1'000'000 + 10'000);
  leader = cluster.ReadyLeader();
  if (!leader) {
    checkers.Fail(cluster.now(), "the leader was lost without any fault");
    return;
  }
  checkers.CheckUnrenewedSessionsExpired(cluster.server(*leader).store(),
                                         checkers.last_leader_change(), 5'000, cluster.now());
  checkers.CheckLockDelaysBounded(cluster.server(*leader).store(),
                                  cluster.server(*leader).ClusterNow(), cluster.now());
  auto caught_up = [&] {
    LogIndex target = cluster.server(*leader).store().applied_index();
    for (unsigned i = 0; i < cluster.size(); ++i) {
      if (cluster.server(i).store().applied_index() != target) return false;
    }
    return true;
  };
  if (!cluster.StepUntil(caught_up, kCatchUpMs) && !checkers.failed()) {
    std::string where;
    for (unsigned i = 0; i < cluster.size(); ++i) {
      struct raft* r = cluster.raft(i);
      where +=
          fmt::format("; n{} snapshot {} offset {}", i, r->log.snapshot.last_index, r->log.offset);
      where +=
          fmt::format("; n{} applied {} (raft {}, term {}, commit {}, last log {})", i,
                      cluster.server(i).store().applied_index().value(), static_cast<int>(r->state),
                      r->current_term, r->commit_index, raft_last_index(r));
      if (r->state == RAFT_LEADER) {
        for (unsigned j = 0; j < r->configuration.n; ++j) {
          const struct raft_progress& p = r->leader_state.progress[j];
          where += fmt::format(
              " [progress of {}: state {} next {} match {} snapshot {} now {} last_send {} "
              "snapshot_last_send {} recent_recv {}]",
              r->configuration.servers[j].id, static_cast<int>(p.state), p.next_index,
              p.match_index, p.snapshot_index, r->io->time(r->io), p.last_send,
              p.snapshot_last_send, p.recent_recv);
        }
      }
    }
    checkers.Fail(cluster.now(), "a replica did not catch up within a minute" + where);
    return;
  }
  std::vector<const state::Store*> stores;
  for (unsigned i = 0; i < cluster.size(); ++i) stores.push_back(&cluster.server(i).store());
  checkers.CheckConverged(stores, cluster.now());
}

}  // namespace

SimResult RunSimulation(const SimConfig& config) {
  Rng rng(config.seed);
  Rng setup = rng.Fork();
  unsigned nodes = config.nodes != 0 ? config.nodes : (setup.Percent(50) ? 3 : 5);
  WorkloadOptions workload_options;
  workload_options.acl_percent = config.acl_percent;
  workload_options.queue_percent = config.queue_percent;
  workload_options.restore_percent = config.restore_percent;
  workload_options.lease_percent = config.lease_percent;
  NemesisOptions nemesis_options;
  nemesis_options.drift_ppm_max = config.drift_ppm_max;
  nemesis_options.fault_max_ms = config.pause_max_ms;
  nemesis_options.day_jumps = config.day_jumps;
  Cluster cluster(DrawCluster(config, workload_options, nemesis_options, setup, nodes));
  cluster.history().set_echo(config.trace);
  cluster.Start();
  Workload workload(&cluster, rng.Fork(), workload_options);
  Nemesis nemesis(&cluster, rng.Fork(), nemesis_options);
  Rng time = rng.Fork();

  Checkers& checkers = cluster.checkers();
  for (std::uint64_t step = 0; step < config.steps && !checkers.failed(); ++step) {
    nemesis.Step();
    workload.Step();
    cluster.Advance(time.Uniform(1, 100));
  }
  if (!checkers.failed()) Settle(cluster, workload, nemesis, workload_options, config);

  SimResult result;
  result.ok = !checkers.failed();
  result.failure = checkers.failure();
  result.history = cluster.history().Tail(60);
  std::uint64_t entries = 0;
  for (unsigned i = 0; i < cluster.size(); ++i) {
    entries = std::max(entries, cluster.server(i).store().applied_index().value());
  }
  result.summary = fmt::format(
      "seed={} nodes={} m={} steps={} simulated={}s entries={} leaderships={} expiries={} "
      "grants={} lock-delay-checks={}\n  faults: {}\n  clients: {}",
      config.seed, nodes, config.ttl_multiplier, config.steps, cluster.now() / 1000, entries,
      checkers.leaderships(), checkers.expiries_committed(), checkers.grants(),
      checkers.lock_delay_checks(), nemesis.Summary(), workload.Summary());
  return result;
}

std::string ReproduceCommand(const SimConfig& config, const std::string& program) {
  std::string command =
      fmt::format("{} --seed {} --steps {}", program.empty() ? "build/tests/tenure_sim" : program,
                  config.seed, config.steps);
  if (config.nodes != 0) command += fmt::format(" --nodes {}", config.nodes);
  if (config.ttl_multiplier != 2) command += fmt::format(" --multiplier {}", config.ttl_multiplier);
  if (config.drift_ppm_max != 1'000)
    command += fmt::format(" --drift-ppm {}", config.drift_ppm_max);
  if (config.pause_max_ms != 15'000)
    command += fmt::format(" --pause-max-ms {}", config.pause_max_ms);
  if (config.acl_percent != 0) command += fmt::format(" --acl-percent {}", config.acl_percent);
  if (config.queue_percent != 0) {
    command += fmt::format(" --queue-percent {}", config.queue_percent);
  }
  if (config.day_jumps) command += " --day-jumps";
  if (config.restore_percent != 0) {
    command += fmt::format(" --restore-percent {}", config.restore_percent);
  }
  if (config.lease_percent != 0) {
    command += fmt::format(" --lease-percent {}", config.lease_percent);
  }
  return command;
}

}  // namespace tenure::sim
