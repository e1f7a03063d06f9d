// HttpClient over TLS against real loopback sockets: a TlsResponder (a
// blocking OpenSSL server on StubServer threads) with certificates made in
// the test process (unit/tls/test_certs.h). Every failure a user can cause
// (wrong CA, wrong name, missing client certificate, the wrong scheme for the
// port, bad files) must end quickly with a message naming the agent and the
// reason, and never send the request in clear text.
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/blocking_http_client.h"
#include "net/http_client.h"
#include "unit/client/server_process.h"
#include "unit/net/outcome.h"
#include "unit/net/tls_responder.h"
#include "unit/tls/test_certs.h"

namespace tenure::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::ReadRequest;
using test_support::StubServer;
using test_support::TlsResponder;
using test_support::TlsResponderOptions;

testutil::TestPki& Pki() {
  static testutil::TestPki* pki = testutil::NewProcessPki();
  return *pki;
}

// A server context for `leaf`, as tenure's server builds it.
std::shared_ptr<const tls::Context> ServerContext(const testutil::Issued& leaf,
                                                  bool verify_incoming = false) {
  auto context =
      tls::Context::ForServer({leaf.cert_file, leaf.key_file, Pki().ca.cert_file, verify_incoming});
  EXPECT_TRUE(context.ok()) << context.status().ToString();
  return context.ok() ? *context : nullptr;
}

using testing::Outcome;

class HttpsClientTest : public ::testing::Test {
 protected:
  static tls::ClientFiles Trusting(const testutil::Issued& ca) {
    tls::ClientFiles files;
    files.ca_file = ca.cert_file;
    return files;
  }

  static HttpClientOptions Options(std::vector<std::string> addresses, tls::ClientFiles files) {
    HttpClientOptions options;
    options.addresses = std::move(addresses);
    options.connect_timeout_ms = 1'000;
    options.default_timeout_ms = 5'000;
    options.tls.files = std::move(files);
    return options;
  }

  static HttpCall Get(std::string target, std::int64_t timeout_ms = 0) {
    HttpCall call;
    call.method = "GET";
    call.target = std::move(target);
    call.timeout_ms = timeout_ms;
    call.retry.backoff_initial_ms = 10;
    call.retry.backoff_max_ms = 50;
    return call;
  }

  // One call, run to its end (or 10 s).
  Outcome Run(HttpClient& client, HttpCall call) {
    Outcome outcome;
    client.Request(std::move(call), outcome.Callback());
    EXPECT_TRUE(test_support::RunUntil(
        io_, [&] { return outcome.calls > 0; }, 10s));
    return outcome;
  }

  boost::asio::io_context io_;
};

TEST_F(HttpsClientTest, GetOverHttpsWorksAndReusesItsConnection) {
  TlsResponder server(ServerContext(Pki().server)->raw());
  HttpClient client(io_, Options({"https://" + server.address()}, Trusting(Pki().ca)));
  for (int i = 0; i < 3; ++i) {
    Outcome got = Run(client, Get("/v1/kv/a"));
    ASSERT_EQ(got.status(), 200) << got.error();
    // An IP literal is checked against the certificate's IP addresses and
    // not sent as SNI.
    EXPECT_EQ(got.body(), "GET /v1/kv/a sni=- client=-");
  }
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(client.TEST_IdleConnections(), 1u);
}

TEST_F(HttpsClientTest, AHostNameIsSentAsSniAndChecked) {
  TlsResponder server(ServerContext(Pki().server)->raw());
  const std::string port = server.address().substr(server.address().find(':') + 1);
  HttpClient client(io_, Options({"https://localhost:" + port}, Trusting(Pki().ca)));
  Outcome got = Run(client, Get("/x"));
  ASSERT_EQ(got.status(), 200) << got.error();
  EXPECT_EQ(got.body(), "GET /x sni=localhost client=-");
}

TEST_F(HttpsClientTest, AnAddressWithoutSchemeIsHttpsWhenAskedByDefault) {
  TlsResponder server(ServerContext(Pki().server)->raw());
  HttpClientOptions options = Options({server.address()}, Trusting(Pki().ca));
  options.tls.by_default = true;  // $CONSUL_HTTP_SSL=true
  HttpClient client(io_, options);
  Outcome got = Run(client, Get("/x"));
  EXPECT_EQ(got.status(), 200) << got.error();
}

TEST_F(HttpsClientTest, AnUntrustedCertificateIsRefusedOnceWithoutClearText) {
  TlsResponder server(ServerContext(Pki().server)->raw());
  HttpClient client(io_, Options({"https://" + server.address()}, Trusting(Pki().other_ca)));
  const auto start = Clock::now();
  Outcome got = Run(client, Get("/v1/kv/a"));  // the default policy retries transport errors
  EXPECT_LT(Clock::now() - start, 2s);
  ASSERT_TRUE(got.result && !got.result->ok());
  EXPECT_EQ(got.result->status().code(), Code::kUnavailable);
  EXPECT_EQ(got.error(), "cannot reach tenure at https://" + server.address() +
                             ": TLS handshake failed: certificate verify failed (self-signed "
                             "certificate in certificate chain)");
  EXPECT_FALSE(MaybeApplied(got.result->status()));
  // Not retried, and nothing followed in clear text.
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(server.handshakes(), 0);
  for (const std::string& failure : server.failures()) {
    EXPECT_EQ(failure.find("http request"), std::string::npos) << failure;
  }
}

TEST_F(HttpsClientTest, ACertificateForAnotherNameIsRefused) {
  TlsResponder server(ServerContext(Pki().wrong_name)->raw());
  HttpClient by_ip(io_, Options({"https://" + server.address()}, Trusting(Pki().ca)));
  Outcome got = Run(by_ip, Get("/x"));
  EXPECT_EQ(got.error(), "cannot reach tenure at https://" + server.address() +
                             ": TLS handshake failed: certificate verify failed (IP address "
                             "mismatch)");

  const std::string port = server.address().substr(server.address().find(':') + 1);
  HttpClient by_name(io_, Options({"https://localhost:" + port}, Trusting(Pki().ca)));
  got = Run(by_name, Get("/x"));
  EXPECT_EQ(got.error(), "cannot reach tenure at https://localhost:" + port +
                             ": TLS handshake failed: certificate verify failed (hostname "
                             "mismatch)");
  EXPECT_EQ(server.handshakes(), 0);
}

TEST_F(HttpsClientTest, TheServerNameOverridesTheHostDialled) {
  TlsResponder server(ServerContext(Pki().wrong_name)->raw());
  tls::ClientFiles files = Trusting(Pki().ca);
  files.server_name = "elsewhere.example";
  HttpClient client(io_, Options({"https://" + server.address()}, files));
  Outcome got = Run(client, Get("/x"));
  ASSERT_EQ(got.status(), 200) << got.error();
  EXPECT_EQ(got.body(), "GET /x sni=elsewhere.example client=-");

  // The name must still match: the override is what is checked.
  files.server_name = "server.dc1.tenure";
  HttpClient wrong(io_, Options({"https://" + server.address()}, files));
  got = Run(wrong, Get("/x"));
  EXPECT_NE(got.error().find("TLS handshake failed: certificate verify failed (hostname mismatch)"),
            std::string::npos)
      << got.error();
}

TEST_F(HttpsClientTest, WithoutVerificationAnyCertificateIsAccepted) {
  TlsResponder server(ServerContext(Pki().wrong_name)->raw());
  tls::ClientFiles files = Trusting(Pki().other_ca);
  files.verify = false;  // $CONSUL_HTTP_SSL_VERIFY=false
  HttpClient client(io_, Options({"https://" + server.address()}, files));
  Outcome got = Run(client, Get("/x"));
  EXPECT_EQ(got.status(), 200) << got.error();
}

TEST_F(HttpsClientTest, AnExpiredServerCertificateIsRefused) {
  // tenure's own server refuses to load it; another server may not.
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()),
                                                        SSL_CTX_free);
  ASSERT_EQ(
      SSL_CTX_use_certificate_file(ctx.get(), Pki().expired.cert_file.c_str(), SSL_FILETYPE_PEM),
      1);
  ASSERT_EQ(
      SSL_CTX_use_PrivateKey_file(ctx.get(), Pki().expired.key_file.c_str(), SSL_FILETYPE_PEM), 1);
  TlsResponder server(ctx.get());
  HttpClient client(io_, Options({"https://" + server.address()}, Trusting(Pki().ca)));
  Outcome got = Run(client, Get("/x"));
  EXPECT_EQ(got.error(), "cannot reach tenure at https://" + server.address() +
                             ": TLS handshake failed: certificate verify failed (certificate has "
                             "expired)");
}

TEST_F(HttpsClientTest, AClientCertificateIsSentWhenTheServerRequiresOne) {
  TlsResponder server(ServerContext(Pki().server, /*verify_incoming=*/true)->raw());
  tls::ClientFiles files = Trusting(Pki().ca);
  files.cert_file = Pki().client.cert_file;
  files.key_file = Pki().client.key_file;
  HttpClient client(io_, Options({"https://" + server.address()}, files));
  Outcome got = Run(client, Get("/x"));
  ASSERT_EQ(got.status(), 200) << got.error();
  EXPECT_EQ(got.body(), "GET /x sni=- client=client.dc1.tenure");
}

TEST_F(HttpsClientTest, WithoutAClientCertificateTheServerRefusesAndItIsNotRetried) {
  TlsResponder server(ServerContext(Pki().server, /*verify_incoming=*/true)->raw());
  HttpClient client(io_, Options({"https://" + server.address()}, Trusting(Pki().ca)));
  HttpCall put = Get("/v1/kv/a");
  put.method = "PUT";
  Outcome got = Run(client, put);
  ASSERT_TRUE(got.result && !got.result->ok());
  EXPECT_EQ(got.result->status().code(), Code::kUnavailable);
  // TLS 1.3 finishes the client's handshake first: the refusal comes as an
  // alert, and the server never read the request.
  EXPECT_EQ(got.error(), "cannot reach tenure at https://" + server.address() +
                             ": TLS handshake failed: tlsv13 alert certificate required");
  EXPECT_FALSE(MaybeApplied(got.result->status()));
  EXPECT_EQ(server.connections(), 1);

  // A certificate from a CA the server does not trust is refused too.
  tls::ClientFiles stranger = Trusting(Pki().ca);
  stranger.cert_file = Pki().stranger.cert_file;
  stranger.key_file = Pki().stranger.key_file;
  HttpClient other(io_, Options({"https://" + server.address()}, stranger));
  got = Run(other, Get("/x"));
  EXPECT_NE(got.error().find(": TLS handshake failed: tlsv1 alert unknown ca"), std::string::npos)
      << got.error();
  EXPECT_EQ(server.handshakes(), 0);
}

TEST_F(HttpsClientTest, OverTls12AMissingClientCertificateFailsTheHandshakeItself) {
  auto context = ServerContext(Pki().server, /*verify_incoming=*/true);
  SSL_CTX_set_max_proto_version(context->raw(), TLS1_2_VERSION);
  TlsResponder server(context->raw());
  HttpClient client(io_, Options({"https://" + server.address()}, Trusting(Pki().ca)));
  Outcome got = Run(client, Get("/x"));
  EXPECT_EQ(
      got.error().rfind(
          "cannot reach tenure at https://" + server.address() + ": TLS handshake failed: ", 0),
      0u)
      << got.error();
  EXPECT_NE(got.error().find("alert"), std::string::npos) << got.error();
  EXPECT_EQ(server.connections(), 1);
}

TEST_F(HttpsClientTest, AHandshakeRefusalSendsLaterCallsToTheNextAddress) {
  TlsResponder wrong(ServerContext(Pki().wrong_name)->raw());
  TlsResponder good(ServerContext(Pki().server)->raw());
  HttpClient client(io_, Options({"https://" + wrong.address(), "https://" + good.address()},
                                 Trusting(Pki().ca)));
  Outcome first = Run(client, Get("/x"));
  EXPECT_NE(first.error().find("TLS handshake failed"), std::string::npos) << first.error();
  EXPECT_EQ(good.connections(), 0);  // the failed call was not retried elsewhere
  Outcome second = Run(client, Get("/x"));
  EXPECT_EQ(second.status(), 200) << second.error();
  EXPECT_EQ(wrong.connections(), 1);
}

TEST_F(HttpsClientTest, AKeptConnectionTheServerClosedIsNotReused) {
  for (bool close_notify : {true, false}) {
    TlsResponderOptions options;
    options.close_after_answer = true;
    options.close_notify = close_notify;
    TlsResponder server(ServerContext(Pki().server)->raw(), options);
    HttpClient client(io_, Options({"https://" + server.address()}, Trusting(Pki().ca)));
    ASSERT_EQ(Run(client, Get("/1")).status(), 200);
    // Let the close arrive: the idle connection becomes readable.
    const auto until = Clock::now() + 200ms;
    test_support::RunUntil(io_, [&] { return Clock::now() > until; });
    HttpCall second = Get("/2");
    second.retry = RetryPolicy::None();
    Outcome got = Run(client, second);
    EXPECT_EQ(got.status(), 200) << got.error() << " close_notify=" << close_notify;
    EXPECT_EQ(server.connections(), 2);
  }
}

TEST_F(HttpsClientTest, AKeptConnectionDroppedAfterSendIsResentOnAFreshOne) {
  for (bool close_notify : {true, false}) {
    TlsResponderOptions options;
    options.drop_second_request = true;
    options.close_notify = close_notify;
    TlsResponder server(ServerContext(Pki().server)->raw(), options);
    HttpClient client(io_, Options({"https://" + server.address()}, Trusting(Pki().ca)));
    ASSERT_EQ(Run(client, Get("/1")).status(), 200);
    HttpCall second = Get("/2");
    second.retry = RetryPolicy::None();  // the one resend is not a retry
    Outcome got = Run(client, second);
    EXPECT_EQ(got.status(), 200) << got.error() << " close_notify=" << close_notify;
    EXPECT_EQ(got.body(), "GET /2 sni=- client=-");
    EXPECT_EQ(server.connections(), 2);
  }
}

TEST_F(HttpsClientTest, HttpsToAPlainHttpPortFailsClearly) {
  // A plain server that answers what it cannot parse, as tenure's does.
  StubServer answering([](int fd) {
    char bytes[512];
    if (::read(fd, bytes, sizeof bytes) > 0) {
      test_support::WriteResponse(fd, 400, "bad request", /*close=*/true);
    }
  });
  HttpClient client(io_, Options({"https://" + answering.address()}, Trusting(Pki().ca)));
  const auto start = Clock::now();
  Outcome got = Run(client, Get("/x"));
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(got.error(), "cannot reach tenure at https://" + answering.address() +
                             ": TLS handshake failed: wrong version number (a plain HTTP port?)");
  EXPECT_EQ(answering.connections(), 1);

  // One that waits for a request line forever: the handshake's deadline ends it.
  StubServer silent([](int fd) {
    while (ReadRequest(fd)) {
    }
  });
  HttpClient waiting(io_, Options({"https://" + silent.address()}, Trusting(Pki().ca)));
  HttpCall call = Get("/x", 600);
  got = Run(waiting, call);
  ASSERT_TRUE(got.result && !got.result->ok());
  // Whichever deadline fires first names it: the handshake's, or the call's
  // (under a sanitizer's slowness the call's 600 ms can come first).
  const bool handshake_timed_out =
      got.error().find("https://" + silent.address() + ": TLS handshake failed: timed out") !=
      std::string::npos;
  const bool call_timed_out = got.error() == "tenure at https://" + silent.address() +
                                                 " did not answer GET /x within 600 ms";
  EXPECT_TRUE(handshake_timed_out || call_timed_out) << got.error();
}

TEST_F(HttpsClientTest, HttpToATlsPortFailsWithoutHanging) {
  TlsResponder server(ServerContext(Pki().server)->raw());
  HttpClient client(io_, Options({"http://" + server.address()}, Trusting(Pki().ca)));
  HttpCall call = Get("/x", 2'000);
  call.retry = RetryPolicy::None();
  const auto start = Clock::now();
  Outcome got = Run(client, call);
  EXPECT_LT(Clock::now() - start, 1s);
  ASSERT_TRUE(got.result && !got.result->ok());
  EXPECT_EQ(got.result->status().code(), Code::kUnavailable);
  EXPECT_EQ(got.error().rfind("connection to tenure at " + server.address() + " failed: ", 0), 0u)
      << got.error();
  ASSERT_EQ(server.failures().size(), 1u);
  EXPECT_EQ(server.failures()[0], "http request");  // refused by the server, in clear
}

TEST_F(HttpsClientTest, AnHttpAnswerFromATlsServerIsNamed) {
  // A server that answers clear text with a TLS alert record, then closes.
  StubServer alerting([](int fd) {
    char bytes[512];
    if (::read(fd, bytes, sizeof bytes) > 0) {
      const unsigned char alert[] = {0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46};
      (void)::write(fd, alert, sizeof alert);
    }
    ::shutdown(fd, SHUT_RDWR);
  });
  HttpClient client(io_, Options({alerting.address()}, {}));
  Outcome got = Run(client, Get("/x"));
  EXPECT_EQ(got.error(), "connection to tenure at " + alerting.address() +
                             " failed: it answered in TLS (use "
                             "https://)");
  EXPECT_EQ(alerting.connections(), 1);
}

TEST_F(HttpsClientTest, BadFilesFailEveryRequestNamingTheFile) {
  TlsResponder server(ServerContext(Pki().server)->raw());
  auto failure = [&](tls::ClientFiles files) {
    HttpClient client(io_, Options({"https://" + server.address()}, files));
    std::string first = Run(client, Get("/x")).error();
    Outcome second = Run(client, Get("/y"));
    EXPECT_EQ(second.error(), first);
    EXPECT_EQ(second.result->status().code(), Code::kInvalidArgument);
    EXPECT_EQ(HttpClient::Check(Options({"https://" + server.address()}, files)).message(), first);
    return first;
  };
  tls::ClientFiles files = Trusting(Pki().ca);
  files.ca_file = Pki().dir + "/missing.pem";
  EXPECT_EQ(failure(files), "TLS: CA file " + files.ca_file + ": No such file or directory");

  files = Trusting(Pki().ca);
  files.ca_file = Pki().ca.key_file;  // a key, not a certificate
  EXPECT_EQ(failure(files).rfind("TLS: CA file " + files.ca_file + ": ", 0), 0u);

  files = Trusting(Pki().ca);
  files.cert_file = Pki().client.cert_file;
  EXPECT_EQ(failure(files), "TLS: a client certificate needs its key, and a key its certificate");

  files.key_file = Pki().server.key_file;
  EXPECT_EQ(failure(files),
            "TLS: key " + files.key_file + " does not match certificate " + files.cert_file);

  files = Trusting(Pki().ca);
  files.cert_file = Pki().expired.cert_file;
  files.key_file = Pki().expired.key_file;
  EXPECT_NE(failure(files).find("TLS: certificate " + files.cert_file + ": expired on "),
            std::string::npos);
  EXPECT_EQ(server.connections(), 0);

  // Files for TLS are not read for a plain agent.
  StubServer plain([](int fd) {
    while (auto request = ReadRequest(fd)) test_support::WriteResponse(fd, 200, "ok");
  });
  files.ca_file = Pki().dir + "/missing.pem";
  HttpClient client(io_, Options({plain.address()}, files));
  EXPECT_EQ(Run(client, Get("/x")).status(), 200);
}

TEST_F(HttpsClientTest, TheBlockingClientSpeaksHttpsAndNamesTheScheme) {
  TlsResponder server(ServerContext(Pki().server)->raw());
  HttpClientOptions options = Options({"https://" + server.address()}, Trusting(Pki().ca));
  BlockingHttpClient client(options);
  EXPECT_EQ(client.address(), "https://" + server.address());
  Result<ClientResponse> got = client.Request("GET", "/v1/kv/a");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->status, 200);

  options.tls.files = Trusting(Pki().other_ca);
  BlockingHttpClient untrusting(options);
  got = untrusting.Request("GET", "/v1/kv/a");
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("TLS handshake failed: certificate verify failed"),
            std::string::npos);
}

}  // namespace
}  // namespace tenure::net
