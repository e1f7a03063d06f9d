// QueueParking: requests parked in a key's fair-acquire queue (PUT
// ?acquire=<session>&queue, decision 0027), answered when an apply grants
// the key to their session or their session leaves the queue without it.
//
// A waiter that no request of its session attends any more (its wait ran
// out, or this server became leader and the old leader's requests were
// answered 500) keeps its place for kUnattendedGraceMs, the time its client
// takes to ask again; then `leave` is called, and the server proposes its
// KvDequeue: the queue keeps no waiter whose client stopped asking (a
// hang-up leaves at once, in the handler).
//
// The outcome is read from the Store after each apply, not from the apply
// results: whoever proposed the entry that granted the key (a release by
// another client, a session's expiry, the leader's KvQueueGrant), the
// parked request sees its session holding the key. Soft state on the server
// that holds the request (the leader: followers forward the whole request).
// Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/types.h"
#include "state/store.h"

namespace boost::asio {
class io_context;
}

namespace tenure::server {

class QueueParking {
 public:
  enum class Outcome : std::uint8_t {
    kGranted,   // the session holds the key (fence: its token)
    kLeft,      // the session is no longer in the key's queue and does not hold it
    kTimedOut,  // the wait ran out; the session keeps its place (position) for the grace
    kFlushed,   // shutdown or leadership lost; the caller answers 500
    kDenied,    // the ACL tables changed and its token no longer allows it
  };
  struct Answer {
    Outcome outcome = Outcome::kGranted;
    LogIndex fence;
    // kTimedOut, kFlushed: the session's place in the key's queue when
    // answered, 1 for the head; 0 if it no longer waits there.
    std::size_t position = 0;
  };
  using Done = std::function<void(Answer)>;
  // Whether the request's token still allows the acquire: asked again after
  // every change of the ACL tables (decision 0038).
  using StillAllowed = std::function<bool()>;
  // Called when an unattended waiter's grace has passed and it still waits.
  using Leave = std::function<void(const std::string& key, const state::SessionId& session)>;

  // How long a waiter keeps its place once no request of its session for
  // the key is parked here. Clients ask again at once after a wait runs out,
  // and within their back-off (1 s by default) after a 500.
  static constexpr DurationMs kUnattendedGraceMs = 10'000;

  // `store` is the server's: a wait that runs out reads the session's place
  // from it. `grace_ms`: kUnattendedGraceMs but in tests.
  QueueParking(boost::asio::io_context& io, const state::Store& store, Leave leave,
               DurationMs grace_ms = kUnattendedGraceMs);
  ~QueueParking();

  // What the Store says now about `session` waiting for `key`: granted,
  // left, or nullopt while it still waits in the queue.
  static std::optional<Answer> Check(const state::Store& store, std::string_view key,
                                     const state::SessionId& session);

  // Parks a request whose session waits in `key`'s queue until Notify finds
  // it granted or gone (or, with `allowed`, denied by a change of the ACL
  // tables), wait_ms passes, or Flush. `done` runs exactly once unless
  // Cancel comes first. Returns the id for Cancel (never 0).
  std::uint64_t Park(std::string key, state::SessionId session, DurationMs wait_ms, Done done,
                     StillAllowed allowed = nullptr);
  // Forgets a parked request without answering (its client hung up). False
  // if it was no longer parked (already answered).
  bool Cancel(std::uint64_t id);
  // How many requests of `session` for `key` are parked here. A hung-up
  // request leaves the queue only when this is 0 after its Cancel.
  std::size_t CountParked(std::string_view key, const state::SessionId& session) const;
  // After applies: answers the parked requests of the keys whose queue
  // changed (every one when the whole state was replaced), and, when the ACL
  // tables changed, those whose token no longer allows them (kDenied).
  void Notify(const state::Store& store, const state::Changes& changes);
  // Answers every parked request with kFlushed and forgets every grace: the
  // next leader starts its own (leadership lost, shutdown).
  void Flush();
  // This server became leader: every waiter in the Store starts its grace
  // now (whatever requests it had were parked on the old leader).
  void StartGraceForAll(const state::Store& store);
  std::size_t size() const { return parked_.size(); }
  // Waiters in their grace (for tests and metrics).
  std::size_t unattended() const { return unattended_.size(); }

 private:
  struct Parked;
  void Finish(std::uint64_t id, Answer answer);
  // The answer when the wait ran out: kTimedOut with the session's place,
  // nothing proposed (the session keeps it).
  Answer TimedOut(const Parked& parked) const;
  // No request of `session` for `key` is parked any more: its grace starts.
  void StartGrace(const std::string& key, const state::SessionId& session);
  void EndGrace(const std::string& key, const state::SessionId& session);

  boost::asio::io_context& io_;
  const state::Store& store_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, std::unique_ptr<Parked>> parked_;
  std::unordered_map<std::string, std::vector<std::uint64_t>> by_key_;
  Leave leave_;
  DurationMs grace_ms_;
  struct Grace;
  std::map<std::pair<std::string, state::SessionId>, std::unique_ptr<Grace>> unattended_;
};

}  // namespace tenure::server
