#include "raft/forked_snapshot.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace tenure::raft {

namespace {

constexpr int kReadyWaitMs = 1000;

Status Errno(const char* what) {
  return Status::Internal(std::string(what) + ": " + std::strerror(errno));
}

// The child: everything here runs in a copy-on-write image of a process
// that had other threads, so it keeps to system calls and the encoder.
[[noreturn]] void RunChild(pid_t parent, int memfd, int ready_fd,
                           const std::function<void(std::string*)>& encode) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(3);  // the parent died before the line above
  // Only the output and the ready pipe stay open: a socket or file the
  // parent closes from now on must not stay open here.
  const unsigned low = static_cast<unsigned>(std::min(memfd, ready_fd));
  const unsigned high = static_cast<unsigned>(std::max(memfd, ready_fd));
  if (low > 3) ::close_range(3, low - 1, 0);
  if (high > low + 1) ::close_range(low + 1, high - 1, 0);
  ::close_range(high + 1, ~0U, 0);
  sigset_t none;
  sigemptyset(&none);
  ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGALRM, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::alarm(ForkedSnapshot::kChildSecondsMax);
  const char ready = 'r';
  if (::write(ready_fd, &ready, 1) != 1) ::_exit(4);
  ::close(ready_fd);
  std::string bytes;
  encode(&bytes);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(memfd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(5);
    done += static_cast<std::size_t>(n);
  }
  ::_exit(0);
}

}  // namespace

ForkedSnapshot::~ForkedSnapshot() { Finish(); }

Status ForkedSnapshot::Start(const std::function<void(std::string*)>& encode) {
  Finish();
  const auto start = std::chrono::steady_clock::now();
  memfd_ = ::memfd_create("tenure-raft-snapshot", MFD_CLOEXEC);
  if (memfd_ < 0) return Errno("memfd_create");
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    Status why = Errno("pipe2");
    Finish();
    return why;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) RunChild(parent, memfd_, ready[1], encode);
  ::close(ready[1]);
  if (pid < 0) {
    Status why = Errno("fork");
    ::close(ready[0]);
    Finish();
    return why;
  }
  pid_ = pid;
  reaped_ = false;
  // Wait until the child holds no descriptor but its own two.
  struct pollfd p {
    ready[0], POLLIN, 0
  };
  int polled;
  do {
    polled = ::poll(&p, 1, kReadyWaitMs);
  } while (polled < 0 && errno == EINTR);
  char byte = 0;
  const bool is_ready = polled == 1 && ::read(ready[0], &byte, 1) == 1 && byte == 'r';
  ::close(ready[0]);
  if (!is_ready) {
    Abandon();
    (void)Wait();
    Finish();
    return Status::Internal("the snapshot's child process did not start");
  }
  started_at_ = start;
  fork_time_ = std::chrono::steady_clock::now() - start;
  return Status::Ok();
}

Result<std::string_view> ForkedSnapshot::Wait() {
  if (pid_ <= 0) return Status::Internal("no snapshot child is running");
  // Wait without reaping first: until it is reaped the child's pid cannot
  // be reused, so Abandon() on the loop thread never signals a stranger.
  siginfo_t info{};
  int rv;
  do {
    rv = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);
  } while (rv < 0 && errno == EINTR);
  {
    std::lock_guard<std::mutex> lock(reap_mutex_);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  child_time_ = std::chrono::steady_clock::now() - started_at_;
  if (rv < 0) return Errno("waitid");
  if (info.si_code != CLD_EXITED) {
    return Status::Internal("the snapshot's child process was killed by signal " +
                            std::to_string(info.si_status));
  }
  if (info.si_status != 0) {
    return Status::Internal("the snapshot's child process failed (exit " +
                            std::to_string(info.si_status) + ")");
  }
  struct stat st {};
  if (::fstat(memfd_, &st) != 0) return Errno("fstat");
  if (st.st_size <= 0) return Status::Internal("the snapshot's child process wrote nothing");
  map_bytes_ = static_cast<std::size_t>(st.st_size);
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, memfd_, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    return Errno("mmap");
  }
  return std::string_view(static_cast<const char*>(map_), map_bytes_);
}

void ForkedSnapshot::Abandon() {
  std::lock_guard<std::mutex> lock(reap_mutex_);
  if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
}

void ForkedSnapshot::Finish() {
  if (pid_ > 0 && !reaped_) {  // started, never waited for
    Abandon();
    (void)Wait();
  }
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  if (memfd_ >= 0) ::close(memfd_);
  memfd_ = -1;
  pid_ = -1;
  reaped_ = false;
}

}  // namespace tenure::raft
