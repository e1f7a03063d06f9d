// EventLog: the history window an etcd listener serves (decision 0048,
// section 1). The key changes a Store recorded (Changes::events), kept in
// revision order within a byte budget, with what reads of the past need:
// the entries of a range as they were at a past revision (the current ones
// with the newer events undone) and the events from a past revision on (a
// watch's replay). Pure and single-threaded; not replicated: each server's
// window holds what it applied since it started or last replaced its state,
// so windows differ between servers and are never compared.
//
// A version is held once where it can be: an event's `before` shares the
// previous event of its key's `after` when the window holds that event and
// they are the same version. A key changed twice in one entry is the
// exception: its later event's `before` is its earlier one's
// (state/kv_event.h), held and counted on its own.
// Bytes counted (the budget): each version's key and value plus
// kVersionBytes, each event kEventBytes, each key with events in the
// window its key plus kKeyBytes. Past the budget the oldest whole revisions
// go, so a revision is either held whole or not at all.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "state/key_range.h"
#include "state/kv_event.h"
#include "state/types.h"

namespace tenure::state {

class Store;

class EventLog {
 public:
  static constexpr std::size_t kEventBytes = 64;
  static constexpr std::size_t kVersionBytes = 192;  // a KvEntry, its control block
  static constexpr std::size_t kKeyBytes = 64;       // the per-key index's node

  explicit EventLog(std::size_t budget_bytes) : budget_(budget_bytes) {}

  // The state the window follows starts at `revision` (a server's start
  // from a snapshot) or was replaced whole there (a restore, an installed
  // snapshot): every event goes; reads and watches need later revisions.
  void Reset(LogIndex revision);
  // One apply batch's events (Changes::events), oldest first.
  // REQUIRES: each revision above the last Reset's and the last dropped
  // one, and at or above every held one.
  void Append(std::vector<KvEvent> events);
  // The replicated compact revision (etcd's Compact): events below it go,
  // and no read or watch may name a revision below it any more.
  void Compact(LogIndex revision);

  // The oldest revision a watch may start from, and the one etcd's
  // "compacted" answers name: the largest of the compact revision, one past
  // the newest revision whose events went, and one past the revision the
  // window started at (a watch from R needs R's own events).
  LogIndex compact_revision() const;
  // The oldest revision a read may name: one less where the window's start
  // or its dropped events set compact_revision() (the state at that revision
  // is known, only its events are not), so a read at the newest revision is
  // always served, even with no window at all.
  LogIndex read_floor() const { return std::max(compact_, floor_); }

  enum class Refusal : std::uint8_t { kNone, kCompacted, kFuture };

  struct Read {
    Refusal refusal = Refusal::kNone;
    std::vector<const KvEntry*> entries;  // key order; valid until the next change
  };
  // `range`'s entries as they were at `revision`. `store` is the state the
  // window follows, as of its newest applied entry. Cost: the range's
  // current entries plus the window's events newer than `revision` (for
  // one key, only that key's).
  Read ReadAt(const Store& store, const KeyRange& range, LogIndex revision) const;

  struct Replay {
    Refusal refusal = Refusal::kNone;    // kCompacted only
    std::vector<const KvEvent*> events;  // oldest first; valid until the next change
    LogIndex next;                       // the revision to go on from
    bool caught_up = false;              // every held event from `from` on was looked at
  };
  // The events inside `range` from revision `from` on, whole revisions,
  // stopping after the revision in which `max_events` (at least 1) were
  // reached. `from` past every held revision is caught up with nothing.
  Replay EventsFrom(const KeyRange& range, LogIndex from, std::size_t max_events) const;

  std::size_t budget() const { return budget_; }
  std::size_t bytes() const { return bytes_; }
  std::size_t size() const { return events_.size(); }
  // Oldest and newest revision held; none when empty.
  LogIndex oldest() const { return events_.empty() ? LogIndex() : events_.front().event.revision; }
  LogIndex newest() const { return events_.empty() ? LogIndex() : events_.back().event.revision; }

  // The first broken invariant (links, order, the byte count), for tests.
  Status Validate() const;

 private:
  static constexpr std::uint64_t kNoSeq = UINT64_MAX;
  struct Held {
    KvEvent event;
    std::uint64_t prev_same_key = kNoSeq;  // sequence numbers in events_
    std::uint64_t next_same_key = kNoSeq;
    bool owns_before = false;  // `before` is not the previous event's `after`
  };
  struct KeyEvents {
    std::uint64_t first;
    std::uint64_t last;
  };

  static std::size_t VersionBytes(const KvEntry* entry);
  std::size_t Charge(const Held& held) const;
  Held& At(std::uint64_t seq) { return events_[seq - first_seq_]; }
  const Held& At(std::uint64_t seq) const { return events_[seq - first_seq_]; }
  // Drops the oldest event; its `after` passes to the next event of its key.
  void DropFront();
  void DropRevisionsBelow(LogIndex revision);
  void Trim();
  // Index in events_ of the first event with revision >= r.
  std::size_t FirstAtOrAfter(LogIndex r) const;
  // EventsFrom for one key, by the key's chain of events.
  Replay KeyEventsFrom(std::string_view key, LogIndex from, std::size_t max_events) const;

  std::size_t budget_;
  std::size_t bytes_ = 0;
  std::deque<Held> events_;
  std::uint64_t first_seq_ = 0;  // sequence number of events_.front()
  std::map<std::string, KeyEvents, std::less<>> by_key_;
  LogIndex floor_;    // every event above it is held
  LogIndex compact_;  // the replicated compact revision
};

}  // namespace tenure::state
