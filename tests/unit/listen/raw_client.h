// Test helpers for the HTTP transport: a blocking POSIX-socket client that
// speaks just enough HTTP/1.1 to check the server byte for byte (chunked
// bodies one chunk at a time), and a TestServer that runs HttpServer on
// 127.0.0.1:0 in an io_context on a background thread. Every wait has a
// deadline; nothing sleeps and hopes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "listen/server.h"

namespace tenure::listen::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct RawResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  std::optional<std::string> Header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (key == name) return value;
    }
    return std::nullopt;
  }
};

class RawClient {
 public:
  // From `source` (another 127.0.0.0/8 address: a second client host) when set.
  explicit RawClient(std::uint16_t port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      if (::inet_pton(AF_INET, source, &from.sin_addr) != 1 ||
          ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Reads one response (an interim 100 too). nullopt on EOF, error or timeout.
  std::optional<RawResponse> ReadResponse(milliseconds timeout = milliseconds(5000)) {
    const auto deadline = Clock::now() + timeout;
    std::size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    RawResponse response;
    const std::string head = buffer_.substr(0, head_end);
    buffer_.erase(0, head_end + 4);
    std::size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    if (status_line.size() < 12) return std::nullopt;
    response.status = std::stoi(status_line.substr(9, 3));
    while (line_end != std::string::npos) {
      const std::size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line = head.substr(start, line_end - start);
      const std::size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::size_t value_start = colon + 1;
      while (value_start < line.size() && line[value_start] == ' ') ++value_start;
      response.headers.emplace_back(name, line.substr(value_start));
    }
    if (auto length = response.Header("content-length"); length && !head_request_) {
      const std::size_t size = std::stoul(*length);
      while (buffer_.size() < size) {
        if (!Fill(deadline)) return std::nullopt;
      }
      response.body = buffer_.substr(0, size);
      buffer_.erase(0, size);
    }
    return response;
  }

  // Reads one chunk of a chunked body whose head ReadResponse read: its
  // bytes, or "" for the last chunk (its empty trailer section read too).
  // nullopt on EOF, error, timeout or a malformed chunk.
  std::optional<std::string> ReadChunk(milliseconds timeout = milliseconds(5000)) {
    const auto deadline = Clock::now() + timeout;
    std::size_t line_end;
    while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    std::size_t size = 0;
    const char* line = buffer_.data();
    const auto [end, ec] = std::from_chars(line, line + line_end, size, 16);
    if (ec != std::errc() || end != line + line_end) return std::nullopt;
    const std::size_t total = line_end + 2 + size + 2;
    while (buffer_.size() < total) {
      if (!Fill(deadline)) return std::nullopt;
    }
    if (buffer_.compare(total - 2, 2, "\r\n") != 0) return std::nullopt;
    std::string data = buffer_.substr(line_end + 2, size);
    buffer_.erase(0, total);
    return data;
  }

  // Next response is to a HEAD request: it has a Content-Length but no body.
  void ExpectHeadResponse(bool head) { head_request_ = head; }

  // True when the server closes (EOF or reset) before the deadline; data that
  // arrives meanwhile is kept in the buffer.
  bool WaitClosed(milliseconds timeout = milliseconds(5000)) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const int result = Wait(deadline);
      if (result <= 0) return false;
      char chunk[4096];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n == 0) return true;
      if (n < 0) {
        if (errno == EINTR) continue;
        return true;  // reset
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  const std::string& buffered() const { return buffer_; }

 private:
  // >0 readable, 0 timeout, <0 error.
  int Wait(Clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return 0;
      pollfd p{fd_, POLLIN, 0};
      const int result = ::poll(&p, 1, static_cast<int>(left));
      if (result < 0 && errno == EINTR) continue;
      return result;
    }
  }

  bool Fill(Clock::time_point deadline) {
    if (Wait(deadline) <= 0) return false;
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buffer_;
  bool head_request_ = false;
};

// Polls `condition` until it holds or `timeout` passes.
inline bool WaitFor(const std::function<bool()>& condition,
                    milliseconds timeout = milliseconds(5000)) {
  const auto deadline = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

class TestServer {
 public:
  TestServer(RequestHandler handler, HttpServerOptions options = Options())
      : server_(io_, std::move(handler)) {
    listen_status_ = server_.Listen(options);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~TestServer() {
    OnLoop([this] { server_.Stop(); });
    work_.reset();
    io_.stop();
    thread_.join();
  }

  static HttpServerOptions Options() {
    HttpServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    return options;
  }

  const Status& listen_status() const { return listen_status_; }
  std::uint16_t port() const { return server_.port(); }
  boost::asio::io_context& io() { return io_; }
  HttpServer& server() { return server_; }

  // Runs `fn` on the loop thread and returns its result.
  template <typename Fn>
  auto OnLoop(Fn fn) -> decltype(fn()) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto future = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return future.get();
  }

  std::size_t connection_count() {
    return OnLoop([this] { return server_.connection_count(); });
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ =
      boost::asio::make_work_guard(io_);
  HttpServer server_;
  Status listen_status_;
  std::thread thread_;
};

}  // namespace tenure::listen::testing
