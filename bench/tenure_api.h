// Pieces of tenure's HTTP API shared by tenure_bench (docs/benchmarks.md) and
// tenure_vs's tenure side (docs/benchmarks-vs-etcd.md), so both read answers and measure
// sessions the same way.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "closed_loop.h"

namespace tenure::bench {

// {"ID":"..."} (a session create's answer) -> the id, or "" if none.
std::string ParseId(std::string_view body);

// A number from the server's /v1/agent/self Stats.tenure, e.g.
// "blocking_queries":"1000"; -1 when absent (another server, an older build).
long StatFromAgentSelf(std::string_view body, std::string_view name);

// Creates sessions with a fixed body; collects their ids when asked to.
class SessionCreator : public ClosedLoop {
 public:
  SessionCreator(Loop& loop, asio::ip::tcp::endpoint endpoint, int clients, std::string body,
                 std::vector<std::string>* ids);

 protected:
  void StartOp(Client& c) override;

 private:
  std::string body_;
  std::vector<std::string>* ids_;
};

// Renews sessions: client c cycles through c.targets (renew paths).
class Renewer : public ClosedLoop {
 public:
  using ClosedLoop::ClosedLoop;

 protected:
  void StartOp(Client& c) override;
};

}  // namespace tenure::bench
