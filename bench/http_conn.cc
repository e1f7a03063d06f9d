// HttpConn: see http_conn.h. The hot path per request is one write(2), one
// speculative read(2) that usually finds nothing, one epoll wake-up and one
// read(2) of the whole response.
#include "http_conn.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/strings.h"

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

}  // namespace

void HttpConn::SetTokens(std::vector<std::string> tokens) {
  Tokens() = std::move(tokens);
  next_token = 0;
}

HttpConn::HttpConn(asio::io_context& ioc, asio::ip::tcp::endpoint endpoint)
    : ioc_(ioc), endpoint_(endpoint), socket_(ioc) {
  in_.resize(kInitialBuffer);
  if (!Tokens().empty()) {
    token_header_ = "X-Consul-Token: " + Tokens()[next_token++ % Tokens().size()] + "\r\n";
  }
}

bool HttpConn::Connect(std::string* error) {
  boost::system::error_code ec;
  socket_.connect(endpoint_, ec);
  if (!ec) socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  // Non-blocking so Send's direct write_some never stalls the loop.
  if (!ec) socket_.non_blocking(true, ec);
  if (ec) {
    if (error) *error = ec.message();
    boost::system::error_code ignored;
    socket_.close(ignored);
    return false;
  }
  failed_ = false;
  peer_closes_ = false;
  error_.clear();
  head_ = tail_ = 0;
  return true;
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

void HttpConn::Close() {
  if (!failed_) {
    failed_ = true;
    error_ = "closed by the benchmark";
  }
  boost::system::error_code ignored;
  socket_.close(ignored);
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
