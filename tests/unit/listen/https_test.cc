// HttpServer as an HTTPS listener over real loopback sockets: requests over
// TLS with keep-alive, client certificates when they are required, clear
// text sent to the TLS port, a handshake that never finishes, and a
// certificate reload that leaves established connections alone. The
// client side is OpenSSL on a blocking socket with receive and send
// timeouts, so nothing waits without bound.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>

#include "listen/server.h"
#include "tls/context.h"
#include "unit/listen/raw_client.h"
#include "unit/tls/test_certs.h"

namespace tenure::listen {
namespace {

using testing::TestServer;

testutil::TestPki& Pki() {
  static testutil::TestPki* pki = testutil::NewProcessPki();
  return *pki;
}

int ConnectTo(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A blocking TLS client of one connection.
class TlsClient {
 public:
  TlsClient(std::uint16_t port, const tls::ClientFiles& files) : fd_(ConnectTo(port)) {
    auto context = tls::Context::ForClient(files);
    EXPECT_TRUE(context.ok()) << context.status().ToString();
    context_ = *context;
    ssl_ = SSL_new(context_->raw());
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    SSL_set1_host(ssl_, "localhost");
  }
  ~TlsClient() {
    SSL_free(ssl_);
    ::close(fd_);
  }

  // "" on success, otherwise OpenSSL's reason.
  std::string Handshake() {
    ERR_clear_error();
    if (SSL_connect(ssl_) == 1) return "";
    std::string why = tls::TakeOpenSslErrors();
    return why.empty() ? "handshake failed" : why;
  }

  // One request and its response's status line and body; nullopt when the
  // connection fails first. In TLS 1.3 a refused client certificate shows
  // only here, at the first read after the handshake.
  std::optional<std::pair<std::string, std::string>> Get(const std::string& path) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
    if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) <= 0) return std::nullopt;
    std::string received;
    char buffer[4096];
    for (;;) {
      const std::size_t head_end = received.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const std::size_t length_at = received.find("Content-Length: ");
        if (length_at != std::string::npos && length_at < head_end) {
          const std::size_t length = std::stoul(received.substr(length_at + 16));
          if (received.size() >= head_end + 4 + length) {
            return std::make_pair(received.substr(0, received.find("\r\n")),
                                  received.substr(head_end + 4, length));
          }
        }
      }
      const int n = SSL_read(ssl_, buffer, sizeof buffer);
      if (n <= 0) return std::nullopt;
      received.append(buffer, static_cast<std::size_t>(n));
    }
  }

  std::string PeerCommonName() const {
    X509* cert = SSL_get0_peer_certificate(ssl_);
    if (cert == nullptr) return "";
    char name[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
    return name;
  }

 private:
  int fd_;
  std::shared_ptr<const tls::Context> context_;
  SSL* ssl_;
};

RequestHandler Echo() {
  return [](HttpRequest request, std::shared_ptr<Responder> responder) {
    responder->Send(HttpResponse::Json(request.method + " " + request.path));
  };
}

class HttpsServerTest : public ::testing::Test {
 protected:
  void Start(bool verify_incoming, const testutil::Issued& leaf = Pki().server) {
    auto context = tls::Context::ForServer(
        {leaf.cert_file, leaf.key_file, Pki().ca.cert_file, verify_incoming});
    ASSERT_TRUE(context.ok()) << context.status().ToString();
    HttpServerOptions options = TestServer::Options();
    options.tls = *context;
    options.TEST_first_byte_timeout_ms = 300;
    server_ = std::make_unique<TestServer>(Echo(), options);
    ASSERT_TRUE(server_->listen_status().ok()) << server_->listen_status().ToString();
  }

  static tls::ClientFiles Trusting() {
    tls::ClientFiles files;
    files.ca_file = Pki().ca.cert_file;
    return files;
  }
  static tls::ClientFiles WithCertificate(const testutil::Issued& leaf) {
    tls::ClientFiles files = Trusting();
    files.cert_file = leaf.cert_file;
    files.key_file = leaf.key_file;
    return files;
  }

  std::unique_ptr<TestServer> server_;
};

TEST_F(HttpsServerTest, ServesRequestsOverTlsWithKeepAlive) {
  Start(false);
  TlsClient client(server_->port(), Trusting());
  ASSERT_EQ(client.Handshake(), "");
  for (int i = 0; i < 3; ++i) {
    auto response = client.Get("/v1/kv/x");
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->first, "HTTP/1.1 200 OK");
    EXPECT_EQ(response->second, "GET /v1/kv/x");
  }
  EXPECT_EQ(server_->connection_count(), 1u);
}

TEST_F(HttpsServerTest, AClientThatDoesNotTrustTheCaRefusesTheServer) {
  Start(false);
  tls::ClientFiles files;
  files.ca_file = Pki().other_ca.cert_file;
  TlsClient client(server_->port(), files);
  EXPECT_EQ(client.Handshake(), "certificate verify failed");
}

TEST_F(HttpsServerTest, VerifyIncomingRequiresACertificateFromTheCa) {
  Start(true);
  {
    TlsClient with_certificate(server_->port(), WithCertificate(Pki().client));
    ASSERT_EQ(with_certificate.Handshake(), "");
    auto response = with_certificate.Get("/v1/kv/x");
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->second, "GET /v1/kv/x");
  }
  for (const tls::ClientFiles& files : {Trusting(), WithCertificate(Pki().stranger)}) {
    TlsClient refused(server_->port(), files);
    // TLS 1.3 finishes the client's handshake before the server has checked
    // the certificate: the refusal arrives as an alert at the next read.
    const std::string handshake = refused.Handshake();
    if (handshake.empty()) {
      EXPECT_FALSE(refused.Get("/v1/kv/x").has_value());
    }
  }
  // The server is unharmed.
  TlsClient again(server_->port(), WithCertificate(Pki().client));
  ASSERT_EQ(again.Handshake(), "");
  EXPECT_TRUE(again.Get("/v1/kv/y").has_value());
}

TEST_F(HttpsServerTest, ClearTextToTheTlsPortGetsAClearRefusal) {
  Start(false);
  testing::RawClient client(server_->port());
  ASSERT_TRUE(client.Send("GET /v1/kv/x HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto response = client.ReadResponse();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(response->body, "Client sent an HTTP request to an HTTPS server.\n");
  EXPECT_TRUE(client.WaitClosed());
}

TEST_F(HttpsServerTest, AHandshakeThatStopsHalfwayIsClosedByTheFirstByteTimeout) {
  Start(false);
  testing::RawClient stalled(server_->port());
  // The first bytes of a ClientHello record, then nothing.
  ASSERT_TRUE(stalled.Send(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)));
  EXPECT_TRUE(stalled.WaitClosed());
  TlsClient fine(server_->port(), Trusting());
  ASSERT_EQ(fine.Handshake(), "");
  EXPECT_TRUE(fine.Get("/v1/kv/x").has_value());
}

TEST_F(HttpsServerTest, AReloadedCertificateServesNewConnectionsAndKeepsOldOnes) {
  Start(false);
  TlsClient before(server_->port(), Trusting());
  ASSERT_EQ(before.Handshake(), "");
  EXPECT_EQ(before.PeerCommonName(), "server.dc1.tenure");

  testutil::CertOptions renewed;
  renewed.common_name = "renewed.dc1.tenure";
  const testutil::Issued next = testutil::Issue(Pki().dir, "renewed", renewed, &Pki().ca);
  auto context =
      tls::Context::ForServer({next.cert_file, next.key_file, Pki().ca.cert_file, false});
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  server_->OnLoop([&] { server_->server().SetTlsContext(*context); });

  TlsClient after(server_->port(), Trusting());
  ASSERT_EQ(after.Handshake(), "");
  EXPECT_EQ(after.PeerCommonName(), "renewed.dc1.tenure");
  EXPECT_TRUE(after.Get("/v1/kv/x").has_value());
  EXPECT_TRUE(before.Get("/v1/kv/x").has_value());  // still served on its old session
}

}  // namespace
}  // namespace tenure::listen
