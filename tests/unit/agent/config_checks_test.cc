// agent::ResolveAgentConfig's checks of settings taken together
// (agent/config_checks.h): two listeners on one port of one address, and a
// NUL byte in any setting, are refused naming the flags.
#include "agent/config_checks.h"

#include <gtest/gtest.h>

#include <string>

#include "agent/config.h"
#include "unit/agent/resolve_fixture.h"
#include "unit/tls/test_certs.h"

namespace tenure::agent {
namespace {

using testutil::Good;
using testutil::Refusal;

TEST(AgentConfigChecksTest, HttpOnTheRaftAddressIsRefused) {
  AgentConfig c = Good();
  c.http_addr = "127.0.0.1:8300";  // -raft-addr's default
  EXPECT_EQ(Refusal(c),
            "-raft-addr 127.0.0.1:8300 and -http-addr 127.0.0.1:8300 would both listen on port "
            "8300 of the same address; give each its own port");
  c.raft_bind_addr = "127.0.0.1:8300";
  c.raft_addr = "10.0.0.7:8300";
  EXPECT_EQ(Refusal(c),
            "-raft-bind-addr 127.0.0.1:8300 and -http-addr 127.0.0.1:8300 would both listen on "
            "port 8300 of the same address; give each its own port");
  // -raft-addr is then only dialled: the same text as -http-addr is allowed.
  c.raft_bind_addr = "127.0.0.1:8301";
  c.raft_addr = "127.0.0.1:8300";
  EXPECT_EQ(Refusal(c), "accepted");
}

TEST(AgentConfigChecksTest, AWildcardTakesEveryAddressOfItsFamily) {
  AgentConfig c = Good();
  c.http_addr = "0.0.0.0:8300";
  EXPECT_NE(Refusal(c).find("would both listen on port 8300"), std::string::npos);
  c.http_addr = "[::]:8300";  // dual-stack: IPv4 too
  EXPECT_NE(Refusal(c).find("would both listen on port 8300"), std::string::npos);
  c.http_addr = "[::1]:8300";
  EXPECT_EQ(Refusal(c), "accepted");
  c.http_addr = "127.0.0.2:8300";
  EXPECT_EQ(Refusal(c), "accepted");
  c.raft_addr = "0.0.0.0:8300";
  c.http_addr = "[::1]:8300";  // an IPv4 wildcard leaves IPv6 addresses alone
  EXPECT_EQ(Refusal(c), "accepted");
  c.http_addr = "127.0.0.1:0";  // "pick one" never collides
  EXPECT_EQ(Refusal(c), "accepted");
}

TEST(AgentConfigChecksTest, HttpsOnTheHttpAddressIsRefused) {
  testutil::TestPki pki;
  AgentConfig c = Good();
  c.tls_cert_file = pki.server.cert_file;
  c.tls_key_file = pki.server.key_file;
  c.https_addr = "127.0.0.1:8500";  // -http-addr's default
  EXPECT_EQ(Refusal(c),
            "-http-addr 127.0.0.1:8500 and -https-addr 127.0.0.1:8500 would both listen on port "
            "8500 of the same address; give each its own port");
  c.https_addr = "127.0.0.1:0";
  c.http_addr = "127.0.0.1:0";
  EXPECT_EQ(Refusal(c), "accepted");
}

TEST(AgentConfigChecksTest, ANulByteInAnySettingIsRefused) {
  AgentConfig c = Good();
  c.data_dir = std::string("/var/lib/ten\0ure", 16);
  EXPECT_EQ(Refusal(c),
            "-data-dir: contains a NUL byte (at byte 12), which no path, address or name may "
            "hold");
  c = Good();
  c.node_name = std::string("n\0", 2);
  EXPECT_EQ(Refusal(c).rfind("-node: contains a NUL byte (at byte 1)", 0), 0u);
  c = Good();
  c.raft_key_file = std::string("/etc/key\0.bak", 13);
  EXPECT_EQ(Refusal(c).rfind("-raft-key-file: contains a NUL byte (at byte 8)", 0), 0u);
}

}  // namespace
}  // namespace tenure::agent
