// ServerProcess: starts one `tenure server` for one benchmark run, on free
// loopback ports with a fresh temporary data dir, waits until it leads and
// accepts writes, samples its RSS and CPU time, and stops it.
//
// A fresh server per run keeps runs independent: no raft log, sessions or
// allocator state carried over from the previous workload. Only the PID this
// class started is ever signalled.
#pragma once

#include <sys/types.h>

#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <utility>  // before Boost: asio/awaitable.hpp uses std::exchange
#include <vector>

#include "loop.h"

namespace tenure::bench {

class ServerProcess {
 public:
  ServerProcess(std::string binary, std::string data_parent);
  ~ServerProcess();  // Stop()
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Spawns the server and waits until it is leader and a probe write
  // succeeds. Retries a few times with other ports (another process may take
  // a port between our probe and the server's bind).
  bool Start(Loop& loop, std::string* error);
  // Instead of Start: uses a server someone else runs at http_addr
  // ("IP:PORT", tenure_bench --addr), e.g. the leader of a cluster. Waits
  // until it names a leader and commits a probe write, like Start. Nothing is
  // spawned, signalled or removed: Stop() leaves it running, Alive() is
  // always true, and RSS and CPU read as unknown (-1).
  bool Attach(Loop& loop, const std::string& http_addr, std::string* error);
  // SIGTERM, then SIGKILL after 10 s; removes the temporary directory.
  void Stop();

  // False once the server has exited; *why then says how (status or signal).
  bool Alive(std::string* why);

  pid_t pid() const { return pid_; }
  asio::ip::tcp::endpoint http_endpoint() const { return http_; }
  const std::string& data_dir() const { return data_dir_; }
  std::string LogTail(std::size_t max_bytes = 2000) const;

  // VmRSS of the server from /proc/<pid>/status, in KiB; -1 if unreadable.
  long RssKiB() const;
  // User + system CPU seconds the server has used so far, all threads; -1
  // if unreadable.
  double CpuSeconds() const;
  // The same for the main thread alone: tenure's HTTP, raft and state
  // machine all run on it, so near 100 % means the server is CPU-bound.
  double MainThreadCpuSeconds() const;

 private:
  bool SpawnOnce(std::string* error);
  bool WaitReady(Loop& loop, std::string* error);
  bool Exited();  // reaps the child if it has exited

  std::string binary_;
  std::string data_parent_;
  std::string root_;      // temporary directory: data/ and server.log
  std::string data_dir_;  // root_/data
  std::string log_path_;  // root_/server.log
  asio::ip::tcp::endpoint http_;
  pid_t pid_ = -1;
  int exit_status_ = 0;
  bool attached_ = false;  // Attach(): not our process
};

// CPU seconds (user + system) this process has used so far.
double SelfCpuSeconds();

}  // namespace tenure::bench
