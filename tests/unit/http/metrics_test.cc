#include "http/metrics.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace tenure::http {
namespace {

TEST(HttpMetricsTest, EndpointClassesAreBounded) {
  EXPECT_EQ(EndpointOf("/v1/kv/some/key"), Endpoint::kKv);
  EXPECT_EQ(EndpointOf("/v1/kv"), Endpoint::kKv);
  EXPECT_EQ(EndpointOf("/v1/txn"), Endpoint::kTxn);
  EXPECT_EQ(EndpointOf("/v1/session/renew/abc"), Endpoint::kSession);
  EXPECT_EQ(EndpointOf("/v1/status/leader"), Endpoint::kStatus);
  EXPECT_EQ(EndpointOf("/v1/agent/self"), Endpoint::kAgent);
  EXPECT_EQ(EndpointOf("/v1/agent/health/ready"), Endpoint::kHealth);
  EXPECT_EQ(EndpointOf("/v1/agent/metrics"), Endpoint::kMetrics);
  EXPECT_EQ(EndpointOf("/metrics"), Endpoint::kMetrics);
  EXPECT_EQ(EndpointOf("/v1/operator/raft/peer"), Endpoint::kOperator);
  EXPECT_EQ(EndpointOf("/v1/acl/token/self"), Endpoint::kAcl);
  EXPECT_EQ(EndpointOf("/v1/snapshot"), Endpoint::kSnapshot);
  EXPECT_EQ(EndpointOf("/v1/tenure/history/some/key"), Endpoint::kTenure);
  EXPECT_EQ(EndpointName(Endpoint::kSnapshot), "snapshot");
  EXPECT_EQ(EndpointName(Endpoint::kTenure), "tenure");
  // Anything else is one class, whatever the client sends.
  EXPECT_EQ(EndpointOf("/"), Endpoint::kOther);
  EXPECT_EQ(EndpointOf("/v1/catalog/nodes"), Endpoint::kOther);
  EXPECT_EQ(EndpointOf("/v2/kv/a"), Endpoint::kOther);
  EXPECT_EQ(EndpointOf("/v1/"), Endpoint::kOther);
  EXPECT_EQ(EndpointName(Endpoint::kHealth), "health");
}

TEST(HttpMetricsTest, MethodsAreBounded) {
  EXPECT_EQ(MethodName(MethodIndex("GET")), "GET");
  EXPECT_EQ(MethodName(MethodIndex("OPTIONS")), "OPTIONS");
  EXPECT_EQ(MethodName(MethodIndex("PATCH")), "other");
  EXPECT_EQ(MethodName(MethodIndex("get")), "other");  // methods are case-sensitive
}

TEST(HttpMetricsTest, CountsAnswersAndDenials) {
  HttpMetrics m(true);
  m.CountAnswer(Endpoint::kKv, "PUT", 200);
  m.CountAnswer(Endpoint::kKv, "PUT", 200);
  m.CountAnswer(Endpoint::kKv, "PUT", 403);
  m.CountAnswer(Endpoint::kKv, "BREW", 405);
  const auto& put = m.answers(Endpoint::kKv, MethodIndex("PUT"));
  ASSERT_EQ(put.size(), 2u);
  EXPECT_EQ(put[0].status, 200);
  EXPECT_EQ(put[0].count, 2u);
  EXPECT_EQ(put[1].status, 403);
  EXPECT_EQ(put[1].count, 1u);
  EXPECT_EQ(m.answers(Endpoint::kKv, MethodIndex("other")).size(), 1u);
  EXPECT_EQ(m.acl_denials(), 1u);
  EXPECT_TRUE(m.answers(Endpoint::kTxn, MethodIndex("PUT")).empty());
}

class FakeResponder : public Responder {
 public:
  void Send(HttpResponse response) override { sent = response.status; }
  bool closed() const override { return false; }
  void OnClose(std::function<void()>) override {}
  int sent = 0;
};

TEST(HttpMetricsTest, CountingResponderCountsWhatPassesAndHandsItOn) {
  HttpMetrics m(true);
  auto inner = std::make_shared<FakeResponder>();
  m.CountForwarded(Endpoint::kSession);
  CountingResponder responder(inner, &m, Endpoint::kSession, "PUT");
  responder.Send(HttpResponse::Text(500, "No cluster leader"));
  EXPECT_EQ(inner->sent, 500);
  EXPECT_EQ(m.forwarded(Endpoint::kSession), 1u);
  const auto& put = m.answers(Endpoint::kSession, MethodIndex("PUT"));
  ASSERT_EQ(put.size(), 1u);
  EXPECT_EQ(put[0].status, 500);
}

// A responder that records what a stream sent through it.
class FakeStreamResponder : public FakeResponder {
 public:
  void StartStream(int status, const listen::HeaderFields& headers) override {
    started = status;
    fields = headers.size();
  }
  void SendChunk(std::string_view bytes) override { body.append(bytes); }
  void EndStream() override { ended = true; }
  std::size_t unsent_bytes() const override { return 7; }
  void OnDrained(std::function<void()> callback) override { drained = std::move(callback); }
  int started = 0;
  std::size_t fields = 0;
  std::string body;
  bool ended = false;
  std::function<void()> drained;
};

TEST(HttpMetricsTest, CountingResponderCountsAStreamAtItsHeadAndHandsTheRestOn) {
  HttpMetrics m(true);
  auto inner = std::make_shared<FakeStreamResponder>();
  CountingResponder responder(inner, &m, Endpoint::kOther, "POST");
  responder.StartStream(200, {{"Content-Type", "application/json"}});
  responder.SendChunk("a\n");
  responder.SendChunk("b\n");
  int drained = 0;
  responder.OnDrained([&drained] { ++drained; });
  EXPECT_EQ(responder.unsent_bytes(), 7u);
  responder.EndStream();
  EXPECT_EQ(inner->started, 200);
  EXPECT_EQ(inner->fields, 1u);
  EXPECT_EQ(inner->body, "a\nb\n");
  EXPECT_TRUE(inner->ended);
  ASSERT_TRUE(inner->drained);
  inner->drained();
  EXPECT_EQ(drained, 1);
  const auto& post = m.answers(Endpoint::kOther, MethodIndex("POST"));
  ASSERT_EQ(post.size(), 1u);
  EXPECT_EQ(post[0].status, 200);
  EXPECT_EQ(post[0].count, 1u);
}

}  // namespace
}  // namespace tenure::http
