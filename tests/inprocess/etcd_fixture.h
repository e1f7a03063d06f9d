// EtcdFixture: one tenure server with an etcd history window in this
// process, on a FixtureNode (no disk, no sockets), for the tests of the etcd
// layer's services (etcd_kv_test, etcd_watch_test, etcd_election_test): the
// loop run until a condition holds (with a deadline) or for a few turns,
// and a service call waited for. One thread.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

#include "etcd/access.h"
#include "etcd/kv_service.h"
#include "inprocess/api_harness.h"
#include "inprocess/fixture_node.h"
#include "server/server.h"

namespace tenure::inprocess {

class EtcdFixture : public ::testing::Test {
 protected:
  // Starts the server (again, after StopServer) with a window of `history_bytes`.
  void StartServer(std::size_t history_bytes = 1 << 20) {
    server::ServerOptions options;
    options.node_name = "etcd-test";
    options.checkpoint_period_ms = 0;
    options.etcd_history_bytes = history_bytes;
    options.make_consensus = [](boost::asio::io_context& io, state::Store& store,
                                const raft::NodeOptions&) -> std::unique_ptr<raft::Consensus> {
      return std::make_unique<FixtureNode>(io, store);
    };
    server_ = std::make_unique<server::Server>(io_, clock_, std::move(options));
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_TRUE(RunUntil([this] { return server_->IsLeader() && server_->SelfRecordCurrent(); }));
    // ACLs are off in these tests: the anonymous client may do everything.
    ASSERT_TRUE(etcd::ResolveClient(*server_, "", &client_).ok());
  }
  void StopServer() {
    if (server_ == nullptr) return;
    bool stopped = false;
    server_->Stop([&stopped] { stopped = true; });
    RunUntil([&stopped] { return stopped; });
    server_.reset();
  }

  // Runs the loop until `done()` holds; false if 10 s pass first.
  template <typename Done>
  bool RunUntil(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.run_for(std::chrono::milliseconds(1));
      if (io_.stopped()) io_.restart();
    }
    return true;
  }
  // Runs the loop a few turns (posted work, no new entries): for checks
  // that something did not happen.
  void Settle() {
    for (int i = 0; i < 30; ++i) {
      io_.run_for(std::chrono::milliseconds(1));
      if (io_.stopped()) io_.restart();
    }
  }

  // Calls `call(request, done)` on a service and waits for its answer.
  template <typename Response, typename Call, typename Request>
  etcd::Answer<Response> Await(Call call, Request request) {
    std::optional<etcd::Answer<Response>> got;
    call(std::move(request), [&got](etcd::Answer<Response> a) { got = std::move(a); });
    EXPECT_TRUE(RunUntil([&got] { return got.has_value(); }));
    return got.value_or(etcd::Answer<Response>{});
  }

  boost::asio::io_context io_;
  ManualClock clock_;
  std::unique_ptr<server::Server> server_;
  etcd::Client client_;
};

}  // namespace tenure::inprocess
