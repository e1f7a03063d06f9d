// client::ConsulLock (client/lock.h): the steps both kinds share, and the
// lock's (-n 1) acquire. The semaphore's own steps: semaphore.cc.
#include "client/lock.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <utility>

#include "client/blocking_read.h"
#include "client/lock_keys.h"
#include "client/queue.h"
#include "client/response.h"
#include "net/url.h"

namespace tenure::client {

namespace {

constexpr DurationMs kSessionTtlMs = 15'000;  // api.Lock's DefaultLockSessionTTL
constexpr DurationMs kLockDelayMs = 15'000;   // not sent by api.Lock: the server's default
constexpr DurationMs kLockWaitMs = 15'000;    // DefaultLockWaitTime / DefaultSemaphoreWaitTime
constexpr DurationMs kLockRetryMs = 5'000;    // DefaultLockRetryTime (lock-delay guessed)
constexpr DurationMs kRetryMs = 1'000;        // consul lock's monitor retry time
constexpr DurationMs kQueueWaitMs = 300'000;  // wait of each queued acquire (-n 1, fair)
constexpr int kQueueErrorRetries = 5;         // queued acquire: 500s/transport errors in a row

}  // namespace

struct ConsulLock::Timer {
  explicit Timer(boost::asio::io_context& io) : timer(io) {}
  boost::asio::steady_timer timer;
};

ConsulLock::ConsulLock(boost::asio::io_context& io, net::HttpClient& http,
                       ConsulLockOptions options)
    : io_(io),
      http_(http),
      session_(io, http),
      options_(std::move(options)),
      key_(LockKeyOf(options_.prefix)),
      retry_timer_(std::make_unique<Timer>(io)) {}

ConsulLock::~ConsulLock() {
  life_.reset();
  Stop();
}

void ConsulLock::Progress(const std::string& line) const {
  if (options_.progress) options_.progress(line);
}

// Sends one request of the current step; its callback is dropped once a
// later step (or Stop) cancelled it.
void ConsulLock::Send(std::string method, std::string target, std::string body,
                      std::int64_t timeout_ms, net::RetryPolicy retry, Callback done) {
  std::weak_ptr<char> life = life_;
  net::HttpCall call{std::move(method), std::move(target), std::move(body), timeout_ms, retry};
  inflight_ = http_.Request(
      std::move(call), [this, life, done = std::move(done)](Result<net::ClientResponse> result) {
        if (life.expired()) return;
        inflight_ = 0;
        if (!result.ok() && net::IsCancelled(result.status())) return;
        done(std::move(result));
      });
}

void ConsulLock::Stop() {
  acquire_done_ = nullptr;
  lost_ = nullptr;
  if (inflight_ != 0) http_.Cancel(inflight_);
  inflight_ = 0;
  retry_timer_->timer.cancel();
}

void ConsulLock::After(DurationMs delay_ms, std::function<void()> then) {
  std::weak_ptr<char> life = life_;
  retry_timer_->timer.expires_after(std::chrono::milliseconds(delay_ms));
  retry_timer_->timer.async_wait(
      [life, then = std::move(then)](const boost::system::error_code& ec) {
        if (!ec && !life.expired()) then();
      });
}

// The wait of one blocking read or queued acquire: `most_ms`, or what is
// left until the deadline.
DurationMs ConsulLock::WaitLeftMs(DurationMs most_ms) const {
  if (deadline_ms_ == MonoMs()) return most_ms;
  return std::clamp<DurationMs>(deadline_ms_ - SteadyNowMs(), 1, most_ms);
}

// GET of `key` (with `query`), blocking past `index` when it is > 0.
void ConsulLock::Read(const std::string& key, const std::string& query, std::uint64_t index,
                      Callback done) {
  std::string target = "/v1/kv/" + net::EscapeKeyPath(key);
  if (!query.empty()) target += "?" + query;
  BlockingGet read = BlockingRead(std::move(target), index, WaitLeftMs(kLockWaitMs));
  Send("GET", std::move(read.target), "", read.timeout_ms, {}, std::move(done));
}

// --- Acquisition -------------------------------------------------------------

void ConsulLock::Acquire(MonoMs deadline_ms, std::function<void(Result<std::uint64_t>)> done) {
  deadline_ms_ = deadline_ms;
  acquire_done_ = std::move(done);
  SessionOptions session;
  session.name = options_.session_name;
  session.ttl_ms = kSessionTtlMs;
  session.lock_delay_ms = kLockDelayMs;
  // A semaphore's contender keys go with their session (api.Semaphore).
  session.behavior = semaphore() ? "delete" : "release";
  session.lease = LeaseOptions::ForTtl(kSessionTtlMs);
  std::weak_ptr<char> life = life_;
  session_.Create(std::move(session), [this, life](Result<std::string> id) {
    if (life.expired() || !acquire_done_) return;
    if (!id.ok()) {
      AcquireFailed("failed to create session: " + std::string(id.status().message()));
      return;
    }
    session_.OnLost([this, life](const Status& why) {
      if (!life.expired()) SessionLost(why);
    });
    if (semaphore()) {
      Progress("Setting up semaphore (limit " + std::to_string(options_.limit) +
               ") at prefix: " + options_.prefix);
      MakeContender();
    } else {
      Progress("Setting up lock at path: " + key_);
      LockWait(0);
    }
  });
}

void ConsulLock::SessionLost(const Status& why) {
  const std::string text = "session lost: " + std::string(why.message());
  if (acquire_done_) {
    AcquireFailed(text);
  } else if (lost_) {
    auto lost = std::move(lost_);
    Stop();
    lost(text);
  }
}

void ConsulLock::AcquireFailed(const std::string& why) {
  auto done = std::move(acquire_done_);
  Stop();
  if (done) done(Status::Unavailable(why));
}

void ConsulLock::Held(std::uint64_t fence, std::uint64_t index) {
  held_index_ = index;
  auto done = std::move(acquire_done_);
  acquire_done_ = nullptr;
  if (done) done(fence);
}

// Acquire step: one PUT ?acquire of `key` by our session with `flags`. With
// `park_ms` > 0 it is the fair acquire (&queue&wait=park_ms): the answer
// comes once we are granted or the wait is over. Against Consul (or
// -fair-queue=false) the parameter is ignored and the answer is the
// immediate true/false. Errors: kUnavailable for a transport error or a 500
// other than "invalid session" (worth sending again), kFailedPrecondition
// for any other answer.
void ConsulLock::AcquireKey(const std::string& key, std::uint64_t flags, DurationMs park_ms,
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
         answer.fence = FenceOf(*result);
         answer.kept = !answer.granted && !result->Header(kQueuePositionHeader).empty();
         won(answer);
       });
}

// -n 1: api.Lock's loop (7.2, step 3). With `fair` the branch "held by
// another session" sends the queued acquire instead of blocking on the key;
// everything else stays.
void ConsulLock::LockWait(std::uint64_t index) {
  Read(key_, "", index, [this, index](Result<net::ClientResponse> result) {
    auto read = ReadPairs(result, index, "failed to read lock");
    if (!read.ok()) return AcquireFailed(std::string(read.status().message()));
    const KvPair* pair = FindPair(read->pairs, key_);
    if (pair != nullptr && pair->flags != kLockFlagValue) return AcquireFailed(kLockConflict);
    if (pair != nullptr && pair->session == session_.id()) {
      return Held(pair->fence.value_or(0), read->next_index);
    }
    if (options_.fair) return QueuedAcquire();
    if (pair != nullptr && !pair->session.empty()) return LockWait(read->next_index);
    AcquireKey(key_, kLockFlagValue, 0, [this](Result<Acquired> won) {
      if (!won.ok()) {
        return AcquireFailed("failed to acquire lock: " + std::string(won.status().message()));
      }
      if (won->granted) return Held(won->fence, 0);
      Refused();
    });
  });
}

// -n 1, fair: the queued acquire. `true`: held. `false` with the position
// header: the wait ran out and our place is kept, so again at once. A plain
// `false` (Consul, -fair-queue=false, or a server that dequeued us):
// Consul's way. A 500 or a lost connection: again after a second
// (re-enqueueing keeps the place while the session lives).
void ConsulLock::QueuedAcquire() {
  AcquireKey(key_, kLockFlagValue, WaitLeftMs(kQueueWaitMs), [this](Result<Acquired> won) {
    if (!won.ok()) {
      if (won.status().code() == Code::kUnavailable && queue_errors_ < kQueueErrorRetries) {
        ++queue_errors_;
        Progress("Queued acquire failed, again in a second: " +
                 std::string(won.status().message()));
        After(kRetryMs, [this] { QueuedAcquire(); });
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
void ConsulLock::Refused() {
  Read(key_, "", 0, [this](Result<net::ClientResponse> look) {
    auto read = ReadPairs(look, 0, "failed to read lock");
    if (!read.ok()) return AcquireFailed(std::string(read.status().message()));
    const KvPair* holder = FindPair(read->pairs, key_);
    if (holder != nullptr && !holder->session.empty() && holder->session != session_.id()) {
      return LockWait(read->next_index);
    }
    After(kLockRetryMs, [this] { LockWait(0); });
  });
}

// --- Holding -------------------------------------------------------------------

void ConsulLock::Monitor(int retries, std::function<void(const std::string& why)> lost) {
  monitor_retries_ = retries;
  lost_ = std::move(lost);
  MonitorOnce(held_index_);
}

// api.Lock's monitorLock / api.Semaphore's monitorLock: a consistent
// blocking read (the server's default wait) until the lock is not ours.
void ConsulLock::MonitorOnce(std::uint64_t index) {
  if (!lost_) return;
  std::string target = "/v1/kv/" + net::EscapeKeyPath(semaphore() ? Folder() : key_) +
                       (semaphore() ? "?recurse&consistent" : "?consistent");
  BlockingGet get = BlockingRead(std::move(target), index, 0);
  auto lose = [this](const std::string& why) {
    auto lost = std::move(lost_);
    Stop();
    if (lost) lost(why);
  };
  Send("GET", std::move(get.target), "", get.timeout_ms, net::RetryPolicy::None(),
       [this, index, lose](Result<net::ClientResponse> result) {
         // Transport failures and 500s: what api.Lock's monitor retries (7.5).
         if (!result.ok() || result->status == 500) {
           if (monitor_retries_ > 0) {
             --monitor_retries_;
             After(kRetryMs, [this] { MonitorOnce(0); });
             return;
           }
           return lose("monitoring the lock failed: " + ConsulDescribe(result));
         }
         auto read = ReadPairs(result, index, "monitoring the lock failed");
         if (!read.ok()) return lose(std::string(read.status().message()));
         const KvPair* pair = FindPair(read->pairs, key_);
         if (pair == nullptr) return lose(key_ + " was deleted");
         if (semaphore()) {
           auto lock = DecodeSemaphoreLock(pair->Value());
           if (!lock.ok() || lock->holders.count(session_.id()) == 0) {
             return lose("no longer a holder in " + key_);
           }
         } else if (pair->session != session_.id()) {
           return lose(pair->session.empty() ? key_ + " was released"
                                             : key_ + " is held by session " + pair->session);
         }
         MonitorOnce(read->next_index);
       });
}

// --- The end -------------------------------------------------------------------

void ConsulLock::ReleaseIfGranted(std::function<void()> done) {
  if (semaphore() || !session_.alive()) {
    done();
    return;
  }
  Send("PUT",
       "/v1/kv/" + net::EscapeKeyPath(key_) + "?flags=" + std::to_string(kLockFlagValue) +
           "&release=" + net::EscapeQueryValue(session_.id()),
       "", 0, net::RetryPolicy::None(),
       [done = std::move(done)](Result<net::ClientResponse>) { done(); });
}

void ConsulLock::Release(std::function<void(Status)> done) {
  if (semaphore()) {
    ReleaseSlot(0, std::move(done));
    return;
  }
  Send("PUT",
       "/v1/kv/" + net::EscapeKeyPath(key_) + "?flags=" + std::to_string(kLockFlagValue) +
           "&release=" + net::EscapeQueryValue(session_.id()),
       "", 0, {}, [done = std::move(done)](Result<net::ClientResponse> result) {
         if (!result.ok() || result->status != 200) {
           return done(Status::Unavailable(ConsulDescribe(result)));
         }
         done(Status::Ok());
       });
}

void ConsulLock::DestroySession(std::function<void()> done) {
  if (!session_.alive()) {
    done();
    return;
  }
  std::weak_ptr<char> life = life_;
  session_.Destroy([this, life, done = std::move(done)](Status status) {
    if (life.expired()) return;
    if (!status.ok()) Progress("Destroying the session failed: " + std::string(status.message()));
    done();
  });
}

void ConsulLock::Cleanup(std::function<void(Result<bool>)> done) {
  Read(semaphore() ? Folder() : key_, semaphore() ? "recurse" : "", 0,
       [this, done = std::move(done)](Result<net::ClientResponse> result) {
         auto read = ReadPairs(result, 0, "failed to read lock");
         if (!read.ok()) return done(read.status());
         const KvPair* pair = FindPair(read->pairs, key_);
         if (pair == nullptr) return done(true);
         if (!semaphore()) {
           if (pair->flags != kLockFlagValue) return done(Status::Conflict(kLockConflict));
           if (!pair->session.empty()) return done(false);
         } else {
           if (pair->flags != kSemaphoreFlagValue) {
             return done(Status::Conflict(kSemaphoreConflict));
           }
           auto lock = DecodeSemaphoreLock(pair->Value());
           if (!lock.ok()) return done(lock.status());
           PruneHolders(read->pairs, &*lock);
           if (!lock->holders.empty()) return done(false);
         }
         Send("DELETE",
              "/v1/kv/" + net::EscapeKeyPath(key_) + "?cas=" + std::to_string(pair->modify_index),
              "", 0, {}, [done](Result<net::ClientResponse> del) {
                if (!del.ok() || del->status != 200) {
                  return done(Status::Unavailable(ConsulDescribe(del)));
                }
                done(TrimSpace(del->body) == "true");
              });
       });
}

}  // namespace tenure::client
