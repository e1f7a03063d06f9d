#include "cli/child_group.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

extern char** environ;

namespace tenure::cli {
namespace {

// The keeper's parent-death signal. Not SIGKILL: a keeper killed outright
// would leave the command running. The keeper blocks it, reads it from a
// signalfd and kills the group itself, but only if getppid() shows the
// supervisor process is gone (the signal also fires when merely the thread
// that called Start() exits).
constexpr int kParentDeathSignal = SIGHUP;

// Everything the keeper and the command need, built before fork() so that
// neither allocates afterwards.
struct Plan {
  char* const* argv;
  char* const* envp;
  pid_t supervisor;
  int control_read;
  int status_write;
  int exec_write;   // CLOEXEC; EOF in the supervisor = the command exec'd or died
  const char* who;  // "tenure run": the prefix of the keeper's error lines
};

// --- Async-signal-safe helpers for the forked processes. ---

void WriteAll(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void WriteString(int fd, const char* s) { WriteAll(fd, s, strlen(s)); }

[[noreturn]] void KillGroupAndExit() {
  kill(0, SIGKILL);  // the whole group, this keeper included
  _exit(137);        // not reached
}

// Closes every descriptor except stdio and `keep` (sorted, all > 2).
void CloseAllExcept(const int* keep, int count) {
  unsigned int next = 3;
  for (int i = 0; i < count; ++i) {
    unsigned int fd = static_cast<unsigned int>(keep[i]);
    if (fd > next) close_range(next, fd - 1, 0);
    next = fd + 1;
  }
  close_range(next, ~0U, 0);
}

[[noreturn]] void RunCommand(const Plan& plan) {
  // Inherited from the keeper: all signals blocked, SIGTERM ignored. A
  // SIGTERM that arrived since fork() is still pending (blocked signals are
  // not discarded), so it takes effect when the mask is cleared below.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGTERM, &dfl, nullptr);
  close(plan.control_read);
  close(plan.status_write);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  execvpe(plan.argv[0], plan.argv, plan.envp);
  int err = errno;
  // strerrordesc_np reads a static table: no locale, no allocation.
  const char* desc = strerrordesc_np(err);
  WriteString(STDERR_FILENO, plan.who);
  WriteString(STDERR_FILENO, ": cannot start ");
  WriteString(STDERR_FILENO, plan.argv[0]);
  WriteString(STDERR_FILENO, ": ");
  WriteString(STDERR_FILENO, desc != nullptr ? desc : "unknown error");
  WriteString(STDERR_FILENO, "\n");
  _exit(127);
}

[[noreturn]] void RunKeeper(const Plan& plan) {
  // All signals are blocked (Start() blocked them around fork()), so nothing
  // can hit this process before its dispositions are its own.
  setpgid(0, 0);
  // Drop the supervisor's handlers (they point into code this process must
  // not run) and any SIG_IGN for SIGCHLD, which would break waitpid().
  struct sigaction sa = {};
  sa.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    sigaction(sig, &sa, nullptr);  // fails harmlessly for KILL/STOP
  // The keeper outlives Terminate() to report the command's status.
  sa.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &sa, nullptr);

  prctl(PR_SET_PDEATHSIG, kParentDeathSignal);
  // The supervisor may have died before prctl: then no signal will come.
  if (getppid() != plan.supervisor) KillGroupAndExit();

  int keep[3] = {plan.control_read, plan.status_write, plan.exec_write};
  std::sort(keep, keep + 3);
  CloseAllExcept(keep, 3);

  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, kParentDeathSignal);
  // The mask stays "all blocked": the keeper stops only by SIGKILL or by its
  // own decision, never half-way through by a stray SIGINT.
  int sfd = signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) KillGroupAndExit();  // the supervisor sees EOF without status

  pid_t command = fork();
  if (command == 0) RunCommand(plan);
  if (command < 0) {
    int err = errno;
    const char* desc = strerrordesc_np(err);
    WriteString(STDERR_FILENO, plan.who);
    WriteString(STDERR_FILENO, ": cannot fork: ");
    WriteString(STDERR_FILENO, desc != nullptr ? desc : "unknown error");
    WriteString(STDERR_FILENO, "\n");
    KillGroupAndExit();
  }
  close(plan.exec_write);

  for (;;) {
    int wstatus = 0;
    if (waitpid(command, &wstatus, WNOHANG) == command) {
      WriteAll(plan.status_write, &wstatus, sizeof wstatus);  // < PIPE_BUF: atomic
      // Grandchildren left behind must not go on as unsupervised leaders.
      KillGroupAndExit();
    }
    if (getppid() != plan.supervisor) KillGroupAndExit();
    pollfd fds[2] = {{plan.control_read, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      KillGroupAndExit();
    }
    if (fds[0].revents != 0) {
      char buf[64];
      ssize_t n = read(plan.control_read, buf, sizeof buf);
      // EOF: every write end is closed, so the supervisor is gone (or
      // destroyed the ChildGroup). Any read error is treated the same way.
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) KillGroupAndExit();
    }
    if (fds[1].revents != 0) {
      signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      }
      // SIGCHLD or the death signal: the top of the loop checks both.
    }
  }
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

Status Errno(const char* what) {
  return Status::IoError(std::string("child group: ") + what + ": " + strerror(errno));
}

}  // namespace

Result<ChildGroup> ChildGroup::Start(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& extra_env,
                                     std::string_view who) {
  const std::string who_text(who);
  if (argv.empty()) return Status::InvalidArgument("child group: empty command");
  std::vector<std::string> env;
  for (const std::string& entry : extra_env) {
    if (entry.find('=') == std::string::npos || entry.front() == '=') {
      return Status::InvalidArgument("child group: environment entry \"" + entry + "\" is not K=V");
    }
  }
  // The inherited environment minus the keys extra_env replaces.
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view key = entry.substr(0, entry.find('='));
    bool replaced = std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) {
      return std::string_view(x).substr(0, x.find('=')) == key;
    });
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> args = argv;
  std::vector<char*> argv_ptrs;
  for (std::string& a : args) argv_ptrs.push_back(a.data());
  argv_ptrs.push_back(nullptr);
  std::vector<char*> env_ptrs;
  for (std::string& e : env) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);

  // CLOEXEC everywhere: a process the supervisor spawns elsewhere must not
  // hold the control write end (it would delay the keeper's EOF).
  int control[2], status[2], exec_sync[2];
  if (pipe2(control, O_CLOEXEC) != 0) return Errno("pipe");
  if (pipe2(status, O_CLOEXEC) != 0) {
    Status s = Errno("pipe");
    close(control[0]);
    close(control[1]);
    return s;
  }
  if (pipe2(exec_sync, O_CLOEXEC) != 0) {
    Status s = Errno("pipe");
    for (int fd : {control[0], control[1], status[0], status[1]}) close(fd);
    return s;
  }
  fcntl(status[0], F_SETFL, O_NONBLOCK);

  Plan plan{argv_ptrs.data(), env_ptrs.data(), getpid(),        control[0],
            status[1],        exec_sync[1],    who_text.c_str()};
  // Block every signal across fork(): the keeper starts with no handler able
  // to run and installs its own dispositions first.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t keeper = fork();
  if (keeper == 0) {
    close(control[1]);
    close(status[0]);
    close(exec_sync[0]);
    RunKeeper(plan);
  }
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(control[0]);
  close(status[1]);
  close(exec_sync[1]);
  if (keeper < 0) {
    close(control[1]);
    close(status[0]);
    close(exec_sync[0]);
    errno = fork_errno;
    return Errno("fork");
  }
  // Also from this side, so the group exists whatever the scheduling (fails
  // harmlessly if the keeper already did it or died).
  setpgid(keeper, keeper);
  // Wait for EOF: the command exec'd (or exited, or the keeper died). Then a
  // Terminate() cannot slip in before the command exists.
  char byte;
  while (read(exec_sync[0], &byte, 1) != 0 && errno == EINTR) {
  }
  close(exec_sync[0]);
  return ChildGroup(keeper, control[1], status[0]);
}

ChildGroup::ChildGroup(ChildGroup&& other) noexcept
    : keeper_(std::exchange(other.keeper_, -1)),
      control_fd_(std::exchange(other.control_fd_, -1)),
      status_fd_(std::exchange(other.status_fd_, -1)),
      status_have_(std::exchange(other.status_have_, 0)),
      exit_code_(std::exchange(other.exit_code_, std::nullopt)) {
  std::memcpy(status_bytes_, other.status_bytes_, sizeof status_bytes_);
}

ChildGroup& ChildGroup::operator=(ChildGroup&& other) noexcept {
  if (this != &other) {
    if (running()) KillAndReap();
    CloseFds();
    keeper_ = std::exchange(other.keeper_, -1);
    control_fd_ = std::exchange(other.control_fd_, -1);
    status_fd_ = std::exchange(other.status_fd_, -1);
    status_have_ = std::exchange(other.status_have_, 0);
    exit_code_ = std::exchange(other.exit_code_, std::nullopt);
    std::memcpy(status_bytes_, other.status_bytes_, sizeof status_bytes_);
  }
  return *this;
}

ChildGroup::~ChildGroup() {
  if (running()) KillAndReap();
  CloseFds();
}

void ChildGroup::Terminate() {
  if (running()) kill(-keeper_, SIGTERM);
}

void ChildGroup::Kill() {
  if (running()) kill(-keeper_, SIGKILL);
}

Result<int> ChildGroup::Reap() {
  if (exit_code_.has_value()) return *exit_code_;
  if (keeper_ <= 0) return Status::FailedPrecondition("child group: not started");
  while (status_have_ < sizeof status_bytes_) {
    ssize_t n = read(status_fd_, status_bytes_ + status_have_, sizeof status_bytes_ - status_have_);
    if (n > 0) {
      status_have_ += static_cast<std::size_t>(n);
    } else if (n == 0) {
      break;  // EOF: the keeper is gone
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN) {
      return Status::Unavailable("child group: command still running");
    } else {
      return Errno("read status");
    }
  }
  int code = 128 + SIGKILL;  // the keeper died without a report
  if (status_have_ == sizeof status_bytes_) {
    int wstatus;
    std::memcpy(&wstatus, status_bytes_, sizeof wstatus);
    if (WIFEXITED(wstatus)) {
      code = WEXITSTATUS(wstatus);
    } else if (WIFSIGNALED(wstatus)) {
      code = 128 + WTERMSIG(wstatus);
    }
  }
  // The keeper is killing the group itself; doing it here too also covers a
  // keeper that was SIGKILLed alone and left the command running.
  KillAndReap();
  exit_code_ = code;
  return code;
}

void ChildGroup::KillAndReap() {
  kill(-keeper_, SIGKILL);
  CloseFd(control_fd_);
  while (waitpid(keeper_, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!exit_code_.has_value()) exit_code_ = 128 + SIGKILL;
  CloseFds();
}

void ChildGroup::CloseFds() {
  CloseFd(control_fd_);
  CloseFd(status_fd_);
}

}  // namespace tenure::cli
