// PrefixCopy: copies what a large prefix read answers out of the Store a
// slice per loop turn, so that the loop, which also carries raft's
// heartbeats, spends at most a slice at a time on it (decision 0051). The
// copy is still one consistent view: a pass takes the prefix's index
// (Store::PrefixIndex, the answer's X-Consul-Index) in the turn of its first
// slice and compares it, and whether the state was replaced whole (a
// restore), in the turn of its last; a pass that saw either change is
// dropped and a new one begins. Pass kSlicedPassesMax + 1 copies
// the whole prefix in one turn, as decision 0046 did, so a prefix written
// without pause still gets its answer.
//
// Loop thread only. Pointers into the Store are never kept across turns
// (a restore replaces every entry): a pass resumes after the last key it
// copied.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "common/types.h"
#include "state/store.h"

namespace tenure::http {

class PrefixCopy {
 public:
  // A slice ends once it copied this many bytes (keys and values) or looked
  // at this many entries, whichever comes first.
  static constexpr std::size_t kSliceBytes = 1024 * 1024;
  static constexpr std::size_t kSliceEntries = 4096;
  static constexpr int kSlicedPassesMax = 3;

  // `take` copies one entry (or leaves it out, for the ACLs) and returns the
  // bytes it copied; `drop` forgets every entry taken so far (a new pass).
  using Take = std::function<std::size_t(const state::KvEntry&)>;
  using Drop = std::function<void()>;
  PrefixCopy(std::string prefix, Take take, Drop drop);

  // Copies the next slice out of `store` (the server's state as it is this
  // turn). True when the entries taken are the whole prefix as it stood at
  // index(); false: call again in a later turn.
  bool Step(const state::Store& store);
  LogIndex index() const { return index_; }
  // Passes begun so far (1 for a copy no write interrupted).
  int passes() const { return passes_; }

 private:
  std::string prefix_;
  Take take_;
  Drop drop_;
  int passes_ = 0;
  bool in_pass_ = false;
  LogIndex index_;
  LogIndex replaced_at_;  // Store::replaced_at() when the pass began
  std::string after_;     // the last key of the pass so far ("" = none yet)
};

}  // namespace tenure::http
