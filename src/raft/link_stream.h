// LinkStream: one raft connection's byte stream, in clear or over TLS.
// With TLS both ends present certificates and check them against the
// cluster's CA (mutual TLS) before the cluster handshake of
// wire/handshake.h runs inside the encrypted stream: a process without a
// certificate from the CA never gets a byte to the handshake, let alone to
// libraft. The stream moves whole from the handshake to the link.
// Loop thread only. Included only by the transport's .cc files (asio ssl).
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <memory>
#include <string>

#include "tls/context.h"

namespace tenure::raft {

class LinkStream {
 public:
  using tcp = boost::asio::ip::tcp;
  using ErrorCode = boost::system::error_code;

  // In clear.
  explicit LinkStream(tcp::socket socket) : plain_(std::move(socket)) {}
  // Over TLS with `context` (a server context that requires a peer
  // certificate for accepted links, a client one with this server's
  // certificate for dialled ones).
  LinkStream(tcp::socket socket, const tls::Context& context)
      : plain_(socket.get_executor()), ssl_(MakeSsl(std::move(socket), context)) {}

  bool tls() const { return ssl_ != nullptr; }
  tcp::socket& socket() { return ssl_ ? ssl_->next_layer() : plain_; }

  // The TLS handshake (nothing in clear): `done` gets the error, if any.
  void AsyncHandshake(bool accepting, std::function<void(const ErrorCode&)> done) {
    if (!ssl_) {
      done(ErrorCode());
      return;
    }
    ssl_->async_handshake(
        accepting ? boost::asio::ssl::stream_base::server : boost::asio::ssl::stream_base::client,
        std::move(done));
  }

  template <typename Buffer, typename Handler>
  void AsyncReadSome(const Buffer& buffer, Handler&& handler) {
    if (ssl_) {
      ssl_->async_read_some(buffer, std::forward<Handler>(handler));
    } else {
      plain_.async_read_some(buffer, std::forward<Handler>(handler));
    }
  }

  template <typename Buffer, typename Handler>
  void AsyncWrite(const Buffer& buffer, Handler&& handler) {
    if (ssl_) {
      boost::asio::async_write(*ssl_, buffer, std::forward<Handler>(handler));
    } else {
      boost::asio::async_write(plain_, buffer, std::forward<Handler>(handler));
    }
  }

  void Close() {
    ErrorCode ignored;
    socket().close(ignored);
  }

 private:
  static std::unique_ptr<boost::asio::ssl::stream<tcp::socket>> MakeSsl(
      tcp::socket socket, const tls::Context& context) {
    SSL_CTX_up_ref(context.raw());  // asio's context frees its handle; the stream's SSL keeps one
    boost::asio::ssl::context asio_context(context.raw());
    return std::make_unique<boost::asio::ssl::stream<tcp::socket>>(std::move(socket), asio_context);
  }

  tcp::socket plain_;  // in clear; closed and unused over TLS
  std::unique_ptr<boost::asio::ssl::stream<tcp::socket>> ssl_;
};

}  // namespace tenure::raft
