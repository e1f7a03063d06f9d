#include "cli/watch_handler.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

extern char** environ;

namespace tenure::cli {
namespace {

// After a stop signal, how long a handler may take to exit before it is
// killed (consul lock's grace period).
constexpr auto kHandlerGrace = std::chrono::seconds(5);

// Signal state, touched only with async-signal-safe operations.
std::atomic<pid_t> g_handler_pid{0};
volatile sig_atomic_t g_stop = 0;
static_assert(std::atomic<pid_t>::is_always_lock_free);

// A C callback: must not throw. With a handler running, the signal is
// passed on to its process group (so `sh -c` and what it started both get
// it) and the loop ends once the handler has exited; otherwise there is
// nothing to clean up (output is flushed line by line) and _exit is safe.
extern "C" void OnStopSignal(int signal) {
  g_stop = 1;
  pid_t pid = g_handler_pid.load();
  if (pid > 0) {
    kill(-pid, signal);
    return;
  }
  _exit(0);
}

}  // namespace

// No SA_RESTART: the signal must interrupt waitpid so that the grace period
// for a handler that ignores it can start. Nothing else runs while a
// handler does, and without one the signal ends the process.
void InstallStopSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool StopRequested() { return g_stop != 0; }

namespace {

// Environment for the handler: ours plus CONSUL_INDEX, built before fork
// because setenv is not safe between fork and exec.
std::vector<std::string> HandlerEnvironment(std::uint64_t index) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "CONSUL_INDEX=", 13) != 0) env.emplace_back(*entry);
  }
  env.push_back("CONSUL_INDEX=" + std::to_string(index));
  return env;
}

// The stop signal was forwarded: give the handler kHandlerGrace to exit,
// then kill its group. Returns its wait status.
int WaitAfterStop(pid_t pid) {
  auto deadline = std::chrono::steady_clock::now() + kHandlerGrace;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

// Runs the handler to completion with `input` on stdin (an in-memory file,
// so a handler that never reads stdin cannot block us on a full pipe).
// Returns "" on exit status 0, else what went wrong.
std::string RunHandler(const std::vector<std::string>& command, bool shell, std::uint64_t index,
                       const std::string& input) {
  int input_fd = memfd_create("tenure-watch", MFD_CLOEXEC);
  if (input_fd < 0) return std::string("cannot create handler input: ") + std::strerror(errno);
  for (std::size_t done = 0; done < input.size();) {
    ssize_t n = write(input_fd, input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(input_fd);
      return std::string("cannot write handler input: ") + std::strerror(errno);
    }
    done += static_cast<std::size_t>(n);
  }
  lseek(input_fd, 0, SEEK_SET);

  std::string joined;
  for (const std::string& arg : command) joined += (joined.empty() ? "" : " ") + arg;
  std::vector<std::string> args =
      shell ? std::vector<std::string>{"/bin/sh", "-c", joined} : command;
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = HandlerEnvironment(index);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);

  // Signals stay blocked until g_handler_pid is set, so a Ctrl-C in between
  // is forwarded to the handler instead of exiting under it.
  sigset_t stop_signals, previous;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop_signals, &previous);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so signals reach everything it starts
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    dup2(input_fd, STDIN_FILENO);
    execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "Error starting handler: %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int fork_errno = errno;
  if (pid > 0) {
    setpgid(pid, pid);  // as in the child: whichever runs first wins the race
    g_handler_pid.store(pid);
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  close(input_fd);
  if (pid < 0) return std::string("Error starting handler: ") + std::strerror(fork_errno);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) break;
    if (g_stop) {
      status = WaitAfterStop(pid);
      break;
    }
  }
  g_handler_pid.store(0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return std::string("signal: ") + strsignal(WTERMSIG(status));
}

}  // namespace tenure::cli
