// Test helpers for libtenure tests that need a real server: a `tenure
// server -dev` child process on free loopback ports (stopped by its PID),
// stub servers that inject faults (StubServer: one thread per connection),
// and io_context loops that poll with a deadline.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/blocking_http_client.h"
#include "net/url.h"

namespace tenure::test_support {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

inline std::string TenureBinary() {
  if (const char* bin = std::getenv("TENURE_BIN"); bin != nullptr && *bin != 0) return bin;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto sibling = self.parent_path().parent_path() / "src" / "tenure";
  return std::filesystem::exists(sibling, ec) ? sibling.string() : "";
}

inline std::string FreeAddress() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

// Forks `binary server ARGS...` with its stdout and stderr appended to `log`;
// the child's pid. Stop it with KillServer.
inline pid_t SpawnServer(const std::string& binary, const std::vector<std::string>& args,
                         const std::string& log) {
  std::vector<std::string> argv = {binary, "server"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (std::string& arg : argv) raw.push_back(arg.data());
  raw.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(binary.c_str(), raw.data());
    ::_exit(127);
  }
  return pid;
}

// SIGKILL and reap (our own child, by PID); *pid becomes -1.
inline void KillServer(pid_t* pid) {
  if (*pid <= 0) return;
  ::kill(*pid, SIGKILL);
  ::waitpid(*pid, nullptr, 0);
  *pid = -1;
}

// One server per test suite: -dev, -session-ttl-multiplier 1, stopped by PID.
// The binary is $TENURE_BIN or build/src/tenure (unit_tests depends on it).
class ServerProcess {
 public:
  // Free ports are picked before the server binds them, so another test may
  // take one first: a server that exits during startup is started again on
  // new ports (3 tries). A loaded machine gets 30 s per try.
  bool Start() {
    const std::string binary = TenureBinary();
    if (binary.empty()) return false;
    char dir[] = "/tmp/tenure-election-test-XXXXXX";
    dir_ = ::mkdtemp(dir);
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (StartOnce(binary)) return true;
      KillServer(&pid_);
    }
    return false;
  }
  void Stop() {
    KillServer(&pid_);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  const std::string& http() const { return http_; }
  pid_t pid() const { return pid_; }

 private:
  bool StartOnce(const std::string& binary) {
    http_ = FreeAddress();
    const std::string raft = FreeAddress();
    // -data-dir inside our directory: the server is killed, so it never
    // removes a dev dir of its own making. A fresh one per try.
    const std::string data = dir_ + "/data";
    std::error_code ec;
    std::filesystem::remove_all(data, ec);
    pid_ = SpawnServer(binary,
                       {"-dev", "-data-dir", data, "-http-addr", http_, "-raft-addr", raft,
                        "-grpc-addr", "off", "-session-ttl-multiplier", "1"},
                       dir_ + "/server.log");
    // Ready once a KV write commits (the single node has become leader).
    net::BlockingHttpClient http(http_, "", 1'000);
    auto deadline = Clock::now() + 30s;
    while (Clock::now() < deadline) {
      auto put = http.Request("PUT", "/v1/kv/ready", "1");
      if (put.ok() && put->status == 200) return true;
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {  // exited: a port was taken
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  std::string http_, dir_;
  pid_t pid_ = -1;
};

// ---- stub servers: small POSIX HTTP servers that inject faults ------------

struct StubRequest {
  std::string method;
  std::string target;
  std::string head;  // request line and headers
  std::string body;
};

// Reads one request (Content-Length bodies only) with `read_some` (bytes
// read, <= 0 at the end or on error); nullopt on EOF or error.
inline std::optional<StubRequest> ReadRequestWith(
    const std::function<long(char*, std::size_t)>& read_some) {
  std::string data;
  char chunk[4096];
  std::size_t end;
  while ((end = data.find("\r\n\r\n")) == std::string::npos) {
    const long n = read_some(chunk, sizeof chunk);
    if (n <= 0) return std::nullopt;
    data.append(chunk, static_cast<std::size_t>(n));
  }
  StubRequest request;
  request.head = data.substr(0, end);
  std::size_t space = request.head.find(' ');
  request.method = request.head.substr(0, space);
  request.target = request.head.substr(space + 1, request.head.find(' ', space + 1) - space - 1);
  std::size_t length = 0;
  if (std::size_t at = request.head.find("Content-Length: "); at != std::string::npos) {
    length = std::stoul(request.head.substr(at + 16));
  }
  request.body = data.substr(end + 4);
  while (request.body.size() < length) {
    const long n = read_some(chunk, sizeof chunk);
    if (n <= 0) return std::nullopt;
    request.body.append(chunk, static_cast<std::size_t>(n));
  }
  return request;
}

inline std::optional<StubRequest> ReadRequest(int fd) {
  return ReadRequestWith([fd](char* buffer, std::size_t size) { return ::read(fd, buffer, size); });
}

inline void WriteResponse(int fd, int status, const std::string& body, bool close = false) {
  std::string text = "HTTP/1.1 " + std::to_string(status) +
                     " X\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nX-Consul-Index: 7\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n" +
                     body;
  std::size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

// Listens on 127.0.0.1:<ephemeral>; runs `serve(fd)` on its own thread for
// each accepted connection. The destructor wakes every blocked thread.
class StubServer {
 public:
  using Serve = std::function<void(int fd)>;

  explicit StubServer(Serve serve) : serve_(std::move(serve)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_, 64), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) return;
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) {
          ::close(fd);
          return;
        }
        ++connections_;
        fds_.push_back(fd);
        threads_.emplace_back([this, fd] { serve_(fd); });
      }
    });
  }

  ~StubServer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    for (auto& thread : threads_) thread.join();
    for (int fd : fds_) ::close(fd);
    ::close(listen_fd_);
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_;
  }

 private:
  Serve serve_;
  int listen_fd_ = -1;
  unsigned short port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  bool stopping_ = false;
  int connections_ = 0;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
};

// Runs the loop until `done()` or the deadline; true when done() held.
inline bool RunUntil(boost::asio::io_context& io, const std::function<bool()>& done,
                     std::chrono::milliseconds timeout = 5s) {
  auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    io.restart();
    io.run_for(10ms);
    if (io.stopped() && !done()) std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Runs the loop for a while (to check that something does NOT happen).
inline void RunFor(boost::asio::io_context& io, std::chrono::milliseconds duration) {
  RunUntil(
      io, [] { return false; }, duration);
}

// A test suite sharing one ServerProcess: started before the suite's first
// test and stopped by PID after its last. A server that cannot start fails
// every test of the suite (never a silent skip).
class RealServerSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess();
    ready_ = server_->Start();
  }
  static void TearDownTestSuite() {
    server_->Stop();
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(ready_) << "could not start a tenure server (build/src/tenure or $TENURE_BIN)";
  }
  static inline ServerProcess* server_ = nullptr;
  static inline bool ready_ = false;
};

}  // namespace tenure::test_support
