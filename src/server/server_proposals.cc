// Server: proposals (every write the leader stamps and hands to raft) and
// session renewals.
#include <fmt/core.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <optional>

#include "common/assert.h"
#include "common/consul_texts.h"
#include "common/log.h"
#include "common/strings.h"
#include "server/server.h"
#include "server/server_timers.h"
#include "state/numbered_session.h"

namespace tenure::server {

void Server::Propose(state::CommandBody body, raft::Consensus::ProposeDone done) {
  // No grant to a session whose expiry is under way (as etcd once made:
  // github.com/etcd-io/etcd/issues/11456), nor in a lock-delay window this
  // leader inherited (decision 0010) or the Store holds at the stamp the
  // command would carry.
  std::optional<OutcomeCounter> counter;
  if (metrics_.enabled) counter.emplace(body);
  const MonoMs now_mono_ms = clock_.NowMonoMs();
  const ClusterMs stamp = duties_.ClusterNow(store_.now_ms(), now_mono_ms, node_->term());
  auto replicated_lock_delay = [this, stamp](std::string_view key) {
    return store_.LockDelayUntil(key) > stamp;
  };
  if (std::optional<state::ApplyResult> refused =
          duties_.RefuseBeforeProposing(body, now_mono_ms, replicated_lock_delay)) {
    if (counter) counter->Count(*refused, /*proposed=*/false, &metrics_);
    // Never complete inside the caller's stack, as raft never does.
    boost::asio::post(io_, [done = std::move(done), refused = std::move(*refused)]() mutable {
      done(std::move(refused));
    });
    return;
  }
  // A queue command on a key this leader's guard still holds grants nothing
  // (decision 0027): the guard's KvQueueGrant does, later.
  duties_.HoldQueueGrant(&body, now_mono_ms);
  state::Command command;
  command.now_ms = stamp;
  command.wall_ms = clock_.NowUnixMs();
  // Session lifetimes drive the leader's timers: what the Store reports it
  // applied arms a created session's timer or drops a destroyed one's.
  const bool touches_sessions = TouchesSessions(body);
  if (counter) {
    // Counted around the proposal (decision 0023): a wrapper only when on.
    ++metrics_.proposals_pending;
    done = [this, alive = std::weak_ptr<bool>(alive_), counter = std::move(*counter),
            start = std::chrono::steady_clock::now(),
            inner = std::move(done)](Result<state::ApplyResult> result) {
      if (!alive.expired() && *alive.lock()) {
        --metrics_.proposals_pending;
        if (result.ok()) metrics_.commit_seconds.ObserveSince(start);
        counter.Count(result, /*proposed=*/true, &metrics_);
      }
      inner(std::move(result));
    };
  }
  const bool restores = std::holds_alternative<state::RestoreState>(body);
  command.body = std::move(body);
  if (restores) {
    // The sessions, lock-delays and ACL tables were replaced: the leader's
    // duties start again from the restored Store, as after a failover
    // (every TTL session gets a full TTL x multiplier from now).
    std::weak_ptr<bool> alive = alive_;
    node_->Propose(command, [this, alive,
                             done = std::move(done)](Result<state::ApplyResult> result) {
      if (!alive.expired() && *alive.lock() && result.ok() && result->status.ok() && IsLeader()) {
        log::Info(
            "server", "snapshot restored; leader duties start again from it",
            {log::Num("index", static_cast<unsigned long long>(store_.applied_index().value())),
             log::Num("sessions", static_cast<unsigned long long>(store_.session_count()))});
        StartLeaderDuties();
      }
      done(std::move(result));
    });
    return;
  }
  if (!touches_sessions) {
    node_->Propose(command, std::move(done));
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  node_->Propose(command, [this, alive, done = std::move(done)](Result<state::ApplyResult> result) {
    if (!alive.expired() && *alive.lock() && result.ok() && result->status.ok()) {
      SessionChange change = SessionChangeOf(*result);
      if (!change.empty()) {
        duties_.OnCommitted(change, clock_.NowMonoMs());
        ScheduleDuties();
      }
    }
    done(std::move(result));
  });
}

void Server::Renew(const state::SessionId& session_id, RenewDone done) {
  const state::Session* session = store_.FindSession(session_id);
  Status renewed = IsLeader() ? duties_.Renew(session_id, session, clock_.NowMonoMs())
                              : consul::NoClusterLeader();
  // Counted where each answer is decided: no wrapper on the hot path.
  const bool count = metrics_.enabled;
  if (!renewed.ok()) {
    if (count) ++metrics_.renewals_failed;
    return done(renewed);
  }
  ScheduleDuties();
  if (node_->SoleVoter()) {  // nobody else can have been elected
    if (count) ++metrics_.renewals;
    return done(session);
  }
  std::weak_ptr<bool> alive = alive_;
  Barrier([this, alive, count, id = session_id, done = std::move(done)](Status status) {
    if (alive.expired() || !*alive.lock()) return done(Status::Unavailable("shutting down"));
    if (status.ok()) {
      const state::Session* current = store_.FindSession(id);
      status = duties_.ConfirmRenewal(id, current);
      if (status.ok()) {
        if (count) ++metrics_.renewals;
        return done(current);
      }
    }
    if (count) ++metrics_.renewals_failed;
    done(status);
  });
}

Status Server::Touch(const state::SessionId& session_id) {
  const state::Session* session = store_.FindSession(session_id);
  Status touched = IsLeader() ? duties_.Renew(session_id, session, clock_.NowMonoMs())
                              : consul::NoClusterLeader();
  if (touched.ok()) ScheduleDuties();
  return touched;
}

bool Server::IsExpiring(const state::SessionId& session_id) const {
  return duties_.IsExpiring(session_id);
}

state::SessionId Server::NewSessionId() {
  for (;;) {
    // A version-4 UUID (RFC 4122's version and variant bits): never the
    // shape of a numbered session, an etcd lease (state/numbered_session.h).
    std::uint64_t a = (random_() & ~0xf000ull) | 0x4000ull;
    std::uint64_t b = (random_() & ~(0xc000ull << 48)) | (0x8000ull << 48);
    state::SessionId id(fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32,
                                    (a >> 16) & 0xffff, a & 0xffff, b >> 48,
                                    b & 0xffffffffffffull));
    if (store_.FindSession(id) == nullptr) return id;
  }
}

std::int64_t Server::NewLeaseNumber() {
  for (;;) {
    // etcd draws lease ids in [1, 2^63): positive, so every client prints them alike.
    const auto number = static_cast<std::int64_t>(random_() >> 1);
    if (number != 0 && store_.FindSession(state::NumberedSessionId(number)) == nullptr) {
      return number;
    }
  }
}

}  // namespace tenure::server
