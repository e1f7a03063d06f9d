// Helpers shared by the raft tests: commands with odd-sized values, temp
// dirs, free loopback ports, and running an io_context until a condition
// holds (with a deadline: these tests never sleep and hope).
#pragma once

// clang-format off
#include <utility>  // before any Boost header: asio 1.74 + g++ 12 (std::exchange)
// clang-format on
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "state/command.h"

namespace tenure::raft::testing {

// Value sizes cycle through 1..1000 and hit every residue mod 8, the case
// libraft 0.15 gets wrong without our padding.
inline std::size_t OddValueSize(int i) { return 1 + static_cast<std::size_t>(i * 37) % 1000; }

inline state::Command KvSetCommand(const std::string& key, std::size_t value_bytes, int seed) {
  std::string value(value_bytes, '\0');
  for (std::size_t j = 0; j < value_bytes; ++j) {
    value[j] = static_cast<char>('a' + (static_cast<std::size_t>(seed) + j) % 26);
  }
  state::Command command;
  command.now_ms = ClusterMs(1'700'000'000'000 + seed);
  command.body = state::KvSet{key, std::move(value), static_cast<std::uint64_t>(seed)};
  return command;
}

inline std::string TestKey(int i) { return "k/" + std::to_string(i); }

// A fresh directory under the test temp dir, removed by the caller.
inline std::filesystem::path MakeTempDir(const std::string& tag) {
  std::string pattern = std::filesystem::temp_directory_path() / ("tenure-" + tag + "-XXXXXX");
  char* made = ::mkdtemp(pattern.data());
  if (made == nullptr) std::abort();
  return std::filesystem::path(made);
}

// Removes a directory tree when it goes out of scope, failed test or not.
struct DirRemover {
  std::filesystem::path dir;
  ~DirRemover() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

// "127.0.0.1:<port>" for a port that was free a moment ago.
inline std::string FreeLoopbackAddress() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) std::abort();
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

// Runs `io` until pred() holds or `timeout` passes; returns pred().
template <typename Pred>
bool RunUntil(boost::asio::io_context& io, Pred pred,
              std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    if (io.stopped()) io.restart();
    io.run_one_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace tenure::raft::testing
