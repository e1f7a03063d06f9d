// One change of one key, as the Store records it when asked (decision 0048,
// section 1): the entry before and after it, each an immutable version that
// the history window (state/event_log.h) shares between the events that
// name it. A created key has no `before`, a deleted one no `after`. Every
// event of one raft entry carries that entry's index as its revision, in
// the order the entry's operations made them.
//
// `before` is what etcd sends as prev_kv: none for a create, else the key
// at the revision before, also for a key one entry changes twice (a Consul
// txn, a ZooKeeper multi, a put under an etcd delete from a key): its later
// event's `before` is its earlier one's, none where the entry created it. A
// delete of a key its own entry created has a `before` that only names the
// key (`key_only_before`), since an event needs a version to name its key.
#pragma once

#include <memory>
#include <string>

#include "common/types.h"
#include "state/types.h"

namespace tenure::state {

struct KvEvent {
  LogIndex revision;
  std::shared_ptr<const KvEntry> before;  // null: the key did not exist
  std::shared_ptr<const KvEntry> after;   // null: the key was deleted
  bool key_only_before = false;

  bool is_delete() const { return after == nullptr; }
  // The key's entry at the revision before this event's, if it had one.
  const KvEntry* prev() const { return key_only_before ? nullptr : before.get(); }
  const std::string& key() const { return after != nullptr ? after->key : before->key; }
};

}  // namespace tenure::state
