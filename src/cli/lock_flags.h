// `tenure lock`'s arguments (docs/cli.md, "tenure lock"): its flags, with
// consul lock's values and texts for bad usage, and what two of them turn
// into: -shell, the child's argv, and -name's default, consul lock's session
// name. The lock's protocol itself is client::ConsulLock (client/lock.h).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/client_support.h"
#include "cli/commands.h"
#include "common/types.h"

namespace tenure::cli {

struct LockOptions {
  std::string prefix;
  int limit = 1;
  DurationMs timeout_ms = 0;  // > 0: try for this long only (LockTryOnce)
  int monitor_retries = 3;
  bool shell = true;
  bool pass_stdin = false;
  bool verbose = false;
  bool child_exit_code = false;
  bool fair = true;  // -n 1: wait in the key's FIFO queue (docs/leadership.md, "The queue")
  std::string session_name;
  std::vector<std::string> command;
};

// Parses args into `options` and `http` (flags, then PREFIX and CMD...).
// nullopt: go on; else the exit code: 0 after -h, 1 after bad usage (its
// text printed, Consul's where Consul has one).
std::optional<int> ParseLockArgs(const Args& args, LockOptions* options, HttpFlags* http);

// The child's argv: with `shell`, {$SHELL or /bin/sh, "-c", args joined by
// spaces} (consul lock's -shell); without, the arguments as given.
std::vector<std::string> ChildArgv(const std::vector<std::string>& args, bool shell,
                                   const char* shell_env);

// consul lock's default session name: Consul lock for '<args>' at '<prefix>',
// cut to `max_bytes` (the server's limit on a session's Name).
std::string DefaultSessionName(const std::vector<std::string>& args, std::string_view prefix,
                               std::size_t max_bytes);

}  // namespace tenure::cli
