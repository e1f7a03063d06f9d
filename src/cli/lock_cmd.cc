// tenure lock [options] PREFIX CMD...: consul lock's command (docs/cli.md,
// "tenure lock"; docs/consul-api.md 8.1). Holds a lock on PREFIX (-n 1) or a
// slot of a semaphore on it (-n N), runs CMD only while it holds it, and
// releases it when CMD exits. The protocol, Consul's api.Lock and
// api.Semaphore over the KV and session API, is client::ConsulLock
// (client/lock.h); this file parses the flags, supervises CMD and prints.
//
// One io_context on the main thread runs everything: the HTTP client, the
// Session (renewals), the child's status descriptor, the timers and
// SIGINT/SIGTERM. CMD runs under a ChildGroup (its own process group, killed
// if this supervisor dies), as tenure run's does.
//
// Lost lock (the monitor's blocking read shows another holder or no key, the
// session is gone, or the lease can no longer be proven, as tenure run
// judges it): CMD gets SIGTERM, then SIGKILL 5 s later (sooner if the lease
// would run out first); then the lock is released and cleaned up.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/child_exit_watch.h"
#include "cli/child_group.h"
#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/lease_deadlines.h"
#include "cli/lock_flags.h"
#include "client/lock.h"
#include "client/response.h"
#include "client/session.h"
#include "client/settings.h"
#include "common/strings.h"
#include "net/http_client.h"

namespace tenure::cli {
namespace {

namespace asio = boost::asio;

constexpr char kAcquireGaveUp[] = "Shutdown triggered or timeout during lock acquisition";

constexpr DurationMs kKillGraceMs = 5'000;        // consul lock: SIGTERM, SIGKILL 5 s later
constexpr DurationMs kCleanupTimeoutMs = 20'000;  // release + destroy + clean-up, bounded

// One `tenure lock` run: the agent check, then client::ConsulLock's steps,
// the child while the lock is held, and the texts and exit codes of
// consul lock.
class Locker {
 public:
  Locker(asio::io_context& io, net::HttpClientOptions http_options, LockOptions options)
      : io_(io),
        http_(io, std::move(http_options)),
        options_(std::move(options)),
        lock_(io, http_, LockOptionsOf(options_)),
        deadline_timer_(io),
        lease_timer_(io),
        kill_timer_(io),
        cleanup_timer_(io),
        signals_(io, SIGINT, SIGTERM) {}

  ~Locker() { exit_watch_.Stop(); }

  void Start() {
    signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
      if (!ec) OnSignal(signo);
    });
    // consul lock asks its agent first, and stops on an agent it cannot reach.
    agent_req_ = http_.Request(
        {"GET", "/v1/agent/self", "", 0, {}}, [this](Result<net::ClientResponse> result) {
          agent_req_ = 0;
          if (!result.ok() && net::IsCancelled(result.status())) return;
          if (!result.ok() || result->status != 200) {
            PrintErr("Error querying Consul agent: " + client::ConsulDescribe(result));
            Exit(1);
            return;
          }
          Verbose("Attempting lock acquisition");
          MonoMs deadline_ms;
          if (options_.timeout_ms > 0) {
            deadline_ms = client::SteadyNowMs() + options_.timeout_ms;
            deadline_timer_.expires_after(std::chrono::milliseconds(options_.timeout_ms));
            deadline_timer_.async_wait([this](const boost::system::error_code& ec) {
              if (!ec) GiveUp();
            });
          }
          lock_.Acquire(deadline_ms, [this](Result<std::uint64_t> fence) {
            if (!fence.ok()) return AcquireFailed(std::string(fence.status().message()));
            Held(*fence);
          });
        });
  }

  int exit_code() const { return exit_code_; }

 private:
  client::ConsulLockOptions LockOptionsOf(const LockOptions& options) {
    client::ConsulLockOptions lock;
    lock.prefix = options.prefix;
    lock.limit = options.limit;
    lock.fair = options.fair;
    lock.session_name = options.session_name;
    lock.progress = [this](const std::string& line) { Verbose(line); };
    return lock;
  }

  void Verbose(const std::string& text) {
    if (options_.verbose) PrintOut(text);
  }

  // Ends the request or step in flight; its callback does not run.
  void CancelInflight() {
    lock_.Stop();
    if (agent_req_ != 0) http_.Cancel(agent_req_);
    agent_req_ = 0;
  }

  // --- Acquisition ---

  void AcquireFailed(const std::string& why) {
    if (phase_ != Phase::kAcquiring) return;
    PrintErr("Lock acquisition failed: " + why);
    Finish(1, /*held=*/false);
  }

  // -timeout ran out, or SIGINT/SIGTERM, before the lock was held.
  void GiveUp() {
    if (phase_ != Phase::kAcquiring) return;
    PrintErr(kAcquireGaveUp);
    Finish(1, /*held=*/false);
  }

  // --- Holding: the child and the monitor ---

  void Held(std::uint64_t fence) {
    if (phase_ != Phase::kAcquiring) return;
    phase_ = Phase::kHolding;
    deadline_timer_.cancel();
    const std::string& session = lock_.session().id();
    std::vector<std::string> env = {"CONSUL_LOCK_HELD=true", "TENURE_SESSION=" + session,
                                    "TENURE_LOCK_KEY=" + lock_.key()};
    if (!lock_.semaphore() && fence != 0) {
      env.push_back("TENURE_FENCING_TOKEN=" + std::to_string(fence));
    }
    Verbose("Starting handler");
    auto group = ChildGroup::Start(
        ChildArgv(options_.command, options_.shell, std::getenv("SHELL")), env, "tenure lock");
    if (!group.ok()) {
      PrintErr("Error starting handler: " + std::string(group.status().message()));
      child_failed_ = true;
      Finish(1, /*held=*/true);
      return;
    }
    child_.emplace(std::move(*group));
    WatchChild();
    ArmLeaseTimer();
    if (phase_ != Phase::kHolding) return;  // the lease already ran out
    lock_.Monitor(options_.monitor_retries, [this](const std::string& why) { LockLost(why); });
  }

  void WatchChild() {
    exit_watch_.Start(&*child_, [this](int code) { OnChildExited(code); });
  }

  void OnChildExited(int code) {
    lease_timer_.cancel();
    kill_timer_.cancel();
    if (code != 0) child_failed_ = true;
    Verbose("Child terminated, releasing lock");
    Finish(0, /*held=*/true);
  }

  // As tenure run: SIGTERM the child once the lease can no longer be proven
  // for the guarantee window, before any server could expire the session.
  void ArmLeaseTimer() {
    if (phase_ != Phase::kHolding) return;
    const std::optional<DurationMs> next =
        NextLeaseCheckMs(lock_.session().lease(), client::SteadyNowMs());
    if (!next) {
      LockLost("the session's lease can no longer be proven (no renewal acknowledged in time)");
      return;
    }
    lease_timer_.expires_after(std::chrono::milliseconds(*next));
    lease_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) ArmLeaseTimer();
    });
  }

  void LockLost(const std::string& why) {
    if (phase_ != Phase::kHolding) return;
    PrintErr("tenure lock: lock lost: " + why);
    Verbose("Lock lost, killing child");
    StopChild();
  }

  void OnSignal(int signo) {
    if (phase_ == Phase::kAcquiring) {
      GiveUp();
      return;
    }
    if (phase_ == Phase::kHolding) {
      Verbose("Shutdown triggered, killing child");
      StopChild();
    }
    // A second signal while stopping: keep going, the kill timer bounds it.
    signals_.async_wait([this](const boost::system::error_code& ec, int next) {
      if (!ec) OnSignal(next);
    });
    (void)signo;
  }

  // SIGTERM the child's group now, SIGKILL after 5 s (never later than the
  // lease's KillAtMs while it is held); Finish follows the child's exit.
  void StopChild() {
    phase_ = Phase::kStopping;
    CancelInflight();
    lease_timer_.cancel();
    if (!child_ || !child_->running()) {
      Finish(0, /*held=*/true);
      return;
    }
    Verbose("Terminating child pid " + std::to_string(child_->pgid()));
    child_->Terminate();
    const MonoMs now = client::SteadyNowMs();
    const MonoMs kill_at = KillDeadlineMs(lock_.session().lease(), now, kKillGraceMs);
    kill_timer_.expires_after(std::chrono::milliseconds(std::max<DurationMs>(0, kill_at - now)));
    kill_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || !child_ || !child_->running()) return;
      Verbose("Child still running after the grace period: SIGKILL");
      child_->Kill();
    });
  }

  // --- The end: release, destroy the session, clean up ---

  void Finish(int code, bool held) {
    if (phase_ == Phase::kFinishing || phase_ == Phase::kDone) return;
    phase_ = Phase::kFinishing;
    final_code_ = code;
    CancelInflight();
    deadline_timer_.cancel();
    lease_timer_.cancel();
    signals_.cancel();
    cleanup_timer_.expires_after(std::chrono::milliseconds(kCleanupTimeoutMs));
    cleanup_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      PrintErr("Lock release failed: timed out; the session will expire by TTL");
      Exit(1);
    });
    if (!held) {
      lock_.ReleaseIfGranted([this] { lock_.DestroySession([this] { Exit(final_code_); }); });
      return;
    }
    if (!lock_.session().alive()) return Cleanup();
    lock_.Release([this](Status status) {
      if (!status.ok()) return ReleaseFailed(std::string(status.message()));
      lock_.DestroySession([this] { Cleanup(); });
    });
  }

  void ReleaseFailed(const std::string& why) {
    PrintErr("Lock release failed: " + why);
    final_code_ = 1;
    lock_.DestroySession([this] { Exit(1); });
  }

  void Cleanup() {
    lock_.Cleanup([this](Result<bool> deleted) {
      if (!deleted.ok()) {
        PrintErr("Lock cleanup failed: " + std::string(deleted.status().message()));
        return Exit(1);
      }
      Verbose(*deleted ? "Cleanup succeeded" : "Cleanup aborted, lock in use");
      Exit(final_code_ == 0 && child_failed_ && options_.child_exit_code ? 2 : final_code_);
    });
  }

  void Exit(int code) {
    if (phase_ == Phase::kDone) return;
    phase_ = Phase::kDone;
    exit_code_ = code;
    CancelInflight();
    deadline_timer_.cancel();
    lease_timer_.cancel();
    kill_timer_.cancel();
    cleanup_timer_.cancel();
    signals_.cancel();
    io_.stop();
  }

  enum class Phase { kAcquiring, kHolding, kStopping, kFinishing, kDone };

  asio::io_context& io_;
  net::HttpClient http_;
  LockOptions options_;
  client::ConsulLock lock_;
  Phase phase_ = Phase::kAcquiring;
  net::RequestId agent_req_ = 0;
  std::optional<ChildGroup> child_;
  ChildExitWatch exit_watch_{io_};
  asio::steady_timer deadline_timer_;
  asio::steady_timer lease_timer_;
  asio::steady_timer kill_timer_;
  asio::steady_timer cleanup_timer_;
  asio::signal_set signals_;
  bool child_failed_ = false;
  int final_code_ = 1;
  int exit_code_ = 1;
};

}  // namespace

int LockCommand(const Args& args) {
  LockOptions options;
  HttpFlags http;
  if (auto code = ParseLockArgs(args, &options, &http)) return *code;

  net::HttpClientOptions http_options;
  http_options.addresses = SplitNonEmpty(http.http_addr, ',');
  if (http_options.addresses.empty()) {
    http_options.addresses = SplitNonEmpty(client::ResolveHttpAddress(""), ',');
  }
  Status resolved = http.Resolve(&http_options);
  if (resolved.ok()) resolved = net::HttpClient::Check(http_options);
  if (!resolved.ok()) {
    PrintErr("Error querying Consul agent: " + std::string(resolved.message()));
    return 1;
  }
  if (!options.pass_stdin) {
    // consul lock gives its child no stdin; ours inherits this process's.
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDIN_FILENO);
      ::close(null_fd);
    }
  }

  asio::io_context io;
  int code = 1;
  {
    Locker locker(io, std::move(http_options), std::move(options));
    locker.Start();
    io.run();
    code = locker.exit_code();
  }
  return code;
}

}  // namespace tenure::cli
