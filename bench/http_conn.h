// HttpConn: a minimal HTTP/1.1 keep-alive client connection for the load
// generator, driven by the benchmark's single io_context.
//
// Why not Beast or tenure_client: the load generator shares two cores with
// the server, so every microsecond it spends per request is taken from the
// server being measured. This client writes the request with one non-blocking
// write(2), reads into a reusable buffer and parses only what the benchmark
// needs (status, Content-Length, X-Consul-Index, Connection: close). No
// allocation per request once the buffers have grown; no chunked encoding
// (tenure always sends Content-Length); no pipelining (one request in flight
// per connection, as a real Consul client does).
//
// TLS (SetTls, tenure_vs --ca-file): the same connection over OpenSSL on
// the same non-blocking socket, with the same one-write, wait-then-read
// shape (SSL_write, and SSL_read once the socket is readable). The server's
// certificate is always verified: its chain against the CA file and its
// name against the address dialled.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>  // before Boost: asio/awaitable.hpp uses std::exchange
#include <vector>

struct ssl_st;  // OpenSSL's SSL

namespace tenure::tls {
class Context;
}  // namespace tenure::tls

namespace tenure::bench {

namespace asio = boost::asio;

// One parsed response. `body` points into the connection's buffer and is only
// valid inside the callback. status < 0 means a transport or protocol error;
// then `body` holds the error text.
struct HttpResponse {
  int status = 0;
  std::uint64_t consul_index = 0;  // X-Consul-Index, 0 when absent
  std::string_view body;
};

class HttpConn {
 public:
  // Runs exactly once per Send, on the io_context's thread. Kept small (two
  // pointers) by callers so std::function stores it without allocating.
  using Callback = std::function<void(const HttpResponse&)>;

  HttpConn(asio::io_context& ioc, asio::ip::tcp::endpoint endpoint);
  HttpConn(const HttpConn&) = delete;
  ~HttpConn();

  // ACL tokens the connections send (--token-file): each new connection
  // takes the next one, round robin, and sends it as X-Consul-Token on
  // every request, as a client with its own token would. Empty: none.
  static void SetTokens(std::vector<std::string> tokens);
  // TLS for every connection made from now on: a client context from
  // tls::Context::ForClient (CA, optional client certificate). The server's
  // certificate must name `server_name`, or the IP dialled when it is empty.
  // Null: clear text (the default).
  static void SetTls(std::shared_ptr<const tls::Context> context, std::string server_name);
  HttpConn& operator=(const HttpConn&) = delete;

  // Blocking connect (and TLS handshake): on loopback it completes at once,
  // and doing it synchronously keeps the setup code linear. Sets TCP_NODELAY.
  bool Connect(std::string* error);
  // The same without blocking, for workloads that measure connecting: `done`
  // runs once, on the io_context's thread, with "" or the error. REQUIRES:
  // not busy (a previous connection closed or failed with nothing pending).
  void AsyncConnect(std::function<void(const std::string& error)> done);
  // The negotiated protocol and cipher ("TLSv1.3 TLS_AES_256_GCM_SHA384"),
  // "" in clear text.
  std::string TlsVersion() const;

  // Sends one request; `done` runs when the whole response has arrived or the
  // connection failed. At most one request may be outstanding.
  void Send(std::string_view method, std::string_view target, std::string_view body, Callback done);

  bool busy() const { return awaiting_ || connecting_; }
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  // Closes the socket (after a TLS close_notify, sent if it can be without
  // waiting); an outstanding request completes with an error.
  void Close();

 private:
  // The state of a fresh connection; TLS: a new SSL on the socket.
  bool Prepare(std::string* error);
  void Handshake(std::function<void(const std::string&)> done);
  // TLS: writes what is left of out_, waiting for the socket when OpenSSL
  // asks to; `in_send`: called from Send, so failures are posted.
  void TlsWrite(bool in_send);
  void TlsRead();
  void FreeSsl();
  void ReadMore();
  void OnRead(const boost::system::error_code& ec, std::size_t n);
  // Parses a complete response from the buffer and delivers it; asks for more
  // bytes when the response is not complete yet.
  void Deliver();
  // Marks the connection broken and completes the outstanding request with
  // status -1 (asynchronously when called from Send, to keep callbacks
  // non-reentrant).
  void Fail(std::string why);

  asio::io_context& ioc_;
  asio::ip::tcp::endpoint endpoint_;
  asio::ip::tcp::socket socket_;
  ssl_st* ssl_ = nullptr;     // TLS connections only
  std::size_t written_ = 0;   // TLS: bytes of out_ SSL_write has taken
  std::string token_header_;  // "X-Consul-Token: ...\r\n", or empty
  std::string out_;           // the request being written; reused
  std::string in_;            // receive buffer; [head_, tail_) holds unparsed bytes
  std::size_t head_ = 0;
  std::size_t tail_ = 0;
  Callback callback_;
  bool awaiting_ = false;    // a request is outstanding
  bool reading_ = false;     // an async read is outstanding
  bool writing_ = false;     // the rest of a request is being written
  bool delivering_ = false;  // inside the user's callback
  bool connecting_ = false;  // AsyncConnect has not called back yet
  bool failed_ = false;
  bool peer_closes_ = false;  // the last response said Connection: close
  std::string error_;
};

}  // namespace tenure::bench
