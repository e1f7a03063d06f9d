// tenure::Election: leader election over a tenure::Session, with the keys,
// contract and arithmetic of docs/leadership.md.
//
// Keys (ElectionOptions::prefix defaults to "service/"):
//   <prefix><name>/leader                  the lock; value = the leader's description
//   <prefix><name>/candidates/<candidate>  this candidate's registration, locked by its session
//   <prefix><name>/settings/<key>          leader settings
// An Election's first campaign deletes the registrations in its election
// whose sessions have ended (their candidates died; decision 0043).
//
// Leadership: IsLeader() is true only while this election holds the key per
// its latest observation AND the session's lease is proven for the guarantee
// window. While holding, a blocking watch on the key notices a release, a
// delete or the loss of the session: leadership ends at once and the OnLost
// listeners run (once per grant). Resign() does not run them.
//
// The fencing token of a grant is the raft index of the entry that granted
// it, larger than every earlier grant's (docs/fencing.md): pass it with every
// write to the resource the leader protects, which refuses older tokens.
//
// Threading and lifetime: see tenure/client.h. Destroying an Election stops
// its campaign and watches and releases nothing on the server: Resign() first
// to hand over at once. REQUIRES: the Election was made from a Session that is
// still alive (an Election of a destroyed Session fails every call).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tenure/export.h"
#include "tenure/options.h"
#include "tenure/session.h"
#include "tenure/status.h"

namespace tenure {

class TENURE_EXPORT Election {
 public:
  using LostCallback = std::function<void(const Status& why)>;

  Election(Session& session, ElectionOptions options);
  ~Election();
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;

  // Campaigns until this election leads: registers candidates/<candidate>,
  // then acquires the leader key with `value` (the leader's description),
  // waiting with blocking queries while another session holds it and backing
  // off while it is free but in lock-delay. Blocks until OK (leading; read
  // FencingToken()) or an error: the session was lost (a campaign never
  // outlives its session) or is not created, Cancel(), the candidate name is
  // registered by another session, a campaign is already in progress, or
  // kPermissionDenied (the server's 403 text) when the client's token may not
  // write the election's keys (ACLs).
  Status Campaign(std::string value);
  // The same without blocking: `done` runs once, on the client's thread.
  void Campaign(std::string value, std::function<void(Status)> done);
  // One acquire attempt, no waiting: true when this election now leads.
  Result<bool> TryOnce(std::string value);
  // Stops a campaign in progress (it ends with an error now) and Observe's
  // watch. Leadership, if held, stays.
  void Cancel();

  // Releases the key (no lock-delay applies to a release): another candidate
  // can take it at once. IsLeader() is false from the call on.
  // kFailedPrecondition when not leading.
  Status Resign();
  void Resign(std::function<void(Status)> done);

  // Leading now and the lease proven for the session's guarantee window
  // (SessionOptions::guarantee_ms), or for `window_ms`.
  bool IsLeader() const;
  bool IsLeader(std::int64_t window_ms) const;
  // The fencing token of the current grant; 0 when not holding the key.
  std::uint64_t FencingToken() const;
  // The leader key as last observed (the grant of a campaign, or Observe's watch).
  LeaderInfo Leader() const;

  // Reports every change of the leader key (holder, value, fence, deletion,
  // "no leader"), the current state first, on the client's thread. One
  // observer; a new call replaces it.
  void Observe(std::function<void(const LeaderInfo&)> callback);
  // Runs on the client's thread each time leadership is lost without
  // Resign(): the key was released or deleted by someone else, or the
  // session was lost. Several may be added; they stay for later grants.
  void OnLost(LostCallback callback);

  // Leader settings: writes the whole map in ONE transaction guarded by this
  // grant's fencing token (an empty value deletes its key). kFailedPrecondition
  // "not the leader: ..." when this election does not hold the key.
  Status SetSettings(Settings settings);
  // Reads every setting in one request.
  Result<Settings> GetSettings();

  // <prefix><name>/leader
  std::string LeaderKey() const;
  const ElectionOptions& options() const { return options_; }

 private:
  std::shared_ptr<sdk::Core> core_;
  std::uint64_t handle_ = 0;
  ElectionOptions options_;
};

}  // namespace tenure
