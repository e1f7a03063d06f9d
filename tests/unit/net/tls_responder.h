// TlsResponder: a small HTTPS server for client tests. A StubServer (one
// thread per connection, unit/client/server_process.h) whose threads run a
// blocking OpenSSL server session on the accepted socket: handshake, then
// each request answered 200, by default with what the server saw:
// "METHOD TARGET sni=NAME client=CN". It records why handshakes failed, so a
// test can tell that no clear text arrived. Header-only (the unit tier globs
// *_test.cc).
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/socket.h>

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tls/context.h"
#include "unit/client/server_process.h"

namespace tenure::test_support {

struct TlsResponderOptions {
  // After the first answer, wait for the next request and close without
  // answering: a kept connection the server dropped after the client's check.
  bool drop_second_request = false;
  bool close_notify = true;  // when closing, send TLS close_notify first
  // After each answer, close the connection (the client is not told).
  bool close_after_answer = false;
  // The body of each 200 answer; unset: what the server saw.
  std::function<std::string(const StubRequest&)> answer;
};

class TlsResponder {
 public:
  // Takes a reference to `ctx` (a server SSL_CTX).
  explicit TlsResponder(ssl_ctx_st* ctx, TlsResponderOptions options = {})
      : ctx_(UpRef(ctx)), options_(options), stub_([this](int fd) { Serve(fd); }) {
    // OpenSSL writes with write(2): a client that hung up must not kill the test.
    ::signal(SIGPIPE, SIG_IGN);
  }
  ~TlsResponder() = default;

  std::string address() const { return stub_.address(); }
  int connections() { return stub_.connections(); }
  int handshakes() {
    std::lock_guard<std::mutex> lock(mu_);
    return handshakes_;
  }
  std::vector<std::string> failures() {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

 private:
  struct SslFree {
    void operator()(SSL* ssl) const { SSL_free(ssl); }
  };
  struct CtxFree {
    void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
  };

  static SSL_CTX* UpRef(SSL_CTX* ctx) {
    SSL_CTX_up_ref(ctx);
    return ctx;
  }

  // Reads one request (Content-Length bodies only); nullopt at the end.
  static std::optional<StubRequest> ReadTlsRequest(SSL* ssl) {
    return test_support::ReadRequestWith([ssl](char* buffer, std::size_t size) -> long {
      return SSL_read(ssl, buffer, static_cast<int>(size));
    });
  }

  static bool WriteAll(SSL* ssl, const std::string& text) {
    return SSL_write(ssl, text.data(), static_cast<int>(text.size())) ==
           static_cast<int>(text.size());
  }

  void Close(SSL* ssl, int fd) {
    if (options_.close_notify) SSL_shutdown(ssl);
    ::shutdown(fd, SHUT_RDWR);  // the StubServer closes the descriptor
  }

  void Serve(int fd) {
    std::unique_ptr<SSL, SslFree> ssl(SSL_new(ctx_.get()));
    SSL_set_fd(ssl.get(), fd);
    ERR_clear_error();
    if (SSL_accept(ssl.get()) != 1) {
      std::string why = tls::TakeOpenSslErrors();
      std::lock_guard<std::mutex> lock(mu_);
      failures_.push_back(why.empty() ? "closed during the handshake" : why);
      ::shutdown(fd, SHUT_RDWR);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++handshakes_;
    }
    const char* sni = SSL_get_servername(ssl.get(), TLSEXT_NAMETYPE_host_name);
    std::string client = "-";
    if (X509* peer = SSL_get1_peer_certificate(ssl.get()); peer != nullptr) {
      char name[256] = {};
      X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, name, sizeof name);
      client = name;
      X509_free(peer);
    }
    for (int answered = 0;; ++answered) {
      std::optional<StubRequest> request = ReadTlsRequest(ssl.get());
      if (!request) break;
      if (options_.drop_second_request && answered == 1) return Close(ssl.get(), fd);
      const std::string body = options_.answer ? options_.answer(*request)
                                               : request->method + " " + request->target +
                                                     " sni=" + (sni != nullptr ? sni : "-") +
                                                     " client=" + client;
      const std::string response =
          "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      if (!WriteAll(ssl.get(), response)) break;
      if (options_.close_after_answer) return Close(ssl.get(), fd);
    }
    SSL_shutdown(ssl.get());
  }

  std::unique_ptr<SSL_CTX, CtxFree> ctx_;
  TlsResponderOptions options_;
  std::mutex mu_;
  int handshakes_ = 0;
  std::vector<std::string> failures_;
  StubServer stub_;  // last: its threads stop before the rest goes
};

}  // namespace tenure::test_support
