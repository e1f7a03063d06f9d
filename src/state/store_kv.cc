// Store: KV writes and locks with Consul's semantics (docs/consul-api.md
// sections 2.4-2.7 and the state table in section 11).
#include <algorithm>
#include <memory>

#include "common/assert.h"
#include "common/consul_texts.h"
#include "common/strings.h"
#include "state/acquire_rule.h"
#include "state/store.h"

namespace tenure::state {
namespace {

// Consul's DirEntry.Equal for no-op detection (Consul >= 1.6): a write whose
// result equals the stored entry changes nothing and wakes nobody.
bool SameContent(const KvEntry& stored, std::uint64_t lock_index, std::uint64_t flags,
                 const std::string& value, const SessionId& session) {
  return stored.lock_index == lock_index && stored.flags == flags && stored.value == value &&
         stored.session == session;
}

}  // namespace

// Plain PUT: keeps the existing holder (locks are advisory) and takes
// LockIndex from the request, i.e. 0, as Consul's kvsSetTxn does. The holder
// is carried over before the no-op check, so rewriting a locked key's value
// unchanged is a no-op only if its LockIndex was already 0.
Store::KvOutcome Store::SetKv(const std::string& key, const std::string& value, std::uint64_t flags,
                              LogIndex index) {
  auto it = kv_.find(key);
  KvEntry entry;
  entry.key = key;
  entry.value = value;
  entry.flags = flags;
  if (it != kv_.end()) {
    if (SameContent(it->second, 0, flags, value, it->second.session)) return {};
    entry.session = it->second.session;
    entry.fence = it->second.fence;
  }
  PutEntry(std::move(entry), index);
  return {};
}

Store::KvOutcome Store::CasKv(const std::string& key, const std::string& value, std::uint64_t flags,
                              LogIndex cas_index, LogIndex index) {
  const KvEntry* existing = FindKv(key);
  KvOutcome outcome;
  if (cas_index.is_none() ? existing != nullptr
                          : (existing == nullptr || existing->modify_index != cas_index)) {
    outcome.ok = false;
    return outcome;
  }
  return SetKv(key, value, flags, index);
}

Store::KvOutcome Store::AcquireKv(const std::string& key, const std::string& value,
                                  std::uint64_t flags, const SessionId& session, LogIndex index) {
  KvOutcome outcome;
  // A single acquire passed RefuseAcquire already; a txn's lock op meets
  // the same session half of the rule here, in op order.
  if (session.empty()) {
    outcome.error = consul::AcquireMissingSession();
    return outcome;
  }
  if (FindSession(session) == nullptr) {
    outcome.error = consul::AcquireInvalidSession(session.view());
    return outcome;
  }
  std::uint64_t lock_index = 1;
  LogIndex fence = index;  // a new grant: its token is its own raft index
  auto it = kv_.find(key);
  if (it != kv_.end()) {
    const KvEntry& existing = it->second;
    if (existing.session == session) {
      lock_index = existing.lock_index;  // re-acquire by the holder: same grant
      fence = existing.fence;
    } else if (!existing.session.empty()) {
      outcome.ok = false;  // held by another session
      return outcome;
    } else {
      lock_index = existing.lock_index + 1;
    }
    if (SameContent(existing, lock_index, flags, value, session)) {
      outcome.fence = existing.fence;
      return outcome;
    }
  }
  KvEntry entry;
  entry.key = key;
  entry.value = value;
  entry.flags = flags;
  entry.lock_index = lock_index;
  entry.session = session;
  entry.fence = fence;
  PutEntry(std::move(entry), index);
  outcome.fence = fence;
  return outcome;
}

// Release never checks that the session exists (Consul's kvsUnlockTxn): an
// operator who knows the id can always free the key.
Store::KvOutcome Store::ReleaseKv(const std::string& key, const std::string& value,
                                  std::uint64_t flags, const SessionId& session, LogIndex index) {
  KvOutcome outcome;
  if (session.empty()) {
    outcome.error = Status::Internal("missing session");
    return outcome;
  }
  auto it = kv_.find(key);
  if (it == kv_.end() || it->second.session != session) {
    outcome.ok = false;
    return outcome;
  }
  KvEntry entry;
  entry.key = key;
  entry.value = value;
  entry.flags = flags;
  entry.lock_index = it->second.lock_index;
  PutEntry(std::move(entry), index);
  return outcome;
}

// Consul's kvsDeleteCASTxn: a missing key counts as deleted (true); cas=0
// never deletes an existing key.
bool Store::DeleteKvCas(const std::string& key, LogIndex cas_index, LogIndex index) {
  const KvEntry* existing = FindKv(key);
  if (existing == nullptr) return true;
  if (existing->modify_index != cas_index) return false;
  DeleteEntry(key, index);
  return true;
}

void Store::DeleteKvTree(std::string_view prefix, LogIndex index) {
  std::vector<std::string> doomed;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && StartsWith(it->first, prefix); ++it) {
    doomed.push_back(it->first);
  }
  for (const auto& key : doomed) DeleteEntry(key, index);
}

void Store::PutEntry(KvEntry entry, LogIndex index) {
  RememberForRollback(entry.key);
  entry.modify_index = index;
  auto it = kv_.find(entry.key);
  if (it != kv_.end()) {
    entry.create_index = it->second.create_index;
    entry.version = it->second.version + 1;
    NoteHolderChange(entry.key, &it->second, &entry);
    NoteEvent(&it->second, &entry, index);
    SetHolder(entry.key, it->second.session, entry.session);
    NoteKey(entry.key, KeyChange::kChanged);
    ZkNoteChanged(entry.key);
    it->second = std::move(entry);
  } else {
    entry.create_index = index;
    entry.version = 1;
    NoteHolderChange(entry.key, nullptr, &entry);
    NoteEvent(nullptr, &entry, index);
    SetHolder(entry.key, SessionId(), entry.session);
    tombstones_.erase(entry.key);
    NoteKey(entry.key, KeyChange::kCreated);
    ZkNoteCreated(entry.key, index);
    std::string key = entry.key;
    kv_.emplace(std::move(key), std::move(entry));
  }
  kv_index_ = index;
}

bool Store::DeleteEntry(std::string_view key, LogIndex index) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return false;
  RememberForRollback(key);
  NoteHolderChange(it->first, &it->second, nullptr);
  NoteEvent(&it->second, nullptr, index);
  SetHolder(it->first, it->second.session, SessionId());
  tombstones_.insert_or_assign(it->first, index);
  NoteKey(it->first, KeyChange::kDeleted);
  ZkNoteDeleted(it->first, index);
  kv_.erase(it);
  kv_index_ = index;
  return true;
}

void Store::NoteKey(const std::string& key, KeyChange change) {
  changes_.keys.push_back(key);
  changes_.key_changes.push_back(change);
}

void Store::NoteEvent(const KvEntry* before, const KvEntry* after, LogIndex index) {
  if (!record_events_) return;
  KvEvent event;
  event.revision = index;
  if (before != nullptr) {
    const KvEvent* earlier = EarlierEventInEntry(*before, index);
    if (earlier == nullptr) {
      event.before = std::make_shared<const KvEntry>(*before);
    } else if (earlier->before != nullptr) {
      event.before = earlier->before;  // the key at the revision before
    } else if (after == nullptr) {
      // Created earlier in this entry and deleted now: none before, and the
      // event still names its key.
      event.before = std::make_shared<const KvEntry>(*before);
      event.key_only_before = true;
    }  // else written again after this entry created it: none before
  }
  if (after != nullptr) event.after = std::make_shared<const KvEntry>(*after);
  changes_.events.push_back(std::move(event));
}

// An entry this entry changed already carries its index as modify index, so
// the search for the earlier event runs only then.
const KvEvent* Store::EarlierEventInEntry(const KvEntry& before, LogIndex index) const {
  if (before.modify_index != index) return nullptr;
  const KvEvent* earliest = nullptr;
  for (auto it = changes_.events.rbegin(); it != changes_.events.rend() && it->revision == index;
       ++it) {
    if (it->key() == before.key) earliest = &*it;
  }
  return earliest;
}

void Store::SetHolder(const std::string& key, const SessionId& old_session,
                      const SessionId& new_session) {
  if (old_session == new_session) return;
  if (!old_session.empty()) {
    auto held = held_.find(old_session);
    TENURE_ASSERT(held != held_.end());
    held->second.erase(key);
    if (held->second.empty()) held_.erase(held);
  }
  if (!new_session.empty()) held_[new_session].insert(key);
}

bool Store::InLockDelay(std::string_view key) {
  auto it = lock_delays_.find(key);
  if (it == lock_delays_.end()) return false;
  if (it->second > now_ms_) return true;
  lock_delays_.erase(it);
  return false;
}

}  // namespace tenure::state
