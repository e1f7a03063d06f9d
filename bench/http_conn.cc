// HttpConn: see http_conn.h. The hot path per request is one write(2), one
// speculative read(2) that usually finds nothing, one epoll wake-up and one
// read(2) of the whole response. Over TLS the same, through SSL_write and
// SSL_read.
#include "http_conn.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/strings.h"
#include "tls/context.h"

namespace tenure::bench {
namespace {

// Responses bigger than this are not expected from any endpoint the
// benchmark calls; a bigger one means a broken peer, not a slow one.
constexpr std::size_t kMaxResponseBytes = 64 * 1024 * 1024;
constexpr std::size_t kInitialBuffer = 4096;
// Read at least this many bytes per read(2); compact or grow below that.
constexpr std::size_t kMinReadRoom = 1024;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string>& Tokens() {
  static std::vector<std::string> tokens;
  return tokens;
}
std::size_t next_token = 0;

struct TlsSettings {
  std::shared_ptr<const tls::Context> context;
  std::string server_name;
};
TlsSettings& Tls() {
  static TlsSettings settings;
  return settings;
}

// What OpenSSL said about a failed call, for an error text.
std::string TlsError(std::string_view what, ssl_st* ssl, int code) {
  std::string queue = tls::TakeOpenSslErrors();
  if (code == SSL_ERROR_SSL) {
    long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      queue += std::string(queue.empty() ? "" : "; ") + X509_verify_cert_error_string(verify);
    }
  }
  if (code == SSL_ERROR_SYSCALL && queue.empty()) {
    queue = errno != 0 ? std::strerror(errno) : "server closed the connection";
  }
  return std::string(what) + ": " + (queue.empty() ? "SSL error " + std::to_string(code) : queue);
}

int ClampToInt(std::size_t n) { return n > INT_MAX ? INT_MAX : static_cast<int>(n); }

}  // namespace

void HttpConn::SetTokens(std::vector<std::string> tokens) {
  Tokens() = std::move(tokens);
  next_token = 0;
}

void HttpConn::SetTls(std::shared_ptr<const tls::Context> context, std::string server_name) {
  Tls().context = std::move(context);
  Tls().server_name = std::move(server_name);
}

HttpConn::HttpConn(asio::io_context& ioc, asio::ip::tcp::endpoint endpoint)
    : ioc_(ioc), endpoint_(endpoint), socket_(ioc) {
  in_.resize(kInitialBuffer);
  if (!Tokens().empty()) {
    token_header_ = "X-Consul-Token: " + Tokens()[next_token++ % Tokens().size()] + "\r\n";
  }
}

HttpConn::~HttpConn() { FreeSsl(); }

void HttpConn::FreeSsl() {
  if (ssl_ != nullptr) {
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
}

bool HttpConn::Prepare(std::string* error) {
  failed_ = false;
  peer_closes_ = false;
  error_.clear();
  head_ = tail_ = 0;
  FreeSsl();
  const TlsSettings& tls = Tls();
  if (!tls.context) return true;
  ssl_ = SSL_new(tls.context->raw());
  if (ssl_ == nullptr) {
    *error = "SSL_new: " + tls::TakeOpenSslErrors();
    return false;
  }
  // The house contexts free idle buffers (right for a server with many
  // idle connections); a load generator reuses them on every request.
  SSL_clear_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
  SSL_set_fd(ssl_, socket_.native_handle());
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
  bool named = false;
  if (!tls.server_name.empty()) {
    SSL_set_tlsext_host_name(ssl_, tls.server_name.c_str());
    named = X509_VERIFY_PARAM_set1_host(param, tls.server_name.c_str(), 0) == 1;
  } else {
    named = X509_VERIFY_PARAM_set1_ip_asc(param, endpoint_.address().to_string().c_str()) == 1;
  }
  if (!named) {
    *error = "TLS: cannot set the name to verify: " + tls::TakeOpenSslErrors();
    FreeSsl();
    return false;
  }
  return true;
}

bool HttpConn::Connect(std::string* error) {
  std::string why;
  boost::system::error_code ec;
  socket_.connect(endpoint_, ec);
  if (!ec) socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  if (ec) {
    why = ec.message();
  } else if (Prepare(&why) && ssl_ != nullptr) {
    // The socket is still blocking: the handshake completes here.
    ERR_clear_error();
    int r = SSL_connect(ssl_);
    if (r != 1) why = TlsError("TLS handshake", ssl_, SSL_get_error(ssl_, r));
  }
  // Non-blocking so Send's direct write never stalls the loop.
  if (why.empty()) socket_.non_blocking(true, ec);
  if (why.empty() && ec) why = ec.message();
  if (!why.empty()) {
    if (error) *error = why;
    FreeSsl();
    boost::system::error_code ignored;
    socket_.close(ignored);
    failed_ = true;
    error_ = why;
    return false;
  }
  return true;
}

void HttpConn::AsyncConnect(std::function<void(const std::string&)> done) {
  if (busy() || reading_ || writing_) {
    std::fprintf(stderr, "tenure_bench: HttpConn::AsyncConnect on a busy connection\n");
    std::abort();
  }
  boost::system::error_code ignored;
  socket_.close(ignored);
  FreeSsl();
  connecting_ = true;
  failed_ = false;
  socket_.async_connect(
      endpoint_, [this, done = std::move(done)](const boost::system::error_code& ec) mutable {
        std::string why;
        boost::system::error_code oec = ec;
        if (!oec) socket_.set_option(asio::ip::tcp::no_delay(true), oec);
        if (!oec) socket_.non_blocking(true, oec);
        if (oec) {
          why = oec.message();
        } else if (failed_) {
          why = error_;  // closed while connecting
        } else if (Prepare(&why) && ssl_ != nullptr) {
          return Handshake(std::move(done));
        }
        connecting_ = false;
        if (!why.empty()) {
          failed_ = true;
          error_ = why;
          FreeSsl();
          socket_.close(oec);
        }
        done(why);
      });
}

void HttpConn::Handshake(std::function<void(const std::string&)> done) {
  std::string why;
  if (failed_ || ssl_ == nullptr) {
    why = failed_ ? error_ : "closed during the TLS handshake";
  } else {
    ERR_clear_error();
    int r = SSL_connect(ssl_);
    if (r == 1) {
      connecting_ = false;
      return done("");
    }
    int code = SSL_get_error(ssl_, r);
    if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
      socket_.async_wait(code == SSL_ERROR_WANT_READ ? asio::socket_base::wait_read
                                                     : asio::socket_base::wait_write,
                         [this, done = std::move(done)](const boost::system::error_code& ec) {
                           if (ec && !failed_) {
                             failed_ = true;
                             error_ = "TLS handshake: " + ec.message();
                           }
                           Handshake(std::move(done));
                         });
      return;
    }
    why = TlsError("TLS handshake", ssl_, code);
  }
  connecting_ = false;
  failed_ = true;
  error_ = why;
  FreeSsl();
  boost::system::error_code ignored;
  socket_.close(ignored);
  done(why);
}

std::string HttpConn::TlsVersion() const {
  return ssl_ != nullptr ? std::string(SSL_get_version(ssl_)) + " " +
                               SSL_CIPHER_get_name(SSL_get_current_cipher(ssl_))
                         : std::string();
}

void HttpConn::Send(std::string_view method, std::string_view target, std::string_view body,
                    Callback done) {
  if (awaiting_) {
    // A caller bug, not a server problem; fail loudly rather than corrupt state.
    std::fprintf(stderr, "tenure_bench: HttpConn::Send while a request is outstanding\n");
    std::abort();
  }
  awaiting_ = true;
  callback_ = std::move(done);
  if (failed_ || peer_closes_ || !socket_.is_open()) {
    std::string why = failed_ ? error_ : "server closed the connection (Connection: close)";
    asio::post(ioc_, [this, why = std::move(why)]() mutable { Fail(std::move(why)); });
    return;
  }

  out_.clear();
  out_.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  out_.append(token_header_);
  if (!body.empty() || method != "GET") {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, body.size());
    (void)ec;
    out_.append("Content-Length: ").append(digits, end).append("\r\n");
  }
  out_.append("\r\n").append(body);

  if (ssl_ != nullptr) {
    written_ = 0;
    TlsWrite(true);
    if (!delivering_) ReadMore();
    return;
  }
  boost::system::error_code ec;
  std::size_t written = socket_.write_some(asio::buffer(out_), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    written = 0;
    ec.clear();
  }
  if (ec) {
    asio::post(ioc_, [this, why = ec.message()]() mutable { Fail(std::move(why)); });
    return;
  }
  if (written < out_.size()) {
    // Rare (a full socket buffer): finish the write asynchronously. Reading
    // can start at once; the response cannot arrive before the request.
    writing_ = true;
    asio::async_write(socket_, asio::buffer(out_.data() + written, out_.size() - written),
                      [this](const boost::system::error_code& wec, std::size_t) {
                        writing_ = false;
                        if (wec) {
                          Fail(wec.message());
                        } else if (failed_) {
                          Fail(error_);
                        }
                      });
  }
  // Inside a callback the buffer still holds the body being delivered; the
  // read starts once Deliver has finished with it.
  if (!delivering_) ReadMore();
}

void HttpConn::TlsWrite(bool in_send) {
  while (written_ < out_.size()) {
    tls::ClearOpenSslErrors();
    int n = SSL_write(ssl_, out_.data() + written_, ClampToInt(out_.size() - written_));
    if (n > 0) {
      written_ += static_cast<std::size_t>(n);
      continue;
    }
    int code = SSL_get_error(ssl_, n);
    if (code == SSL_ERROR_WANT_WRITE || code == SSL_ERROR_WANT_READ) {
      // Rare (a full socket buffer, or TLS reading first): OpenSSL keeps the
      // record; the same call is repeated when the socket is ready.
      writing_ = true;
      socket_.async_wait(code == SSL_ERROR_WANT_WRITE ? asio::socket_base::wait_write
                                                      : asio::socket_base::wait_read,
                         [this](const boost::system::error_code& ec) {
                           writing_ = false;
                           if (ec || failed_ || ssl_ == nullptr)
                             return Fail(ec ? ec.message() : error_);
                           TlsWrite(false);
                         });
      return;
    }
    std::string why = TlsError("TLS write", ssl_, code);
    if (in_send) {
      asio::post(ioc_, [this, why = std::move(why)]() mutable { Fail(std::move(why)); });
    } else {
      Fail(std::move(why));
    }
    return;
  }
}

void HttpConn::TlsRead() {
  if (failed_ || ssl_ == nullptr) return OnRead(asio::error::operation_aborted, 0);
  tls::ClearOpenSslErrors();
  int n = SSL_read(ssl_, in_.data() + tail_, ClampToInt(in_.size() - tail_));
  if (n > 0) return OnRead({}, static_cast<std::size_t>(n));
  int code = SSL_get_error(ssl_, n);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
    socket_.async_wait(
        code == SSL_ERROR_WANT_READ ? asio::socket_base::wait_read : asio::socket_base::wait_write,
        [this](const boost::system::error_code& ec) {
          if (ec) return OnRead(ec, 0);
          TlsRead();
        });
    return;
  }
  if (code == SSL_ERROR_ZERO_RETURN) return OnRead(asio::error::eof, 0);
  reading_ = false;
  Fail(TlsError("TLS read", ssl_, code));
}

void HttpConn::Close() {
  if (!failed_) {
    failed_ = true;
    error_ = "closed by the benchmark";
    // close_notify, as a TLS client closing a connection sends; not waited
    // for (nor the server's).
    if (ssl_ != nullptr && !connecting_) SSL_shutdown(ssl_);
  }
  ERR_clear_error();
  boost::system::error_code ignored;
  socket_.close(ignored);
  // Handlers still pending see failed_ and do not touch it.
  if (!reading_ && !writing_ && !connecting_) FreeSsl();
}

void HttpConn::ReadMore() {
  if (in_.size() - tail_ < kMinReadRoom) {
    if (head_ > 0) {
      std::memmove(in_.data(), in_.data() + head_, tail_ - head_);
      tail_ -= head_;
      head_ = 0;
    }
    if (in_.size() - tail_ < kMinReadRoom) in_.resize(in_.size() * 2);
  }
  reading_ = true;
  if (ssl_ != nullptr) {
    // Bytes OpenSSL holds already would not make the socket readable.
    if (SSL_has_pending(ssl_)) {
      asio::post(ioc_, [this] { TlsRead(); });
    } else {
      socket_.async_wait(asio::socket_base::wait_read, [this](const boost::system::error_code& ec) {
        if (ec) return OnRead(ec, 0);
        TlsRead();
      });
    }
    return;
  }
  socket_.async_read_some(
      asio::buffer(in_.data() + tail_, in_.size() - tail_),
      [this](const boost::system::error_code& ec, std::size_t n) { OnRead(ec, n); });
}

void HttpConn::OnRead(const boost::system::error_code& ec, std::size_t n) {
  reading_ = false;
  if (ec) {
    Fail(ec == asio::error::eof ? std::string("server closed the connection") : ec.message());
    return;
  }
  if (failed_) {  // closed while the read was in flight
    Fail(error_);
    return;
  }
  tail_ += n;
  if (!awaiting_) {
    Fail("unsolicited bytes from the server");
    return;
  }
  Deliver();
}

void HttpConn::Deliver() {
  std::string_view data(in_.data() + head_, tail_ - head_);
  std::size_t header_end = data.find("\r\n\r\n");
  if (header_end == std::string_view::npos) {
    if (data.size() > kMaxResponseBytes) return Fail("response headers too large");
    return ReadMore();
  }
  // "HTTP/1.1 200 OK"
  int status = 0;
  if (data.size() < 12 || data.substr(0, 5) != "HTTP/" || data[8] != ' ' ||
      !ParseNumber(data.substr(9, 3), &status)) {
    return Fail("bad status line: " + std::string(data.substr(0, data.find("\r\n"))));
  }
  std::size_t content_length = 0;
  std::uint64_t consul_index = 0;
  bool close = false;
  std::size_t pos = data.find("\r\n") + 2;
  while (pos < header_end) {
    std::size_t eol = data.find("\r\n", pos);
    std::string_view line = data.substr(pos, eol - pos);
    pos = eol + 2;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (EqualsIgnoreCase(name, "Content-Length")) {
      if (!ParseNumber(value, &content_length) || content_length > kMaxResponseBytes) {
        return Fail("bad Content-Length");
      }
    } else if (EqualsIgnoreCase(name, "X-Consul-Index")) {
      if (!ParseNumber(value, &consul_index)) return Fail("bad X-Consul-Index");
    } else if (EqualsIgnoreCase(name, "Connection")) {
      close = EqualsIgnoreCase(value, "close");
    }
  }
  std::size_t total = header_end + 4 + content_length;
  if (data.size() < total) {
    if (in_.size() - head_ < total) {  // make room for the whole body at once
      std::memmove(in_.data(), in_.data() + head_, tail_ - head_);
      tail_ -= head_;
      head_ = 0;
      if (in_.size() < total + kMinReadRoom) in_.resize(total + kMinReadRoom);
    }
    return ReadMore();
  }

  HttpResponse response{status, consul_index, data.substr(header_end + 4, content_length)};
  Callback callback = std::move(callback_);
  callback_ = nullptr;
  awaiting_ = false;
  peer_closes_ = close;
  head_ += total;
  bool leftover = head_ != tail_;
  delivering_ = true;
  callback(response);
  delivering_ = false;
  if (leftover) return Fail("unexpected bytes after a response");
  head_ = tail_ = 0;
  if (awaiting_ && !reading_ && !failed_) ReadMore();
}

void HttpConn::Fail(std::string why) {
  if (!failed_) {
    failed_ = true;
    error_ = std::move(why);
  }
  boost::system::error_code ignored;
  socket_.close(ignored);
  // Complete the request only once no handler of ours is pending, so the
  // owner may destroy the connection from the callback's aftermath.
  if (reading_ || writing_ || !awaiting_) return;
  Callback callback = std::move(callback_);
  callback_ = nullptr;
  awaiting_ = false;
  HttpResponse response{-1, 0, error_};
  delivering_ = true;
  callback(response);
  delivering_ = false;
}

}  // namespace tenure::bench
