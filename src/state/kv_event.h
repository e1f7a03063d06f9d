// One change of one key, as the Store records it when asked (decision 0048,
// section 1): the entry before and after it, each an immutable version that
// the history window (state/event_log.h) shares between the events that
// name it. A created key has no `before`, a deleted one no `after`. Every
// event of one raft entry carries that entry's index as its revision, in
// the order the entry's operations made them.
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

  bool is_delete() const { return after == nullptr; }
  const std::string& key() const { return after != nullptr ? after->key : before->key; }
};

}  // namespace tenure::state
