// tenure lock [options] PREFIX CMD...: consul lock's command (docs/cli.md,
// "tenure lock"; docs/consul-api.md 8.1). Holds a lock on PREFIX (-n 1: the
// key PREFIX/.lock, as Consul's api.Lock) or a slot of a semaphore on it
// (-n N: contender keys PREFIX/<session> and the holders document in
// PREFIX/.lock, as Consul's api.Semaphore), runs CMD only while it holds it,
// and releases it when CMD exits. Only the KV and session API is used, with
// Consul's keys, flags and documents, so tenure lock and consul lock contend
// on one prefix, against tenure or against Consul.
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
#include "cli/lock_protocol.h"
#include "client/kv_pair.h"
#include "client/lease.h"
#include "client/queue.h"
#include "client/session.h"
#include "client/settings.h"
#include "common/duration.h"
#include "common/limits.h"
#include "common/strings.h"
#include "net/http_client.h"
#include "net/url.h"

namespace tenure::cli {
namespace {

namespace asio = boost::asio;

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

constexpr char kAcquireGaveUp[] = "Shutdown triggered or timeout during lock acquisition";

constexpr MonoMs kSessionTtlMs = 15'000;      // api.Lock's DefaultLockSessionTTL
constexpr MonoMs kLockDelayMs = 15'000;       // not sent by api.Lock: the server's default
constexpr MonoMs kLockWaitMs = 15'000;        // DefaultLockWaitTime / DefaultSemaphoreWaitTime
constexpr MonoMs kLockRetryMs = 5'000;        // DefaultLockRetryTime (lock-delay guessed)
constexpr MonoMs kMonitorRetryMs = 1'000;     // consul lock's monitor retry time
constexpr MonoMs kKillGraceMs = 5'000;        // consul lock: SIGTERM, SIGKILL 5 s later
constexpr MonoMs kCleanupTimeoutMs = 20'000;  // release + destroy + clean-up, bounded
constexpr int kReleaseCasAttempts = 50;       // semaphore release: CAS retries
constexpr MonoMs kQueueWaitMs = 300'000;      // wait of each queued acquire (-n 1, -fair)
constexpr int kQueueErrorRetries = 5;         // queued acquire: 500s/transport errors in a row

struct LockOptions {
  std::string prefix;
  int limit = 1;
  MonoMs timeout_ms = 0;  // > 0: try for this long only (LockTryOnce)
  int monitor_retries = 3;
  bool shell = true;
  bool pass_stdin = false;
  bool verbose = false;
  bool child_exit_code = false;
  bool fair = true;  // -n 1: wait in the key's FIFO queue (docs/leadership.md, "The queue")
  std::string session_name;
  std::vector<std::string> command;
};

std::uint64_t ParseIndex(const std::string& text) {
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::string Describe(const Result<net::ClientResponse>& result) {
  if (!result.ok()) return std::string(result.status().message());
  return UnexpectedResponse(*result);
}

// Transport failures and 500s: what api.Lock's monitor retries (7.5).
bool Retryable(const Result<net::ClientResponse>& result) {
  return !result.ok() || result->status == 500;
}

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

class Locker {
 public:
  Locker(asio::io_context& io, net::HttpClientOptions http_options, LockOptions options)
      : io_(io),
        http_(io, std::move(http_options)),
        session_(io, http_),
        options_(std::move(options)),
        key_(LockKeyOf(options_.prefix)),
        retry_timer_(io),
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
    Send("GET", "/v1/agent/self", "", 0, {}, [this](Result<net::ClientResponse> result) {
      if (!result.ok() || result->status != 200) {
        PrintErr("Error querying Consul agent: " + Describe(result));
        Exit(1);
        return;
      }
      Verbose("Attempting lock acquisition");
      if (options_.timeout_ms > 0) {
        deadline_at_ = client::SteadyNowMs() + options_.timeout_ms;
        deadline_timer_.expires_after(std::chrono::milliseconds(options_.timeout_ms));
        deadline_timer_.async_wait([this](const boost::system::error_code& ec) {
          if (!ec) GiveUp();
        });
      }
      CreateSession();
    });
  }

  int exit_code() const { return exit_code_; }

 private:
  bool semaphore() const { return options_.limit > 1; }
  std::string ContenderKey() const { return options_.prefix + "/" + session_.id(); }
  // What a semaphore lists: "<prefix>/", so that "jobs" never sees "jobs2/..."
  // (its keys are all <prefix>/.lock and <prefix>/<session>).
  std::string Folder() const { return options_.prefix + "/"; }

  void Verbose(const std::string& text) {
    if (options_.verbose) PrintOut(text);
  }

  // Sends one request of the current step; its callback is dropped once a
  // later step (or the end) cancelled it.
  void Send(std::string method, std::string target, std::string body, std::int64_t timeout_ms,
            net::RetryPolicy retry, std::function<void(Result<net::ClientResponse>)> done) {
    net::HttpCall call{std::move(method), std::move(target), std::move(body), timeout_ms, retry};
    inflight_ = http_.Request(std::move(call),
                              [this, done = std::move(done)](Result<net::ClientResponse> result) {
                                inflight_ = 0;
                                if (!result.ok() && net::IsCancelled(result.status())) return;
                                done(std::move(result));
                              });
  }

  void CancelInflight() {
    if (inflight_ != 0) http_.Cancel(inflight_);
    inflight_ = 0;
    retry_timer_.cancel();
  }

  void After(MonoMs delay_ms, std::function<void()> then) {
    retry_timer_.expires_after(std::chrono::milliseconds(delay_ms));
    retry_timer_.async_wait([then = std::move(then)](const boost::system::error_code& ec) {
      if (!ec) then();
    });
  }

  // The wait of one blocking read: 15 s, or what is left of -timeout.
  MonoMs ReadWaitMs() const {
    if (deadline_at_ == 0) return kLockWaitMs;
    return std::clamp<MonoMs>(deadline_at_ - client::SteadyNowMs(), 1, kLockWaitMs);
  }

  // GET of `key` (with `query`), blocking past `index` when it is > 0.
  void Read(const std::string& key, const std::string& query, std::uint64_t index,
            std::function<void(Result<net::ClientResponse>)> done) {
    std::string target = "/v1/kv/" + net::EscapeKeyPath(key);
    std::string params = query;
    std::int64_t timeout = 0;
    if (index > 0) {
      const MonoMs wait = ReadWaitMs();
      params += (params.empty() ? "" : "&") + std::string("index=") + std::to_string(index) +
                "&wait=" + std::to_string(wait) + "ms";
      timeout = wait + wait / 16 + 5'000;
    }
    if (!params.empty()) target += "?" + params;
    Send("GET", std::move(target), "", timeout, {}, std::move(done));
  }

  // The pairs of a read's answer (404: none). An error status is an error
  // naming `what`, in api.Lock's words.
  static Result<std::vector<client::KvPair>> Pairs(const Result<net::ClientResponse>& result,
                                                   const std::string& what) {
    if (!result.ok())
      return Status::Unavailable(what + ": " + std::string(result.status().message()));
    if (result->status == 404) return std::vector<client::KvPair>{};
    if (result->status != 200)
      return Status::Unavailable(what + ": " + UnexpectedResponse(*result));
    auto pairs = client::ParseKvPairs(result->body);
    if (!pairs.ok()) return Status::Corruption(what + ": " + std::string(pairs.status().message()));
    return pairs;
  }

  static const client::KvPair* Find(const std::vector<client::KvPair>& pairs,
                                    const std::string& key) {
    for (const client::KvPair& pair : pairs) {
      if (pair.key == key) return &pair;
    }
    return nullptr;
  }

  // --- Acquisition ---

  void CreateSession() {
    client::SessionOptions session;
    session.name = options_.session_name;
    session.ttl_ms = kSessionTtlMs;
    session.lock_delay_ms = kLockDelayMs;
    // A semaphore's contender keys go with their session (api.Semaphore).
    session.behavior = semaphore() ? "delete" : "release";
    session.lease = client::LeaseOptions::ForTtl(kSessionTtlMs);
    session_.Create(std::move(session), [this](Result<std::string> id) {
      if (phase_ != Phase::kAcquiring) return;
      if (!id.ok()) {
        AcquireFailed("failed to create session: " + std::string(id.status().message()));
        return;
      }
      session_.OnLost([this](const Status& why) {
        if (phase_ == Phase::kAcquiring) {
          AcquireFailed("session lost: " + std::string(why.message()));
        } else {
          LockLost("session lost: " + std::string(why.message()));
        }
      });
      if (semaphore()) {
        Verbose("Setting up semaphore (limit " + std::to_string(options_.limit) +
                ") at prefix: " + options_.prefix);
        MakeContender();
      } else {
        Verbose("Setting up lock at path: " + key_);
        LockWait(0);
      }
    });
  }

  // The wait of one queued acquire: 5 min, or what is left of -timeout.
  MonoMs QueueWaitMs() const {
    if (deadline_at_ == 0) return kQueueWaitMs;
    return std::clamp<MonoMs>(deadline_at_ - client::SteadyNowMs(), 1, kQueueWaitMs);
  }

  // The answer of one acquire: granted (with the fencing token, 0 when the
  // server has none, as Consul), or refused; `kept` when the refusal carries
  // X-Tenure-Queue-Position (a queued acquire whose wait ran out, still in
  // the queue).
  struct Acquired {
    bool granted = false;
    std::uint64_t fence = 0;
    bool kept = false;
  };

  // Acquire step: one PUT ?acquire of `key` by our session with `flags`.
  // With `park_ms` > 0 it is the fair acquire (&queue&wait=park_ms): the
  // answer comes once we are granted or the wait is over. Against Consul (or
  // -fair-queue=false) the parameter is ignored and the answer is the
  // immediate true/false. Errors: kUnavailable for a transport error or a
  // 500 other than "invalid session" (worth sending again), kFailedPrecondition
  // for any other answer.
  void AcquireKey(const std::string& key, std::uint64_t flags, MonoMs park_ms,
                  std::function<void(Result<Acquired>)> won) {
    std::string target = "/v1/kv/" + net::EscapeKeyPath(key) + "?flags=" + std::to_string(flags) +
                         "&acquire=" + net::EscapeQueryValue(session_.id());
    std::int64_t timeout = 0;
    if (park_ms > 0) {
      target += "&queue&wait=" + std::to_string(park_ms) + "ms";
      timeout = park_ms + park_ms / 16 + 5'000;
    }
    Send("PUT", std::move(target), "", timeout, {},
         [won = std::move(won)](Result<net::ClientResponse> result) {
           if (!result.ok()) {
             won(Status::Unavailable(std::string(result.status().message())));
             return;
           }
           if (result->status != 200) {
             const bool again =
                 result->status == 500 && result->body.find("invalid session") == std::string::npos;
             won(again ? Status::Unavailable(UnexpectedResponse(*result))
                       : Status::FailedPrecondition(UnexpectedResponse(*result)));
             return;
           }
           Acquired answer;
           answer.granted = TrimSpace(result->body) == "true";
           answer.fence = ParseIndex(result->Header("X-Tenure-Fence"));
           answer.kept = !answer.granted && !result->Header(client::kQueuePositionHeader).empty();
           won(answer);
         });
  }

  // -n 1: api.Lock's loop (7.2, step 3). With -fair (the default) the branch
  // "held by another session" sends the queued acquire instead of blocking on
  // the key; everything else stays.
  void LockWait(std::uint64_t index) {
    Read(key_, "", index, [this](Result<net::ClientResponse> result) {
      auto pairs = Pairs(result, "failed to read lock");
      if (!pairs.ok()) return AcquireFailed(std::string(pairs.status().message()));
      const std::uint64_t next =
          std::max<std::uint64_t>(1, ParseIndex(result->Header("X-Consul-Index")));
      const client::KvPair* pair = Find(*pairs, key_);
      if (pair != nullptr && pair->flags != kLockFlagValue) return AcquireFailed(kLockConflict);
      if (pair != nullptr && pair->session == session_.id()) {
        return Held(pair->fence.value_or(0), next);
      }
      if (options_.fair) return QueuedAcquire();
      if (pair != nullptr && !pair->session.empty()) return LockWait(next);
      AcquireKey(key_, kLockFlagValue, 0, [this](Result<Acquired> won) {
        if (!won.ok()) {
          return AcquireFailed("failed to acquire lock: " + std::string(won.status().message()));
        }
        if (won->granted) return Held(won->fence, 0);
        Refused();
      });
    });
  }

  // -n 1 with -fair: the queued acquire. `true`: held. `false` with the
  // position header: the wait ran out and our place is kept, so again at
  // once. A plain `false` (Consul, -fair-queue=false, or a server that
  // dequeued us): Consul's way. A 500 or a lost connection: again after a
  // second (re-enqueueing keeps the place while the session lives).
  void QueuedAcquire() {
    AcquireKey(key_, kLockFlagValue, QueueWaitMs(), [this](Result<Acquired> won) {
      if (!won.ok()) {
        if (won.status().code() == Code::kUnavailable && queue_errors_ < kQueueErrorRetries) {
          ++queue_errors_;
          Verbose("Queued acquire failed, again in a second: " +
                  std::string(won.status().message()));
          After(kMonitorRetryMs, [this] { QueuedAcquire(); });
          return;
        }
        return AcquireFailed("failed to acquire lock: " + std::string(won.status().message()));
      }
      queue_errors_ = 0;
      if (won->granted) return Held(won->fence, 0);
      if (won->kept) return QueuedAcquire();
      Refused();
    });
  }

  // Refused: held by someone after all, or in lock-delay.
  void Refused() {
    Read(key_, "", 0, [this](Result<net::ClientResponse> look) {
      auto now = Pairs(look, "failed to read lock");
      if (!now.ok()) return AcquireFailed(std::string(now.status().message()));
      const client::KvPair* holder = Find(*now, key_);
      if (holder != nullptr && !holder->session.empty() && holder->session != session_.id()) {
        return LockWait(std::max<std::uint64_t>(1, ParseIndex(look->Header("X-Consul-Index"))));
      }
      After(kLockRetryMs, [this] { LockWait(0); });
    });
  }

  // -n N: api.Semaphore (7.3). First our contender key.
  void MakeContender() {
    AcquireKey(ContenderKey(), kSemaphoreFlagValue, 0, [this](Result<Acquired> won) {
      if (!won.ok()) {
        return AcquireFailed("failed to make contender entry: " +
                             std::string(won.status().message()));
      }
      if (!won->granted) return AcquireFailed("failed to make contender entry");
      SemaphoreWait(0);
    });
  }

  void SemaphoreWait(std::uint64_t index) {
    Read(Folder(), "recurse", index, [this](Result<net::ClientResponse> result) {
      auto pairs = Pairs(result, "failed to read prefix");
      if (!pairs.ok()) return AcquireFailed(std::string(pairs.status().message()));
      const std::uint64_t next =
          std::max<std::uint64_t>(1, ParseIndex(result->Header("X-Consul-Index")));
      const client::KvPair* lock_pair = Find(*pairs, key_);
      if (lock_pair != nullptr && lock_pair->flags != kSemaphoreFlagValue) {
        return AcquireFailed(kSemaphoreConflict);
      }
      SemaphoreLock lock;
      lock.limit = options_.limit;
      if (lock_pair != nullptr) {
        auto decoded = DecodeSemaphoreLock(lock_pair->Value());
        if (!decoded.ok()) return AcquireFailed(std::string(decoded.status().message()));
        lock = std::move(*decoded);
        if (lock.limit != options_.limit) {
          return AcquireFailed("semaphore limit conflict (lock: " + std::to_string(lock.limit) +
                               ", local: " + std::to_string(options_.limit) + ")");
        }
      }
      PruneHolders(*pairs, &lock);
      if (lock.holders.count(session_.id()) != 0) return Held(0, next);
      if (static_cast<int>(lock.holders.size()) >= lock.limit) return SemaphoreWait(next);
      lock.holders[session_.id()] = true;
      const std::uint64_t cas = lock_pair != nullptr ? lock_pair->modify_index : 0;
      Send("PUT",
           "/v1/kv/" + net::EscapeKeyPath(key_) + "?cas=" + std::to_string(cas) +
               "&flags=" + std::to_string(kSemaphoreFlagValue),
           EncodeSemaphoreLock(lock), 0, {}, [this, next](Result<net::ClientResponse> put) {
             if (!put.ok() || put->status != 200) {
               return AcquireFailed("failed to update lock: " + Describe(put));
             }
             if (TrimSpace(put->body) == "true") return Held(0, 0);
             SemaphoreWait(next);  // someone else wrote first: look again
           });
    });
  }

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

  void Held(std::uint64_t fence, std::uint64_t index) {
    if (phase_ != Phase::kAcquiring) return;
    phase_ = Phase::kHolding;
    deadline_timer_.cancel();
    fence_ = fence;
    std::vector<std::string> env = {"CONSUL_LOCK_HELD=true", "TENURE_SESSION=" + session_.id(),
                                    "TENURE_LOCK_KEY=" + key_};
    if (!semaphore() && fence != 0) env.push_back("TENURE_FENCING_TOKEN=" + std::to_string(fence));
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
    monitor_retries_ = options_.monitor_retries;
    Monitor(index);
  }

  // api.Lock's monitorLock / api.Semaphore's monitorLock: a consistent
  // blocking read (the server's default wait) until the lock is not ours.
  void Monitor(std::uint64_t index) {
    if (phase_ != Phase::kHolding) return;
    std::string target = "/v1/kv/" + net::EscapeKeyPath(semaphore() ? Folder() : key_) +
                         (semaphore() ? "?recurse&consistent" : "?consistent");
    if (index > 0) target += "&index=" + std::to_string(index);
    Send("GET", std::move(target), "", kBlockingReadTimeoutMs, net::RetryPolicy::None(),
         [this](Result<net::ClientResponse> result) {
           if (Retryable(result)) {
             if (monitor_retries_ > 0) {
               --monitor_retries_;
               After(kMonitorRetryMs, [this] { Monitor(0); });
               return;
             }
             return LockLost("monitoring the lock failed: " + Describe(result));
           }
           auto pairs = Pairs(result, "monitoring the lock failed");
           if (!pairs.ok()) return LockLost(std::string(pairs.status().message()));
           const client::KvPair* pair = Find(*pairs, key_);
           if (pair == nullptr) return LockLost(key_ + " was deleted");
           if (semaphore()) {
             auto lock = DecodeSemaphoreLock(pair->Value());
             if (!lock.ok() || lock->holders.count(session_.id()) == 0) {
               return LockLost("no longer a holder in " + key_);
             }
           } else if (pair->session != session_.id()) {
             return LockLost(pair->session.empty() ? key_ + " was released"
                                                   : key_ + " is held by session " + pair->session);
           }
           Monitor(std::max<std::uint64_t>(1, ParseIndex(result->Header("X-Consul-Index"))));
         });
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
    const std::optional<MonoMs> next = NextLeaseCheckMs(session_.lease(), client::SteadyNowMs());
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
    const MonoMs kill_at = KillDeadlineMs(session_.lease(), now, kKillGraceMs);
    kill_timer_.expires_after(std::chrono::milliseconds(std::max<MonoMs>(0, kill_at - now)));
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
    if (!held && !semaphore() && session_.alive()) {
      // Giving up: an acquire cancelled in flight may have been granted.
      // Released first, the key gets no lock-delay from the destroy below
      // (a release of a key we do not hold is a harmless false).
      Send("PUT",
           "/v1/kv/" + net::EscapeKeyPath(key_) + "?flags=" + std::to_string(kLockFlagValue) +
               "&release=" + net::EscapeQueryValue(session_.id()),
           "", 0, net::RetryPolicy::None(),
           [this](Result<net::ClientResponse>) { DestroySession([this] { Exit(final_code_); }); });
      return;
    }
    if (!held || !session_.alive()) {
      DestroySession([this, held] {
        if (held)
          Cleanup();
        else
          Exit(final_code_);
      });
      return;
    }
    Release(0);
  }

  // -n 1: PUT ?release with the lock flag (api.Lock's Unlock). -n N: take
  // ourselves out of the holders (CAS, retried), then delete our contender key.
  void Release(int attempt) {
    if (!semaphore()) {
      Send("PUT",
           "/v1/kv/" + net::EscapeKeyPath(key_) + "?flags=" + std::to_string(kLockFlagValue) +
               "&release=" + net::EscapeQueryValue(session_.id()),
           "", 0, {}, [this](Result<net::ClientResponse> result) {
             if (!result.ok() || result->status != 200) return ReleaseFailed(Describe(result));
             DestroySession([this] { Cleanup(); });
           });
      return;
    }
    Read(key_, "", 0, [this, attempt](Result<net::ClientResponse> result) {
      auto pairs = Pairs(result, "failed to read lock");
      if (!pairs.ok()) return ReleaseFailed(std::string(pairs.status().message()));
      const client::KvPair* pair = Find(*pairs, key_);
      SemaphoreLock lock;
      if (pair != nullptr && pair->flags == kSemaphoreFlagValue) {
        auto decoded = DecodeSemaphoreLock(pair->Value());
        if (decoded.ok()) lock = std::move(*decoded);
      }
      if (pair == nullptr || lock.holders.count(session_.id()) == 0) return DeleteContender();
      lock.holders.erase(session_.id());
      Send("PUT",
           "/v1/kv/" + net::EscapeKeyPath(key_) + "?cas=" + std::to_string(pair->modify_index) +
               "&flags=" + std::to_string(kSemaphoreFlagValue),
           EncodeSemaphoreLock(lock), 0, {}, [this, attempt](Result<net::ClientResponse> put) {
             if (!put.ok() || put->status != 200) return ReleaseFailed(Describe(put));
             if (TrimSpace(put->body) == "true") return DeleteContender();
             if (attempt + 1 >= kReleaseCasAttempts) {
               return ReleaseFailed("the holders document kept changing");
             }
             Release(attempt + 1);
           });
    });
  }

  void DeleteContender() {
    Send("DELETE", "/v1/kv/" + net::EscapeKeyPath(ContenderKey()), "", 0, {},
         [this](Result<net::ClientResponse> result) {
           if (!result.ok() || result->status != 200) return ReleaseFailed(Describe(result));
           DestroySession([this] { Cleanup(); });
         });
  }

  void ReleaseFailed(const std::string& why) {
    PrintErr("Lock release failed: " + why);
    final_code_ = 1;
    DestroySession([this] { Exit(1); });
  }

  void DestroySession(std::function<void()> then) {
    if (!session_.alive()) {
      then();
      return;
    }
    session_.Destroy([this, then = std::move(then)](Status status) {
      if (!status.ok()) {
        Verbose("Destroying the session failed: " + std::string(status.message()));
      }
      then();
    });
  }

  // api.Lock's / api.Semaphore's Destroy: delete the key when nobody uses it.
  void Cleanup() {
    Read(semaphore() ? Folder() : key_, semaphore() ? "recurse" : "", 0,
         [this](Result<net::ClientResponse> result) {
           auto pairs = Pairs(result, "failed to read lock");
           if (!pairs.ok()) return CleanupFailed(std::string(pairs.status().message()));
           const client::KvPair* pair = Find(*pairs, key_);
           if (pair == nullptr) return CleanupDone(true);
           if (!semaphore()) {
             if (pair->flags != kLockFlagValue) return CleanupFailed(kLockConflict);
             if (!pair->session.empty()) return CleanupDone(false);
           } else {
             if (pair->flags != kSemaphoreFlagValue) return CleanupFailed(kSemaphoreConflict);
             auto lock = DecodeSemaphoreLock(pair->Value());
             if (!lock.ok()) return CleanupFailed(std::string(lock.status().message()));
             PruneHolders(*pairs, &*lock);
             if (!lock->holders.empty()) return CleanupDone(false);
           }
           Send("DELETE",
                "/v1/kv/" + net::EscapeKeyPath(key_) + "?cas=" + std::to_string(pair->modify_index),
                "", 0, {}, [this](Result<net::ClientResponse> del) {
                  if (!del.ok() || del->status != 200) return CleanupFailed(Describe(del));
                  CleanupDone(TrimSpace(del->body) == "true");
                });
         });
  }

  void CleanupDone(bool deleted) {
    Verbose(deleted ? "Cleanup succeeded" : "Cleanup aborted, lock in use");
    Exit(final_code_ == 0 && child_failed_ && options_.child_exit_code ? 2 : final_code_);
  }

  void CleanupFailed(const std::string& why) {
    PrintErr("Lock cleanup failed: " + why);
    Exit(1);
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
  client::Session session_;
  LockOptions options_;
  std::string key_;  // <prefix>/.lock
  Phase phase_ = Phase::kAcquiring;
  net::RequestId inflight_ = 0;
  MonoMs deadline_at_ = 0;  // -timeout's end, 0 = none
  int monitor_retries_ = 0;
  int queue_errors_ = 0;  // queued acquires failed in a row
  std::uint64_t fence_ = 0;
  std::optional<ChildGroup> child_;
  ChildExitWatch exit_watch_{io_};
  asio::steady_timer retry_timer_;
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
  if (rest.size() < 2 || CleanPrefix(rest[0]).empty()) {
    PrintErr("Key prefix and child command must be specified");
    return 1;
  }
  options.prefix = CleanPrefix(rest[0]);
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
