// ApiHarness: one tenure server and its Consul API in this process, on a
// FixtureNode (no disk, no sockets), with a clock the test sets. Requests go
// straight to Api::Handle as the HTTP transport would hand them over; the
// answer is whatever the handler sends. For transcripts of every endpoint
// (api_transcript_test.cc). One thread; not reentrant.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "http/api.h"
#include "server/server.h"

namespace tenure::inprocess {

// A clock that moves only when told to.
class ManualClock final : public Clock {
 public:
  MonoMs NowMonoMs() const override { return mono_ms; }
  UnixMs NowUnixMs() const override { return unix_ms; }
  MonoMs mono_ms = MonoMs(1'000'000);
  UnixMs unix_ms = UnixMs(1'700'000'000'000);
};

class ApiHarness {
 public:
  // The operator token the server is started with (-operator-token-file).
  static constexpr const char* kOperatorToken = "operator-secret";

  // With `acl` the server runs with those -acl-* settings; with ACLs on,
  // serving starts once the leader wrote the built-in policy and tokens.
  // metrics_enabled false: as -disable-metrics.
  explicit ApiHarness(server::AclConfig acl = {}, bool metrics_enabled = true);
  ~ApiHarness();

  // Serves one request; fails the test's expectations (returns a 599) if no
  // answer comes within `deadline_ms` of real time. While a parked blocking
  // query waits, the clock moves on with real time (see Do), so a short
  // ?wait runs out.
  http::HttpResponse Do(const std::string& method, const std::string& target,
                        const std::string& body = "",
                        std::vector<std::pair<std::string, std::string>> headers = {},
                        DurationMs deadline_ms = 5000);
  ManualClock& clock() { return clock_; }
  server::Server& server() { return *server_; }

 private:
  boost::asio::io_context io_;
  ManualClock clock_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<http::Api> api_;
};

}  // namespace tenure::inprocess
