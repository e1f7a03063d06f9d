// Snapshots and digests: EncodeSnapshot -> DecodeSnapshot gives an equal
// store (same Digest, same observable state, same future), replicas fed the
// same commands have equal digests and different states differ; truncated or
// corrupted snapshots are rejected without crashing.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "state/store.h"
#include "unit/state/model_store.h"
#include "unit/state/random_commands.h"
#include "unit/state/state_compare.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::CommandGenerator;
using testutil::ModelStore;
using testutil::StoreDriver;

std::string Encode(const Store& store) {
  std::string out;
  store.EncodeSnapshot(&out);
  return out;
}

// A random history of `steps` commands, applied to `store`.
struct History {
  explicit History(std::uint64_t seed) : gen(seed) {}
  Command Next() { return gen.Next(model); }
  void Apply(Store* store, const Command& c) {
    index = index.Next();
    (void)store->Apply(c, index);
    store->CheckInvariants();
    (void)model.Apply(c, index);
  }
  CommandGenerator gen;
  ModelStore model;
  LogIndex index;
};

TEST(StoreSnapshotTest, EmptyStoreRoundTrips) {
  Store empty;
  Result<Store> decoded = Store::DecodeSnapshot(Encode(empty));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  decoded->CheckInvariants();
  EXPECT_EQ(decoded->Digest(), empty.Digest());
  EXPECT_EQ(decoded->applied_index(), LogIndex());
  EXPECT_EQ(decoded->kv_count(), 0u);
}

TEST(StoreSnapshotTest, EncodingAppendsToTheOutput) {
  StoreDriver d;
  d.Set("k", "v");
  std::string plain = Encode(d.store());
  std::string out = "prefix";
  d.store().EncodeSnapshot(&out);
  EXPECT_EQ(out, "prefix" + plain);
}

TEST(StoreSnapshotTest, EncodingIsDeterministic) {
  StoreDriver d;
  d.NewSession(5 * kNsPerSecond);
  d.Acquire("k", testutil::TestSessionId(1), "v");
  d.Set("j", "x");
  EXPECT_EQ(Encode(d.store()), Encode(d.store()));
}

// Lock-delay windows, tombstones, the reap floor and the clock change future
// apply results and reads, so they must survive a snapshot (DESIGN.md:
// lock-delay should survive a leader change).
TEST(StoreSnapshotTest, RestoredStoreKeepsLockDelayTombstonesClockAndIndexes) {
  StoreDriver d;
  SessionId a = d.NewSession(30 * kNsPerSecond);
  SessionId b = d.NewSession();
  d.Acquire("lock", a, "a");  // 3
  d.Set("gone/x", "1");       // 4
  d.Set("gone/y", "1");       // 5
  d.Delete("gone/x");         // 6
  d.Delete("gone/y");         // 7
  d.Reap(6);                  // 8
  d.Destroy(a);               // 9: window until kT0 + 30 s
  d.SetNowMs(testutil::kC0 + 1000);
  d.Set("tick", "");  // 10

  Result<Store> decoded = Store::DecodeSnapshot(Encode(d.store()));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  Store& r = *decoded;
  r.CheckInvariants();
  EXPECT_EQ(r.Digest(), d.store().Digest());
  EXPECT_EQ(r.applied_index(), LogIndex(10));
  EXPECT_EQ(r.now_ms(), testutil::kC0 + 1000);
  EXPECT_EQ(r.LockDelayUntil("lock"), testutil::kC0 + 30'000);
  EXPECT_EQ(r.PrefixIndex("gone/"), LogIndex(7));
  EXPECT_EQ(r.tombstone_count(), d.store().tombstone_count());
  EXPECT_EQ(r.sessions_index(), LogIndex(9));
  EXPECT_EQ(r.kv_index(), LogIndex(10));
  EXPECT_EQ(testutil::CompareStores(r, d.store(), {a, b}), "");

  // The restored replica refuses the acquire inside the window, too.
  Command acquire{testutil::kC0 + 2000, KvAcquire{"lock", "b", 0, b}};
  ApplyResult in_window = r.Apply(acquire, LogIndex(11));
  EXPECT_TRUE(in_window.lock_delayed);
  EXPECT_FALSE(in_window.ok);
}

TEST(StoreSnapshotTest, RandomHistoriesRoundTripAndStayInStep) {
  for (std::uint64_t seed = 1; seed <= 25; ++seed) {
    History h(seed);
    Store original;
    // Raft takes no snapshot while a restore's chunks are staged (decision
    // 0050): the history runs on until none is.
    for (int step = 0; step < 150 || (original.staging() != nullptr && step < 5000); ++step) {
      h.Apply(&original, h.Next());
    }
    ASSERT_EQ(original.staging(), nullptr) << "seed " << seed;

    const std::string bytes = Encode(original);
    Result<Store> decoded = Store::DecodeSnapshot(bytes);
    ASSERT_TRUE(decoded.ok()) << "seed " << seed << ": " << decoded.status().ToString();
    Store& restored = *decoded;
    restored.CheckInvariants();
    ASSERT_EQ(restored.Digest(), original.Digest()) << "seed " << seed;
    ASSERT_EQ(testutil::CompareStores(restored, original, h.gen.created_ids()), "")
        << "seed " << seed;
    // Re-encoding the restored store gives the same bytes.
    EXPECT_EQ(Encode(restored), bytes) << "seed " << seed;

    // The same further commands keep both replicas identical, results too.
    for (int step = 0; step < 100; ++step) {
      Command c = h.Next();
      h.index = h.index.Next();
      ApplyResult ra = original.Apply(c, h.index);
      ApplyResult rb = restored.Apply(c, h.index);
      (void)h.model.Apply(c, h.index);
      restored.CheckInvariants();
      ASSERT_EQ(ra.status.ToString(), rb.status.ToString()) << "seed " << seed;
      ASSERT_EQ(ra.ok, rb.ok) << "seed " << seed << " " << testutil::Describe(c);
      ASSERT_EQ(ra.lock_delayed, rb.lock_delayed)
          << "seed " << seed << " " << testutil::Describe(c);
      ASSERT_EQ(ra.fence, rb.fence);
      ASSERT_EQ(ra.txn.errors, rb.txn.errors);
      ASSERT_EQ(ra.txn.results, rb.txn.results);
      ASSERT_EQ(original.Digest(), restored.Digest())
          << "seed " << seed << " step " << step << " " << testutil::Describe(c);
    }
  }
}

TEST(StoreDigestTest, ReplicasFedTheSameCommandsHaveEqualDigests) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    History h(seed);
    Store a;
    Store b;
    for (int step = 0; step < 200; ++step) {
      Command c = h.Next();
      h.index = h.index.Next();
      (void)a.Apply(c, h.index);
      (void)b.Apply(c, h.index);
      (void)h.model.Apply(c, h.index);
      ASSERT_EQ(a.Digest(), b.Digest()) << "seed " << seed << " step " << step;
    }
  }
}

TEST(StoreDigestTest, DigestIsStableWhenNothingChanges) {
  StoreDriver d;
  d.Set("k", "v");
  const std::uint64_t before = d.store().Digest();
  (void)d.store().ListKv("");
  (void)d.store().ReadTxn({testutil::GetOp("k")});
  (void)d.store().TakeChanges();
  EXPECT_EQ(d.store().Digest(), before);
}

TEST(StoreDigestTest, DifferentValuesDiffer) {
  StoreDriver a;
  StoreDriver b;
  a.Set("k", "v1");
  b.Set("k", "v2");
  EXPECT_NE(a.store().Digest(), b.store().Digest());
}

TEST(StoreDigestTest, DifferentFlagsDiffer) {
  StoreDriver a;
  StoreDriver b;
  a.Set("k", "v", 1);
  b.Set("k", "v", 2);
  EXPECT_NE(a.store().Digest(), b.store().Digest());
}

TEST(StoreDigestTest, DifferentHoldersDiffer) {
  StoreDriver a;
  StoreDriver b;
  for (StoreDriver* d : {&a, &b}) {
    d->NewSession();
    d->NewSession();
  }
  a.Acquire("k", testutil::TestSessionId(1));
  b.Acquire("k", testutil::TestSessionId(2));
  EXPECT_NE(a.store().Digest(), b.store().Digest());
}

TEST(StoreDigestTest, DifferentSessionsDiffer) {
  StoreDriver a;
  StoreDriver b;
  a.CreateSession(testutil::MakeSession(testutil::TestSessionId(1), "n1"));
  b.CreateSession(testutil::MakeSession(testutil::TestSessionId(1), "n2"));
  EXPECT_NE(a.store().Digest(), b.store().Digest());
}

TEST(StoreDigestTest, KeyAndValueBoundariesDiffer) {
  // ("ab", "c") and ("a", "bc") must not hash alike.
  StoreDriver a;
  StoreDriver b;
  a.Set("ab", "c");
  b.Set("a", "bc");
  EXPECT_NE(a.store().Digest(), b.store().Digest());
}

// Same KV table and sessions; only the lock-delay window differs.
TEST(StoreDigestTest, DifferentLockDelayWindowsDiffer) {
  StoreDriver a;
  StoreDriver b;
  a.CreateSession(testutil::MakeSession(testutil::TestSessionId(1), "n1", 10 * kNsPerSecond));
  b.CreateSession(testutil::MakeSession(testutil::TestSessionId(1), "n1", 0));
  for (StoreDriver* d : {&a, &b}) {
    d->Acquire("k", testutil::TestSessionId(1));
    d->Destroy(testutil::TestSessionId(1));
  }
  ASSERT_EQ(*a.Get("k"), *b.Get("k"));
  ASSERT_EQ(a.store().session_count(), b.store().session_count());
  ASSERT_NE(a.store().LockDelayUntil("k"), b.store().LockDelayUntil("k"));
  EXPECT_NE(a.store().Digest(), b.store().Digest());
}

// Same KV table; only the tombstones (and so PrefixIndex) differ.
TEST(StoreDigestTest, DifferentTombstonesDiffer) {
  StoreDriver a;
  StoreDriver b;
  a.Set("x/1", "");
  a.Delete("x/1");
  b.Set("y/1", "");
  b.Delete("y/1");
  // A later write moves the KV table index, which a prefix with nothing
  // under it may report; x/ keeps its tombstone's index in a only.
  a.Set("z", "");
  b.Set("z", "");
  ASSERT_NE(a.store().PrefixIndex("x/"), b.store().PrefixIndex("x/"));
  EXPECT_NE(a.store().Digest(), b.store().Digest());
}

// --- corrupted snapshots -------------------------------------------------------------

Store RichStore(int steps, History* h) {
  Store store;
  for (int i = 0; i < steps; ++i) h->Apply(&store, h->Next());
  return store;
}

TEST(StoreSnapshotTest, EmptyInputIsRejected) {
  Result<Store> decoded = Store::DecodeSnapshot("");
  EXPECT_FALSE(decoded.ok());
}

TEST(StoreSnapshotTest, EveryTruncationIsRejected) {
  History h(3);
  Store store = RichStore(60, &h);
  const std::string bytes = Encode(store);
  ASSERT_GT(bytes.size(), 50u);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    Result<Store> decoded = Store::DecodeSnapshot(std::string_view(bytes).substr(0, n));
    EXPECT_FALSE(decoded.ok()) << "a " << n << "-byte prefix of a " << bytes.size()
                               << "-byte snapshot was accepted";
    if (decoded.ok()) break;
  }
}

// Random byte flips, insertions, deletions and garbage: never a crash; what
// is accepted must be a store whose invariants hold (checked in a child
// process, since CheckInvariants aborts) and which re-encodes consistently.
TEST(StoreSnapshotTest, CorruptedSnapshotsNeverCrashOrYieldBrokenStores) {
  History h(11);
  Store store = RichStore(80, &h);
  const std::string bytes = Encode(store);
  std::mt19937_64 rng(12345);
  std::vector<std::string> accepted;
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string m = bytes;
    const int kind = static_cast<int>(rng() % 5);
    const std::size_t pos = rng() % m.size();
    switch (kind) {
      case 0:  // flip one bit
        m[pos] = static_cast<char>(m[pos] ^ (1 << (rng() % 8)));
        break;
      case 1:  // overwrite a byte
        m[pos] = static_cast<char>(rng());
        break;
      case 2:  // insert bytes
        m.insert(pos, std::string(1 + rng() % 4, static_cast<char>(rng())));
        break;
      case 3:  // delete bytes
        m.erase(pos, 1 + rng() % 4);
        break;
      default:  // random garbage of random length
        m.resize(rng() % 200);
        for (char& c : m) c = static_cast<char>(rng());
        break;
    }
    Result<Store> decoded = Store::DecodeSnapshot(m);
    if (!decoded.ok()) {
      EXPECT_NE(decoded.status().code(), Code::kOk);
      ++rejected;
      continue;
    }
    EXPECT_NE(kind, 4) << "random garbage of " << m.size() << " bytes decoded as a snapshot";
    // Whatever was accepted re-encodes to something that decodes to an
    // equal store.
    std::string again = Encode(*decoded);
    Result<Store> twice = Store::DecodeSnapshot(again);
    ASSERT_TRUE(twice.ok()) << "re-encoding an accepted snapshot is rejected";
    EXPECT_EQ(twice->Digest(), decoded->Digest());
    accepted.push_back(std::move(m));
  }
  EXPECT_GT(rejected, 2000) << "most corruptions must be detected";
  if (!accepted.empty()) {
    EXPECT_EXIT(
        {
          for (const std::string& m : accepted) {
            Result<Store> decoded = Store::DecodeSnapshot(m);
            decoded->CheckInvariants();
          }
          std::exit(0);
        },
        ::testing::ExitedWithCode(0), "")
        << accepted.size() << " corrupted snapshots were accepted; one breaks an invariant";
  }
}

}  // namespace
}  // namespace tenure::state
