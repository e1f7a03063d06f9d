// libtenure over TLS: ClientOptions' TLS settings (and the variables they
// default to) reach the client. The server is a TlsResponder answering the
// session calls as tenure does; the protocol itself is sdk_test.cc's.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "tenure/tenure.h"
#include "unit/client/server_process.h"
#include "unit/net/tls_responder.h"
#include "unit/tls/test_certs.h"

namespace tenure {
namespace {

constexpr char kSessionId[] = "1f2e3d4c-0000-4000-8000-00000000abcd";

testutil::TestPki& Pki() {
  static testutil::TestPki* made = testutil::NewProcessPki();
  return *made;
}

// Requires a client certificate, as a server with -tls-verify-incoming does.
std::unique_ptr<test_support::TlsResponder> SessionServer() {
  auto context = tls::Context::ForServer(
      {Pki().server.cert_file, Pki().server.key_file, Pki().ca.cert_file, true});
  EXPECT_TRUE(context.ok()) << context.status().ToString();
  test_support::TlsResponderOptions options;
  options.answer = [](const test_support::StubRequest& request) -> std::string {
    if (request.target == "/v1/session/create")
      return std::string("{\"ID\":\"") + kSessionId + "\"}";
    if (request.target.rfind("/v1/session/renew/", 0) == 0) {
      return std::string("[{\"ID\":\"") + kSessionId + "\",\"TTL\":\"10s\"}]";
    }
    return "true";
  };
  return std::make_unique<test_support::TlsResponder>((*context)->raw(), options);
}

SessionOptions Ttl10s() {
  SessionOptions options;
  options.ttl_ms = 10'000;
  return options;
}

// Options for `address` trusting the test CA, with the client certificate.
ClientOptions WithClientCertificate(const std::string& address) {
  ClientOptions options;
  options.addresses = {address};
  options.ca_file = Pki().ca.cert_file;
  options.client_cert_file = Pki().client.cert_file;
  options.client_key_file = Pki().client.key_file;
  return options;
}

class SdkTlsTest : public ::testing::Test {
 protected:
  // Before and after: a variable left set would make every later client of
  // the process (the other suites of its shard) speak https.
  void SetUp() override { ClearVariables(); }
  void TearDown() override { ClearVariables(); }
  static void ClearVariables() {
    for (const char* name : {"CONSUL_CACERT", "CONSUL_CLIENT_CERT", "CONSUL_CLIENT_KEY",
                             "CONSUL_HTTP_SSL", "CONSUL_HTTP_SSL_VERIFY"}) {
      ::unsetenv(name);
    }
  }
};

TEST_F(SdkTlsTest, ASessionIsCreatedOverHttpsWithAClientCertificate) {
  auto server = SessionServer();
  ClientOptions options = WithClientCertificate("https://" + server->address());
  Client client(options);
  Session session(client, Ttl10s());
  Status created = session.Create();
  ASSERT_TRUE(created.ok()) << created.ToString();
  EXPECT_EQ(session.id(), kSessionId);
  EXPECT_TRUE(session.Destroy().ok());
  EXPECT_EQ(server->failures().size(), 0u);
}

TEST_F(SdkTlsTest, TheVariablesFillWhatTheOptionsLeaveEmpty) {
  auto server = SessionServer();
  ::setenv("CONSUL_HTTP_SSL", "true", 1);
  ::setenv("CONSUL_CACERT", Pki().ca.cert_file.c_str(), 1);
  ::setenv("CONSUL_CLIENT_CERT", Pki().client.cert_file.c_str(), 1);
  ::setenv("CONSUL_CLIENT_KEY", Pki().client.key_file.c_str(), 1);
  ClientOptions options;
  options.addresses = {server->address()};  // https by $CONSUL_HTTP_SSL
  Client client(options);
  Session session(client, Ttl10s());
  Status created = session.Create();
  ASSERT_TRUE(created.ok()) << created.ToString();
  EXPECT_TRUE(session.Destroy().ok());

  // An option beats its variable: this one is refused.
  options.https = false;
  Client plain(options);
  Session refused(plain, Ttl10s());
  EXPECT_FALSE(refused.Create().ok());
}

TEST_F(SdkTlsTest, EachFailureIsAStatusWithTheReason) {
  auto server = SessionServer();
  ClientOptions options = WithClientCertificate("https://" + server->address());
  options.ca_file = Pki().other_ca.cert_file;
  {
    Client client(options);
    Session session(client, Ttl10s());
    Status created = session.Create();
    EXPECT_EQ(created.code(), Code::kUnavailable);
    EXPECT_NE(created.message().find("https://" + server->address() +
                                     ": TLS handshake failed: certificate verify failed"),
              std::string::npos)
        << created.ToString();
  }
  options.ca_file = Pki().dir + "/missing.pem";
  {
    Client client(options);
    Session session(client, Ttl10s());
    Status created = session.Create();
    EXPECT_FALSE(created.ok());
    EXPECT_NE(
        created.message().find("TLS: CA file " + options.ca_file + ": No such file or directory"),
        std::string::npos)
        << created.ToString();
  }
  options.ca_file = Pki().ca.cert_file;
  options.client_cert_file.clear();
  options.client_key_file.clear();
  {
    Client client(options);
    Session session(client, Ttl10s());
    Status created = session.Create();
    EXPECT_NE(created.message().find("TLS handshake failed: tlsv13 alert certificate required"),
              std::string::npos)
        << created.ToString();
  }
  options.tls_verify = false;
  options.ca_file = Pki().other_ca.cert_file;
  options.client_cert_file = Pki().client.cert_file;
  options.client_key_file = Pki().client.key_file;
  {
    Client client(options);
    Session session(client, Ttl10s());
    EXPECT_TRUE(session.Create().ok());
    EXPECT_TRUE(session.Destroy().ok());
  }
}

// The real server, TLS only (-http-addr off) with client certificates
// required: libtenure campaigns over https and gets the server's fencing token.
TEST_F(SdkTlsTest, ACampaignOverHttpsOnATlsOnlyServerLeadsWithAFencingToken) {
  const std::string binary = test_support::TenureBinary();
  ASSERT_FALSE(binary.empty());
  const std::string https = test_support::FreeAddress();
  char dir[] = "/tmp/tenure-sdk-tls-XXXXXX";
  const std::string work = ::mkdtemp(dir);
  pid_t pid = test_support::SpawnServer(
      binary,
      {"-dev", "-data-dir", work + "/data", "-http-addr", "off", "-https-addr", https, "-raft-addr",
       test_support::FreeAddress(), "-tls-cert-file", Pki().server.cert_file, "-tls-key-file",
       Pki().server.key_file, "-tls-ca-file", Pki().ca.cert_file, "-tls-verify-incoming"},
      work + "/server.log");
  // Stopped by its PID however the test ends.
  struct Stop {
    pid_t* pid;
    std::string dir;
    ~Stop() {
      test_support::KillServer(pid);
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } stop{&pid, work};
  ClientOptions options = WithClientCertificate("https://" + https);
  Client client(options);
  // Ready once a session can be made (the single server leads).
  std::unique_ptr<Session> session;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    session = std::make_unique<Session>(client, Ttl10s());
    if (session->Create().ok()) break;
    session.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(session, nullptr) << "no session over https within 15 s";
  ElectionOptions election_options;
  election_options.name = "tls-demo";
  election_options.candidate = "a";
  Election election(*session, election_options);
  ASSERT_TRUE(election.Campaign("over tls").ok());
  EXPECT_GT(election.FencingToken(), 0u);
  EXPECT_EQ(election.Leader().value, "over tls");
  EXPECT_TRUE(election.Resign().ok());
  EXPECT_TRUE(session->Destroy().ok());

  // The same server refuses a client without a certificate.
  ClientOptions anonymous = options;
  anonymous.client_cert_file.clear();
  anonymous.client_key_file.clear();
  Client refused_client(anonymous);
  Session refused(refused_client, Ttl10s());
  EXPECT_FALSE(refused.Create().ok());
}

}  // namespace
}  // namespace tenure
