// ClusterTest: a gtest fixture over sim::Cluster (raft_fixture servers with
// our Store, FsmBridge and LeaderDuties) for scenario tests written by hand.
// Every apply on every replica is checked by the simulation's checkers, so a
// scenario also fails on any broken invariant it happens to cause.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "raft/sim/cluster.h"

namespace tenure::sim::testing {

constexpr RealMs kElectMaxMs = 20'000;  // simulated time, not wall clock
constexpr RealMs kCommitMaxMs = 10'000;

inline state::Session TtlSession(state::SessionId id, DurationMs ttl_ms,
                                 DurationMs lock_delay_ms = 0) {
  state::Session session;
  session.id = std::move(id);
  session.name = "test";
  session.node = "sim";
  session.ttl = std::to_string(ttl_ms / 1000) + "s";
  session.ttl_ns = ttl_ms * kNsPerMs;
  session.lock_delay_ns = lock_delay_ms * kNsPerMs;
  return session;
}

class ClusterTest : public ::testing::Test {
 protected:
  // Builds and starts the cluster; waits for a ready leader.
  unsigned StartCluster(ClusterOptions options) {
    cluster_ = std::make_unique<Cluster>(std::move(options));
    // TENURE_SIM_TRACE=1 prints every event as it happens.
    if (std::getenv("TENURE_SIM_TRACE") != nullptr) cluster_->history().set_echo(stderr);
    cluster_->Start();
    std::optional<unsigned> leader = cluster_->StepUntilReadyLeader(kElectMaxMs);
    EXPECT_TRUE(leader.has_value());
    return leader.value_or(0);
  }

  void TearDown() override {
    if (cluster_ != nullptr && !violation_expected_) {
      EXPECT_FALSE(cluster_->checkers().failed()) << cluster_->checkers().failure() << "\n"
                                                  << cluster_->history().Tail(40);
    }
  }

  // Proposes on server i and waits for the answer; the outcome is returned
  // whatever it is.
  Result<state::ApplyResult> Write(unsigned i, state::CommandBody body,
                                   RealMs max_ms = kCommitMaxMs) {
    std::shared_ptr<Outcome> outcome = cluster_->Propose(i, std::move(body));
    if (!cluster_->Await(outcome, max_ms)) return Status::Timeout("no answer in time");
    return std::move(outcome->result);
  }

  // A write that must commit with an OK result.
  state::ApplyResult MustWrite(unsigned i, state::CommandBody body) {
    Result<state::ApplyResult> result = Write(i, std::move(body));
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    if (!result.ok()) return state::ApplyResult{};
    EXPECT_TRUE(result->status.ok()) << result->status.ToString();
    return std::move(result).value();
  }

  // Renews on server i and waits for the answer (which a deposed leader may
  // never give: then kTimeout).
  Status Renew(unsigned i, const state::SessionId& session_id, RealMs max_ms = kCommitMaxMs) {
    auto answer = std::make_shared<std::optional<Status>>();
    cluster_->server(i).Renew(session_id, [answer](Result<const state::Session*> renewed) {
      *answer = renewed.status();
    });
    if (!cluster_->StepUntil([&] { return answer->has_value(); }, max_ms)) {
      return Status::Timeout("no answer in time");
    }
    return **answer;
  }

  void CreateSession(unsigned leader, const state::Session& session) {
    MustWrite(leader, state::SessionCreate{session});
  }

  state::ApplyResult Acquire(unsigned leader, const std::string& key,
                             const state::SessionId& session) {
    return MustWrite(leader, state::KvAcquire{key, "v", 0, session});
  }

  // Waits until every alive server applied what `leader` applied, then
  // compares their Stores.
  void ExpectConverged(unsigned leader) {
    LogIndex target = cluster_->server(leader).store().applied_index();
    bool caught_up = cluster_->StepUntil(
        [&] {
          for (unsigned i = 0; i < cluster_->size(); ++i) {
            if (cluster_->alive(i) && cluster_->server(i).store().applied_index() < target) {
              return false;
            }
          }
          return true;
        },
        30'000);
    ASSERT_TRUE(caught_up) << cluster_->history().Tail(20);
    std::vector<const state::Store*> stores;
    for (unsigned i = 0; i < cluster_->size(); ++i) {
      if (cluster_->alive(i)) stores.push_back(&cluster_->server(i).store());
    }
    cluster_->checkers().CheckConverged(stores, cluster_->now());
  }

  Cluster& cluster() { return *cluster_; }
  SimServer& server(unsigned i) { return cluster_->server(i); }

  std::unique_ptr<Cluster> cluster_;
  bool violation_expected_ = false;  // a test of a known limit checks it itself
};

}  // namespace tenure::sim::testing
