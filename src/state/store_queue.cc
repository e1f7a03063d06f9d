// Store: the fair acquire's queues (docs/leadership.md "The queue",
// docs/decisions/0027-fair-acquire-queue.md). A key's queue holds the
// sessions waiting for it, first come first served. Whenever the key is
// free, out of lock-delay and has waiters, the apply that made it so grants
// it to the head of the queue (a release, a destroy or expiry of the holder,
// a leader's KvQueueGrant once a lock-delay window has passed): no herd and
// no round trip between the end of one holder and the grant to the next.
#include <algorithm>
#include <string>

#include "common/assert.h"
#include "common/consul_texts.h"
#include "common/strings.h"
#include "state/store.h"

namespace tenure::state {

const std::deque<QueueWaiter>* Store::FindQueue(std::string_view key) const {
  auto it = queues_.find(key);
  return it == queues_.end() ? nullptr : &it->second;
}

std::size_t Store::QueuePosition(std::string_view key, const SessionId& session) const {
  const std::deque<QueueWaiter>* queue = FindQueue(key);
  if (queue == nullptr || session.empty()) return 0;
  for (std::size_t i = 0; i < queue->size(); ++i) {
    if ((*queue)[i].session == session) return i + 1;
  }
  return 0;
}

bool Store::IsQueued(std::string_view key, const SessionId& session) const {
  auto keys = queued_.find(session);
  return keys != queued_.end() && keys->second.count(std::string(key)) != 0;
}

const QueueWaiter* Store::FindWaiter(std::string_view key, const SessionId& session) const {
  const std::deque<QueueWaiter>* queue = FindQueue(key);
  if (queue == nullptr) return nullptr;
  for (const QueueWaiter& w : *queue) {
    if (w.session == session) return &w;
  }
  return nullptr;
}

void Store::TouchQueue(const std::string& key, LogIndex index) {
  queues_index_ = index;
  changes_.queues.push_back(key);
}

bool Store::QueueBlocks(std::string_view key, const SessionId& session) const {
  if (queues_.find(key) == queues_.end()) return false;
  const KvEntry* entry = FindKv(key);
  return entry == nullptr || entry->session != session;
}

void Store::ApplyEnqueue(const KvEnqueue& c, LogIndex index, ApplyResult* result) {
  if (c.session.empty()) {
    result->status = consul::AcquireMissingSession();
    return;
  }
  if (FindSession(c.session) == nullptr) {
    result->status = consul::AcquireInvalidSession(c.session.view());
    return;
  }
  // A window that has passed with nobody granted yet: the head goes first,
  // unless the leader's own measure of the window still holds the key (hold).
  if (!c.hold) SettleQueue(c.key, index, result);
  const KvEntry* entry = FindKv(c.key);
  auto queue = queues_.find(c.key);
  const bool held_by_other =
      entry != nullptr && !entry->session.empty() && entry->session != c.session;
  const bool holder = entry != nullptr && entry->session == c.session;
  if (holder || (!held_by_other && queue == queues_.end() && !c.hold && !InLockDelay(c.key))) {
    // Free (or already ours): a plain acquire, with its value and token.
    KvOutcome outcome = AcquireKv(c.key, c.value, c.flags, c.session, index);
    TENURE_ASSERT(outcome.error.ok());
    TENURE_ASSERT(outcome.ok);
    result->fence = outcome.fence;
    return;
  }
  result->ok = false;
  if (queue != queues_.end()) {
    for (const QueueWaiter& w : queue->second) {
      if (w.session == c.session) {
        result->queued = true;  // keeps its place (and its first value)
        return;
      }
    }
    if (queue->second.size() >= kQueueWaitersPerKeyMax) {
      result->status = Status::Internal("too many waiters for key " + GoQuote(c.key) + " (limit " +
                                        std::to_string(kQueueWaitersPerKeyMax) + ")");
      return;
    }
  }
  if (auto waits = queued_.find(c.session);
      waits != queued_.end() && waits->second.size() >= kQueueKeysPerSessionMax) {
    result->status = Status::Internal("session " + GoQuote(c.session.view()) +
                                      " already waits in the queues of " +
                                      std::to_string(kQueueKeysPerSessionMax) + " keys (limit " +
                                      std::to_string(kQueueKeysPerSessionMax) + ")");
    return;
  }
  if (queue_waiters_ >= kQueueWaitersMax) {
    result->status = Status::Internal("too many queued waiters (limit " +
                                      std::to_string(kQueueWaitersMax) + ")");
    return;
  }
  QueueWaiter waiter;
  waiter.session = c.session;
  waiter.value = c.value;
  waiter.flags = c.flags;
  waiter.since = wall_ms_;
  waiter.enqueue_index = index;
  waiter.authority = c.authority;
  queues_[c.key].push_back(std::move(waiter));
  queued_[c.session].insert(c.key);
  ++queue_waiters_;
  TouchQueue(c.key, index);
  result->queued = true;
}

void Store::ApplyDequeue(const KvDequeue& c, LogIndex index, ApplyResult* result) {
  if (!c.hold) SettleQueue(c.key, index, result);
  LeaveQueue(c.key, c.session, index, result);
  // The answer to the waiter that gave up: whether it holds the key after all.
  const KvEntry* entry = FindKv(c.key);
  if (entry != nullptr && !c.session.empty() && entry->session == c.session) {
    result->fence = entry->fence;
  } else {
    result->ok = false;
  }
}

bool Store::LeaveQueue(const std::string& key, const SessionId& session, LogIndex index,
                       ApplyResult* result) {
  if (!RemoveWaiter(key, session, index)) return false;
  result->queue_events.push_back({key, session, QueueEvent::Kind::kLeft, LogIndex()});
  return true;
}

void Store::HandOffToWaiter(const std::string& key, const SessionId& session, LogIndex index,
                            ApplyResult* result) {
  const bool removed = RemoveWaiter(key, session, index);
  TENURE_ASSERT(removed);
  // The txn refuses a later unlock of the key, but a later delete may have
  // ended the grant (the key's queue is then dropped too).
  const KvEntry* entry = FindKv(key);
  if (entry != nullptr && entry->session == session) {
    result->queue_events.push_back({key, session, QueueEvent::Kind::kGranted, entry->fence});
  } else {
    result->queue_events.push_back({key, session, QueueEvent::Kind::kLeft, LogIndex()});
  }
}

bool Store::RemoveWaiter(const std::string& key, const SessionId& session, LogIndex index) {
  auto queue = queues_.find(key);
  if (queue == queues_.end()) return false;
  auto& waiters = queue->second;
  auto it = std::find_if(waiters.begin(), waiters.end(),
                         [&](const QueueWaiter& w) { return w.session == session; });
  if (it == waiters.end()) return false;
  waiters.erase(it);
  if (waiters.empty()) queues_.erase(queue);
  auto keys = queued_.find(session);
  keys->second.erase(key);
  if (keys->second.empty()) queued_.erase(keys);
  --queue_waiters_;
  TouchQueue(key, index);
  return true;
}

bool Store::GrantAllowed(const GrantAuthority& authority, std::string_view key) const {
  if (!authority.checked) return true;  // ACLs were off where it was asked
  const AclToken* token = acl_.FindToken(authority.accessor_id);
  // Gone: deleted, or expired and deleted by the leader. The anonymous token
  // is the one exception before the first leader wrote the built-ins: the
  // default policy alone decides then, as for a request.
  if (token == nullptr && authority.accessor_id != kAnonymousTokenAccessorId) return false;
  // Expired by this entry's wall clock (a token's expiry is a wall-clock
  // instant, as in Consul; a leader whose clock runs ahead refuses early).
  if (token != nullptr && token->expiration_time != UnixMs() &&
      token->expiration_time <= wall_ms_) {
    return false;
  }
  acl::AuthorizerOptions options;
  options.default_policy =
      authority.default_allow ? acl::DefaultPolicy::kAllow : acl::DefaultPolicy::kDeny;
  const std::vector<std::string> none;
  return CompileAuthorizer(acl_, token != nullptr ? token->policy_ids : none, options)
      .KeyWrite(key)
      .allowed();
}

void Store::SettleQueue(const std::string& key, LogIndex index, ApplyResult* result) {
  const KvEntry* entry = FindKv(key);
  if (entry != nullptr && !entry->session.empty()) return;
  if (InLockDelay(key)) return;
  for (auto queue = queues_.find(key); queue != queues_.end(); queue = queues_.find(key)) {
    QueueWaiter head = std::move(queue->second.front());
    queue->second.pop_front();
    if (queue->second.empty()) queues_.erase(queue);
    auto keys = queued_.find(head.session);
    keys->second.erase(key);
    if (keys->second.empty()) queued_.erase(keys);
    --queue_waiters_;
    TouchQueue(key, index);
    // Its token is asked again now (decision 0038): revoked or cut to read
    // since it queued, the head leaves without the key and the next is asked.
    if (!GrantAllowed(head.authority, key)) {
      result->queue_events.push_back({key, head.session, QueueEvent::Kind::kLeft, LogIndex()});
      continue;
    }
    // A waiter's session is alive (its destroy removes it from every queue).
    KvOutcome outcome = AcquireKv(key, head.value, head.flags, head.session, index);
    TENURE_ASSERT(outcome.error.ok());
    TENURE_ASSERT(outcome.ok);
    result->queue_events.push_back({key, head.session, QueueEvent::Kind::kGranted, outcome.fence});
    return;
  }
}

void Store::DropQueue(std::string_view key, LogIndex index, ApplyResult* result) {
  auto queue = queues_.find(key);
  if (queue == queues_.end()) return;
  const std::string name = queue->first;
  for (const QueueWaiter& w : queue->second) {
    auto keys = queued_.find(w.session);
    keys->second.erase(name);
    if (keys->second.empty()) queued_.erase(keys);
    --queue_waiters_;
    result->queue_events.push_back({name, w.session, QueueEvent::Kind::kLeft, LogIndex()});
  }
  queues_.erase(queue);
  TouchQueue(name, index);
}

void Store::DropQueuesUnder(std::string_view prefix, LogIndex index, ApplyResult* result) {
  std::vector<std::string> doomed;
  for (auto it = queues_.lower_bound(prefix); it != queues_.end() && StartsWith(it->first, prefix);
       ++it) {
    doomed.push_back(it->first);
  }
  for (const std::string& key : doomed) DropQueue(key, index, result);
}

void Store::DropSessionWaits(const SessionId& session, LogIndex index, ApplyResult* result) {
  auto found = queued_.find(session);
  if (found == queued_.end()) return;
  std::vector<std::string> keys(found->second.begin(), found->second.end());
  queued_.erase(found);
  for (const std::string& key : keys) {
    auto queue = queues_.find(key);
    TENURE_ASSERT(queue != queues_.end());
    auto& waiters = queue->second;
    waiters.erase(std::remove_if(waiters.begin(), waiters.end(),
                                 [&](const QueueWaiter& w) { return w.session == session; }),
                  waiters.end());
    if (waiters.empty()) queues_.erase(queue);
    --queue_waiters_;
    TouchQueue(key, index);
    result->queue_events.push_back({key, session, QueueEvent::Kind::kLeft, LogIndex()});
  }
}

}  // namespace tenure::state
