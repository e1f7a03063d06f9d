// Session: one TLS connection over a non-blocking socket the caller owns,
// for code that drives its own readiness waits (the HTTP server's
// Connection). Receive and Send behave like recv and send: bytes, 0 for the
// end of the stream, or -1 with errno EAGAIN when the socket must become
// ready first. Which readiness: wants_write() (TLS may need to write while
// reading, in a handshake or a key update, and to read while writing).
// The handshake happens inside the first Receive.
//
// Any other failure is -1 with errno EPROTO and error() says why
// ("certificate verify failed", "http request" for plain HTTP sent to the
// TLS port: plain_http()).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"
#include "tls/context.h"

struct ssl_st;  // OpenSSL's SSL

namespace tenure::tls {

class Session {
 public:
  // Server side of the connection on `fd`. REQUIRES: fd non-blocking, open
  // for the Session's life. `offer_h2`: ALPN may choose h2 (a listener that
  // serves HTTP/2); otherwise http/1.1 or none (Context::ForServer).
  Session(const Context& context, int fd, bool offer_h2 = false);
  // Client side, with a client context (Context::ForClient): the server
  // must show `host` (or the context's server_name; tls/peer_name.h). The
  // handshake happens inside the first Send or Receive.
  static Result<std::unique_ptr<Session>> Dial(const Context& context, int fd,
                                               const std::string& host);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  ssize_t Receive(char* buffer, std::size_t size);
  ssize_t Send(const char* data, std::size_t size);
  // Sends close_notify if it can without waiting; the caller then shuts the
  // socket as it would without TLS.
  void Shutdown();
  // The record buffers (about 34 KiB) are released whenever they drain
  // (the default), or kept from KeepBuffers until ReleaseBuffers: for a
  // connection busy with requests, and one about to wait.
  void KeepBuffers();
  void ReleaseBuffers();

  bool wants_write() const { return wants_write_; }
  bool handshake_done() const;
  // ALPN chose h2 (after the handshake).
  bool alpn_h2() const;
  // Bytes OpenSSL read from the socket and has not handed out yet (the
  // context reads ahead): a caller that stopped reading before EAGAIN must
  // read again rather than wait for readiness, which those bytes never
  // signal.
  bool has_pending() const;
  const std::string& error() const { return error_; }
  // The peer sent plain HTTP where the TLS handshake was expected.
  bool plain_http() const { return plain_http_; }

 private:
  explicit Session(ssl_st* ssl) : ssl_(ssl) {}
  ssize_t Finish(int result);

  ssl_st* ssl_;
  bool wants_write_ = false;
  bool plain_http_ = false;
  std::string error_;
};

}  // namespace tenure::tls
