#include "workload.h"

#include <fmt/core.h>

#include <algorithm>
#include <variant>

#include "common/assert.h"
#include "state/numbered_session.h"

namespace tenure::sim {

Workload::Workload(Cluster* cluster, Rng rng, WorkloadOptions options)
    : cluster_(cluster), rng_(rng), options_(std::move(options)) {
  if (options_.acl_percent > 0) acl_rng_ = rng_.Fork();
  if (options_.queue_percent > 0) queue_rng_ = rng_.Fork();
  if (options_.restore_percent > 0) restore_rng_ = rng_.Fork();
  if (options_.lease_percent > 0) lease_rng_ = rng_.Fork();
  clients_.resize(options_.clients);
  for (unsigned i = 0; i < options_.clients; ++i) {
    clients_[i].id = i;
    clients_[i].next_request_at = rng_.Uniform(0, options_.think_max_ms);
  }
}

std::string Workload::Summary() const {
  std::string out;
  for (const auto& [what, count] : counts_) out += fmt::format("{}={} ", what, count);
  return out;
}

void Workload::Step() {
  if (quiesced_) return;
  RealMs now = cluster_->now();
  for (Client& client : clients_) {
    if (client.in_flight != 0 && now >= client.in_flight_deadline) {
      client.in_flight = 0;  // gave up: the outcome stays unknown
      ++counts_["timeout"];
    }
    if (client.in_flight != 0) continue;
    // A silent client's renewals stopped (a dead renewal thread) but its
    // work goes on: the case of github.com/etcd-io/etcd/issues/11456.
    bool renewing = now >= client.silent_until;
    if (renewing && !client.session.empty() && now >= client.next_renewal_at) {
      Renew(client);
    } else if (now >= client.next_request_at) {
      Act(client);
    }
  }
}

// A server that says it leads; sometimes any server, as a client that has
// not learnt of the change of leader yet.
std::optional<unsigned> Workload::PickServer() {
  std::vector<unsigned> candidates;
  bool any = rng_.Percent(5);
  for (unsigned i = 0; i < cluster_->size(); ++i) {
    if (cluster_->alive(i) && (any || cluster_->server(i).IsRaftLeader())) candidates.push_back(i);
  }
  if (candidates.empty()) return std::nullopt;
  return candidates[rng_.Index(static_cast<unsigned>(candidates.size()))];
}

// A renewal is a request like any other (one in flight per client): the
// leader answers it only after a barrier (decision 0011), so it can take a
// while, or never come from a deposed leader.
void Workload::Renew(Client& client) {
  RealMs now = cluster_->now();
  std::optional<unsigned> server = PickServer();
  if (!server) {
    client.next_renewal_at = now + rng_.Uniform(100, 500);
    return;
  }
  std::uint64_t request = next_request_++;
  client.in_flight = request;
  client.in_flight_deadline = now + options_.request_timeout_ms;
  unsigned id = client.id;
  cluster_->server(*server).Renew(client.session,
                                  [this, id, request](Result<const state::Session*> renewed) {
                                    Client& owner = clients_[id];
                                    if (owner.in_flight != request) return;  // abandoned
                                    owner.in_flight = 0;
                                    OnRenewAnswer(owner, renewed.status());
                                  });
}

void Workload::OnRenewAnswer(Client& client, const Status& renewed) {
  RealMs now = cluster_->now();
  if (renewed.ok()) {
    ++counts_["renew"];
    RealMs ttl_ms = client.ttl_ns / kNsPerMs;
    client.next_renewal_at = now + RenewalIntervalMs(client) - rng_.Uniform(0, ttl_ms / 10);
    if (rng_.Percent(8)) {
      // Stops renewing for a while: the session may well expire meanwhile.
      client.silent_until = now + rng_.Uniform(ttl_ms, 4 * ttl_ms);
      ++counts_["silence"];
    }
  } else if (renewed.code() == Code::kNotFound) {
    ++counts_["session-lost"];
    ForgetSession(client);
  } else {
    ++counts_["renew-failed"];
    client.next_renewal_at = now + rng_.Uniform(50, 300);
  }
}

void Workload::Act(Client& client) {
  client.next_request_at = cluster_->now() + rng_.Uniform(10, options_.think_max_ms);
  if (options_.acl_percent > 0 && acl_rng_.Percent(options_.acl_percent)) {
    return Send(client, AclOp(), &Workload::OnAclAnswer);
  }
  if (options_.restore_percent > 0 && restore_rng_.Percent(options_.restore_percent) &&
      (RestoresOn() || client.restore_id != 0)) {
    return Send(client, RestoreOp(client), &Workload::OnRestoreAnswer);
  }
  if (options_.queue_percent > 0 && !client.session.empty() &&
      queue_rng_.Percent(options_.queue_percent)) {
    return Send(client, QueueOp(client), &Workload::OnLockAnswer);
  }
  int dice = static_cast<int>(rng_.Uniform(0, 99));
  if (client.session.empty()) {
    if (dice < 40) return Send(client, NewSession(client), &Workload::OnSessionAnswer);
    return Send(client, KvOp(client), &Workload::OnOtherAnswer);
  }
  if (dice < 35) return Send(client, LockOp(client), &Workload::OnLockAnswer);
  if (dice < 55) return Send(client, TxnOp(client), &Workload::OnLockAnswer);
  if (dice < 97) return Send(client, KvOp(client), &Workload::OnOtherAnswer);
  return Send(client, state::SessionDestroy{client.session}, &Workload::OnSessionAnswer);
}

void Workload::Send(Client& client, state::CommandBody body, OnAnswer on_answer) {
  std::optional<unsigned> server = PickServer();
  if (!server) {
    ++counts_["no-leader"];
    return;
  }
  std::uint64_t request = next_request_++;
  client.in_flight = request;
  client.in_flight_deadline = cluster_->now() + options_.request_timeout_ms;
  unsigned id = client.id;
  cluster_->server(*server).Propose(
      body, [this, id, request, on_answer, body](Result<state::ApplyResult> result) {
        Client& owner = clients_[id];
        if (owner.in_flight != request) return;  // abandoned
        owner.in_flight = 0;
        ++counts_[result.ok() ? "answered" : "failed"];
        (this->*on_answer)(owner, body, result);
      });
}

RealMs Workload::RenewalIntervalMs(const Client& client) const {
  const RealMs ttl_ms = client.ttl_ns / kNsPerMs;
  return client.lease ? ttl_ms / 3 : ttl_ms / 2;
}

state::CommandBody Workload::NewSession(Client& client) {
  if (options_.lease_percent > 0 && lease_rng_.Percent(options_.lease_percent)) {
    // An etcd lease: a Grant with an id of the client's choosing, as
    // etcd's API allows (the leader draws one for ID 0, decision 0048).
    const auto number = static_cast<std::int64_t>(lease_rng_.Next() >> 1 | 1);
    state::Session session;
    session.id = state::NumberedSessionId(number);
    session.name = "etcd lease";
    session.node = "sim";
    const DurationMs ttl_ms = lease_rng_.Uniform(2, 10) * 1000;
    session.ttl = fmt::format("{}s", ttl_ms / 1000);
    session.ttl_ns = ttl_ms * kNsPerMs;
    session.behavior = state::Behavior::kDelete;
    return state::SessionCreate{std::move(session)};
  }
  state::Session session;
  session.id = state::SessionId(
      fmt::format("{:08x}-{:04x}-4000-8000-{:012x}", client.id, client.sessions_made++, ++seq_));
  session.name = fmt::format("client-{}", client.id);
  session.node = "sim";
  DurationMs ttl_ms = rng_.Uniform(options_.ttl_min_ms / 1000, options_.ttl_max_ms / 1000) * 1000;
  session.ttl = fmt::format("{}s", ttl_ms / 1000);
  session.ttl_ns = ttl_ms * kNsPerMs;
  session.lock_delay_ns =
      rng_.Percent(30) ? 0 : rng_.Uniform(0, options_.lock_delay_max_ms) * kNsPerMs;
  session.behavior = rng_.Percent(20) ? state::Behavior::kDelete : state::Behavior::kRelease;
  return state::SessionCreate{std::move(session)};
}

state::CommandBody Workload::LockOp(Client& client) {
  const std::string& key =
      options_.lock_keys[rng_.Index(static_cast<unsigned>(options_.lock_keys.size()))];
  if (client.held.count(key) != 0 && rng_.Percent(60)) {
    return state::KvRelease{key, Value(client), 0, client.session};
  }
  return state::KvAcquire{key, Value(client), rng_.Next() % 4, client.session};
}

state::CommandBody Workload::QueueOp(Client& client) {
  const auto& locks = options_.lock_keys;
  const std::string& key = locks[queue_rng_.Index(static_cast<unsigned>(locks.size()))];
  const unsigned kind = queue_rng_.Index(20);
  // The grant after a lock-delay window is the leader's duty (SimServer, as
  // Server); the same draw keeps the stream, clients enqueue, hang up
  // (dequeue) or leave on purpose (a release by a waiter, decision 0027's
  // addendum: a wait that runs out is no command at all).
  if (kind < 14) return state::KvEnqueue{key, Value(client), 0, client.session};
  if (kind < 17) return state::KvDequeue{key, client.session};
  return state::KvRelease{key, Value(client), 0, client.session};
}

state::CommandBody Workload::TxnOp(Client& client) {
  const auto& locks = options_.lock_keys;
  const std::string& a = locks[rng_.Index(static_cast<unsigned>(locks.size()))];
  const std::string& b = locks[rng_.Index(static_cast<unsigned>(locks.size()))];
  const std::string& kv =
      options_.kv_keys[rng_.Index(static_cast<unsigned>(options_.kv_keys.size()))];
  using V = state::TxnVerb;
  state::Txn txn;
  auto op = [&](V verb, const std::string& key, LogIndex index = LogIndex()) {
    txn.ops.push_back({verb, key, Value(client), 0, index, client.session});
  };
  switch (rng_.Index(5)) {
    case 0:  // take a lock and write under it
      op(V::kLock, a);
      op(V::kSet, kv);
      break;
    case 1:  // a write guarded by still holding the lock
      op(V::kCheckSession, a);
      op(V::kSet, kv);
      break;
    case 2: {  // a write guarded by the fencing token this client was given
      auto held = client.held.find(a);
      op(V::kCheckFence, a, held != client.held.end() ? held->second : LogIndex(1));
      op(V::kSet, kv);
      break;
    }
    case 3:  // hand over from one lock to another
      op(V::kUnlock, a);
      op(V::kLock, b);
      break;
    default:  // the same lock twice in one transaction
      op(V::kLock, a);
      op(V::kUnlock, a);
      op(V::kLock, b);
      break;
  }
  return txn;
}

state::CommandBody Workload::KvOp(Client& client) {
  const std::string& key = AnyKey();
  switch (rng_.Index(6)) {
    case 0:
    case 1:
      return state::KvSet{key, Value(client), rng_.Next() % 4};
    case 2:
      return state::KvCas{key, Value(client), 0, static_cast<LogIndex>(rng_.Uniform(0, 3))};
    case 3:
      return state::KvDelete{key, false, LogIndex()};
    case 4:
      return state::KvDelete{key, true, static_cast<LogIndex>(rng_.Uniform(0, 50))};
    default:
      return state::KvDeleteTree{rng_.Percent(50) ? "kv/" : "lock/"};
  }
}

const std::string& Workload::AnyKey() {
  unsigned locks = static_cast<unsigned>(options_.lock_keys.size());
  unsigned n = rng_.Index(locks + static_cast<unsigned>(options_.kv_keys.size()));
  return n < locks ? options_.lock_keys[n] : options_.kv_keys[n - locks];
}

std::string Workload::Value(const Client& client) {
  return fmt::format("c{}-{}", client.id, ++seq_);
}

void Workload::ForgetSession(Client& client) {
  client.session = state::SessionId();
  client.held.clear();
}

void Workload::OnSessionAnswer(Client& client, const state::CommandBody& body,
                               const Result<state::ApplyResult>& result) {
  if (const auto* create = std::get_if<state::SessionCreate>(&body)) {
    if (!result.ok() || !result->status.ok()) return;  // unknown: an orphan, left to expire
    client.session = create->session.id;
    client.ttl_ns = create->session.ttl_ns;
    client.lease = state::IsNumberedSession(client.session);
    client.next_renewal_at = cluster_->now() + RenewalIntervalMs(client);
    ++counts_[client.lease ? "lease" : "session"];
    return;
  }
  ForgetSession(client);  // destroyed, or unknown: either way it is not ours to use
}

void Workload::OnLockAnswer(Client& client, const state::CommandBody& body,
                            const Result<state::ApplyResult>& result) {
  if (!result.ok()) return;
  if (const auto* acquire = std::get_if<state::KvAcquire>(&body)) {
    if (result->ok) client.held[acquire->key] = result->fence;
    ++counts_[result->ok ? "lock" : (result->lock_delayed ? "lock-delayed" : "lock-refused")];
  } else if (const auto* release = std::get_if<state::KvRelease>(&body)) {
    if (result->ok) client.held.erase(release->key);
    for (const state::QueueEvent& e : result->queue_events) {
      if (e.kind == state::QueueEvent::Kind::kLeft && e.session == release->session) {
        ++counts_["queue-released"];
      }
    }
  } else if (const auto* enqueue = std::get_if<state::KvEnqueue>(&body)) {
    if (result->ok) client.held[enqueue->key] = result->fence;
    ++counts_[result->ok ? "queue-granted" : (result->queued ? "queued" : "queue-refused")];
  } else if (const auto* dequeue = std::get_if<state::KvDequeue>(&body)) {
    if (result->ok) client.held[dequeue->key] = result->fence;
    ++counts_[result->ok ? "dequeue-held" : "dequeued"];
  } else if (std::holds_alternative<state::KvQueueGrant>(body)) {
    ++counts_[result->queue_events.empty() ? "queue-grant-noop" : "queue-grant"];
  } else if (const auto* txn = std::get_if<state::Txn>(&body)) {
    if (!result->txn.ok()) {
      ++counts_["txn-rolled-back"];
      return;
    }
    ++counts_["txn"];
    for (const state::TxnOp& op : txn->ops) {
      if (op.verb == state::TxnVerb::kUnlock) client.held.erase(op.key);
    }
    for (const state::TxnResultEntry& entry : result->txn.results) {
      if (entry.entry.session == client.session && !entry.entry.fence.is_none()) {
        client.held[entry.entry.key] = entry.entry.fence;
      }
    }
  }
}

// A few policies, tokens and names, so that commands collide: duplicate
// names, links to deleted policies, secrets in use, the built-ins.
state::CommandBody Workload::AclOp() {
  auto pick = [this](unsigned n) { return acl_rng_.Index(n); };
  switch (pick(7)) {
    case 0:
      return state::AclSetup{};
    case 1:
    case 2: {
      state::AclPolicy policy;
      policy.id = fmt::format("policy-{}", pick(4));
      policy.name = fmt::format("name-{}", pick(5));
      policy.rules = fmt::format("key_prefix \"{}/\" {{ policy = \"{}\" }}\n",
                                 pick(2) == 0 ? "lock" : "kv", pick(2) == 0 ? "read" : "write");
      return state::AclPolicySet{std::move(policy)};
    }
    case 3:
      return state::AclPolicyDelete{fmt::format("policy-{}", pick(4))};
    case 4:
    case 5: {
      state::AclToken token;
      const unsigned n = pick(6);
      token.accessor_id = fmt::format("accessor-{}", n);
      token.secret_id = fmt::format("secret-{}", pick(3) == 0 ? pick(6) : n);
      token.description = fmt::format("token {}", seq_++);
      for (unsigned links = pick(3); links > 0; --links) {
        token.policy_ids.push_back(fmt::format("policy-{}", pick(4)));
      }
      token.create_time = UnixMs(1'700'000'000'000);
      return state::AclTokenSet{std::move(token)};
    }
    default:
      return state::AclTokenDelete{fmt::format("accessor-{}", pick(6))};
  }
}

void Workload::OnAclAnswer(Client&, const state::CommandBody&,
                           const Result<state::ApplyResult>& result) {
  if (!result.ok()) return;
  ++counts_[result->status.ok() ? "acl" : "acl-refused"];
}

void Workload::OnOtherAnswer(Client&, const state::CommandBody&,
                             const Result<state::ApplyResult>& result) {
  if (result.ok() && !result->ok) ++counts_["kv-refused"];
}

// Restores run 20 s on, 20 s off: raft snapshots are refused while a
// staging exists, and the quiet windows let them (and installs) happen.
bool Workload::RestoresOn() const { return (cluster_->now() / 20'000) % 2 == 0; }

// The next piece of the client's large restore: a first chunk, the next
// one (now and then one past a gap, which the Store refuses), or, once every
// byte is staged, the swap. Bytes are the client's id repeated: a swap
// decodes them and is refused, changing nothing but the staging.
state::CommandBody Workload::RestoreOp(Client& client) {
  Rng& rng = restore_rng_;
  if (!RestoresOn()) {  // a swap of what is staged so far: refused, dropped
    state::RestoreStaged swap{client.restore_id, client.restore_total};
    client.restore_id = 0;
    return swap;
  }
  if (client.restore_id == 0 || rng.Percent(5)) {
    client.restore_id = (std::uint64_t{client.id} << 32) | (rng.Next() & 0xffffffffu) | 1;
    client.restore_offset = 0;
    client.restore_total = rng.Uniform(2'000, 40'000);
  }
  if (client.restore_offset >= client.restore_total) {
    state::RestoreStaged swap{client.restore_id, client.restore_total};
    client.restore_id = 0;
    return swap;
  }
  std::uint64_t offset = client.restore_offset;
  if (offset > 0 && rng.Percent(5)) offset += 1;  // a lost chunk
  const std::uint64_t left = client.restore_total - std::min(offset, client.restore_total);
  if (left == 0) offset = client.restore_offset;
  const std::uint64_t size =
      std::min<std::uint64_t>(client.restore_total - offset, rng.Uniform(1, 8'192));
  return state::RestoreChunk{client.restore_id, offset, client.restore_total,
                             std::string(size, static_cast<char>('a' + client.id % 26))};
}

void Workload::OnRestoreAnswer(Client& client, const state::CommandBody& body,
                               const Result<state::ApplyResult>& result) {
  if (const auto* chunk = std::get_if<state::RestoreChunk>(&body)) {
    if (result.ok() && result->status.ok() && chunk->restore_id == client.restore_id) {
      client.restore_offset = chunk->offset + chunk->bytes.size();
      ++counts_["restore-chunk"];
    } else {
      ++counts_["restore-chunk-refused"];
      client.restore_id = 0;  // begins another
    }
    return;
  }
  // A swap of bytes that are no snapshot: refused whenever it applied.
  TENURE_ASSERT(!result.ok() || !result->status.ok());
  ++counts_[result.ok() ? "restore-swap-refused" : "restore-swap-unknown"];
}

}  // namespace tenure::sim
