// ChildGroup: runs `tenure run`'s command in its own process group under a
// small keeper process, so the supervisor can stop the command together with
// everything it started, and so the command never outlives the supervisor
// (docs/leadership.md, "Losing leadership safely: tenure run"; unlike
// `consul lock`, which killed /bin/sh but not the real child, consul#2022).
//
//   supervisor --fork--> keeper (leads the group, ignores SIGTERM)
//                          --fork--> command (execvp, default signals)
//   control pipe: write end only in the supervisor; the keeper polls the read
//                 end, and EOF means the supervisor is gone.
//   status pipe:  the keeper writes the command's wait status (4 bytes).
//
// Guarantee: every process of the group (keeper, command, and any descendant
// that stays in the group) is SIGKILLed when
//   - the supervisor process dies, by any signal including SIGKILL (control
//     pipe EOF in the keeper; PR_SET_PDEATHSIG plus a getppid() check back it
//     up) -- measured in tests at a few milliseconds;
//   - the command exits (leftover grandchildren must not keep acting as the
//     leader);
//   - Kill() is called or the ChildGroup is destroyed.
// Not covered: a descendant that leaves the group (setsid, setpgid) escapes;
// only a cgroup could follow it. Processes killed after their parent died
// are reaped by init (or a subreaper); under a PID 1 that does not reap they
// stay zombies, which hold no resources and cannot act.
//
// The command inherits only stdin, stdout and stderr (the keeper closes every
// other descriptor, so supervisor sockets and other groups' control pipes do
// not leak into it), the supervisor's environment plus `extra_env`, default
// signal dispositions and an empty signal mask.
//
// Thread rules: Start() is safe in a multi-threaded process: argv/envp are
// built before fork(), and the keeper and the command only make
// async-signal-safe calls. Start() may be called from a thread that exits
// later (a thread's exit fires the keeper's PDEATHSIG, which the keeper
// ignores while getppid() still names the supervisor). One ChildGroup is used
// by one thread at a time. The supervisor must not reap children it does not
// own (waitpid(-1), SIGCHLD set to SIG_IGN): the keeper is reaped by Reap()
// or the destructor.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tenure::cli {

class ChildGroup {
 public:
  // Starts argv (argv[0] searched in PATH) with `extra_env` ("K=V", replacing
  // any inherited K) added to the environment. Returns once the command has
  // been exec'd (or has failed to), so Terminate() right after Start() reaches
  // it. An exec failure is not an error here: the command prints
  // "<who>: cannot start <cmd>: <strerror>" to stderr and Reap() gives
  // 127, as a shell would. Errors: kInvalidArgument (empty argv, env entry
  // without '='), kIoError (pipe or fork failed).
  static Result<ChildGroup> Start(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& extra_env,
                                  std::string_view who = "tenure run");

  ChildGroup(ChildGroup&& other) noexcept;
  ChildGroup& operator=(ChildGroup&& other) noexcept;
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;
  // Kills the group if still running and reaps the keeper: no process, no
  // zombie child, no descriptor is left behind.
  ~ChildGroup();

  // The group id (= the keeper's pid). Stays valid for signalling until
  // Reap() succeeds: the unreaped keeper pins the id against reuse.
  pid_t pgid() const { return keeper_; }

  // SIGTERM to the whole group. The keeper ignores it (it must survive to
  // report the command's status); the command and its children get it.
  // No-op once reaped.
  void Terminate();
  // SIGKILL to the whole group, keeper included. No-op once reaped.
  void Kill();

  // Readable when the command has exited (status available) or the keeper
  // died; then Reap() does not wait for the command.
  int status_fd() const { return status_fd_; }

  // Non-blocking. While the command runs: kUnavailable. Once status_fd() is
  // readable: the exit code in shell convention (exit code, or 128 + signal)
  // after killing what is left of the group, reaping the keeper and closing
  // the descriptors; later calls return the same code. If the keeper died
  // without reporting a status (Kill(), or someone SIGKILLed the keeper) the
  // whole group is SIGKILLed and the code is 128 + SIGKILL = 137.
  Result<int> Reap();

  // True until Reap() has succeeded.
  bool running() const { return keeper_ > 0 && !exit_code_.has_value(); }

 private:
  ChildGroup(pid_t keeper, int control_fd, int status_fd)
      : keeper_(keeper), control_fd_(control_fd), status_fd_(status_fd) {}

  // SIGKILLs the group, then reaps the keeper (in that order: while the
  // keeper is an unreaped zombie its pid, hence the pgid, cannot be reused),
  // then closes the descriptors.
  void KillAndReap();
  void CloseFds();

  pid_t keeper_ = -1;
  int control_fd_ = -1;  // write end; closing it tells the keeper to kill the group
  int status_fd_ = -1;   // read end, non-blocking
  unsigned char status_bytes_[sizeof(int)] = {};
  std::size_t status_have_ = 0;
  std::optional<int> exit_code_;
};

}  // namespace tenure::cli
