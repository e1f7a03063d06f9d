// client::ConsulLock: Consul's lock and semaphore protocol (api.Lock and
// api.Semaphore, docs/consul-api.md 7.2, 7.3) over the KV and session API,
// with Consul's keys, flag values and holders document (client/lock_keys.h),
// so that `tenure lock` (its one user, src/cli/lock_cmd.cc) and `consul lock`
// contend on one prefix, against tenure or against Consul (decision 0030).
//
// A limit of 1 is a lock on <prefix>/.lock; above 1 a semaphore: contender
// keys <prefix>/<session> and the holders document in <prefix>/.lock. The
// session it creates has a TTL of 15 s and behavior "release" (a lock) or
// "delete" (a semaphore's contender keys go with it), as api.Lock's.
//
// The steps, each driven by the caller: Acquire, then Monitor while held,
// then Stop and Release, DestroySession, Cleanup (api.Lock's Unlock and
// Destroy); or, when an acquire is given up, Stop, ReleaseIfGranted and
// DestroySession. Error texts are Consul's where Consul has one.
//
// LOOP THREAD ONLY: every call and callback on the io_context's thread. One
// request in flight at a time. Destroying the object cancels it (no callback
// runs afterwards); it releases nothing on the server.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/kv_pair.h"
#include "client/session.h"
#include "common/status.h"
#include "common/types.h"
#include "net/http_client.h"

namespace boost::asio {
class io_context;
}

namespace tenure::client {

struct ConsulLockOptions {
  std::string prefix;  // without leading or trailing '/' (CleanPrefix)
  int limit = 1;       // 1: a lock; above: a semaphore with that many slots
  // A lock waits in the key's FIFO queue (docs/leadership.md, "The queue");
  // against a server without it (Consul), or false: Consul's blocking reads.
  bool fair = true;
  std::string session_name;
  // The steps as they happen ("Setting up lock at path: ..."): the lines of
  // `tenure lock -verbose`. May be empty.
  std::function<void(const std::string&)> progress;
};

class ConsulLock {
 public:
  using Callback = std::function<void(Result<net::ClientResponse>)>;

  // Sends through `http`, which must outlive the lock.
  ConsulLock(boost::asio::io_context& io, net::HttpClient& http, ConsulLockOptions options);
  ~ConsulLock();
  ConsulLock(const ConsulLock&) = delete;
  ConsulLock& operator=(const ConsulLock&) = delete;

  // Creates the session, then waits until the lock (or a slot) is held.
  // Each wait ends by `deadline_ms` (SteadyNowMs; 0: none); giving up at the
  // deadline is the caller's (Stop). `done` runs once, unless Stop comes
  // first: the fencing token (0 for a semaphore and on a server without
  // tokens), or why it failed (Consul lock's words after "Lock acquisition
  // failed: "), a lost session included.
  void Acquire(MonoMs deadline_ms, std::function<void(Result<std::uint64_t>)> done);

  // While held: api.Lock's monitor, consistent blocking reads until the lock
  // is not ours. Transport errors and 500s are retried `retries` times, a
  // second apart. `lost` runs with why when the lock is gone, or the session.
  void Monitor(int retries, std::function<void(const std::string& why)> lost);

  // Stops the acquire or the monitor: the request in flight is cancelled
  // and their callbacks do not run.
  void Stop();

  // An acquire given up: a lock's acquire cancelled in flight may have been
  // granted, so the key is released (a harmless false otherwise); released
  // first, it gets no lock-delay from the session's destroy. `done` always.
  void ReleaseIfGranted(std::function<void()> done);
  // api.Lock's Unlock (PUT ?release with the lock's flags) or api.Semaphore's
  // Release (ourselves out of the holders by CAS, then our contender key
  // deleted). Errors: why (after "Lock release failed: ").
  void Release(std::function<void(Status)> done);
  // Destroys the session if it is alive; a failure is a progress line.
  void DestroySession(std::function<void()> done);
  // api.Lock's / api.Semaphore's Destroy: deletes <prefix>/.lock when nobody
  // holds it. True when deleted, false when in use. Errors: why (after
  // "Lock cleanup failed: ").
  void Cleanup(std::function<void(Result<bool>)> done);

  bool semaphore() const { return options_.limit > 1; }
  const std::string& key() const { return key_; }  // <prefix>/.lock
  const Session& session() const { return session_; }

 private:
  // The answer of one acquire: granted (with the fencing token, 0 when the
  // server has none, as Consul), or refused; `kept` when the refusal carries
  // X-Tenure-Queue-Position (a queued acquire whose wait ran out, still in
  // the queue).
  struct Acquired {
    bool granted = false;
    std::uint64_t fence = 0;
    bool kept = false;
  };

  void Send(std::string method, std::string target, std::string body, std::int64_t timeout_ms,
            net::RetryPolicy retry, Callback done);
  void After(DurationMs delay_ms, std::function<void()> then);
  DurationMs WaitLeftMs(DurationMs most_ms) const;
  void Read(const std::string& key, const std::string& query, std::uint64_t index, Callback done);
  void AcquireKey(const std::string& key, std::uint64_t flags, DurationMs park_ms,
                  std::function<void(Result<Acquired>)> won);
  void Progress(const std::string& line) const;
  void Held(std::uint64_t fence, std::uint64_t index);
  void AcquireFailed(const std::string& why);
  void SessionLost(const Status& why);
  void MonitorOnce(std::uint64_t index);
  // -n 1 (lock.cc).
  void LockWait(std::uint64_t index);
  void QueuedAcquire();
  void Refused();
  // -n N (semaphore.cc).
  std::string ContenderKey() const;
  std::string Folder() const;
  void MakeContender();
  void SemaphoreWait(std::uint64_t index);
  void ReleaseSlot(int attempt, std::function<void(Status)> done);
  void DeleteContender(std::function<void(Status)> done);

  boost::asio::io_context& io_;
  net::HttpClient& http_;
  Session session_;
  ConsulLockOptions options_;
  std::string key_;
  struct Timer;
  std::unique_ptr<Timer> retry_timer_;
  std::shared_ptr<char> life_ = std::make_shared<char>(0);
  net::RequestId inflight_ = 0;
  MonoMs deadline_ms_;
  std::function<void(Result<std::uint64_t>)> acquire_done_;  // set while acquiring
  std::function<void(const std::string&)> lost_;             // set while monitoring
  std::uint64_t held_index_ = 0;                             // the index the monitor starts from
  int monitor_retries_ = 0;
  int queue_errors_ = 0;  // queued acquires failed in a row
};

}  // namespace tenure::client
