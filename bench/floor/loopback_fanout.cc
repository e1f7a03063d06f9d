// loopback_fanout: the floor under the watch fan-out target (docs/benchmarks.md): how
// long this machine's kernel takes to deliver one small answer to each of N
// loopback TCP connections, with no server logic at all. tenure answers a
// blocking query on one connection per watcher (as Consul's clients open
// them), so the time from a write to the last watcher's answer can be no
// shorter than this.
//
//   loopback_fanout [--conns N] [--bytes B] [--rounds R] [--threads T]
//
// The receiving side is a child process (its own descriptor table, so N may
// come close to the descriptor limit on each side) that connects N sockets
// and waits with epoll; the parent accepts them, then each round writes B
// bytes to every socket from T threads (each its share, in order) and the
// child reports when the last byte of the round arrived. Both read
// CLOCK_MONOTONIC, which is one clock for both processes. Printed per round:
// the senders' time (first send to last send returned) and the time to the
// last arrival; then the medians. One JSON line at the end.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

std::int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "loopback_fanout: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

bool ReadAll(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

void WriteAll(int fd, const void* buf, std::size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t put = write(fd, p, n);
    if (put <= 0) Die("pipe write");
    p += put;
    n -= static_cast<std::size_t>(put);
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The child: N connections, then per round the time the last one's bytes
// arrived, written to `report` (the round begins when `go` says so).
[[noreturn]] void Receive(int port, int conns, int bytes, int rounds, int go, int report) {
  std::vector<int> fds;
  int ep = epoll_create1(0);
  if (ep < 0) Die("epoll_create1");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < conns; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) Die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS)
      Die("connect");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(fds.size());
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) Die("epoll_ctl");
    fds.push_back(fd);
  }
  std::vector<int> got(fds.size());
  std::vector<epoll_event> events(1024);
  std::vector<char> buf(static_cast<std::size_t>(bytes) + 1);
  for (int r = 0; r < rounds; ++r) {
    char token;
    if (!ReadAll(go, &token, 1)) _exit(1);
    std::fill(got.begin(), got.end(), 0);
    int complete = 0;
    std::int64_t last = 0;
    while (complete < conns) {
      int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10'000);
      if (n <= 0) _exit(2);  // nothing for 10 s: the parent died
      for (int i = 0; i < n; ++i) {
        std::uint32_t at = events[static_cast<std::size_t>(i)].data.u32;
        ssize_t k = read(fds[at], buf.data(), buf.size());
        if (k <= 0) continue;
        got[at] += static_cast<int>(k);
        if (got[at] == bytes) {
          ++complete;
          last = NowNs();
        }
      }
    }
    WriteAll(report, &last, sizeof last);
  }
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  int conns = 9000, bytes = 400, rounds = 10, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string_view flag = argv[i];
    int value = std::atoi(argv[i + 1]);
    if (flag == "--conns")
      conns = value;
    else if (flag == "--bytes")
      bytes = value;
    else if (flag == "--rounds")
      rounds = value;
    else if (flag == "--threads")
      threads = value;
    else {
      std::fprintf(stderr,
                   "usage: loopback_fanout [--conns N] [--bytes B] [--rounds R] [--threads T]\n");
      return 2;
    }
  }
  if (conns < 1 || bytes < 1 || rounds < 1 || threads < 1 || (argc % 2) != 1) {
    std::fprintf(stderr, "loopback_fanout: every value must be a positive number\n");
    return 2;
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  if (static_cast<rlim_t>(conns) + 64 > lim.rlim_cur) {
    std::fprintf(stderr, "loopback_fanout: --conns %d exceeds the descriptor limit %llu\n", conns,
                 static_cast<unsigned long long>(lim.rlim_cur));
    return 2;
  }

  int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) Die("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) Die("bind");
  if (listen(listener, 4096) != 0) Die("listen");
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  int go[2], report[2];
  if (pipe(go) != 0 || pipe(report) != 0) Die("pipe");
  pid_t child = fork();
  if (child < 0) Die("fork");
  if (child == 0) {
    close(listener);
    Receive(ntohs(addr.sin_port), conns, bytes, rounds, go[0], report[1]);
  }
  std::vector<int> fds;
  for (int i = 0; i < conns; ++i) {
    int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) Die("accept");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fds.push_back(fd);
  }
  const std::string payload(static_cast<std::size_t>(bytes), 'x');
  std::vector<double> send_ms, last_ms;
  for (int r = 0; r < rounds; ++r) {
    WriteAll(go[1], "g", 1);
    usleep(20'000);  // the child is back in epoll_wait before the round starts
    std::int64_t start = NowNs();
    std::vector<std::thread> senders;
    for (int t = 0; t < threads; ++t) {
      senders.emplace_back([&, t] {
        for (std::size_t i = static_cast<std::size_t>(t); i < fds.size();
             i += static_cast<std::size_t>(threads)) {
          if (send(fds[i], payload.data(), payload.size(), MSG_NOSIGNAL) !=
              static_cast<ssize_t>(payload.size()))
            Die("send");
        }
      });
    }
    for (auto& s : senders) s.join();
    std::int64_t sent = NowNs();
    std::int64_t last = 0;
    if (!ReadAll(report[0], &last, sizeof last)) Die("the receiver stopped");
    send_ms.push_back(static_cast<double>(sent - start) / 1e6);
    last_ms.push_back(static_cast<double>(last - start) / 1e6);
    std::printf("round %d: senders %.2f ms, last arrival %.2f ms\n", r + 1, send_ms.back(),
                last_ms.back());
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "loopback_fanout: the receiver failed (status %d)\n", status);
    return 1;
  }
  std::printf(
      "{\"conns\":%d,\"bytes\":%d,\"rounds\":%d,\"threads\":%d,\"send_median_ms\":%.2f,"
      "\"last_median_ms\":%.2f}\n",
      conns, bytes, rounds, threads, Median(send_ms), Median(last_ms));
  return 0;
}
