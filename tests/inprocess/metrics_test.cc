// Metrics (docs/metrics.md): what the layers count, as /metrics and
// /v1/agent/metrics show it after real requests on an in-process server.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "inprocess/api_harness.h"

namespace tenure::inprocess {
namespace {

// "name{labels} value" lines of a Prometheus text, keyed by what precedes the value.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

std::string Scrape(ApiHarness& api) {
  http::HttpResponse r = api.Do("GET", "/metrics");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  return r.body;
}

std::string SessionId(const http::HttpResponse& r) {
  return nlohmann::json::parse(r.body)["ID"].get<std::string>();
}

TEST(MetricsTest, CountersFollowTheRequests) {
  ApiHarness api;
  std::map<std::string, double> before = Samples(Scrape(api));
  EXPECT_EQ(before["tenure_raft_is_leader"], 1);
  EXPECT_EQ(before["tenure_raft_leader_present"], 1);
  EXPECT_EQ(before["tenure_sessions_active"], 0);

  ASSERT_EQ(api.Do("PUT", "/v1/kv/a", "1").status, 200);
  ASSERT_EQ(api.Do("PUT", "/v1/kv/b", "2").status, 200);
  std::string s1 = SessionId(api.Do("PUT", "/v1/session/create", R"({"TTL":"10s"})"));
  std::string s2 = SessionId(api.Do("PUT", "/v1/session/create", R"({"LockDelay":"15s"})"));
  EXPECT_EQ(api.Do("PUT", "/v1/kv/lock?acquire=" + s2, "x").body, "true");
  EXPECT_EQ(api.Do("PUT", "/v1/kv/lock?acquire=" + s1, "x").body, "false");  // held
  ASSERT_EQ(api.Do("PUT", "/v1/session/destroy/" + s2).status, 200);
  EXPECT_EQ(api.Do("PUT", "/v1/kv/lock?acquire=" + s1, "x").body, "false");  // lock-delay
  ASSERT_EQ(api.Do("PUT", "/v1/session/renew/" + s1).status, 200);
  EXPECT_EQ(api.Do("PUT", "/v1/session/renew/00000000-0000-0000-0000-00000000abcd").status, 404);
  // A fence check that fails rolls the txn back (409).
  EXPECT_EQ(api.Do("PUT", "/v1/txn",
                   R"([{"KV":{"Verb":"check-fence","Key":"a","Index":1}},)"
                   R"({"KV":{"Verb":"set","Key":"c","Value":"eA=="}}])")
                .status,
            409);
  EXPECT_EQ(api.Do("GET", "/v1/kv/missing").status, 404);

  std::string text = Scrape(api);
  std::map<std::string, double> after = Samples(text);
  auto moved = [&](const std::string& name) { return after[name] - before[name]; };
  EXPECT_EQ(moved("tenure_sessions_created_total"), 2);
  EXPECT_EQ(moved("tenure_sessions_destroyed_total{cause=\"request\"}"), 1);
  EXPECT_EQ(after["tenure_sessions_active"], 1);
  EXPECT_EQ(after["tenure_locks_held"], 0);
  EXPECT_EQ(moved("tenure_lock_grants_total"), 1);
  EXPECT_EQ(moved("tenure_lock_refusals_total{reason=\"held\"}"), 1);
  EXPECT_EQ(moved("tenure_lock_refusals_total{reason=\"lock_delay\"}"), 1);
  EXPECT_EQ(moved("tenure_session_renewals_total{result=\"ok\"}"), 1);
  EXPECT_EQ(moved("tenure_session_renewals_total{result=\"failed\"}"), 1);
  EXPECT_EQ(moved("tenure_fence_check_failures_total"), 1);
  EXPECT_GE(moved("tenure_raft_proposals_committed_total"), 7);
  EXPECT_EQ(after["tenure_raft_proposals_pending"], 0);
  // Two sets and three acquires (Consul answers a refused acquire 200 false).
  EXPECT_EQ(after["tenure_http_requests_total{endpoint=\"kv\",method=\"PUT\",code=\"200\"}"], 5);
  EXPECT_EQ(after["tenure_http_requests_total{endpoint=\"kv\",method=\"GET\",code=\"404\"}"], 1);
  EXPECT_EQ(after["tenure_http_requests_total{endpoint=\"txn\",method=\"PUT\",code=\"409\"}"], 1);
  EXPECT_EQ(after["tenure_http_requests_total{endpoint=\"session\",method=\"PUT\",code=\"404\"}"],
            1);
  // The first scrape is counted once it is answered.
  EXPECT_EQ(after["tenure_http_requests_total{endpoint=\"metrics\",method=\"GET\",code=\"200\"}"],
            1);
  EXPECT_EQ(after["tenure_raft_commit_duration_seconds_bucket{le=\"+Inf\"}"],
            after["tenure_raft_commit_duration_seconds_count"]);
  EXPECT_EQ(after["tenure_raft_applied_index"], after["tenure_raft_commit_index"]);

  // One HELP and one TYPE per family, before its samples.
  std::map<std::string, int> types;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) ++types[line.substr(7, line.find(' ', 7) - 7)];
  }
  for (const auto& [name, count] : types) EXPECT_EQ(count, 1) << name;
  EXPECT_EQ(types.count("tenure_http_requests_total"), 1u);
  EXPECT_EQ(text.back(), '\n');
}

// A wake by a write is timed in tests/integration/test_metrics.py.
TEST(MetricsTest, BlockingQueryTimeoutIsNoWake) {
  ApiHarness api;
  ASSERT_EQ(api.Do("PUT", "/v1/kv/w", "1").status, 200);
  http::HttpResponse first = api.Do("GET", "/v1/kv/w");
  std::string index;
  for (const auto& [name, value] : first.headers) {
    if (name == "X-Consul-Index") index = value;
  }
  ASSERT_FALSE(index.empty());
  // A parked query whose wait runs out answers without a wake.
  ASSERT_EQ(api.Do("GET", "/v1/kv/w?index=" + index + "&wait=50ms").status, 200);
  std::map<std::string, double> samples = Samples(Scrape(api));
  EXPECT_EQ(samples["tenure_blocking_query_wake_duration_seconds_count"], 0);
  EXPECT_EQ(samples["tenure_blocking_queries_parked"], 0);
}

TEST(MetricsTest, ConsulJsonShape) {
  ApiHarness api;
  ASSERT_EQ(api.Do("PUT", "/v1/kv/a", "1").status, 200);
  http::HttpResponse r = api.Do("GET", "/v1/agent/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  nlohmann::json j = nlohmann::json::parse(r.body);
  EXPECT_TRUE(std::regex_match(j["Timestamp"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC)")));
  ASSERT_TRUE(j["Gauges"].is_array());
  EXPECT_TRUE(j["Points"].is_array());
  ASSERT_TRUE(j["Counters"].is_array());
  ASSERT_TRUE(j["Samples"].is_array());
  bool leader = false;
  for (const auto& g : j["Gauges"]) {
    EXPECT_TRUE(g["Labels"].is_object());
    if (g["Name"] == "tenure_raft_is_leader") leader = g["Value"] == 1.0;
  }
  EXPECT_TRUE(leader);
  bool put = false;
  for (const auto& c : j["Counters"]) {
    if (c["Name"] == "tenure_http_requests_total" && c["Labels"]["endpoint"] == "kv") {
      put = c["Count"] == 1 && c["Labels"]["method"] == "PUT" && c["Labels"]["code"] == "200";
    }
  }
  EXPECT_TRUE(put);
  bool commit = false;
  for (const auto& s : j["Samples"]) {
    if (s["Name"] == "tenure_raft_commit_duration_seconds") commit = s["Count"].get<int>() >= 1;
  }
  EXPECT_TRUE(commit);

  http::HttpResponse text = api.Do("GET", "/v1/agent/metrics?format=prometheus");
  EXPECT_EQ(text.status, 200);
  EXPECT_NE(text.body.find("# TYPE tenure_raft_term gauge\n"), std::string::npos);
  http::HttpResponse bad = api.Do("GET", "/v1/agent/metrics?format=xml");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body, "unknown format \"xml\": expected prometheus, or none for JSON");
  EXPECT_EQ(api.Do("PUT", "/metrics").status, 405);
}

TEST(MetricsTest, DisabledCountsNothingAndAnswers404) {
  ApiHarness api({}, /*metrics_enabled=*/false);
  ASSERT_EQ(api.Do("PUT", "/v1/kv/a", "1").status, 200);
  EXPECT_EQ(api.server().metrics().proposals_committed, 0u);
  http::HttpResponse r = api.Do("GET", "/metrics");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "metrics are disabled on this server (-disable-metrics)");
  EXPECT_EQ(api.Do("GET", "/v1/agent/metrics").status, 404);
}

TEST(MetricsTest, NeedsAgentRead) {
  server::AclConfig acl;
  acl.enabled = true;
  acl.default_policy = acl::DefaultPolicy::kDeny;
  acl.initial_management = "11111111-2222-3333-4444-555555555555";
  ApiHarness api(acl);
  http::HttpResponse anonymous = api.Do("GET", "/metrics");
  EXPECT_EQ(anonymous.status, 403);
  EXPECT_EQ(
      anonymous.body.rfind("Permission denied: anonymous token lacks permission 'agent:read' on "
                           "\"tenure-test\"",
                           0),
      0u)
      << anonymous.body;
  http::HttpResponse bearer =
      api.Do("GET", "/metrics", "", {{"Authorization", "Bearer " + acl.initial_management}});
  EXPECT_EQ(bearer.status, 200);
  std::map<std::string, double> samples = Samples(bearer.body);
  EXPECT_EQ(samples["tenure_acl_denials_total"], 1);
  EXPECT_EQ(api.Do("GET", "/v1/agent/metrics").status, 403);
}

}  // namespace
}  // namespace tenure::inprocess
