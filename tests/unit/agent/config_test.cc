// agent::ResolveAgentConfig: every setting of `tenure server` checked with a
// text that names the flag, and a good configuration turned into options.
#include "agent/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "unit/agent/resolve_fixture.h"
#include "unit/tls/test_certs.h"

namespace tenure::agent {
namespace {

using testutil::Good;
using testutil::Refusal;

TEST(AgentConfigTest, AGoodConfigurationBecomesOptions) {
  AgentConfig config = Good();
  config.http_addr = "0.0.0.0:8500";
  config.raft_addr = "10.0.0.7:8300";
  config.raft_election_timeout = "1s";
  config.raft_heartbeat = "100ms";
  config.bootstrap_peers = "1@10.0.0.7:8300,2@10.0.0.8:8300,3@10.0.0.9:8300";
  config.raft_insecure_keyless = true;
  Result<AgentPlan> plan = ResolveAgentConfig(config);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->http->host, "0.0.0.0");
  EXPECT_EQ(plan->http->port, 8500);
  // Members forward to an address they can reach, not the wildcard.
  EXPECT_EQ(plan->server.http_address, "10.0.0.7:8500");
  EXPECT_EQ(plan->server.raft.election_timeout_ms, 1000u);
  EXPECT_EQ(plan->server.raft.heartbeat_timeout_ms, 100u);
  EXPECT_EQ(plan->server.raft.bootstrap.size(), 3u);
  EXPECT_EQ(plan->server.node_name, "n1");
  EXPECT_FALSE(plan->keyed);
  EXPECT_EQ(plan->raft_listen, "10.0.0.7:8300");
}

TEST(AgentConfigTest, JoinStartsWithoutAConfiguration) {
  AgentConfig config = Good();
  config.join = "10.0.0.7:8300,,10.0.0.8:8300";
  config.raft_insecure_keyless = true;
  Result<AgentPlan> plan = ResolveAgentConfig(config);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->server.raft.bootstrap.empty());
  EXPECT_EQ(plan->join, (std::vector<std::string>{"10.0.0.7:8300", "10.0.0.8:8300"}));
}

// Without a key or mutual TLS anyone who reaches the raft port can pose as
// a member: outside -dev, a server with peers needs one of them or
// -raft-insecure-keyless, and a keyless server takes no joins without it.
TEST(AgentConfigTest, KeylessPeersAreAChoice) {
  const std::string refusal =
      "-raft-key-file (or mutual TLS: -tls-cert-file, -tls-key-file and -tls-ca-file) is "
      "required for a server with peers (-bootstrap-peers): without either, any process that "
      "can reach the raft port can pose as a member, vote and write to the log. Make a key with "
      "`tenure keygen` and give every member the same file, or accept the risk with "
      "-raft-insecure-keyless (docs/security.md)";
  AgentConfig c = Good();
  c.raft_addr = "10.0.0.7:8300";
  c.bootstrap_peers = "1@10.0.0.7:8300,2@10.0.0.8:8300";
  EXPECT_EQ(Refusal(c), refusal);
  AgentConfig joining = Good();
  joining.join = "10.0.0.8:8300";
  EXPECT_NE(Refusal(joining).find("required for a server with peers (-join)"), std::string::npos);

  // A server alone starts as before, but takes no keyless joins.
  AgentConfig alone = Good();
  alone.bootstrap_peers = "1@127.0.0.1:8300";
  Result<AgentPlan> plan = ResolveAgentConfig(alone);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->server.raft.refuse_keyless_joins);
  EXPECT_FALSE(plan->insecure_keyless);

  // Said so, or -dev: both allowed; only the flag is warned about.
  c.raft_insecure_keyless = true;
  plan = ResolveAgentConfig(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->server.raft.refuse_keyless_joins);
  EXPECT_TRUE(plan->insecure_keyless);
  c.raft_insecure_keyless = false;
  c.dev = true;
  plan = ResolveAgentConfig(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->server.raft.refuse_keyless_joins);

  // Mutual TLS (a CA: raft links check certificates) secures it too.
  testutil::TestPki pki;
  c.dev = false;
  c.tls_cert_file = pki.server.cert_file;
  c.tls_key_file = pki.server.key_file;
  EXPECT_EQ(Refusal(c), refusal);  // HTTPS certificates alone leave raft in clear
  c.tls_ca_file = pki.ca.cert_file;
  plan = ResolveAgentConfig(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->server.raft.tls_accept, nullptr);
  EXPECT_FALSE(plan->insecure_keyless);

  // And a cluster key.
  AgentConfig keyed = Good();
  keyed.raft_addr = "10.0.0.7:8300";
  keyed.bootstrap_peers = "1@10.0.0.7:8300,2@10.0.0.8:8300";
  keyed.raft_key_file = pki.dir + "/raft.key";
  {
    std::ofstream key(keyed.raft_key_file);
    key << "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n";
  }
  ASSERT_EQ(::chmod(keyed.raft_key_file.c_str(), 0600), 0);
  plan = ResolveAgentConfig(keyed);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->keyed);
  EXPECT_FALSE(plan->insecure_keyless);
}

TEST(AgentConfigTest, EveryBadSettingIsNamed) {
  AgentConfig c = Good();
  c.data_dir.clear();
  EXPECT_EQ(Refusal(c), "-data-dir is required (or use -dev)");
  c.dev = true;
  EXPECT_EQ(Refusal(c), "accepted");

  c = Good();
  c.http_addr = "nope";
  EXPECT_EQ(Refusal(c), "-http-addr: expected host:port, got \"nope\" (no port)");
  c = Good();
  c.raft_addr = "h:0";
  EXPECT_EQ(Refusal(c), "-raft-addr: expected host:port, got \"h:0\" (port out of range)");
  c = Good();
  c.raft_bind_addr = "::1:8300";
  EXPECT_EQ(
      Refusal(c),
      "-raft-bind-addr: expected host:port, got \"::1:8300\" (an IPv6 address needs brackets)");
  c = Good();
  c.node_id = 0;
  EXPECT_EQ(Refusal(c), "-node-id must be positive");
  c = Good();
  c.session_ttl_multiplier = 11;
  EXPECT_EQ(Refusal(c), "-session-ttl-multiplier must be between 1 and 10");
  c = Good();
  c.raft_election_timeout = "99ms";
  EXPECT_EQ(Refusal(c),
            "-raft-election-timeout must be a duration from 100ms to 60s, got \"99ms\"");
  c = Good();
  c.raft_heartbeat = "500ms";  // not below the 500ms election timeout
  EXPECT_EQ(Refusal(c),
            "-raft-heartbeat must be a duration of at least 10ms and below "
            "-raft-election-timeout, got \"500ms\"");
  c = Good();
  c.join = "10.0.0.7:8300";
  c.bootstrap_peers = "1@127.0.0.1:8300";
  EXPECT_EQ(Refusal(c), "-join and -bootstrap-peers exclude each other");
  c = Good();
  c.join = "10.0.0.7";
  EXPECT_EQ(Refusal(c), "-join: expected host:port, got \"10.0.0.7\" (no port)");
  c = Good();
  c.raft_key_file = "/nonexistent/key";
  EXPECT_NE(Refusal(c).find("/nonexistent/key"), std::string::npos);
  c = Good();
  c.operator_token_file = "/nonexistent/token";
  EXPECT_EQ(Refusal(c), "-operator-token-file /nonexistent/token: No such file or directory");
}

TEST(AgentConfigTest, BootstrapPeersMustBeWellFormedAndNameThisServer) {
  const std::string self = "127.0.0.1:8300";
  auto refusal = [&](const std::string& list) {
    Result<std::vector<raft::Peer>> peers = ParseBootstrapPeers(list, 1, self);
    return peers.ok() ? std::string("accepted") : std::string(peers.status().message());
  };
  EXPECT_EQ(refusal("1@127.0.0.1:8300,2@127.0.0.1:8301"), "accepted");
  EXPECT_EQ(refusal("x@127.0.0.1:8300"),
            "-bootstrap-peers: expected ID@HOST:PORT (ID > 0), got \"x@127.0.0.1:8300\"");
  EXPECT_EQ(refusal("0@127.0.0.1:8300"),
            "-bootstrap-peers: expected ID@HOST:PORT (ID > 0), got \"0@127.0.0.1:8300\"");
  EXPECT_EQ(refusal("1@127.0.0.1:8300,1@127.0.0.1:8301"),
            "-bootstrap-peers: id 1 or address 127.0.0.1:8301 appears twice");
  EXPECT_EQ(refusal("2@127.0.0.1:8301"), "-bootstrap-peers must include this server (-node-id 1)");
  EXPECT_EQ(refusal("1@127.0.0.1:9999"),
            "-bootstrap-peers gives this server (id 1) the address 127.0.0.1:9999, but -raft-addr "
            "is 127.0.0.1:8300");
  EXPECT_EQ(refusal("1@127.0.0.1"),
            "-bootstrap-peers: expected host:port, got \"127.0.0.1\" (no port)");
}

TEST(AgentConfigTest, AWildcardHttpHostIsAdvertisedAsTheRaftHost) {
  EXPECT_EQ(AdvertisedHttpAddress({"::", 8500}, {"fd00::7", 8300}), "[fd00::7]:8500");
  EXPECT_EQ(AdvertisedHttpAddress({"127.0.0.1", 18500}, {"10.0.0.1", 8300}), "127.0.0.1:18500");
}

}  // namespace
}  // namespace tenure::agent

namespace tenure::agent {
namespace {

TEST(AgentConfigTlsTest, HttpsNeedsACertificateAndOffNeedsHttps) {
  testutil::TestPki pki;
  AgentConfig c = Good();
  c.https_addr = "127.0.0.1:8501";
  EXPECT_EQ(Refusal(c), "-https-addr needs -tls-cert-file and -tls-key-file");
  c.tls_cert_file = pki.server.cert_file;
  EXPECT_EQ(Refusal(c), "-tls-cert-file and -tls-key-file go together");
  c.tls_key_file = pki.server.key_file;
  c.tls_verify_incoming = true;
  EXPECT_EQ(Refusal(c), "-tls-verify-incoming needs -tls-ca-file");
  c.tls_ca_file = pki.ca.cert_file;
  c.http_addr = "off";
  Result<AgentPlan> plan = ResolveAgentConfig(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->http.has_value());
  ASSERT_TRUE(plan->https.has_value());
  EXPECT_EQ(plan->https->port, 8501);
  EXPECT_NE(plan->https->tls, nullptr);
  // Followers forward to the TLS listener.
  EXPECT_EQ(plan->server.http_address, "127.0.0.1:8501");

  c.https_addr.clear();
  EXPECT_EQ(Refusal(c), "-http-addr off needs -https-addr: the API must listen somewhere");
}

// Consul's limits.http_max_conns_per_client: 200 by default, 0 for none, one
// count for both listeners, never above what a listener serves in all.
TEST(AgentConfigTlsTest, ThePerClientLimitCountsBothListenersTogether) {
  testutil::TestPki pki;
  AgentConfig c = Good();
  c.https_addr = "127.0.0.1:8501";
  c.tls_cert_file = pki.server.cert_file;
  c.tls_key_file = pki.server.key_file;
  Result<AgentPlan> plan = ResolveAgentConfig(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->http.has_value() && plan->https.has_value());
  EXPECT_EQ(plan->http->connections_per_client_max, 200u);
  EXPECT_EQ(plan->https->connections_per_client_max, 200u);
  ASSERT_NE(plan->http->clients, nullptr);
  EXPECT_EQ(plan->http->clients, plan->https->clients);
  c.http_max_conns_per_client = 0;
  plan = ResolveAgentConfig(c);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->http->connections_per_client_max, 0u);
  c.http_max_conns_per_client = 20'000;
  EXPECT_EQ(Refusal(c), "accepted");
  c.http_max_conns_per_client = 20'001;
  EXPECT_EQ(Refusal(c),
            "-http-max-conns-per-client: 20001 is more than the 20000 connections a listener "
            "serves in all (0 turns the per-client limit off)");
}

TEST(AgentConfigTlsTest, BadFilesStopTheStartWithTheirNames) {
  testutil::TestPki pki;
  AgentConfig c = Good();
  c.https_addr = "127.0.0.1:8501";
  c.tls_cert_file = pki.expired.cert_file;
  c.tls_key_file = pki.expired.key_file;
  EXPECT_EQ(Refusal(c).rfind("TLS: certificate " + pki.expired.cert_file + ": expired on ", 0), 0u);
  c.tls_cert_file = pki.server.cert_file;
  c.tls_key_file = pki.client.key_file;
  EXPECT_EQ(Refusal(c), "TLS: key " + pki.client.key_file + " does not match certificate " +
                            pki.server.cert_file);
  c.tls_key_file = pki.dir + "/nothing-here.pem";
  EXPECT_EQ(Refusal(c), "TLS: key " + c.tls_key_file + ": No such file or directory");
}

}  // namespace
}  // namespace tenure::agent

namespace tenure::agent {
namespace {

using testutil::Good;
using testutil::Refusal;

// The etcd port (decision 0048): off unless asked, -dev's 127.0.0.1:2379,
// never beside ACLs while it does not check tokens.
TEST(AgentConfigEtcdTest, OffUnlessAskedAndDevServesTheUsualPort) {
  Result<AgentPlan> plan = ResolveAgentConfig(Good());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->etcd.has_value());
  EXPECT_FALSE(plan->server.etcd_history_bytes.has_value());

  AgentConfig dev = Good();
  dev.dev = true;
  plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->etcd.has_value());
  EXPECT_EQ(plan->etcd->host, "127.0.0.1");
  EXPECT_EQ(plan->etcd->port, 2379);
  EXPECT_TRUE(plan->etcd_dev_default);
  EXPECT_EQ(plan->server.etcd_history_bytes, std::optional<std::size_t>(64u << 20));
  // It shares the per-client count with the HTTP listener.
  EXPECT_EQ(plan->etcd->clients, plan->http->clients);

  dev.grpc_addr = "off";
  plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->etcd.has_value());

  AgentConfig asked = Good();
  asked.grpc_addr = "0.0.0.0:12379";
  asked.etcd_history_bytes = 4096;
  plan = ResolveAgentConfig(asked);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->etcd.has_value());
  EXPECT_EQ(plan->etcd->host, "0.0.0.0");
  EXPECT_EQ(plan->etcd->port, 12379);
  EXPECT_FALSE(plan->etcd_dev_default);
  EXPECT_EQ(plan->server.etcd_history_bytes, std::optional<std::size_t>(4096));
}

TEST(AgentConfigEtcdTest, ATlsOnlyDevServerOpensNoClearTextEtcdPort) {
  testutil::TestPki pki;
  AgentConfig dev = Good();
  dev.dev = true;
  dev.http_addr = "off";
  dev.https_addr = "127.0.0.1:8501";
  dev.tls_cert_file = pki.server.cert_file;
  dev.tls_key_file = pki.server.key_file;
  Result<AgentPlan> plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->etcd.has_value());
  // Asked for, it is served beside HTTPS.
  dev.grpc_addr = "127.0.0.1:12379";
  plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->etcd.has_value());
}

TEST(AgentConfigEtcdTest, ABadOrCollidingAddressIsRefusedUnlessItIsDevsDefault) {
  AgentConfig config = Good();
  config.grpc_addr = "nowhere";
  EXPECT_NE(Refusal(config).find("-grpc-addr"), std::string::npos) << Refusal(config);
  config.grpc_addr = config.http_addr;
  EXPECT_NE(Refusal(config).find("-grpc-addr"), std::string::npos) << Refusal(config);

  AgentConfig dev = Good();
  dev.dev = true;
  dev.http_addr = "127.0.0.1:2379";
  Result<AgentPlan> plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->etcd.has_value());
  EXPECT_NE(plan->etcd_dev_skipped.find("taken by another of its flags"), std::string::npos);
}

TEST(AgentConfigEtcdTest, TheEtcdPortServesBesideAcls) {
  // The etcd API checks ACL tokens (docs/security.md, "The etcd port"), so
  // it is served with -acl-enabled as the Consul API is.
  AgentConfig config = Good();
  config.grpc_addr = "127.0.0.1:12379";
  config.acl_enabled = true;
  Result<AgentPlan> plan = ResolveAgentConfig(config);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->etcd.has_value());
  EXPECT_EQ(plan->etcd->port, 12379);

  AgentConfig dev = Good();
  dev.dev = true;
  dev.acl_enabled = true;
  plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->etcd.has_value());
  EXPECT_EQ(plan->etcd->port, 2379);
  EXPECT_EQ(plan->etcd_dev_skipped, "");
}

// ZooKeeper's port (docs/zookeeper-compat.md): off unless asked, -dev's
// 127.0.0.1:2181, refused when bad or colliding, its timeout bounds checked.
TEST(AgentConfigZooKeeperTest, OffUnlessAskedAndDevServesTheUsualPort) {
  Result<AgentPlan> plan = ResolveAgentConfig(Good());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->zk.has_value());

  AgentConfig dev = Good();
  dev.dev = true;
  plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->zk.has_value());
  EXPECT_EQ(plan->zk->host, "127.0.0.1");
  EXPECT_EQ(plan->zk->port, 2181);
  EXPECT_EQ(plan->zk->session_timeout_min_ms, 4000);
  EXPECT_EQ(plan->zk->session_timeout_max_ms, 40000);
  EXPECT_TRUE(plan->zk_dev_default);
  dev.zk_addr = "off";
  plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->zk.has_value());

  AgentConfig asked = Good();
  asked.zk_addr = "0.0.0.0:12181";
  asked.zk_session_timeout_min = "2s";
  asked.zk_session_timeout_max = "1500000ms";
  plan = ResolveAgentConfig(asked);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->zk.has_value());
  EXPECT_EQ(plan->zk->port, 12181);
  EXPECT_EQ(plan->zk->session_timeout_min_ms, 2000);
  EXPECT_EQ(plan->zk->session_timeout_max_ms, 1500000);
  EXPECT_FALSE(plan->zk_dev_default);
}

TEST(AgentConfigZooKeeperTest, BadAddressesAndTimeoutBoundsAreRefused) {
  AgentConfig config = Good();
  config.zk_addr = "nowhere";
  EXPECT_NE(Refusal(config).find("-zk-addr"), std::string::npos) << Refusal(config);
  config.zk_addr = config.http_addr;
  EXPECT_NE(Refusal(config).find("-zk-addr"), std::string::npos) << Refusal(config);
  config.zk_addr = "127.0.0.1:12181";
  for (const char* bad : {"1s", "25h", "1500us", "soon", ""}) {
    config.zk_session_timeout_min = bad;
    EXPECT_NE(Refusal(config).find("-zk-session-timeout-min must be a whole number of "
                                   "milliseconds from 2s to 24h"),
              std::string::npos)
        << bad << ": " << Refusal(config);
  }
  config.zk_session_timeout_min = "50s";
  EXPECT_NE(Refusal(config).find("-zk-session-timeout-min (50s) is above "
                                 "-zk-session-timeout-max (40s)"),
            std::string::npos)
      << Refusal(config);

  AgentConfig dev = Good();
  dev.dev = true;
  dev.http_addr = "127.0.0.1:2181";
  Result<AgentPlan> plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->zk.has_value());
  EXPECT_NE(plan->zk_dev_skipped.find("taken by another of its flags"), std::string::npos);
}

TEST(AgentConfigZooKeeperTest, TheTlsPortNeedsTlsFilesAndServesBesideOrAlone) {
  AgentConfig config = Good();
  config.zk_tls_addr = "127.0.0.1:12182";
  EXPECT_NE(Refusal(config).find("-zk-tls-addr needs -tls-cert-file and -tls-key-file"),
            std::string::npos)
      << Refusal(config);

  testutil::TestPki pki;
  config.tls_cert_file = pki.server.cert_file;
  config.tls_key_file = pki.server.key_file;
  Result<AgentPlan> plan = ResolveAgentConfig(config);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->zk.has_value());
  EXPECT_FALSE(plan->zk->clear_text);  // alone: -zk-addr not given
  EXPECT_TRUE(plan->zk->tls);
  EXPECT_EQ(plan->zk->tls_port, 12182);
  EXPECT_NE(plan->zk->tls_context, nullptr);

  // Beside -dev's clear-text 2181, and apart from every other listener.
  AgentConfig dev = config;
  dev.dev = true;
  plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->zk->clear_text);
  EXPECT_EQ(plan->zk->port, 2181);
  EXPECT_TRUE(plan->zk->tls);
  dev.zk_addr = "off";
  plan = ResolveAgentConfig(dev);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->zk->clear_text);
  EXPECT_TRUE(plan->zk->tls);

  config.zk_addr = "127.0.0.1:12182";
  EXPECT_NE(Refusal(config).find("-zk-addr"), std::string::npos) << Refusal(config);
  config.zk_addr = "";
  config.zk_tls_addr = config.http_addr;
  EXPECT_NE(Refusal(config).find("-zk-tls-addr"), std::string::npos) << Refusal(config);
  config.zk_tls_addr = "nowhere";
  EXPECT_NE(Refusal(config).find("-zk-tls-addr"), std::string::npos) << Refusal(config);
}

}  // namespace
}  // namespace tenure::agent
