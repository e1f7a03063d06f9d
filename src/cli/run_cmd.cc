// tenure run NAME [options] -- CMD ARGS...: campaign for service/NAME/leader,
// start CMD (in its own process group, under ChildGroup's keeper) once
// elected, and stop it before the server could expire the session
// (docs/leadership.md, "Losing leadership safely: tenure run").
//
// One io_context on the main thread runs everything: the HTTP client, the
// Session, the Election, the child's status descriptor, the lease timers and
// SIGINT/SIGTERM.
//
// Timeline while CMD runs: a timer fires at the lease's TerminateAtMs()
// (lease end - G); if a renewal moved the lease meanwhile it is simply
// re-armed at the new time, else the group gets SIGTERM and a second timer
// SIGKILLs it at KillAtMs() (or after the kill grace K, whichever is first).
// Loss reported by the Election or the Session does the same at once.
//
// Policy on loss: no re-campaign. The supervisor waits for the group to end,
// destroys its session and exits 1 with "tenure run: lost leadership: ...".
// SIGINT/SIGTERM: the group is stopped the same way, the key released, the
// session destroyed, and the exit code is 130/143. Every exit but a kill
// first deletes the candidate registration (Election::Unregister).
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/candidate_flags.h"
#include "cli/child_exit_watch.h"
#include "cli/child_group.h"
#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/lease_deadlines.h"
#include "client/election.h"
#include "client/lease.h"
#include "client/session.h"
#include "client/settings.h"
#include "common/duration.h"
#include "net/http_client.h"

namespace tenure::cli {
namespace {

namespace asio = boost::asio;

constexpr char kRunUsage[] =
    "Usage: tenure run NAME [options] -- CMD ARGS...\n"
    "\n"
    "  Campaigns for the leadership of election NAME (service/NAME/leader) and runs\n"
    "  CMD only while elected, in its own process group, with TENURE_FENCING_TOKEN,\n"
    "  TENURE_SESSION and TENURE_LEADER_KEY in its environment. CMD gets SIGTERM, then\n"
    "  SIGKILL after a grace, before the server could expire the session; it is\n"
    "  SIGKILLed if this supervisor dies. When CMD exits the key is released, the\n"
    "  candidate's registration deleted, and tenure run exits with CMD's code.\n"
    "  Lost leadership: exit 1 (no re-campaign).\n"
    "  SIGINT/SIGTERM: CMD is stopped, the key released, exit 130/143.\n"
    "\n";

constexpr DurationMs kCleanupTimeoutMs = 10'000;

void Progress(const std::string& text) { PrintErr("tenure run: " + text); }

class Runner {
 public:
  Runner(asio::io_context& io, net::HttpClientOptions http_options,
         client::SessionOptions session_options, ElectionOptions election_options,
         std::string value, std::vector<std::string> command)
      : io_(io),
        http_(io, std::move(http_options)),
        session_(io, http_),
        session_options_(std::move(session_options)),
        election_options_(std::move(election_options)),
        value_(std::move(value)),
        command_(std::move(command)),
        lease_timer_(io),
        kill_timer_(io),
        cleanup_timer_(io),
        signals_(io, SIGINT, SIGTERM) {}

  ~Runner() {
    exit_watch_.Stop();
    election_.reset();
  }

  void Start() {
    signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
      if (!ec) OnSignal(signo);
    });
    session_.Create(session_options_, [this](Result<std::string> id) {
      if (finishing_) return;
      if (!id.ok()) {
        Progress("cannot create a session: " + std::string(id.status().message()));
        Exit(1);
        return;
      }
      session_.OnLost(
          [this](const Status& why) { OnLost("session lost: " + std::string(why.message())); });
      election_ = std::make_unique<client::Election>(session_, election_options_);
      election_->OnLost([this](const Status& why) { OnLost(std::string(why.message())); });
      Progress("campaigning for " + election_->LeaderKey() + " as " + election_options_.candidate +
               " (session " + session_.id() + ")");
      election_->Campaign(value_, [this](Status status) { OnCampaignDone(status); });
    });
  }

  int exit_code() const { return exit_code_; }

 private:
  void OnCampaignDone(const Status& status) {
    if (stop_code_ || finishing_) return;  // a signal or a loss is already handled
    if (!status.ok()) {
      Progress("campaign failed: " + std::string(status.message()));
      Finish(1);
      return;
    }
    const std::uint64_t token = election_->FencingToken();
    Progress("elected with fencing token " + std::to_string(token));
    auto group = ChildGroup::Start(command_, {"TENURE_FENCING_TOKEN=" + std::to_string(token),
                                              "TENURE_SESSION=" + session_.id(),
                                              "TENURE_LEADER_KEY=" + election_->LeaderKey()});
    if (!group.ok()) {
      Progress("cannot start " + command_[0] + ": " + std::string(group.status().message()));
      Finish(1);
      return;
    }
    child_.emplace(std::move(*group));
    WatchChild();
    ArmLeaseTimer();
  }

  void WatchChild() {
    exit_watch_.Start(&*child_, [this](int code) { OnChildExited(code); });
  }

  void OnChildExited(int code) {
    lease_timer_.cancel();
    kill_timer_.cancel();
    Progress("child exited with code " + std::to_string(code));
    Finish(stop_code_ ? *stop_code_ : code);
  }

  // Re-computed each time it fires: renewals only move TerminateAtMs() later.
  void ArmLeaseTimer() {
    if (!child_ || !child_->running() || stop_code_) return;
    const client::Lease& lease = session_.lease();
    const std::optional<DurationMs> next = NextLeaseCheckMs(lease, client::SteadyNowMs());
    if (!next) {
      StopChild(1, lease.held()
                       ? "leadership can no longer be proven (no renewal acknowledged in time)"
                       : "lease no longer held");
      return;
    }
    lease_timer_.expires_after(std::chrono::milliseconds(*next));
    lease_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) ArmLeaseTimer();
    });
  }

  // SIGTERM the group now, SIGKILL after the grace (never later than the
  // lease's KillAtMs while it is held); the exit follows the child's exit.
  void StopChild(int code, const std::string& why) {
    if (stop_code_) return;
    stop_code_ = code;
    lease_timer_.cancel();
    if (code == 1)
      Progress("lost leadership: " + why);
    else
      Progress(why);
    if (!child_ || !child_->running()) {
      Finish(code);
      return;
    }
    child_->Terminate();
    const MonoMs now = client::SteadyNowMs();
    const MonoMs kill_at =
        KillDeadlineMs(session_.lease(), now, session_.options().lease.kill_grace_ms);
    kill_timer_.expires_after(std::chrono::milliseconds(std::max<DurationMs>(0, kill_at - now)));
    kill_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || !child_ || !child_->running()) return;
      Progress("child still running after the grace period: SIGKILL");
      child_->Kill();
    });
  }

  void OnLost(const std::string& why) {
    if (finishing_ || stop_code_) return;
    if (!child_) {
      // Lost while campaigning: the campaign's callback reports the error.
      return;
    }
    StopChild(1, why);
  }

  void OnSignal(int signo) {
    const int code = signo == SIGINT ? 130 : 143;
    if (finishing_ || stop_code_) return;
    // First: Cancel() ends a campaign in progress synchronously, and its
    // callback must see that a signal, not a failure, stopped it.
    StopChild(code, std::string("got ") + (signo == SIGINT ? "SIGINT" : "SIGTERM") + ", stopping");
    if (election_) election_->Cancel();
  }

  // Resign (when holding), unregister, destroy the session, exit with
  // `code`. Bounded by kCleanupTimeoutMs when the server does not answer.
  void Finish(int code) {
    if (finishing_) return;
    finishing_ = true;
    final_code_ = code;
    signals_.cancel();
    cleanup_timer_.expires_after(std::chrono::milliseconds(kCleanupTimeoutMs));
    cleanup_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      Progress("timed out releasing the leadership; the session will expire by TTL");
      Exit(final_code_);
    });
    if (election_ && election_->holding()) {
      election_->Resign([this](Status status) {
        if (!status.ok()) Progress("resign failed: " + std::string(status.message()));
        Unregister();
      });
      return;
    }
    Unregister();
  }

  // Deletes candidates/<candidate>, so that runs under the default name
  // (hostname-pid) leave no key each (docs/cli.md, "tenure run").
  void Unregister() {
    if (!election_) {
      DestroySession();
      return;
    }
    election_->Unregister([this](Status status) {
      if (!status.ok()) {
        Progress("removing the candidate registration failed: " + std::string(status.message()));
      }
      DestroySession();
    });
  }

  void DestroySession() {
    if (!session_.alive()) {
      Exit(final_code_);
      return;
    }
    session_.Destroy([this](Status status) {
      if (!status.ok()) Progress("destroying the session failed: " + std::string(status.message()));
      Exit(final_code_);
    });
  }

  void Exit(int code) {
    if (exited_) return;
    exited_ = true;
    exit_code_ = code;
    finishing_ = true;
    lease_timer_.cancel();
    kill_timer_.cancel();
    cleanup_timer_.cancel();
    signals_.cancel();
    io_.stop();
  }

  asio::io_context& io_;
  net::HttpClient http_;
  client::Session session_;
  client::SessionOptions session_options_;
  ElectionOptions election_options_;
  std::string value_;
  std::vector<std::string> command_;
  std::unique_ptr<client::Election> election_;
  std::optional<ChildGroup> child_;
  ChildExitWatch exit_watch_{io_};
  asio::steady_timer lease_timer_;
  asio::steady_timer kill_timer_;
  asio::steady_timer cleanup_timer_;
  asio::signal_set signals_;
  std::optional<int> stop_code_;  // why the child is being stopped: 1, 130 or 143
  bool finishing_ = false;
  bool exited_ = false;
  int final_code_ = 1;
  int exit_code_ = 1;
};

}  // namespace

int RunCommand(const Args& args) {
  // NAME [options] -- CMD ARGS...; the command starts after the first "--".
  auto dash = std::find(args.begin(), args.end(), std::string("--"));
  Args before(args.begin(), dash);
  std::vector<std::string> command;
  if (dash != args.end()) command.assign(dash + 1, args.end());

  std::string name;
  TakeElectionName(&before, &name);
  CandidateFlags candidate;
  Flags flags("run");
  candidate.Register(&flags);
  if (auto code = ParseFlags(&flags, before, kRunUsage, 2)) return *code;
  if (!FinishElectionName("tenure run", flags, kRunUsage, &name)) return 2;
  if (command.empty()) {
    PrintErr("tenure run: expected \"-- CMD ARGS...\"\n\n" + UsageWithOptions(kRunUsage, flags));
    return 2;
  }
  CandidateSetup setup;
  if (!candidate.Resolve("tenure run", name, &setup)) return 2;

  asio::io_context io;
  int code = 1;
  {
    Runner runner(io, std::move(setup.http), std::move(setup.session), std::move(setup.election),
                  std::move(setup.value), std::move(command));
    runner.Start();
    io.run();
    code = runner.exit_code();
  }
  return code;
}

}  // namespace tenure::cli
