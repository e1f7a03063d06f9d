#include "http/metrics.h"

#include <gtest/gtest.h>

#include <memory>

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

}  // namespace
}  // namespace tenure::http
