// The Store's events (recorded only when asked) and the history window that
// serves etcd's reads of the past and watch replays (state/event_log.h,
// decision 0048 section 1). Unit cases, then a comparison with a naive MVCC
// model that keeps every revision's whole state, on random histories of
// every command kind, restores included.
#include "state/event_log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "state/store.h"
#include "unit/state/model_store.h"
#include "unit/state/random_commands.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::CommandGenerator;
using testutil::DeleteOp;
using testutil::LockOp;
using testutil::ModelStore;
using testutil::SetOp;
using testutil::StoreDriver;

KeyRange One(std::string key) { return KeyRange{std::move(key), ""}; }
KeyRange From(std::string key) { return KeyRange{std::move(key), std::string(1, '\0')}; }
KeyRange Between(std::string key, std::string end) {
  return KeyRange{std::move(key), std::move(end)};
}
KeyRange Everything() { return From(std::string(1, '\0')); }

// key=value for each entry, for compact expectations.
std::vector<std::string> Show(const std::vector<const KvEntry*>& entries) {
  std::vector<std::string> out;
  for (const KvEntry* e : entries) out.push_back(e->key + "=" + e->value);
  return out;
}

// A driver whose Store records events, and a window fed after each apply.
struct Recorded {
  explicit Recorded(std::size_t budget = 1 << 20) : log(budget) { d.store().RecordEvents(true); }
  void Feed() {
    Changes changes = d.store().TakeChanges();
    if (changes.everything) log.Reset(d.store().replaced_at());
    log.Append(std::move(changes.events));
    ASSERT_TRUE(log.Validate().ok()) << log.Validate().ToString();
  }
  std::vector<std::string> At(const KeyRange& range, std::uint64_t revision) const {
    EventLog::Read read = log.ReadAt(d.store(), range, LogIndex(revision));
    EXPECT_EQ(read.refusal, EventLog::Refusal::kNone) << "at " << revision;
    return Show(read.entries);
  }
  StoreDriver d;
  EventLog log;
};

TEST(StoreEventsTest, NothingIsRecordedUnlessAsked) {
  StoreDriver d;
  d.Set("k", "v");
  d.Delete("k");
  EXPECT_TRUE(d.store().TakeChanges().events.empty());
  EXPECT_FALSE(d.store().recording_events());
}

TEST(StoreEventsTest, EachChangeHasItsVersionsAndRevision) {
  StoreDriver d;
  d.store().RecordEvents(true);
  d.Set("k", "a");  // 1
  d.Set("k", "b");  // 2
  d.Delete("k");    // 3
  std::vector<KvEvent> events = d.store().TakeChanges().events;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].revision, LogIndex(1));
  EXPECT_EQ(events[0].before, nullptr);
  EXPECT_EQ(events[0].after->value, "a");
  EXPECT_EQ(events[1].before->value, "a");
  EXPECT_EQ(events[1].after->value, "b");
  EXPECT_EQ(events[1].after->version, 2u);
  EXPECT_EQ(events[1].after->modify_index, LogIndex(2));
  EXPECT_TRUE(events[2].is_delete());
  EXPECT_EQ(events[2].before->value, "b");
  EXPECT_EQ(events[2].key(), "k");
}

TEST(StoreEventsTest, ATxnRecordsItsOpsInOrderAndAFailedOneNothing) {
  StoreDriver d;
  d.store().RecordEvents(true);
  d.Set("z", "1");
  d.store().TakeChanges();
  ASSERT_TRUE(d.RunTxn({SetOp("z", "2"), SetOp("a", "x"), DeleteOp("z")}).txn.ok());
  std::vector<KvEvent> events = d.store().TakeChanges().events;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].key(), "z");
  EXPECT_EQ(events[1].key(), "a");
  EXPECT_TRUE(events[2].is_delete());
  // Each event's prev() is the key at the revision before, as etcd's
  // prev_kv, though the txn wrote z in between.
  EXPECT_EQ(events[0].prev()->value, "1");
  EXPECT_EQ(events[2].prev()->value, "1");
  for (const KvEvent& e : events) EXPECT_EQ(e.revision, LogIndex(2));
  // A key the txn creates and deletes was not there before: no prev(),
  // and the delete still names its key.
  ASSERT_TRUE(d.RunTxn({SetOp("n", "1"), SetOp("n", "2"), DeleteOp("n")}).txn.ok());
  events = d.store().TakeChanges().events;
  ASSERT_EQ(events.size(), 3u);
  for (const KvEvent& e : events) {
    EXPECT_EQ(e.key(), "n");
    EXPECT_EQ(e.prev(), nullptr);
  }
  EXPECT_TRUE(events[2].is_delete());
  EXPECT_TRUE(events[2].key_only_before);
  // A lock with no session fails the txn after its first op wrote.
  ASSERT_FALSE(d.RunTxn({SetOp("a", "y"), LockOp("b", SessionId("nobody"))}).txn.ok());
  EXPECT_TRUE(d.store().TakeChanges().events.empty());
}

TEST(StoreEventsTest, ARestoreKeepsRecordingAndReportsOnlyLaterChanges) {
  StoreDriver d;
  d.store().RecordEvents(true);
  d.Set("old", "1");
  std::string snapshot;
  d.store().EncodeSnapshot(&snapshot);
  d.Set("gone", "2");
  ASSERT_TRUE(d.Apply(RestoreState{snapshot}).status.ok());
  d.Set("after", "3");
  Changes changes = d.store().TakeChanges();
  EXPECT_TRUE(changes.everything);
  EXPECT_TRUE(d.store().recording_events());
  ASSERT_EQ(changes.events.size(), 1u);
  EXPECT_EQ(changes.events[0].key(), "after");
  EXPECT_EQ(d.store().replaced_at(), LogIndex(3));
}

TEST(EventLogTest, ReadsOneKeyAndARangeAsTheyWere) {
  Recorded r;
  r.d.Set("a", "1");  // 1
  r.d.Set("b", "1");  // 2
  r.d.Set("a", "2");  // 3
  r.d.Delete("b");    // 4
  r.d.Set("c", "1");  // 5
  r.Feed();
  EXPECT_EQ(r.At(One("a"), 1), std::vector<std::string>{"a=1"});
  EXPECT_EQ(r.At(One("a"), 3), std::vector<std::string>{"a=2"});
  EXPECT_EQ(r.At(One("b"), 4), std::vector<std::string>{});
  EXPECT_EQ(r.At(Everything(), 2), (std::vector<std::string>{"a=1", "b=1"}));
  EXPECT_EQ(r.At(Everything(), 4), std::vector<std::string>{"a=2"});
  EXPECT_EQ(r.At(From("b"), 3), std::vector<std::string>{"b=1"});
  EXPECT_EQ(r.At(Between("a", "c"), 5), std::vector<std::string>{"a=2"});
  EXPECT_EQ(r.At(Between("c", "a"), 5), std::vector<std::string>{});
}

TEST(EventLogTest, RefusesRevisionsBeforeTheWindowAndAfterTheState) {
  Recorded r;
  r.d.SkipIndexes(9);
  r.log.Reset(LogIndex(9));  // started from a snapshot at 9
  r.d.Set("a", "1");         // 10
  r.Feed();
  EXPECT_EQ(r.log.compact_revision(), LogIndex(10));
  EXPECT_EQ(r.log.read_floor(), LogIndex(9));
  EXPECT_EQ(r.At(One("a"), 9), std::vector<std::string>{});  // the snapshot's state
  EXPECT_EQ(r.log.ReadAt(r.d.store(), One("a"), LogIndex(8)).refusal,
            EventLog::Refusal::kCompacted);
  EXPECT_EQ(r.log.ReadAt(r.d.store(), One("a"), LogIndex(11)).refusal, EventLog::Refusal::kFuture);
  EXPECT_EQ(r.log.EventsFrom(One("a"), LogIndex(9), 10).refusal, EventLog::Refusal::kCompacted);
  EXPECT_EQ(r.log.EventsFrom(One("a"), LogIndex(9), 10).next, LogIndex(10));
  // A watch from a future revision is caught up with nothing yet.
  EventLog::Replay later = r.log.EventsFrom(One("a"), LogIndex(50), 10);
  EXPECT_TRUE(later.caught_up);
  EXPECT_TRUE(later.events.empty());
}

TEST(EventLogTest, CompactDropsOlderRevisionsButKeepsItsOwn) {
  Recorded r;
  r.d.Set("a", "1");  // 1
  r.d.Set("a", "2");  // 2
  r.d.Set("a", "3");  // 3
  r.Feed();
  r.log.Compact(LogIndex(2));
  ASSERT_TRUE(r.log.Validate().ok());
  EXPECT_EQ(r.log.compact_revision(), LogIndex(2));
  EXPECT_EQ(r.At(One("a"), 2), std::vector<std::string>{"a=2"});
  EXPECT_EQ(r.log.ReadAt(r.d.store(), One("a"), LogIndex(1)).refusal,
            EventLog::Refusal::kCompacted);
  EventLog::Replay replay = r.log.EventsFrom(One("a"), LogIndex(2), 10);
  ASSERT_EQ(replay.events.size(), 2u);
  EXPECT_EQ(replay.events[0]->after->value, "2");
  r.log.Compact(LogIndex(1));  // never back
  EXPECT_EQ(r.log.compact_revision(), LogIndex(2));
}

TEST(EventLogTest, HoldsEachVersionOnceAndTheBudgetDropsWholeRevisions) {
  const std::string value(1000, 'v');
  Recorded big;
  big.d.Set("k", value);
  big.d.Set("k", value + "2");
  big.Feed();
  // Two versions, two events, one key: the second event's before is the
  // first's after, counted once.
  const std::size_t two = big.log.bytes();
  EXPECT_EQ(two, 2 * EventLog::kEventBytes + 2 * EventLog::kVersionBytes + 2 * 1 + 2 * 1000 + 1 +
                     EventLog::kKeyBytes + 1);

  // A budget for about three such revisions: the oldest go whole.
  Recorded r(3 * (EventLog::kEventBytes + EventLog::kVersionBytes + 1001) + 2 * 64);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(r.d.RunTxn({SetOp("x", value), SetOp("y", value)}).txn.ok());
    r.d.Set("k", value + std::to_string(i));
    r.Feed();
  }
  EXPECT_LE(r.log.bytes(), r.log.budget());
  EXPECT_GT(r.log.compact_revision(), LogIndex(1));
  const LogIndex oldest = r.log.oldest();
  EventLog::Replay replay = r.log.EventsFrom(Everything(), oldest, 1000);
  ASSERT_FALSE(replay.events.empty());
  EXPECT_EQ(replay.events.front()->revision, oldest);
  EXPECT_LE(r.log.compact_revision(), oldest);  // revisions without events between
  EXPECT_EQ(r.log.ReadAt(r.d.store(), Everything(), r.log.compact_revision()).refusal,
            EventLog::Refusal::kNone);

  Recorded none(0);  // no window: reads and watches only from now on
  none.d.Set("a", "1");
  none.d.Set("a", "2");
  none.Feed();
  EXPECT_EQ(none.log.size(), 0u);
  EXPECT_EQ(none.log.compact_revision(), LogIndex(3));
  EXPECT_EQ(none.At(One("a"), 2), std::vector<std::string>{"a=2"});  // now is always readable
  EXPECT_EQ(none.log.ReadAt(none.d.store(), One("a"), LogIndex(1)).refusal,
            EventLog::Refusal::kCompacted);
}

TEST(EventLogTest, ReplaysInWholeRevisionsAndGoesOnWhereItStopped) {
  Recorded r;
  r.d.RunTxn({SetOp("a", "1"), SetOp("b", "1"), SetOp("c", "1")});  // 1
  r.d.Set("a", "2");                                                // 2
  r.d.Set("q", "1");                                                // 3 (outside)
  r.d.Set("b", "2");                                                // 4
  r.Feed();
  const KeyRange range = Between("a", "c");
  EventLog::Replay first = r.log.EventsFrom(range, LogIndex(1), 1);
  ASSERT_EQ(first.events.size(), 2u);  // revision 1 whole, though max is 1
  EXPECT_FALSE(first.caught_up);
  EXPECT_EQ(first.next, LogIndex(2));
  EventLog::Replay second = r.log.EventsFrom(range, first.next, 1);
  ASSERT_EQ(second.events.size(), 1u);
  EXPECT_EQ(second.events[0]->after->value, "2");
  EventLog::Replay rest = r.log.EventsFrom(range, second.next, 10);
  ASSERT_EQ(rest.events.size(), 1u);
  EXPECT_EQ(rest.events[0]->key(), "b");
  EXPECT_TRUE(rest.caught_up);
  EXPECT_EQ(rest.next, LogIndex(5));
}

TEST(EventLogTest, AResetStartsAnEmptyWindowAtTheReplacedState) {
  Recorded r;
  r.d.Set("a", "1");
  std::string snapshot;
  r.d.store().EncodeSnapshot(&snapshot);
  r.d.Set("a", "2");
  r.Feed();
  ASSERT_TRUE(r.d.Apply(RestoreState{snapshot}).status.ok());  // 3
  r.d.Set("b", "1");                                           // 4
  r.Feed();
  EXPECT_EQ(r.log.compact_revision(), LogIndex(4));
  EXPECT_EQ(r.log.size(), 1u);
  EXPECT_EQ(r.At(Everything(), 4), (std::vector<std::string>{"a=1", "b=1"}));
}

// --- the naive MVCC model ---------------------------------------------------------

// Every revision's whole KV state, as the Store had it after each apply.
class MvccModel {
 public:
  void Record(LogIndex revision, const Store& store) {
    std::map<std::string, KvEntry> state;
    for (const KvEntry* e : store.ListKv("")) state.emplace(e->key, *e);
    states_[revision] = std::move(state);
  }
  // The state at `revision`: the last apply at or before it.
  const std::map<std::string, KvEntry>& At(LogIndex revision) const {
    auto it = states_.upper_bound(revision);
    EXPECT_NE(it, states_.begin());
    return std::prev(it)->second;
  }

 private:
  std::map<LogIndex, std::map<std::string, KvEntry>> states_;
};

std::string CompareRead(const EventLog& log, const Store& store, const MvccModel& model,
                        const KeyRange& range, LogIndex revision) {
  EventLog::Read read = log.ReadAt(store, range, revision);
  if (read.refusal != EventLog::Refusal::kNone) {
    return std::string(read.refusal == EventLog::Refusal::kFuture ? "refused as future"
                                                                  : "refused as compacted") +
           " (window from " + std::to_string(log.compact_revision().value()) + ", state at " +
           std::to_string(store.applied_index().value()) + ")";
  }
  std::vector<KvEntry> want;
  for (const auto& [key, entry] : model.At(revision)) {
    if (range.Contains(key)) want.push_back(entry);
  }
  if (read.entries.size() != want.size()) {
    return "read " + std::to_string(read.entries.size()) + " entries, want " +
           std::to_string(want.size());
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!(*read.entries[i] == want[i])) return "entry " + want[i].key + " differs";
  }
  return "";
}

// Replays the whole window in random batch sizes and checks each revision's
// events against the model: each event's prev() is etcd's prev_kv (none
// for a create, else the key's value at the revision before, also for a key
// changed twice in one revision), and applying them turns the previous
// revision into this one.
std::string CompareReplay(const EventLog& log, const MvccModel& model, const KeyRange& range,
                          std::mt19937_64* rng) {
  LogIndex from = log.compact_revision();
  std::vector<const KvEvent*> events;
  for (int guard = 0; guard < 100000; ++guard) {
    EventLog::Replay replay = log.EventsFrom(range, from, 1 + (*rng)() % 4);
    if (replay.refusal != EventLog::Refusal::kNone) return "replay refused";
    events.insert(events.end(), replay.events.begin(), replay.events.end());
    if (replay.caught_up) break;
    if (replay.next <= from) return "replay did not move on";
    from = replay.next;
  }
  std::size_t i = 0;
  while (i < events.size()) {
    const LogIndex revision = events[i]->revision;
    const std::map<std::string, KvEntry> then = model.At(LogIndex(revision.value() - 1));
    std::map<std::string, KvEntry> state = then;
    for (; i < events.size() && events[i]->revision == revision; ++i) {
      const KvEvent& e = *events[i];
      if (e.before == nullptr && e.after == nullptr) return "an event that names no key";
      auto it = then.find(e.key());
      // etcd's prev_kv: none for a create (version 1), else the key then.
      const bool created = e.after != nullptr && e.after->version == 1;
      const bool had = it != then.end() && !created;
      if (had != (e.prev() != nullptr) || (had && !(it->second == *e.prev()))) {
        return "event " + e.key() + " at " + std::to_string(revision.value()) + ": prev differs";
      }
      if (e.after != nullptr) {
        state.insert_or_assign(e.key(), *e.after);
      } else {
        state.erase(e.key());
      }
    }
    const std::map<std::string, KvEntry>& want = model.At(revision);
    for (const auto& [key, entry] : want) {
      if (!range.Contains(key)) continue;
      auto it = state.find(key);
      if (it == state.end() || !(it->second == entry)) {
        return "after revision " + std::to_string(revision.value()) + ", " + key + " differs";
      }
    }
    for (const auto& [key, entry] : state) {
      if (range.Contains(key) && want.find(key) == want.end()) {
        return "after revision " + std::to_string(revision.value()) + ", " + key + " remains";
      }
    }
  }
  return "";
}

// One key's replay (its own chain of events) gives the events the scan of
// a range holding only that key gives, in order, and ends where it does.
std::string CompareKeyReplayWithScan(const EventLog& log, const std::string& key,
                                     std::mt19937_64* rng) {
  auto replay_all = [&](const KeyRange& range, LogIndex* end) {
    std::vector<const KvEvent*> events;
    LogIndex from = log.compact_revision();
    for (int guard = 0; guard < 100000; ++guard) {
      EventLog::Replay replay = log.EventsFrom(range, from, 1 + (*rng)() % 4);
      events.insert(events.end(), replay.events.begin(), replay.events.end());
      *end = replay.next;
      if (replay.caught_up || replay.refusal != EventLog::Refusal::kNone) break;
      from = replay.next;
    }
    return events;
  };
  LogIndex key_end, scan_end;
  const std::vector<const KvEvent*> by_key = replay_all(One(key), &key_end);
  const std::vector<const KvEvent*> scanned =
      replay_all(Between(key, key + std::string(1, '\0')), &scan_end);
  if (by_key != scanned) {
    return "one key's replay has " + std::to_string(by_key.size()) + " events, the scan " +
           std::to_string(scanned.size());
  }
  if (key_end != scan_end) {
    return "one key's replay ends at " + std::to_string(key_end.value()) + ", the scan at " +
           std::to_string(scan_end.value());
  }
  return "";
}

std::vector<KeyRange> RangesToCompare(std::mt19937_64* rng) {
  const std::vector<std::string>& keys = CommandGenerator::Keys();
  std::vector<KeyRange> ranges = {Everything()};
  for (int i = 0; i < 3; ++i) {
    const std::string& a = keys[(*rng)() % keys.size()];
    const std::string& b = keys[(*rng)() % keys.size()];
    ranges.push_back(One(a));
    ranges.push_back(Between(a, b));
    ranges.push_back(From(b));
  }
  return ranges;
}

// What the random histories covered, so that the comparison cannot pass by
// never meeting a restore or a cut window.
struct Coverage {
  int resets = 0;
  int cut_windows = 0;  // checks with events held and older ones gone
  int reads = 0;
};

std::string RunSeed(std::uint64_t seed, Coverage* coverage) {
  CommandGenerator gen(seed);
  std::mt19937_64 rng(seed * 7919 + 1);
  const std::size_t budgets[] = {0, 2000, 8000, 1 << 24};
  EventLog log(budgets[seed % 4]);
  Store store;
  store.RecordEvents(true);
  ModelStore model;  // the generator's guide, not compared here
  MvccModel mvcc;
  std::vector<std::string> snapshots;
  LogIndex index;
  mvcc.Record(index, store);
  for (int step = 1; step <= 250; ++step) {
    Command command = gen.Next(model);
    index = LogIndex(index.value() + 1 + rng() % 3 / 2);  // raft indexes with gaps
    if (!snapshots.empty() && rng() % 40 == 0) {
      command.body = RestoreState{snapshots[rng() % snapshots.size()]};
    } else {
      model.Apply(command, index);
    }
    store.Apply(command, index);
    index = store.applied_index();
    mvcc.Record(index, store);
    if (rng() % 30 == 0) {
      std::string bytes;
      store.EncodeSnapshot(&bytes);
      snapshots.push_back(std::move(bytes));
    }
    if (rng() % 3 != 0) continue;  // a batch of several applies, as a server's
    Changes changes = store.TakeChanges();
    if (changes.everything) {
      log.Reset(store.replaced_at());
      ++coverage->resets;
    }
    log.Append(std::move(changes.events));
    if (log.size() > 0 && log.compact_revision() > LogIndex(1)) ++coverage->cut_windows;
    if (rng() % 25 == 0) {
      const std::uint64_t back = rng() % 20;
      log.Compact(LogIndex(index.value() > back ? index.value() - back : 1));
    }
    std::string where = "seed " + std::to_string(seed) + " step " + std::to_string(step) + ": ";
    if (Status valid = log.Validate(); !valid.ok()) return where + valid.ToString();
    const LogIndex oldest = log.read_floor();
    if (log.compact_revision() > index.Next()) return where + "compact revision past the state";
    if (oldest > index) return where + "the state itself is not readable";
    for (const KeyRange& range : RangesToCompare(&rng)) {
      // The window's ends and a sample between them.
      std::vector<LogIndex> revisions = {oldest, index};
      for (int i = 0; i < 6 && index > oldest; ++i) {
        revisions.push_back(LogIndex(oldest.value() + rng() % (index.value() - oldest.value())));
      }
      for (LogIndex r : revisions) {
        ++coverage->reads;
        if (std::string diff = CompareRead(log, store, mvcc, range, r); !diff.empty()) {
          return where + "read at " + std::to_string(r.value()) + " of [" + range.key + ", " +
                 range.end + "): " + diff;
        }
      }
      if (std::string diff = CompareReplay(log, mvcc, range, &rng); !diff.empty()) {
        return where + "replay of [" + range.key + ", " + range.end + "): " + diff;
      }
      if (range.single()) {
        if (std::string diff = CompareKeyReplayWithScan(log, range.key, &rng); !diff.empty()) {
          return where + "replay of " + range.key + ": " + diff;
        }
      }
    }
    if (!oldest.is_none() && oldest.value() > 1 &&
        log.ReadAt(store, Everything(), LogIndex(oldest.value() - 1)).refusal !=
            EventLog::Refusal::kCompacted) {
      return where + "a read before the window was not refused";
    }
  }
  return "";
}

TEST(EventLogModelTest, RandomHistoriesReadAndReplayAsTheNaiveModel) {
  Coverage coverage;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    std::string failure = RunSeed(seed, &coverage);
    ASSERT_EQ(failure, "") << failure;
  }
  EXPECT_GE(coverage.resets, 20);
  EXPECT_GE(coverage.cut_windows, 500);
  EXPECT_GE(coverage.reads, 50'000);
  std::printf("%d resets, %d checks of cut windows, %d reads compared\n", coverage.resets,
              coverage.cut_windows, coverage.reads);
}

}  // namespace
}  // namespace tenure::state
