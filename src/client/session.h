// client::Session: a Consul session with a TTL, renewed on the schedule of
// docs/leadership.md, with what the client can prove about its lease.
// libtenure's public tenure::Session (include/tenure/session.h, src/sdk) is a
// handle to one of these on the SDK's own thread; the CLI uses them directly.
//
// LOOP THREAD ONLY: a Session lives on the caller's io_context, run on one
// thread; every member function must be called there (or while the loop is
// not running) and every callback runs there. No locks.
//
// Lifecycle: Create() -> renewals run by themselves -> Destroy(). Renewals go
// every R = TTL/3 (jittered up to 10% early); a renewal that fails with a
// transport error, a timeout or a 500, or is still unanswered after r, is
// retried every r = 1 s (an unanswered attempt keeps waiting alongside). Every
// successful renewal (and the create) feeds Lease::Renewed with the time the
// request was SENT (steady clock), so Guaranteed(window) is the bound of
// docs/leadership.md. A 404 on renew means the server dropped the session:
// the lease is cleared and every OnLost listener runs exactly once.
//
// Destroying the object stops renewals and cancels its requests without
// destroying the server-side session (it then expires by TTL); call Destroy()
// first for a clean exit. REQUIRES: a callback does not destroy the Session
// (post the destruction).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/lease.h"
#include "common/status.h"
#include "common/types.h"
#include "net/http_client.h"

namespace boost::asio {
class io_context;
}

namespace tenure::client {

struct SessionOptions {
  std::string name = "tenure";
  DurationMs ttl_ms = 15'000;        // T; the server's minimum is 10 s
  DurationMs lock_delay_ms = 5'000;  // D
  std::string behavior = "release";  // "release" or "delete"
  // The session's Node: empty = the server's node name, as Consul's agent
  // fills it in. With ACLs, session:write on this name is what creating and
  // renewing the session takes, so a candidate whose sessions carry a node
  // of their own needs no write on anyone else's sessions (docs/acl.md).
  std::string node;
  // Renewal schedule and lease arithmetic. When lease.ttl_ms != ttl_ms the
  // defaults of LeaseOptions::ForTtl(ttl_ms) are used instead.
  LeaseOptions lease = LeaseOptions::ForTtl(15'000);
  // Bound of one renew attempt. The next attempt goes r after an attempt's
  // send unless it succeeded, whether it failed or is still waiting (at most
  // 3 overlap), so an unanswered renewal delays the retry by r, not by this.
  DurationMs renew_timeout_ms = 3'000;
};

// The lease clock in milliseconds (CLOCK_BOOTTIME: monotonic, and counting
// through a suspend): the `now` of Lease and Guaranteed.
MonoMs SteadyNowMs();

class Session {
 public:
  using LostCallback = std::function<void(const Status& why)>;

  // Uses `http`, which must outlive the Session.
  Session(boost::asio::io_context& io, net::HttpClient& http);
  // Owns a net::HttpClient built from `options`.
  Session(boost::asio::io_context& io, net::HttpClientOptions options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // PUT /v1/session/create (pure TTL session, no checks) and start renewing.
  // `done` gets the session id. REQUIRES: not created yet.
  void Create(SessionOptions options, std::function<void(Result<std::string>)> done);

  // Stops renewing and destroys the session on the server (keys it holds are
  // released, or deleted with behavior "delete"). Lost listeners do not run.
  void Destroy(std::function<void(Status)> done);

  // Runs once when the server reports the session gone (404 on renew, or a
  // component such as Election calling NotifyLost). Several may be added;
  // each runs at most once. Added after the loss, it runs at once.
  void OnLost(LostCallback callback);

  // Marks the session lost (lease cleared, listeners run) when another
  // request proved it gone (e.g. `invalid session` on acquire). Idempotent.
  void NotifyLost(const Status& why);

  const std::string& id() const { return id_; }
  bool created() const { return !id_.empty(); }
  bool lost() const { return lost_; }
  // Created, not lost, not destroyed.
  bool alive() const { return created() && !lost_ && !destroyed_; }
  // The lease is provably valid for [now, now + window].
  bool Guaranteed(MonoMs now_ms, DurationMs window_ms) const {
    return lease_.Guaranteed(now_ms, window_ms);
  }
  bool Guaranteed(DurationMs window_ms) const { return Guaranteed(SteadyNowMs(), window_ms); }
  const Lease& lease() const { return lease_; }
  const SessionOptions& options() const { return options_; }
  // Successful renewals so far (the create not counted).
  std::uint64_t renewals() const { return renewals_; }
  boost::asio::io_context& io() { return io_; }
  net::HttpClient& http() { return *http_; }

 private:
  void ScheduleRenew(MonoMs at_ms);
  void Renew();
  void StopRenewing();

  boost::asio::io_context& io_;
  std::unique_ptr<net::HttpClient> owned_http_;
  net::HttpClient* http_;
  struct Timer;
  std::unique_ptr<Timer> timer_;
  std::shared_ptr<char> life_ = std::make_shared<char>(0);
  SessionOptions options_;
  Lease lease_{LeaseOptions::ForTtl(15'000)};
  std::string id_;
  bool lost_ = false;
  bool destroyed_ = false;
  std::uint64_t renewals_ = 0;
  std::uint64_t jitter_state_;
  net::RequestId inflight_ = 0;  // create/destroy in flight, 0 = none (renewals: Timer)
  std::vector<LostCallback> lost_listeners_;
  Status lost_status_;
};

}  // namespace tenure::client
