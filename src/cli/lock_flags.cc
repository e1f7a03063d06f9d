#include "cli/lock_flags.h"

#include <functional>

#include "cli/flags.h"
#include "client/lock_keys.h"
#include "common/duration.h"
#include "common/limits.h"

namespace tenure::cli {

namespace {

constexpr char kLockUsage[] =
    "Usage: tenure lock [options] PREFIX CMD...\n"
    "\n"
    "  Acquires a lock (or, with -n above 1, a semaphore slot) on PREFIX and runs CMD\n"
    "  while it is held, as `consul lock` does and with its keys, so both contend on\n"
    "  one prefix. CMD gets CONSUL_LOCK_HELD=true, TENURE_SESSION, TENURE_LOCK_KEY and,\n"
    "  for a lock (-n 1) on a tenure server, TENURE_FENCING_TOKEN. If the lock is lost\n"
    "  or this command gets SIGINT/SIGTERM, CMD gets SIGTERM, then SIGKILL 5 s later.\n"
    "  When CMD exits the lock is released. Exit 0 (2 with -child-exit-code when CMD\n"
    "  failed); 1 when the lock could not be acquired or released.\n"
    "\n";

// A Go int flag: negative values parse, so that they get consul lock's
// messages rather than a parse error.
std::function<Status(const std::string&)> SignedInt(int* target) {
  return [target](const std::string& value) -> Status {
    std::string_view digits = value;
    const bool negative = !digits.empty() && digits.front() == '-';
    if (negative) digits.remove_prefix(1);
    bool ok = !digits.empty() && digits.size() <= 9;
    for (char c : digits) ok = ok && c >= '0' && c <= '9';
    if (!ok) return Status::InvalidArgument("parse error");  // Go's text
    int parsed = 0;
    for (char c : digits) parsed = parsed * 10 + (c - '0');
    *target = negative ? -parsed : parsed;
    return Status::Ok();
  };
}

}  // namespace

std::vector<std::string> ChildArgv(const std::vector<std::string>& args, bool shell,
                                   const char* shell_env) {
  if (!shell) return args;
  std::string script;
  for (const std::string& arg : args) {
    if (!script.empty()) script += ' ';
    script += arg;
  }
  std::string sh = shell_env != nullptr && shell_env[0] != '\0' ? shell_env : "/bin/sh";
  return {sh, "-c", script};
}

std::string DefaultSessionName(const std::vector<std::string>& args, std::string_view prefix,
                               std::size_t max_bytes) {
  std::string script;
  for (const std::string& arg : args) {
    if (!script.empty()) script += ' ';
    script += arg;
  }
  std::string name = "Consul lock for '" + script + "' at '" + std::string(prefix) + "'";
  if (name.size() > max_bytes) {
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    name.resize(cut);  // never half a UTF-8 character
  }
  return name;
}

std::optional<int> ParseLockArgs(const Args& args, LockOptions* options_out, HttpFlags* http_out) {
  LockOptions& options = *options_out;
  HttpFlags& http = *http_out;
  std::string timeout;
  std::string try_timeout;
  Flags flags("lock");
  http.Register(&flags);
  flags.Func("n", SignedInt(&options.limit),
             "how many may hold the lock at once (default 1; above 1 a semaphore on PREFIX, as "
             "consul lock -n)");
  flags.String("timeout", &timeout,
               "give up acquiring after this long (a duration; default 0: wait forever)");
  flags.String("try", &try_timeout, "the old name of -timeout");
  flags.Func("monitor-retry", SignedInt(&options.monitor_retries),
             "retries, a second apart, when monitoring the lock fails with a 500 or a transport "
             "error (default 3)");
  flags.String("name", &options.session_name,
               "the session's name (default \"Consul lock for '<CMD>' at '<PREFIX>'\")");
  flags.Bool("shell", &options.shell,
             "run CMD with $SHELL -c (default true; /bin/sh when $SHELL "
             "is unset)");
  flags.Bool("pass-stdin", &options.pass_stdin, "give CMD this command's stdin (default: none)");
  flags.Bool("verbose", &options.verbose, "print what the lock does, on stdout");
  flags.Bool("fair", &options.fair,
             "-n 1: wait in the key's FIFO queue, so contenders run in arrival order (default "
             "true; false, or a server without the queue: Consul's blocking reads). -n N: "
             "always Consul's semaphore");
  flags.Bool("child-exit-code", &options.child_exit_code,
             "exit 2 when CMD failed (default: exit 0 once the lock is released)");
  if (auto code = ParseFlags(&flags, args, kLockUsage, 1)) return *code;

  const auto& rest = flags.positional();
  if (rest.size() < 2 || client::CleanPrefix(rest[0]).empty()) {
    PrintErr("Key prefix and child command must be specified");
    return 1;
  }
  options.prefix = client::CleanPrefix(rest[0]);
  options.command.assign(rest.begin() + 1, rest.end());
  if (timeout.empty()) timeout = try_timeout;
  if (!timeout.empty()) {
    auto ns = ParseGoDuration(timeout);
    if (!ns.ok()) {
      PrintErr("invalid value \"" + timeout +
               "\" for flag -timeout: " + std::string(ns.status().message()));
      return 1;
    }
    if (*ns < 0) {
      PrintErr("Timeout must be positive");
      return 1;
    }
    options.timeout_ms = (*ns + kNsPerMs - 1) / kNsPerMs;
  }
  if (options.limit <= 0) {
    PrintErr("Lock holder limit must be positive");
    return 1;
  }
  if (options.monitor_retries < 0) {
    PrintErr("Number for 'monitor-retry' must be >= 0");
    return 1;
  }
  if (options.session_name.empty()) {
    options.session_name =
        DefaultSessionName(options.command, options.prefix, limits::kSessionNameBytesMax);
  } else if (options.session_name.size() > limits::kSessionNameBytesMax) {
    PrintErr("-name is longer than " + std::to_string(limits::kSessionNameBytesMax) + " bytes");
    return 1;
  }
  return std::nullopt;
}

}  // namespace tenure::cli
