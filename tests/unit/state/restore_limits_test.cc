// What a restore accepts (state/field_limits.h, docs/snapshots.md): a state
// with one field past one of the live API's limits, otherwise valid, is
// refused by the decoder every path shares (a file, an InstallSnapshot, a
// data dir's snapshot) with a sentence naming the field, by OpenBackup with
// the same sentence after "snapshot file: ", and by the RestoreState command
// without changing anything. One test per rule (forged_states.h lists them);
// values at the limits restore; commands past them are refused at apply, so a
// state that passed once passes again.
#include <gtest/gtest.h>

#include <cctype>
#include <limits>
#include <string>

#include "state/backup_file.h"
#include "state/field_limits.h"
#include "unit/state/forged_states.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::Forged;
using testutil::ForgedBase;
using testutil::ForgedCases;
using testutil::ForgedState;
using testutil::kForgedHolder;
using testutil::kForgedNow;
using testutil::kForgedWall;

std::string SnapshotBytes(const Store& store) {
  std::string out;
  store.EncodeSnapshot(&out);
  return out;
}

TEST(RestoreLimitsTest, TheStateTheForgedOnesStartFromRestores) {
  const Store base = ForgedBase();
  ASSERT_TRUE(base.Validate().ok()) << base.Validate().ToString();
  EXPECT_EQ(base.applied_index(), LogIndex(40));
  EXPECT_EQ(base.queue_waiter_count(), 1u);
  EXPECT_EQ(base.lock_delays().size(), 1u);
  ASSERT_NE(base.FindHistory("service/other"), nullptr);
  EXPECT_EQ(base.acl().tokens().size(), 2u);  // anonymous and the forged one
  Result<Store> decoded = Store::DecodeSnapshot(SnapshotBytes(base));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->Digest(), base.Digest());
  Result<OpenedBackup> opened = OpenBackup(EncodeBackup(base, 3, kForgedWall));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
}

class ForgedStateTest : public ::testing::TestWithParam<Forged> {};

TEST_P(ForgedStateTest, IsRefusedNamingTheFieldAndChangesNothing) {
  const Forged& forged = GetParam();
  const Store state = ForgedState(forged);
  const std::string bytes = SnapshotBytes(state);

  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_FALSE(decoded.ok()) << forged.name << " decoded";
  EXPECT_EQ(decoded.status().code(), Code::kInvalidArgument) << decoded.status().ToString();
  const std::string message(decoded.status().message());
  EXPECT_EQ(message.rfind("snapshot: ", 0), 0u) << message;
  EXPECT_NE(message.find(forged.refusal), std::string::npos)
      << "got: " << message << "\nwant: " << forged.refusal;

  // The file: the same sentence, after "snapshot file: " (what PUT
  // /v1/snapshot answers with 400 and `tenure snapshot restore` prints).
  Result<OpenedBackup> opened = OpenBackup(EncodeBackup(state, 3, kForgedWall));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(std::string(opened.status().message()),
            "snapshot file: " + message.substr(std::string("snapshot: ").size()));

  // The command, as a replica applies it: refused, nothing changed.
  testutil::StoreDriver target;
  target.Set("keep", "1");
  ApplyResult result = target.Apply(RestoreState{bytes});
  EXPECT_FALSE(result.status.ok());
  EXPECT_NE(std::string(result.status.message()).find(forged.refusal), std::string::npos)
      << result.status.message();
  EXPECT_EQ(target.store().applied_index(), LogIndex(2));
  ASSERT_NE(target.store().FindKv("keep"), nullptr);
  EXPECT_EQ(target.store().kv_count(), 1u);
  EXPECT_EQ(target.store().session_count(), 0u);
}

std::string CaseName(const ::testing::TestParamInfo<Forged>& info) {
  std::string name;
  for (char c : info.param.name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryLimit, ForgedStateTest, ::testing::ValuesIn(ForgedCases()), CaseName);

TEST(RestoreLimitsTest, ValuesAtTheLimitsRestore) {
  Store state = ForgedBase();
  TEST_StoreEditor e(&state);
  e.SetAppliedIndex(limits::kSnapshotIndexMax);
  e.Entry("config/a").lock_index = limits::kSnapshotIndexMax;
  e.Entry("config/a").version = limits::kSnapshotIndexMax;
  e.PutEntry(std::string(limits::kKvKeyBytesMax, 'k'), std::string(limits::kKvValueBytesMax, 'v'));
  e.SetLockDelay("service/other", kForgedNow + 60'000);
  e.EditSession(testutil::kForgedIdle, [](Session& s) {
    s.ttl = "24h";
    s.ttl_ns = limits::kSessionTtlMaxNs;
    s.lock_delay_ns = std::numeric_limits<DurationNs>::max();  // stored as the API stores it
    s.name = std::string(limits::kSessionNameBytesMax, 'n');
    s.checks.set_node(std::vector<std::string>(limits::kSessionChecksMax, "serfHealth"));
  });
  e.EditSession(kForgedHolder, [](Session& s) {
    s.ttl = "10s";
    s.ttl_ns = limits::kSessionTtlMinNs;
  });
  Result<Store> decoded = Store::DecodeSnapshot(SnapshotBytes(state));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->applied_index(), LogIndex(limits::kSnapshotIndexMax));
  EXPECT_EQ(decoded->FindKv("config/a")->version, limits::kSnapshotIndexMax);
  // The clock at its last millisecond, windows and times before it.
  Store late = ForgedBase();
  TEST_StoreEditor(&late).SetNow(ClusterMs(limits::kUnixMsMax));
  EXPECT_TRUE(Store::DecodeSnapshot(SnapshotBytes(late)).ok());
}

TEST(RestoreLimitsTest, ASaveTimeOutsideTheYearsIsRefused) {
  Result<OpenedBackup> opened =
      OpenBackup(EncodeBackup(ForgedBase(), 3, UnixMs(std::numeric_limits<std::int64_t>::min())));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().message(),
            "snapshot file: its save time -9223372036854775808 ms is outside the years 1970 to "
            "9999");
}

// --- Commands past a limit: refused at apply, nothing changed ---------------

class CommandLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    d_.SetNowMs(testutil::kC0);
    session_ = d_.NewSession();
    d_.Set("keep", "1");
    digest_before_ = Digestless();
  }
  // Everything a refused command must leave as it was (the applied index moves).
  std::string Digestless() const {
    std::string out;
    for (const KvEntry* e : d_.store().ListKv("")) out += e->key + "=" + e->value + ";";
    out += std::to_string(d_.store().session_count()) + ";" +
           std::to_string(d_.store().now_ms().ms()) + ";" +
           std::to_string(d_.store().acl().tokens().size());
    return out;
  }
  void ExpectRefused(CommandBody body, const std::string& words, ClusterMs now = testutil::kC0) {
    ApplyResult r = d_.ApplyAt(std::move(body), now);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.status.code(), Code::kInvalidArgument) << r.status.ToString();
    EXPECT_NE(std::string(r.status.message()).find(words), std::string::npos) << r.status.message();
    EXPECT_EQ(Digestless(), digest_before_);
  }

  testutil::StoreDriver d_;
  SessionId session_;
  std::string digest_before_;
};

TEST_F(CommandLimitsTest, AKeyPastTheLimitIsRefusedByEveryWrite) {
  const std::string key(limits::kKvKeyBytesMax + 1, 'k');
  const std::string words = "is 4097 bytes, longer than the 4096 allowed";
  ExpectRefused(KvSet{key, "v", 0}, words);
  ExpectRefused(KvCas{key, "v", 0, LogIndex()}, words);
  ExpectRefused(KvAcquire{key, "v", 0, session_}, words);
  ExpectRefused(KvRelease{key, "v", 0, session_}, words);
  ExpectRefused(KvEnqueue{key, "v", 0, session_, false}, words);
  ExpectRefused(Txn{{testutil::SetOp("ok", "1"), testutil::SetOp(key, "v")}}, words);
}

TEST_F(CommandLimitsTest, AValuePastTheLimitIsRefusedByEveryWrite) {
  const std::string value(limits::kKvValueBytesMax + 1, 'v');
  const std::string words = "key \"k\": value of 1572865 bytes is larger than the 1572864 allowed";
  ExpectRefused(KvSet{"k", value, 0}, words);
  ExpectRefused(KvAcquire{"k", value, 0, session_}, words);
  ExpectRefused(KvEnqueue{"k", value, 0, session_, false}, words);
  ExpectRefused(Txn{{testutil::SetOp("k", value)}}, words);
}

TEST_F(CommandLimitsTest, ASessionPastTheLimitsIsNotCreated) {
  Session s = testutil::MakeSession(testutil::TestSessionId(900));
  s.ttl = "10s";
  s.ttl_ns = std::numeric_limits<DurationNs>::max();
  ExpectRefused(SessionCreate{s}, "TTL 9223372036854775807 ns is outside [10s, 24h]");
  s.ttl_ns = std::numeric_limits<DurationNs>::min();
  ExpectRefused(SessionCreate{s}, "TTL -9223372036854775808 ns is outside [10s, 24h]");
  s.ttl_ns = 15 * kNsPerSecond;
  ExpectRefused(SessionCreate{s}, "TTL text \"10s\" does not say its 15000000000 ns");
  s = testutil::MakeSession(SessionId());
  ExpectRefused(SessionCreate{s}, "a session has an empty id");
  s = testutil::MakeSession(testutil::TestSessionId(901));
  s.node = std::string(limits::kSessionNameBytesMax + 1, 'n');
  ExpectRefused(SessionCreate{s}, "Node of 1025 bytes is longer than the 1024 allowed");
}

TEST(CommandStampTest, AStampOutsideTheYearsMovesNoClock) {
  Store store;
  std::uint64_t index = 0;
  auto apply_at = [&](std::int64_t now) {
    ApplyResult r =
        store.Apply({ClusterMs(now), KvSet{"t", "1", 0}, UnixMs(now)}, LogIndex(++index));
    store.CheckInvariants();
    return r;
  };
  apply_at(testutil::kT0.ms());
  for (std::int64_t now :
       {std::numeric_limits<std::int64_t>::max(), std::int64_t{-1}, limits::kUnixMsMax + 1}) {
    EXPECT_TRUE(apply_at(now).ok) << now;
    EXPECT_EQ(store.now_ms(), testutil::kC0) << now;
    EXPECT_EQ(store.wall_ms(), testutil::kT0) << now;
  }
  apply_at(limits::kUnixMsMax);
  EXPECT_EQ(store.now_ms(), ClusterMs(limits::kUnixMsMax));
  EXPECT_EQ(store.wall_ms(), UnixMs(limits::kUnixMsMax));
}

TEST_F(CommandLimitsTest, ATokenThatExpiresBeforeItWasMadeIsRefused) {
  d_.Apply(AclSetup{});
  digest_before_ = Digestless();
  AclToken t;
  t.accessor_id = "00000000-0000-4000-8000-0000000a0009";
  t.secret_id = "00000000-0000-4000-8000-0000000c0009";
  t.create_time = testutil::kT0;
  t.expiration_time = testutil::kT0 - 1;
  ApplyResult r = d_.Apply(AclTokenSet{t});
  EXPECT_EQ(std::string(r.status.message()),
            "Invalid Token: ExpirationTime 1699999999999 ms is before its CreateTime "
            "1700000000000 ms");
  t.expiration_time = UnixMs();
  t.create_time = UnixMs(-5);
  r = d_.Apply(AclTokenSet{t});
  EXPECT_EQ(std::string(r.status.message()),
            "Invalid Token: CreateTime -5 ms is outside the years 1970 to 9999");
  EXPECT_EQ(Digestless(), digest_before_);
}

}  // namespace
}  // namespace tenure::state
