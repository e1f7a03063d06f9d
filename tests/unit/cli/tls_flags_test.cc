// The client commands' TLS flags and variables (cli/client_support.h,
// client/settings.h): flags before $TENURE_X before $CONSUL_X, and commands
// run in process against a TlsResponder. Every test runs in a process of
// its own (gtest_discover_tests), so the environment it sets stays its own.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "cli/candidate_flags.h"
#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "unit/net/tls_responder.h"
#include "unit/tls/test_certs.h"

namespace tenure::cli {
namespace {

testutil::TestPki& Pki() {
  static testutil::TestPki* made = testutil::NewProcessPki();
  return *made;
}

class TlsFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) ::unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kVariables) ::unsetenv(name);
  }

  // A responder with tenure's server context, answering `kv get -keys` with
  // one key: the target it was asked for.
  static test_support::TlsResponder* Responder(bool verify_incoming = false) {
    auto context = tls::Context::ForServer(
        {Pki().server.cert_file, Pki().server.key_file, Pki().ca.cert_file, verify_incoming});
    EXPECT_TRUE(context.ok()) << context.status().ToString();
    test_support::TlsResponderOptions options;
    options.answer = [](const test_support::StubRequest& request) {
      return "[\"" + request.target + "\"]";
    };
    return new test_support::TlsResponder((*context)->raw(), options);
  }

  struct Ran {
    int code;
    std::string out;
    std::string err;
  };
  static Ran KvKeys(std::vector<std::string> flags) {
    Args args = {"get", "-keys"};
    args.insert(args.end(), flags.begin(), flags.end());
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int code = KvCommand(args);
    std::string out = ::testing::internal::GetCapturedStdout();
    return {code, out, ::testing::internal::GetCapturedStderr()};
  }

  static constexpr const char* kVariables[] = {
      "TENURE_HTTP_ADDR",       "CONSUL_HTTP_ADDR",       "TENURE_CACERT",     "CONSUL_CACERT",
      "TENURE_CLIENT_CERT",     "CONSUL_CLIENT_CERT",     "TENURE_CLIENT_KEY", "CONSUL_CLIENT_KEY",
      "TENURE_TLS_SERVER_NAME", "CONSUL_TLS_SERVER_NAME", "TENURE_HTTP_SSL",   "CONSUL_HTTP_SSL",
      "TENURE_HTTP_SSL_VERIFY", "CONSUL_HTTP_SSL_VERIFY", "TENURE_HTTP_TOKEN", "CONSUL_HTTP_TOKEN"};
};

TEST_F(TlsFlagsTest, EveryClientCommandTakesTheTlsFlags) {
  HttpFlags http;
  Flags flags("kv get");
  http.Register(&flags);
  const std::string usage = flags.Usage();
  for (const char* name : {"-ca-file", "-client-cert", "-client-key", "-tls-server-name"}) {
    EXPECT_NE(usage.find(name), std::string::npos) << name << " in\n" << usage;
  }
  EXPECT_NE(usage.find("https://host:port"), std::string::npos) << usage;
  EXPECT_NE(usage.find("$CONSUL_CACERT"), std::string::npos) << usage;
}

TEST_F(TlsFlagsTest, FlagsBeatTheEnvironment) {
  ::setenv("CONSUL_CACERT", "/consul/ca.pem", 1);
  ::setenv("TENURE_CLIENT_CERT", "/tenure/cert.pem", 1);
  ::setenv("CONSUL_CLIENT_KEY", "/consul/key.pem", 1);
  ::setenv("CONSUL_TLS_SERVER_NAME", "consul.example", 1);
  ::setenv("CONSUL_HTTP_SSL", "true", 1);
  HttpFlags http;
  Flags flags("kv get");
  http.Register(&flags);
  ASSERT_TRUE(flags.Parse({"-ca-file", "/flag/ca.pem", "-tls-server-name=flag.example"}).ok());
  net::HttpClientOptions options;
  ASSERT_TRUE(http.Resolve(&options).ok());
  EXPECT_EQ(options.tls.files.ca_file, "/flag/ca.pem");
  EXPECT_EQ(options.tls.files.server_name, "flag.example");
  EXPECT_EQ(options.tls.files.cert_file, "/tenure/cert.pem");
  EXPECT_EQ(options.tls.files.key_file, "/consul/key.pem");
  EXPECT_TRUE(options.tls.by_default);

  ASSERT_TRUE(flags.Parse({"-client-cert", "/flag/cert.pem", "-client-key", "/flag/key.pem"}).ok());
  ASSERT_TRUE(http.Resolve(&options).ok());
  EXPECT_EQ(options.tls.files.cert_file, "/flag/cert.pem");
  EXPECT_EQ(options.tls.files.key_file, "/flag/key.pem");
}

TEST_F(TlsFlagsTest, KvGetOverHttpsWithFlags) {
  std::unique_ptr<test_support::TlsResponder> server(Responder());
  Ran ran = KvKeys({"-http-addr", "https://" + server->address(), "-ca-file", Pki().ca.cert_file});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "/v1/kv/?keys=&separator=%2F\n");
}

TEST_F(TlsFlagsTest, KvGetOverHttpsWithConsulsVariables) {
  std::unique_ptr<test_support::TlsResponder> server(Responder(/*verify_incoming=*/true));
  ::setenv("CONSUL_HTTP_ADDR", server->address().c_str(), 1);  // no scheme...
  ::setenv("CONSUL_HTTP_SSL", "true", 1);                      // ...but https
  ::setenv("CONSUL_CACERT", Pki().ca.cert_file.c_str(), 1);
  ::setenv("CONSUL_CLIENT_CERT", Pki().client.cert_file.c_str(), 1);
  ::setenv("CONSUL_CLIENT_KEY", Pki().client.key_file.c_str(), 1);
  Ran ran = KvKeys({});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "/v1/kv/?keys=&separator=%2F\n");

  // Without the client certificate the server refuses.
  ::unsetenv("CONSUL_CLIENT_CERT");
  ::unsetenv("CONSUL_CLIENT_KEY");
  ran = KvKeys({});
  EXPECT_EQ(ran.code, 1);
  EXPECT_EQ(ran.err, "Error querying Consul agent: cannot reach tenure at https://" +
                         server->address() +
                         ": TLS handshake failed: tlsv13 alert certificate required\n");
}

TEST_F(TlsFlagsTest, KvGetReportsAnUntrustedServerAndABadFile) {
  std::unique_ptr<test_support::TlsResponder> server(Responder());
  ::setenv("CONSUL_HTTP_ADDR", ("https://" + server->address()).c_str(), 1);
  ::setenv("CONSUL_CACERT", Pki().other_ca.cert_file.c_str(), 1);
  Ran ran = KvKeys({});
  EXPECT_EQ(ran.code, 1);
  EXPECT_NE(ran.err.find("Error querying Consul agent: cannot reach tenure at https://" +
                         server->address() + ": TLS handshake failed: certificate verify failed"),
            std::string::npos)
      << ran.err;

  // $CONSUL_HTTP_SSL_VERIFY=false: no check at all.
  ::setenv("CONSUL_HTTP_SSL_VERIFY", "false", 1);
  EXPECT_EQ(KvKeys({}).code, 0);

  ::unsetenv("CONSUL_HTTP_SSL_VERIFY");
  const std::string missing = Pki().dir + "/missing.pem";
  ran = KvKeys({"-ca-file", missing});
  EXPECT_EQ(ran.code, 1);
  EXPECT_EQ(ran.err, "Error querying Consul agent: TLS: CA file " + missing +
                         ": No such file or directory\n");

  ::setenv("CONSUL_HTTP_SSL_VERIFY", "nope", 1);
  ran = KvKeys({});
  EXPECT_EQ(ran.code, 1);
  EXPECT_EQ(
      ran.err,
      "Error querying Consul agent: $CONSUL_HTTP_SSL_VERIFY is \"nope\", not true or false\n");
}

TEST_F(TlsFlagsTest, CandidatesTakeSeveralHttpsServers) {
  CandidateFlags candidate;
  Flags flags("run");
  candidate.Register(&flags);
  ASSERT_TRUE(flags
                  .Parse({"-http-addr", "https://10.0.0.1:8501,https://10.0.0.2:8501,10.0.0.3",
                          "-ca-file", Pki().ca.cert_file, "-tls-server-name", "server.dc1.tenure"})
                  .ok());
  ::setenv("CONSUL_HTTP_SSL", "true", 1);
  CandidateSetup setup;
  ASSERT_TRUE(candidate.Resolve("tenure run", "svc", &setup));
  EXPECT_EQ(setup.http.addresses, (std::vector<std::string>{"https://10.0.0.1:8501",
                                                            "https://10.0.0.2:8501", "10.0.0.3"}));
  EXPECT_TRUE(setup.http.tls.by_default);
  EXPECT_EQ(setup.http.tls.files.ca_file, Pki().ca.cert_file);
  EXPECT_EQ(setup.http.tls.files.server_name, "server.dc1.tenure");
}

TEST_F(TlsFlagsTest, RunAndElectRefuseBadTlsFilesBeforeStarting) {
  const std::string missing = Pki().dir + "/missing.pem";
  using Command = int (*)(const Args&);
  for (auto [command, name] : {std::pair<Command, const char*>{RunCommand, "tenure run"},
                               std::pair<Command, const char*>{ElectCommand, "tenure elect"}}) {
    Args args = {"svc", "-http-addr", "https://127.0.0.1:1,https://127.0.0.1:2", "-ca-file",
                 missing};
    if (command == RunCommand) args.insert(args.end(), {"--", "true"});
    ::testing::internal::CaptureStderr();
    const int code = command(args);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 2) << name;
    EXPECT_EQ(err,
              std::string(name) + ": TLS: CA file " + missing + ": No such file or directory\n");
  }
  // A client certificate without its key.
  ::setenv("CONSUL_CLIENT_CERT", Pki().client.cert_file.c_str(), 1);
  ::testing::internal::CaptureStderr();
  const int code = RunCommand({"svc", "-http-addr", "https://127.0.0.1:1", "--", "true"});
  EXPECT_EQ(code, 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "tenure run: TLS: a client certificate needs its key, and a key its certificate\n");
}

}  // namespace
}  // namespace tenure::cli
