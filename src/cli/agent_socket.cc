#include "cli/agent_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace tenure::cli {

namespace {

MonoMs NowMs() {
  return MonoMs(std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count());
}

// Waits for `events` on fd until deadline; false on timeout.
bool WaitFor(int fd, short events, MonoMs deadline) {
  for (;;) {
    DurationMs left = deadline - NowMs();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // let the next call report the error
  }
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string DefaultAgentSocket(const std::string& name) {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] != '\0')
    return std::string(runtime) + "/tenure/" + name + ".sock";
  return "/tmp/tenure-" + std::to_string(::getuid()) + "/" + name + ".sock";
}

std::string ResolveAgentSocket(const std::string& flag, const std::string& name) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("TENURE_SOCKET");
  if (env != nullptr && env[0] != '\0') return env;
  return DefaultAgentSocket(name);
}

Result<nlohmann::json> AskAgent(const std::string& path, const nlohmann::json& request,
                                DurationMs timeout_ms) {
  const MonoMs deadline = NowMs() + timeout_ms;
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("socket path too long (" + std::to_string(path.size()) +
                                   " bytes, at most " + std::to_string(sizeof(addr.sun_path) - 1) +
                                   "): " + path);
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno != EINPROGRESS && errno != EAGAIN) {
    return Status::Unavailable("no agent at " + path + ": " + std::strerror(errno));
  }
  std::string out = request.dump() + "\n";
  std::size_t sent = 0;
  while (sent < out.size()) {
    if (!WaitFor(fd.get(), POLLOUT, deadline))
      return Status::Timeout("no answer from the agent at " + path);
    ssize_t n = ::send(fd.get(), out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return Status::Unavailable("no agent at " + path + ": " + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
  std::string in;
  char buf[4096];
  while (in.find('\n') == std::string::npos) {
    if (!WaitFor(fd.get(), POLLIN, deadline)) {
      return Status::Timeout("no answer from the agent at " + path + " within " +
                             std::to_string(timeout_ms) + " ms");
    }
    ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return Status::Unavailable("agent at " + path + ": " + std::strerror(errno));
    if (n == 0) return Status::Unavailable("the agent at " + path + " closed without answering");
    in.append(buf, static_cast<std::size_t>(n));
    if (in.size() > kAgentMaxRequestBytes) return Status::Internal("answer too large from " + path);
  }
  auto parsed = nlohmann::json::parse(in.substr(0, in.find('\n')), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status::Internal("the agent at " + path +
                            " answered something that is not a JSON object");
  }
  return parsed;
}

}  // namespace tenure::cli
