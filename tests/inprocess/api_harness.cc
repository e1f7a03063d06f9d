#include "inprocess/api_harness.h"

#include <chrono>

#include "common/assert.h"
#include "common/strings.h"
#include "inprocess/fixture_node.h"
#include "listen/wire.h"

namespace tenure::inprocess {
namespace {

class CapturingResponder final : public http::Responder {
 public:
  void Send(http::HttpResponse response) override {
    if (!answered) response_ = std::move(response);
    answered = true;
  }
  bool closed() const override { return false; }
  void OnClose(std::function<void()>) override {}

  bool answered = false;
  http::HttpResponse response_;
};

// Runs the loop until `done` or `deadline_ms` of real time passed.
template <typename Done>
bool RunUntil(boost::asio::io_context& io, Done done, DurationMs deadline_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    io.run_for(std::chrono::milliseconds(1));
    if (io.stopped()) io.restart();
  }
  return true;
}

}  // namespace

ApiHarness::ApiHarness(server::AclConfig acl, bool metrics_enabled) {
  server::ServerOptions options;
  options.metrics_enabled = metrics_enabled;
  options.acl = std::move(acl);
  options.node_name = "tenure-test";
  options.http_address = "127.0.0.1:8500";
  options.operator_token = kOperatorToken;
  options.checkpoint_period_ms = 0;  // transcripts should not depend on when one lands
  options.make_consensus = [](boost::asio::io_context& io, state::Store& store,
                              const raft::NodeOptions&) -> std::unique_ptr<raft::Consensus> {
    return std::make_unique<FixtureNode>(io, store);
  };
  server_ = std::make_unique<server::Server>(io_, clock_, std::move(options));
  api_ = std::make_unique<http::Api>(io_, *server_);
  TENURE_ASSERT(server_->Start().ok());
  api_->Start();
  // Serving once it leads and its own member record is written, so the
  // first request of every transcript sees the same indexes.
  TENURE_ASSERT(RunUntil(
      io_,
      [this] {
        return server_->IsLeader() && server_->SelfRecordCurrent() &&
               (!server_->acl_config().enabled || server_->store().acl().has_builtins());
      },
      10'000));
}

ApiHarness::~ApiHarness() {
  api_->Shutdown();
  bool stopped = false;
  server_->Stop([&stopped] { stopped = true; });
  RunUntil(
      io_, [&stopped] { return stopped; }, 10'000);
  api_.reset();
  server_.reset();
}

http::HttpResponse ApiHarness::Do(const std::string& method, const std::string& target,
                                  const std::string& body,
                                  std::vector<std::pair<std::string, std::string>> headers,
                                  DurationMs deadline_ms) {
  http::HttpRequest request;
  request.method = method;
  request.target = target;
  if (Status parsed = listen::wire::ParseTarget(target, &request); !parsed.ok()) {
    return http::HttpResponse::Text(400, std::string(parsed.message()));  // as Connection does
  }
  for (auto& [name, value] : headers) {
    request.AddHeader(name, std::move(value));
  }
  request.body = body;
  request.received_ms = clock_.NowMonoMs();
  auto responder = std::make_shared<CapturingResponder>();
  api_->Handle(std::move(request), responder);
  // While the request waits with nothing left to run but timers (a parked
  // blocking query), the clock moves on 1 ms per idle millisecond, so that
  // its ?wait runs out; nothing else moves it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms);
  while (!responder->answered) {
    if (std::chrono::steady_clock::now() > deadline) {
      return http::HttpResponse::Text(599, "no answer within the harness deadline");
    }
    const std::size_t ran = io_.poll();
    if (io_.stopped()) io_.restart();
    if (ran > 0 || responder->answered) continue;
    clock_.mono_ms += 1;
    clock_.unix_ms = clock_.unix_ms + 1;
    io_.run_for(std::chrono::milliseconds(1));
    if (io_.stopped()) io_.restart();
  }
  return responder->response_;
}

}  // namespace tenure::inprocess
