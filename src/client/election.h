// client::Election: leader election on service/<name>/leader with the keys,
// contract and arithmetic of docs/leadership.md, over a client::Session.
// libtenure's public tenure::Election (include/tenure/election.h, src/sdk)
// is a handle to one of these on the SDK's own thread.
//
// LOOP THREAD ONLY, like Session: every call and every callback on the
// thread running the session's io_context. No locks.
//
// Keys (prefix defaults to "service/"):
//   <prefix><name>/leader                  the lock; value = the leader's description
//   <prefix><name>/candidates/<candidate>  this candidate's registration, locked by its session
//   <prefix><name>/settings/<key>          leader settings
// An Election's first registration also deletes the registrations no session
// holds any more (their candidates died); Unregister deletes our own.
//
// Leadership: IsLeader(G) is true only while this election holds the key per
// its latest observation AND the session lease is provably valid for G more
// milliseconds. While holding, a blocking watch on the key notices a release,
// a delete or a session invalidation by anyone: leadership ends at once and
// the OnLost listeners run (once per grant). A voluntary Resign/ResignTo does
// not run them. A lost session ends leadership and aborts a campaign.
//
// Destroying the Election cancels its requests and timers (no callback runs
// afterwards); it releases nothing on the server. REQUIRES: the Session
// outlives the Election; a callback does not destroy the Election.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/blocking_read.h"
#include "client/session.h"
#include "common/status.h"
#include "common/types.h"
#include "tenure/options.h"

namespace tenure::client {

// ElectionOptions, LeaderInfo and Settings are libtenure's public ones
// (tenure/options.h).

class Election {
 public:
  using LostCallback = std::function<void(const Status& why)>;

  Election(Session& session, ElectionOptions options);
  ~Election();
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;

  // Blocking campaign: registers candidates/<candidate> (value = description),
  // then acquires the leader key with `value`. With options.fair_queue the
  // acquire waits in the key's queue (a `false` with X-Tenure-Queue-Position
  // kept our place: sent again at once); a plain `false` (Consul) falls back
  // to waiting with blocking queries while another session holds the key and
  // backing off while it is free but in lock-delay. A campaign stopped while
  // queued leaves the queue: it hangs up, sends ?release, and releases a
  // grant that raced the hang-up (the next Campaign waits for that). `done` runs once: OK when this
  // election leads; an error when the session is lost (the campaign never outlives its session), on
  // Cancel(), when the candidate name is held by another session, or
  // (kPermissionDenied, with the server's text) when the token may not
  // write or read the election's keys: a 403 ends the campaign.
  // REQUIRES: the session is created; no campaign in progress.
  void Campaign(std::string value, std::function<void(Status)> done);
  // One acquire attempt, no waiting: true when this election now leads.
  void TryOnce(std::string value, std::function<void(Result<bool>)> done);
  // Stops a campaign in progress (its `done` gets an error now) and the
  // Observe/WatchSettings watches. Leadership, if held, stays.
  void Cancel();
  // Stops a campaign in progress only (its `done` gets an error now); the
  // watches and leadership, if held, stay.
  void StopCampaign();

  // Releases the key (PUT ?release). IsLeader() is false at once.
  void Resign(std::function<void(Status)> done);
  // Deletes this candidate's registration, candidates/<candidate>, when this
  // session or nobody holds it (client/registration.h): for a candidate that
  // stops, before its session is destroyed. OK when there was nothing to delete.
  void Unregister(std::function<void(Status)> done);
  // Releases the key if our session holds it on the server, whatever this
  // object believes (a key handed to us by ResignTo that we do not want).
  void Release(std::function<void(Status)> done);
  // Hands the key to a registered candidate in one transaction:
  // [check-session candidates/<to> S_to, unlock leader S_self, lock leader S_to].
  // IsLeader() is false from when the transaction is sent (the successor may
  // lead before our answer arrives), and true again if it fails. Fails with
  // kFailedPrecondition when this election does not lead, `candidate` is this
  // election's own, or it is not registered with a live session. While
  // candidates wait in the leader key's fair queue, nobody may jump it: only
  // the head can be named (a ?release hands it the key in one entry);
  // anyone else is refused with kFailedPrecondition naming the head.
  void ResignTo(std::string candidate, std::function<void(Status)> done);

  // Reports every change of the leader key (holder, value, fence, deletion,
  // "no leader"), first the current state. One observer; a new call replaces it.
  void Observe(std::function<void(const LeaderInfo&)> callback);
  void OnLost(LostCallback callback);

  // Holding the key per the latest observation AND the lease is guaranteed
  // for window_ms from now (steady clock).
  bool IsLeader(DurationMs window_ms) const;
  bool IsLeader(MonoMs now_ms, DurationMs window_ms) const;
  bool holding() const { return holding_; }
  // A campaign is in progress (Campaign's `done` has not run).
  bool campaigning() const;
  // The fencing token of the current grant; 0 when not holding.
  std::uint64_t FencingToken() const { return holding_ ? fence_ : 0; }
  const LeaderInfo& last_observed() const { return observed_; }

  // Leader settings. SetSettings writes the whole map as ONE txn guarded by
  // check-fence on the leader key (check-session against a server without
  // fencing tokens, such as Consul); an empty value deletes the key. Fails
  // with kFailedPrecondition "not the leader: ..." when this election does
  // not hold the key (or the guard fails on the server).
  void SetSettings(Settings settings, std::function<void(Status)> done);
  // Reads the whole settings prefix in one request.
  void GetSettings(std::function<void(Result<Settings>)> done);
  // Calls back with the current settings, then once per change. One watcher.
  void WatchSettings(std::function<void(const Settings&)> callback);

  std::string LeaderKey() const;
  std::string CandidateKey(const std::string& candidate) const;
  // options().candidate, or the session id when it is empty.
  std::string OwnCandidate() const;
  std::string SettingsPrefix() const;
  const ElectionOptions& options() const { return options_; }

  struct Impl;

 private:
  using ResponseCallback = std::function<void(Result<net::ClientResponse>)>;
  // GET /v1/kv/<key>?<query> blocking past `index` (> 0) for options().wait_ms.
  BlockingGet KvRead(const std::string& key, std::string_view query, std::uint64_t index) const;
  net::RequestId SendAcquire(const std::string& key, bool queued,
                             std::function<void(Result<net::ClientResponse>)> next);
  void HandTo(std::string candidate, std::string candidate_key, LeaderInfo target,
              std::function<void(Status)> done);
  void LeaveQueue(int attempt);
  void EndLeave();
  // Sends a request whose callback is dropped once the Election is gone.
  net::RequestId Send(std::string method, std::string target, std::string body,
                      std::int64_t timeout_ms, net::RetryPolicy retry, ResponseCallback done);
  void After(int timer, DurationMs delay_ms, std::function<void()> then);
  void RegisterCandidate();
  void SweepThenAcquire();
  void AttemptAcquire();
  void CampaignWait(std::uint64_t index);
  void FinishCampaign(Status status);
  void Grant(std::uint64_t fence);
  void Lose(const Status& why);
  void StopLeading();
  void SessionLost(const Status& why);
  void EnsureWatch();
  void WatchOnce();
  void HandleObservation(const LeaderInfo& info, std::uint64_t index);
  void SettingsOnce();

  std::unique_ptr<Impl> impl_;
  Session& session_;
  ElectionOptions options_;
  bool holding_ = false;
  std::uint64_t fence_ = 0;
  LeaderInfo observed_;
  bool handing_over_ = false;  // a ResignTo txn is in flight: no longer claims leadership
};

}  // namespace tenure::client
