// ServerProcess: see server_process.h.
#include "server_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tenure::bench {
namespace {

namespace fs = std::filesystem;

// The child to kill if the benchmark is interrupted (read by a signal
// handler, so a lock-free atomic).
std::atomic<pid_t> g_child{-1};

void OnSignal(int sig) {
  pid_t child = g_child.load();
  if (child > 0) kill(child, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

void InstallSignalHandlersOnce() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
}

// A port the kernel considers free right now. `keep` holds the socket open
// so two calls cannot return the same port.
unsigned short FreePort(asio::io_context& ioc, std::vector<asio::ip::tcp::acceptor>* keep) {
  keep->emplace_back(ioc, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return keep->back().local_endpoint().port();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string DescribeExit(int status) {
  return WIFSIGNALED(status) ? fmt::format("killed by signal {}", WTERMSIG(status))
                             : fmt::format("exited with status {}", WEXITSTATUS(status));
}

// utime + stime of a /proc/.../stat file, in seconds.
double StatCpuSeconds(const std::string& path) {
  std::string stat = ReadFile(path);
  // Fields after the command name (which may contain spaces) start at ") ".
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  long long utime = 0, stime = 0;
  // state(3) ... utime is field 14, stime 15 (1-based, counting pid and comm).
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) stime = std::atoll(field.c_str());
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
         usage.ru_stime.tv_usec / 1e6;
}

ServerProcess::ServerProcess(std::string binary, std::string data_parent)
    : binary_(std::move(binary)), data_parent_(std::move(data_parent)) {}

ServerProcess::~ServerProcess() { Stop(); }

bool ServerProcess::Start(Loop& loop, std::string* error) {
  InstallSignalHandlersOnce();
  std::string why;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (SpawnOnce(&why) && WaitReady(loop, &why)) return true;
    why += "\n--- server log ---\n" + LogTail();
    Stop();
  }
  *error = why;
  return false;
}

bool ServerProcess::Attach(Loop& loop, const std::string& http_addr, std::string* error) {
  std::size_t colon = http_addr.rfind(':');
  boost::system::error_code ec;
  asio::ip::address ip =
      asio::ip::make_address(http_addr.substr(0, colon == std::string::npos ? 0 : colon), ec);
  char* end = nullptr;
  long port = colon == std::string::npos ? 0 : std::strtol(http_addr.c_str() + colon + 1, &end, 10);
  if (ec || port <= 0 || port > 65535 || *end != '\0') {
    *error = "expected IP:PORT, got '" + http_addr + "'";
    return false;
  }
  http_ = asio::ip::tcp::endpoint(ip, static_cast<unsigned short>(port));
  attached_ = true;
  return WaitReady(loop, error);
}

bool ServerProcess::SpawnOnce(std::string* error) {
  std::string pattern = data_parent_ + "/tenure-bench.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    *error = fmt::format("mkdtemp {}: {}", pattern, std::strerror(errno));
    return false;
  }
  root_ = pattern;
  data_dir_ = root_ + "/data";
  log_path_ = root_ + "/server.log";
  std::error_code ec;
  fs::create_directory(data_dir_, ec);

  unsigned short http_port, raft_port;
  {
    asio::io_context ioc;
    std::vector<asio::ip::tcp::acceptor> keep;
    http_port = FreePort(ioc, &keep);
    raft_port = FreePort(ioc, &keep);
  }  // closed here, just before the server binds them
  http_ = asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), http_port);
  std::string http_addr = fmt::format("127.0.0.1:{}", http_port);
  std::string raft_addr = fmt::format("127.0.0.1:{}", raft_port);
  // Every client of the load connects from 127.0.0.1, up to thousands at
  // once: past one address's 200 (docs/limits.md), so that limit is off.
  std::vector<std::string> args = {binary_,      "server",     "-data-dir",
                                   data_dir_,    "-http-addr", http_addr,
                                   "-raft-addr", raft_addr,    "-http-max-conns-per-client",
                                   "0"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int log_fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    *error = fmt::format("open {}: {}", log_path_, std::strerror(errno));
    return false;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    *error = fmt::format("fork: {}", std::strerror(errno));
    close(log_fd);
    return false;
  }
  if (pid == 0) {
    // Die with the benchmark, whatever kills it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    // The benchmark's sockets must not leak into the server.
    close_range(3, ~0U, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "exec %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(log_fd);
  pid_ = pid;
  g_child.store(pid);
  return true;
}

bool ServerProcess::Exited() {
  if (attached_) return false;
  if (pid_ <= 0) return true;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = status;
    pid_ = -1;
    g_child.store(-1);
    return true;
  }
  return false;
}

bool ServerProcess::Alive(std::string* why) {
  if (!Exited()) return true;
  *why = "the server " + DescribeExit(exit_status_);
  return false;
}

bool ServerProcess::WaitReady(Loop& loop, std::string* error) {
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  HttpConn conn(loop.ioc(), http_);
  bool connected = false;
  std::string last = "no answer";
  while (Clock::now() < deadline) {
    if (Exited()) {
      *error = "the server " + DescribeExit(exit_status_) + " during start";
      return false;
    }
    if (!connected || conn.failed()) connected = conn.Connect(&last);
    if (connected) {
      // First a leader, then a write that commits: a fresh leader may still
      // be applying its first entries when it reports itself.
      OwnedResponse leader =
          Request(loop, conn, "GET", "/v1/status/leader", {}, std::chrono::seconds(5));
      if (leader.status == 200 && leader.body.size() > 2) {
        OwnedResponse probe =
            Request(loop, conn, "PUT", "/v1/kv/bench/ready", "1", std::chrono::seconds(10));
        if (probe.status == 200 && probe.body == "true") return true;
        last = fmt::format("probe write: {} {}", probe.status, probe.body);
      } else {
        last = fmt::format("leader: {} {}", leader.status, leader.body);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  *error = fmt::format("server at {}:{} not ready after 30 s: {}", http_.address().to_string(),
                       http_.port(), last);
  return false;
}

void ServerProcess::Stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    while (!Exited() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
      g_child.store(-1);
    }
  }
  if (!root_.empty() && std::getenv("TENURE_BENCH_KEEP") == nullptr) {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  root_.clear();
}

std::string ServerProcess::LogTail(std::size_t max_bytes) const {
  std::string text = ReadFile(log_path_);
  if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
  return text;
}

long ServerProcess::RssKiB() const {
  if (pid_ <= 0) return -1;
  std::ifstream in(fmt::format("/proc/{}/status", pid_));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

double ServerProcess::CpuSeconds() const {
  return pid_ > 0 ? StatCpuSeconds(fmt::format("/proc/{}/stat", pid_)) : -1;
}

double ServerProcess::MainThreadCpuSeconds() const {
  if (pid_ <= 0) return -1;
  // schedstat's first field is the thread's time on CPU in nanoseconds;
  // /proc/.../stat counts in 10 ms ticks, too coarse for one wake round.
  std::ifstream in(fmt::format("/proc/{}/task/{}/schedstat", pid_, pid_));
  unsigned long long ns = 0;
  if (in >> ns) return static_cast<double>(ns) / 1e9;
  return StatCpuSeconds(fmt::format("/proc/{}/task/{}/stat", pid_, pid_));
}

}  // namespace tenure::bench
