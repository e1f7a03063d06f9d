#include "state/event_log.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/assert.h"
#include "state/store.h"

namespace tenure::state {

std::size_t EventLog::VersionBytes(const KvEntry* entry) {
  return entry == nullptr ? 0 : kVersionBytes + entry->key.size() + entry->value.size();
}

std::size_t EventLog::Charge(const Held& held) const {
  return kEventBytes + VersionBytes(held.event.after.get()) +
         (held.owns_before ? VersionBytes(held.event.before.get()) : 0);
}

void EventLog::Reset(LogIndex revision) {
  first_seq_ += events_.size();
  events_.clear();
  by_key_.clear();
  bytes_ = 0;
  floor_ = revision;
}

void EventLog::Append(std::vector<KvEvent> events) {
  for (KvEvent& event : events) {
    TENURE_ASSERT(event.revision > floor_);
    TENURE_ASSERT(events_.empty() || event.revision >= events_.back().event.revision);
    const std::uint64_t seq = first_seq_ + events_.size();
    Held held;
    held.event = std::move(event);
    const std::string& key = held.event.key();
    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
      held.owns_before = held.event.before != nullptr;
      bytes_ += kKeyBytes + key.size();
      by_key_.emplace(key, KeyEvents{seq, seq});
    } else {
      Held& prev = At(it->second.last);
      const KvEntry* prev_after = prev.event.after.get();
      const KvEntry* before = held.event.before.get();
      if (prev_after != nullptr && before != nullptr && *prev_after == *before) {
        held.event.before = prev.event.after;  // one copy of the version
      } else {
        held.owns_before = before != nullptr;
      }
      prev.next_same_key = seq;
      held.prev_same_key = it->second.last;
      it->second.last = seq;
    }
    bytes_ += Charge(held);
    events_.push_back(std::move(held));
  }
  Trim();
}

void EventLog::Compact(LogIndex revision) {
  compact_ = std::max(compact_, revision);
  DropRevisionsBelow(revision);
}

LogIndex EventLog::compact_revision() const { return std::max(compact_, floor_.Next()); }

void EventLog::DropFront() {
  Held& front = events_.front();
  const std::uint64_t seq = first_seq_;
  bytes_ -= Charge(front);
  auto it = by_key_.find(front.event.key());
  TENURE_ASSERT(it != by_key_.end() && it->second.first == seq);
  if (front.next_same_key == kNoSeq) {
    bytes_ -= kKeyBytes + it->first.size();
    by_key_.erase(it);
  } else {
    Held& next = At(front.next_same_key);
    next.prev_same_key = kNoSeq;
    if (!next.owns_before && next.event.before != nullptr) {
      next.owns_before = true;  // the version it shared is now its alone to count
      bytes_ += VersionBytes(next.event.before.get());
    }
    it->second.first = front.next_same_key;
  }
  floor_ = std::max(floor_, front.event.revision);
  events_.pop_front();
  ++first_seq_;
}

void EventLog::DropRevisionsBelow(LogIndex revision) {
  while (!events_.empty() && events_.front().event.revision < revision) DropFront();
}

void EventLog::Trim() {
  while (bytes_ > budget_ && !events_.empty()) {
    DropRevisionsBelow(events_.front().event.revision.Next());
  }
}

std::size_t EventLog::FirstAtOrAfter(LogIndex r) const {
  auto it = std::partition_point(events_.begin(), events_.end(),
                                 [&](const Held& h) { return h.event.revision < r; });
  return static_cast<std::size_t>(it - events_.begin());
}

EventLog::Read EventLog::ReadAt(const Store& store, const KeyRange& range,
                                LogIndex revision) const {
  Read read;
  if (revision > store.applied_index()) {
    read.refusal = Refusal::kFuture;
    return read;
  }
  if (revision < read_floor()) {
    read.refusal = Refusal::kCompacted;
    return read;
  }
  if (range.single()) {
    // The key's oldest event newer than `revision` knows what it was then.
    const KvEntry* then = store.FindKv(range.key);
    if (auto it = by_key_.find(range.key); it != by_key_.end()) {
      for (std::uint64_t seq = it->second.last; seq != kNoSeq;) {
        const Held& held = At(seq);
        if (held.event.revision <= revision) break;
        then = held.event.prev();
        seq = held.prev_same_key;
      }
    }
    if (then != nullptr) read.entries.push_back(then);
    return read;
  }
  std::map<std::string_view, const KvEntry*> entries;
  for (const KvEntry* entry : store.ListRange(range)) entries.emplace(entry->key, entry);
  // Newest first, so the oldest newer event of each key decides.
  const std::size_t first_newer = FirstAtOrAfter(revision.Next());
  for (std::size_t i = events_.size(); i > first_newer; --i) {
    const KvEvent& event = events_[i - 1].event;
    if (!range.Contains(event.key())) continue;
    entries.insert_or_assign(std::string_view(event.key()), event.prev());
  }
  for (const auto& [key, entry] : entries) {
    if (entry != nullptr) read.entries.push_back(entry);
  }
  return read;
}

EventLog::Replay EventLog::EventsFrom(const KeyRange& range, LogIndex from,
                                      std::size_t max_events) const {
  Replay replay;
  if (from < compact_revision()) {
    replay.refusal = Refusal::kCompacted;
    replay.next = compact_revision();
    return replay;
  }
  if (range.single()) return KeyEventsFrom(range.key, from, max_events);
  replay.next = from;
  std::size_t i = FirstAtOrAfter(from);
  while (i < events_.size()) {
    const LogIndex revision = events_[i].event.revision;
    if (replay.events.size() >= std::max<std::size_t>(max_events, 1)) {
      replay.next = revision;
      return replay;
    }
    for (; i < events_.size() && events_[i].event.revision == revision; ++i) {
      if (range.Contains(events_[i].event.key())) replay.events.push_back(&events_[i].event);
    }
    replay.next = revision.Next();
  }
  replay.caught_up = true;
  return replay;
}

// One key's events by its chain (newest back to `from`), instead of every
// event of the window from `from` on: a watcher of one key replays in time
// of its own events, however busy the window is. The same answer as the
// scan above gives for that key.
EventLog::Replay EventLog::KeyEventsFrom(std::string_view key, LogIndex from,
                                         std::size_t max_events) const {
  Replay replay;
  replay.next = from;
  // The scan's `next` once caught up: past the newest held revision, if any
  // held revision is at or after `from`.
  if (!events_.empty() && newest() >= from) replay.next = newest().Next();
  replay.caught_up = true;
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return replay;
  std::vector<std::uint64_t> chain;  // newest first
  for (std::uint64_t seq = it->second.last; seq != kNoSeq;) {
    const Held& held = At(seq);
    if (held.event.revision < from) break;
    chain.push_back(seq);
    seq = held.prev_same_key;
  }
  const std::size_t cap = std::max<std::size_t>(max_events, 1);
  for (auto seq = chain.rbegin(); seq != chain.rend(); ++seq) {
    const KvEvent& event = At(*seq).event;
    // Whole revisions: past the cap, stop at the first revision not begun.
    if (replay.events.size() >= cap && event.revision != replay.events.back()->revision) {
      replay.next = event.revision;
      replay.caught_up = false;
      return replay;
    }
    replay.events.push_back(&event);
  }
  return replay;
}

Status EventLog::Validate() const {
  std::size_t bytes = 0;
  std::map<std::string_view, std::uint64_t> last_seen;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const Held& held = events_[i];
    const std::uint64_t seq = first_seq_ + i;
    if (held.event.revision <= floor_) return Status::Corruption("event at or below the floor");
    if (i > 0 && held.event.revision < events_[i - 1].event.revision) {
      return Status::Corruption("events out of revision order");
    }
    if (held.event.before == nullptr && held.event.after == nullptr) {
      return Status::Corruption("event with neither version");
    }
    bytes += Charge(held);
    auto seen = last_seen.find(held.event.key());
    const std::uint64_t want_prev = seen == last_seen.end() ? kNoSeq : seen->second;
    if (held.prev_same_key != want_prev) return Status::Corruption("broken key link");
    if (want_prev != kNoSeq && At(want_prev).next_same_key != seq) {
      return Status::Corruption("broken key link back");
    }
    // A version not counted here is the previous event's after, or none (a
    // key changed twice in one entry may have had none at the revision
    // before, whatever the previous event left).
    if (!held.owns_before && held.event.before != nullptr &&
        (want_prev == kNoSeq || held.event.before != At(want_prev).event.after)) {
      return Status::Corruption("a shared version that is not the previous event's");
    }
    last_seen.insert_or_assign(std::string_view(held.event.key()), seq);
  }
  if (last_seen.size() != by_key_.size()) return Status::Corruption("key index size");
  for (const auto& [key, ends] : by_key_) {
    auto seen = last_seen.find(key);
    if (seen == last_seen.end() || seen->second != ends.last) {
      return Status::Corruption("key index last");
    }
    if (At(ends.first).prev_same_key != kNoSeq || At(ends.first).event.key() != key) {
      return Status::Corruption("key index first");
    }
    bytes += kKeyBytes + key.size();
  }
  if (bytes != bytes_) return Status::Corruption("byte count");
  return Status::Ok();
}

}  // namespace tenure::state
