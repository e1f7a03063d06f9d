// ForkedSnapshot: a raft snapshot's state encoded by a child process, so
// that the loop thread pays for fork() and nothing else (decision 0049).
//
// Encoding a million keys took 0.5-2.5 s on the 2-core machine, on the loop
// thread, every 16,384 entries: longer than the 500 ms election timeout, so
// a leader with a large state lost its leadership at each log compaction.
// fork() gives the child a copy-on-write image of the state at exactly the
// index libraft snapshots (libraft goes on applying in the parent), the way
// Redis saves in the background; with the server's huge pages it took
// 4-11 ms for a 300 MB process here.
//
// Start() (loop thread) forks a child that keeps only two descriptors (its
// output, an anonymous memory file, and a pipe that tells the parent it has
// closed the rest: until then a socket the parent closes would stay open in
// the child), runs `encode` and writes the bytes to the memory file. Wait()
// (a libuv pool thread) reaps the child and maps its output; Finish() (loop
// thread) unmaps it. Abandon() kills a running child (the server stops).
//
// The child runs only the encoder, which is pure: it allocates (glibc's
// malloc is safe across fork) and takes no other lock. It dies with the
// parent (PR_SET_PDEATHSIG) and after kChildSecondsMax (SIGALRM), so a
// child that cannot finish fails the snapshot, which libraft retries later.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tenure::raft {

class ForkedSnapshot {
 public:
  // A child still encoding after this long is killed (a 64 MiB state takes
  // a few seconds on the 2-core machine).
  static constexpr unsigned kChildSecondsMax = 120;

  ForkedSnapshot() = default;
  ~ForkedSnapshot();
  ForkedSnapshot(const ForkedSnapshot&) = delete;
  ForkedSnapshot& operator=(const ForkedSnapshot&) = delete;

  // Loop thread. Starts a child that runs `encode`; an error (nothing
  // started) when the memory file, the pipe or the fork failed, or the child
  // did not report ready within a second: the caller encodes in place.
  Status Start(const std::function<void(std::string*)>& encode);
  // A pool thread, after a successful Start. The child's bytes, mapped
  // read-only until Finish(); an error when it failed or was killed.
  Result<std::string_view> Wait();
  // Loop thread: unmaps and closes what Start and Wait left, killing and
  // reaping a child never waited for (idempotent).
  void Finish();
  // Loop thread: kills a child still running (Wait then returns an error).
  void Abandon();

  bool started() const { return pid_ > 0 || memfd_ >= 0; }
  // From Start() to the child's exit, as Wait() saw it.
  std::chrono::steady_clock::duration child_time() const { return child_time_; }
  // How long fork() and the child's first steps held the loop thread.
  std::chrono::steady_clock::duration fork_time() const { return fork_time_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;  // under reap_mutex_ once the child runs
  std::mutex reap_mutex_;
  int memfd_ = -1;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::chrono::steady_clock::time_point started_at_;
  std::chrono::steady_clock::duration child_time_{};
  std::chrono::steady_clock::duration fork_time_{};
};

}  // namespace tenure::raft
