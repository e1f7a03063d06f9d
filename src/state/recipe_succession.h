// The leaders of an etcd election or lock, derived from the lock history
// (docs/history.md, "etcd elections and locks"). etcd's recipes (the Go
// concurrency package, the Election and Lock services, etcdctl elect and
// lock; decision 0048 section 4) give each contender a key of its own under
// the election's prefix, `<name>/<lease hex>`, created with its lease: the
// history records that key's grant from its creation (its fence is its
// create revision) to its end. A contender leads while no key under the
// prefix with a lower create revision is held, so each key's tenure as
// leader runs from the end of the last lower one (or its own grant) to its
// own end: a pure function of the per-key histories, the same on every
// replica.
//
// Assumes each key's grant fence is its create revision, which holds for
// the recipes' keys (created with their lease, never moved to another);
// a key under the prefix whose history the bounds dropped is not seen
// (docs/history.md, "Limits"). Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "state/lock_history.h"

namespace tenure::state {

struct RecipeTenure {
  std::string key;    // the contender's key
  LockGrant grant;    // its key's grant: fence (create revision), holder, end
  LogIndex led_from;  // when it became the lowest held key: its grant, or a lower key's end
  UnixMs led_at;
};

// The tenures under `prefix` ("<name>/"), oldest first: one per grant that
// led for a while (its lead began before it ended), the last one open while
// its key is held and leads.
std::vector<RecipeTenure> RecipeSuccession(const LockHistory& history, std::string_view prefix);

}  // namespace tenure::state
