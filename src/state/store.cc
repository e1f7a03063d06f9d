// Store: command dispatch, reads, and invariants. KV operations are in
// store_kv.cc, sessions in store_session.cc, transactions in store_txn.cc,
// snapshots in store_snapshot.cc.
#include "state/store.h"

#include <algorithm>
#include <type_traits>

#include "common/assert.h"
#include "common/strings.h"
#include "state/acquire_rule.h"
#include "state/field_limits.h"
#include "state/zk_path.h"

namespace tenure::state {

ApplyResult Store::Apply(const Command& command, LogIndex index) {
  return Apply(command, index, nullptr);
}

ApplyResult Store::Apply(const Command& command, LogIndex index, Result<Store>* decoded) {
  TENURE_ASSERT(index > applied_index_);
  applied_index_ = index;
  // The replicated clock only moves forward, whatever a stamp says; lock-delay
  // windows are judged against it (decision 0037). A stamp outside the years
  // 1970 to 9999 comes from no leader (a forged or damaged entry) and moves
  // neither clock.
  if (IsClusterMsInRange(command.now_ms)) now_ms_ = std::max(now_ms_, command.now_ms);
  if (IsUnixMsInRange(command.wall_ms)) wall_ms_ = command.wall_ms;
  // A staging no chunk continued for this long was abandoned (decision 0050).
  if (StagingLapsedAt(now_ms_)) staging_.reset();

  ApplyResult result;
  result.index = index;
  // A field past the live API's limits was never proposed by a leader (the
  // API refuses it first): refused whole, so the state never holds what a
  // snapshot of it could not restore (state/field_limits.h).
  if (Status refused = CheckCommandFields(command.body); !refused.ok()) {
    changed_since_checkpoint_ = true;  // the applied index moved
    result.status = std::move(refused);
    result.ok = false;
    return result;
  }
  std::visit(
      [&](const auto& c) {
        using T = std::decay_t<decltype(c)>;
        KvOutcome outcome;
        if constexpr (std::is_same_v<T, KvSet>) {
          outcome = SetKv(c.key, c.value, c.flags, index);
        } else if constexpr (std::is_same_v<T, KvCas>) {
          outcome = CasKv(c.key, c.value, c.flags, c.index, index);
        } else if constexpr (std::is_same_v<T, KvAcquire>) {
          if (std::optional<AcquireRefusal> refused = RefuseAcquire(
                  c.key, c.session, [this](std::string_view key) { return InLockDelay(key); },
                  [this](const SessionId& id) { return FindSession(id) == nullptr; })) {
            outcome.ok = false;
            outcome.error = refused->error;
            result.lock_delayed = refused->lock_delayed;
          } else {
            // Waiters in the key's queue come first: a plain acquire by
            // anyone but the holder is refused as held while they wait.
            SettleQueue(c.key, index, &result);
            if (QueueBlocks(c.key, c.session)) {
              outcome.ok = false;
            } else {
              outcome = AcquireKv(c.key, c.value, c.flags, c.session, index);
            }
          }
        } else if constexpr (std::is_same_v<T, KvRelease>) {
          outcome = ReleaseKv(c.key, c.value, c.flags, c.session, index);
          if (outcome.error.ok() && outcome.ok) {
            SettleQueue(c.key, index, &result);
          } else if (outcome.error.ok() && LeaveQueue(c.key, c.session, index, &result)) {
            // A waiter's release gives up its place (decision 0027's
            // addendum): true, the key and the rest of the queue untouched.
            outcome.ok = true;
          }
        } else if constexpr (std::is_same_v<T, KvDelete>) {
          if (c.has_cas) {
            outcome.ok = DeleteKvCas(c.key, c.index, index);
            if (outcome.ok) DropQueue(c.key, index, &result);
          } else {
            DeleteEntry(c.key, index);
            DropQueue(c.key, index, &result);
          }
        } else if constexpr (std::is_same_v<T, KvDeleteTree>) {
          DeleteKvTree(c.prefix, index);
          DropQueuesUnder(c.prefix, index, &result);
        } else if constexpr (std::is_same_v<T, KvEnqueue>) {
          ApplyEnqueue(c, index, &result);
        } else if constexpr (std::is_same_v<T, KvDequeue>) {
          ApplyDequeue(c, index, &result);
        } else if constexpr (std::is_same_v<T, KvQueueGrant>) {
          SettleQueue(c.key, index, &result);
        } else if constexpr (std::is_same_v<T, SessionCreate>) {
          ApplySessionCreate(c, index, &result);
        } else if constexpr (std::is_same_v<T, SessionDestroy>) {
          ApplySessionDestroy(c, index, &result);
        } else if constexpr (std::is_same_v<T, Txn>) {
          ApplyTxn(c, index, &result);
        } else if constexpr (std::is_same_v<T, ReapTombstones>) {
          ApplyReapTombstones(c);
        } else if constexpr (std::is_same_v<T, SetMember>) {
          ApplySetMember(c, index, &result);
        } else if constexpr (std::is_same_v<T, RemoveMember>) {
          members_.erase(c.id);
        } else if constexpr (std::is_same_v<T, Checkpoint>) {
          ApplyCheckpoint(c, index);
        } else if constexpr (std::is_same_v<T, RestoreState>) {
          ApplyRestore(c.snapshot, index, decoded, &result);
        } else if constexpr (std::is_same_v<T, RestoreChunk>) {
          ApplyRestoreChunk(c, index, &result);
        } else if constexpr (std::is_same_v<T, RestoreStaged>) {
          ApplyRestoreStaged(c, index, decoded, &result);
        } else if constexpr (std::is_same_v<T, EtcdTxn>) {
          ApplyEtcdTxn(c, index, &result);
        } else if constexpr (std::is_same_v<T, EtcdCompact>) {
          ApplyEtcdCompact(c, &result);
        } else if constexpr (std::is_same_v<T, ZkWrite>) {
          ApplyZkWrite(c, index, &result);
        } else if constexpr (std::is_same_v<T, ZkSecret>) {
          ApplyZkSecret(c, &result);
        } else {  // the ACL commands
          result.status = acl_.Apply(c, index, wall_ms_);
          if (result.status.ok()) changes_.acl = true;
        }
        if constexpr (!std::is_same_v<T, Checkpoint>) changed_since_checkpoint_ = true;
        if (!outcome.error.ok()) {
          result.status = std::move(outcome.error);
          result.ok = false;
        } else if (!result.status.ok()) {
          result.ok = false;
        } else {
          result.ok = result.ok && outcome.ok;
        }
        if (!outcome.fence.is_none()) result.fence = outcome.fence;
      },
      command.body);
  RecordHistory(index, &result);
  return result;
}

// --- Checkpoints --------------------------------------------------------------

// Every replica applies the same entries in the same order, so at one
// checkpoint they all hold the same state: a different digest is silent
// corruption (a bug, a bad disk, a libraft flaw such as seed 877000544's)
// that no other check would see. O(state size): the leader writes one
// checkpoint every few tens of seconds (server.h).
void Store::ApplyCheckpoint(const Checkpoint& c, LogIndex index) {
  if (!c.checked_index.is_none() && c.checked_index == checkpoint_.index &&
      c.checked_digest != checkpoint_.digest && divergence_.empty()) {
    divergence_ = "at the checkpoint of entry " + std::to_string(c.checked_index.value()) +
                  " this replica's state has digest " + HexU64(checkpoint_.digest) +
                  ", the leader's " + HexU64(c.checked_digest);
  }
  checkpoint_ = {index, Digest(), changed_since_checkpoint_};
  changed_since_checkpoint_ = false;
}

void Store::TEST_Corrupt(std::string_view key, std::string value) {
  if (auto it = kv_.find(key); it != kv_.end()) it->second.value = std::move(value);
}

// --- Members ----------------------------------------------------------------

void Store::ApplySetMember(const SetMember& c, LogIndex index, ApplyResult* result) {
  if (c.member.id == 0) {
    result->status = Status::InvalidArgument("member id must be positive");
    return;
  }
  Member& member = members_[c.member.id];
  member = c.member;
  member.modify_index = index;
}

const Member* Store::FindMember(std::uint64_t id) const {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : &it->second;
}

std::vector<const Member*> Store::ListMembers() const {
  std::vector<const Member*> out;
  out.reserve(members_.size());
  for (const auto& [id, member] : members_) out.push_back(&member);
  return out;
}

// --- KV reads ---------------------------------------------------------------

const KvEntry* Store::FindKv(std::string_view key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

std::vector<const KvEntry*> Store::ListKv(std::string_view prefix) const {
  std::vector<const KvEntry*> out;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && StartsWith(it->first, prefix); ++it) {
    out.push_back(&it->second);
  }
  return out;
}

std::vector<const KvEntry*> Store::ListRange(const KeyRange& range) const {
  std::vector<const KvEntry*> out;
  if (range.single()) {
    if (const KvEntry* entry = FindKv(range.key)) out.push_back(entry);
    return out;
  }
  if (range.empty()) return out;
  for (auto it = kv_.lower_bound(range.key); it != kv_.end() && range.Contains(it->first); ++it) {
    out.push_back(&it->second);
  }
  return out;
}

std::vector<const KvEntry*> Store::ListKvAfter(std::string_view prefix, std::string_view after,
                                               std::size_t max) const {
  std::vector<const KvEntry*> out;
  auto it = after.empty() ? kv_.lower_bound(prefix) : kv_.upper_bound(after);
  for (; out.size() < max && it != kv_.end() && StartsWith(it->first, prefix); ++it) {
    out.push_back(&it->second);
  }
  return out;
}

std::vector<std::string> Store::ListKeys(std::string_view prefix,
                                         std::string_view separator) const {
  std::vector<std::string> keys;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && StartsWith(it->first, prefix); ++it) {
    const std::string& key = it->first;
    if (separator.empty()) {
      keys.push_back(key);
      continue;
    }
    std::size_t at = key.find(separator, prefix.size());
    if (at == std::string::npos) {
      keys.push_back(key);
      continue;
    }
    std::string cut = key.substr(0, at + separator.size());
    if (keys.empty() || keys.back() != cut) keys.push_back(std::move(cut));
  }
  return keys;
}

LogIndex Store::KeyIndex(std::string_view key) const {
  const KvEntry* entry = FindKv(key);
  return entry ? entry->modify_index : kv_index_;
}

LogIndex Store::PrefixIndex(std::string_view prefix) const {
  if (prefix.empty()) return kv_index_;
  LogIndex index;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && StartsWith(it->first, prefix); ++it) {
    index = std::max(index, it->second.modify_index);
  }
  for (auto it = tombstones_.lower_bound(prefix);
       it != tombstones_.end() && StartsWith(it->first, prefix); ++it) {
    index = std::max(index, it->second);
  }
  // Nothing under the prefix: Consul answers with the table index.
  if (index.is_none()) return kv_index_;
  // Reaped tombstones may have carried the highest index under the prefix;
  // never report less than the reap point, so a prefix index never goes back.
  return std::max(index, reaped_index_);
}

// --- Sessions ---------------------------------------------------------------

const Session* Store::FindSession(const SessionId& id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &*it;
}

std::vector<const Session*> Store::ListSessions() const {
  std::vector<const Session*> out;
  out.reserve(sessions_.size());
  for (const Session& session : sessions_) out.push_back(&session);
  return out;
}

std::vector<const Session*> Store::NodeSessions(std::string_view node) const {
  std::vector<const Session*> out;
  for (const Session& session : sessions_) {
    if (session.node == node) out.push_back(&session);
  }
  return out;
}

const std::set<std::string>* Store::HeldKeys(const SessionId& session_id) const {
  auto it = held_.find(session_id);
  return it == held_.end() ? nullptr : &it->second;
}

ClusterMs Store::LockDelayUntil(std::string_view key) const {
  auto it = lock_delays_.find(key);
  if (it == lock_delays_.end() || it->second <= now_ms_) return ClusterMs();
  return it->second;
}

Changes Store::TakeChanges() {
  Changes out = std::move(changes_);
  changes_ = Changes();
  return out;
}

// --- Integrity ----------------------------------------------------------------

// Each check names the invariant it enforces; a failure is a bug when the
// state came from Apply, or corruption when it came from snapshot bytes.
#define TENURE_INVARIANT(cond) \
  if (!(cond)) return Status::Corruption("state invariant broken: " #cond)

Status Store::Validate() const {
  // No cluster applies 2^62 entries; a larger index can only come from a
  // crafted snapshot file, and index + 1 must never wrap (raft/fsm.cc
  // numbers the entries after a restore from it).
  TENURE_INVARIANT(applied_index_.value() < (std::uint64_t{1} << 62));
  TENURE_INVARIANT(kv_index_ <= applied_index_);
  TENURE_INVARIANT(sessions_index_ <= applied_index_);
  TENURE_INVARIANT(compact_revision_ <= applied_index_);
  TENURE_INVARIANT(reaped_index_ <= kv_index_);
  std::size_t held_count = 0;
  for (const auto& [key, entry] : kv_) {
    TENURE_INVARIANT(entry.key == key);
    TENURE_INVARIANT(entry.create_index <= entry.modify_index);
    TENURE_INVARIANT(entry.modify_index <= kv_index_);
    TENURE_INVARIANT(entry.lock_index < (std::uint64_t{1} << 62));
    TENURE_INVARIANT(entry.version < (std::uint64_t{1} << 62));
    TENURE_INVARIANT(tombstones_.find(key) == tombstones_.end());
    if (entry.session.empty()) {
      TENURE_INVARIANT(entry.fence.is_none());
      continue;
    }
    ++held_count;
    TENURE_INVARIANT(sessions_.find(entry.session) != sessions_.end());
    TENURE_INVARIANT(!entry.fence.is_none());
    TENURE_INVARIANT(entry.fence <= entry.modify_index);
    auto held = held_.find(entry.session);
    TENURE_INVARIANT(held != held_.end());
    TENURE_INVARIANT(held->second.count(key) == 1);
  }
  std::size_t held_total = 0;
  for (const auto& [session, keys] : held_) {
    TENURE_INVARIANT(!keys.empty());
    held_total += keys.size();
    for (const auto& key : keys) {
      auto it = kv_.find(key);
      TENURE_INVARIANT(it != kv_.end());
      TENURE_INVARIANT(it->second.session == session);
    }
  }
  TENURE_INVARIANT(held_total == held_count);
  for (const auto& [key, index] : tombstones_) {
    TENURE_INVARIANT(index <= kv_index_);
    TENURE_INVARIANT(index > reaped_index_);
  }
  for (const auto& [id, member] : members_) {
    TENURE_INVARIANT(id != 0 && member.id == id);
    TENURE_INVARIANT(member.modify_index <= applied_index_);
  }
  for (const Session& session : sessions_) {
    TENURE_INVARIANT(session.create_index <= sessions_index_);
  }
  // The history's open grant of a key is the key's holder, and the other
  // way round while the key's history is kept (docs/history.md).
  for (const auto& [key, entry] : kv_) {
    const LockHistory::KeyHistory* h = history_.Find(key);
    if (h == nullptr || entry.session.empty()) continue;
    TENURE_INVARIANT(h->grants.back().held() && h->grants.back().fence == entry.fence &&
                     h->grants.back().session == entry.session);
  }
  // Fair-acquire queues: every waiter's session lives, waits once per key
  // and does not hold the key; the derived indexes agree.
  TENURE_INVARIANT(queues_index_ <= applied_index_);
  std::size_t waiters = 0;
  for (const auto& [key, queue] : queues_) {
    TENURE_INVARIANT(!queue.empty());
    TENURE_INVARIANT(queue.size() <= kQueueWaitersPerKeyMax);
    const KvEntry* entry = FindKv(key);
    std::set<SessionId> seen;
    for (const QueueWaiter& w : queue) {
      TENURE_INVARIANT(sessions_.find(w.session) != sessions_.end());
      TENURE_INVARIANT(seen.insert(w.session).second);
      TENURE_INVARIANT(entry == nullptr || entry->session != w.session);
      TENURE_INVARIANT(w.enqueue_index <= queues_index_);
      // A token to check names one; an unchecked waiter carries nothing.
      TENURE_INVARIANT(w.authority.checked != w.authority.accessor_id.empty());
      TENURE_INVARIANT(w.authority.checked || !w.authority.default_allow);
      auto keys = queued_.find(w.session);
      TENURE_INVARIANT(keys != queued_.end() && keys->second.count(key) == 1);
      ++waiters;
    }
  }
  TENURE_INVARIANT(waiters == queue_waiters_);
  TENURE_INVARIANT(waiters <= kQueueWaitersMax);
  std::size_t queued_total = 0;
  for (const auto& [session, keys] : queued_) {
    TENURE_INVARIANT(!keys.empty());
    TENURE_INVARIANT(keys.size() <= kQueueKeysPerSessionMax);
    queued_total += keys.size();
  }
  TENURE_INVARIANT(queued_total == waiters);
  // ZooKeeper's node records (state/store_zk.cc): each of "/" or of a key
  // that is a valid path, its count of children the keys under it now.
  for (const auto& [path, node] : zk_nodes_) {
    TENURE_INVARIANT(path == "/" || (kv_.count(path) == 1 && ZkPathError(path).empty()));
    TENURE_INVARIANT(node.pzxid <= applied_index_);
    TENURE_INVARIANT(node.children >= 0);
    TENURE_INVARIANT(static_cast<std::size_t>(node.children) == ZkChildren(path).size());
    TENURE_INVARIANT(!node.container || path != "/");
  }
  TENURE_INVARIANT(zk_secret_.empty() || zk_secret_.size() == kZkSecretBytes);
  TENURE_RETURN_IF_ERROR(history_.Validate(applied_index_));
  TENURE_RETURN_IF_ERROR(acl_.Validate(applied_index_));
  return CheckFieldLimits();
}

#undef TENURE_INVARIANT

void Store::CheckInvariants() const {
  Status status = Validate();
  if (!status.ok()) {
    std::string message(status.message());
    detail::AssertFail(message.c_str(), __FILE__, __LINE__);
  }
}

}  // namespace tenure::state
