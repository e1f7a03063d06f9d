// ZooKeeper's tree in the Store (decision 0056 section 4, state/store_zk.cc):
// ZkWrite's creates, deletes, setData, checks and multis with ZooKeeper
// 3.8's checks in its order and its Stat fields, and the node records that
// every API's writes keep current. The ZooKeeper facts (check order,
// sequence suffixes, cversion, multi results) are those docs/zookeeper-
// compat.md lists, checked there against a running ZooKeeper 3.8.0.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/limits.h"
#include "state/backup_file.h"
#include "state/numbered_session.h"
#include "state/store.h"
#include "unit/state/etcd_ops.h"
#include "unit/state/forged_states.h"
#include "unit/state/golden_hex.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::StoreDriver;

ZkOp ZkCreateOp(std::string path, std::string data = "", bool ephemeral = false,
                bool sequential = false, bool container = false) {
  return ZkOp{ZkOp::Kind::kCreate, std::move(path), std::move(data), -1,
              ephemeral,           sequential,      container};
}
ZkOp ZkDeleteOp(std::string path, std::int32_t version = -1) {
  return ZkOp{ZkOp::Kind::kDelete, std::move(path), "", version, false, false, false};
}
ZkOp ZkSetDataOp(std::string path, std::string data, std::int32_t version = -1) {
  return ZkOp{ZkOp::Kind::kSetData, std::move(path), std::move(data), version, false, false, false};
}
ZkOp ZkCheckOp(std::string path, std::int32_t version) {
  return ZkOp{ZkOp::Kind::kCheck, std::move(path), "", version, false, false, false};
}
ZkOp ZkSetAclOp(std::string path, std::int32_t version = -1) {
  return ZkOp{ZkOp::Kind::kSetAcl, std::move(path), "", version, false, false, false};
}

class ZkDriver : public StoreDriver {
 public:
  ApplyResult Zk(std::vector<ZkOp> ops, SessionId session = SessionId()) {
    return Apply(ZkWrite{std::move(session), std::move(ops)});
  }
  // One op; its code.
  ZkCode Code(ZkOp op, SessionId session = SessionId()) {
    ApplyResult r = Zk({std::move(op)}, std::move(session));
    EXPECT_EQ(r.zk.size(), 1u);
    return r.zk.empty() ? ZkCode::kOk : r.zk[0].code;
  }
  // A ZooKeeper session as slice 3 will make one: numbered, its keys deleted
  // when it ends.
  SessionId ZkSession(std::int64_t number) {
    return CreateSession(testutil::MakeNumberedSession(number));
  }
  ZkStat Stat(std::string_view path) {
    std::optional<ZkStat> stat = store().ZkStatOf(path);
    EXPECT_TRUE(stat.has_value()) << path;
    return stat.value_or(ZkStat());
  }
  std::vector<std::string> Children(std::string_view path) {
    std::vector<std::string> out;
    for (std::string_view name : store().ZkChildren(path)) out.emplace_back(name);
    return out;
  }
};

std::int64_t ZxidOf(LogIndex index) { return static_cast<std::int64_t>(index.value()); }

TEST(StoreZkTest, ACreateStampsEveryStatFieldAndCountsUnderItsParent) {
  ZkDriver d;
  ApplyResult r = d.Zk({ZkCreateOp("/app", "hello")});
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.zk.size(), 1u);
  EXPECT_EQ(r.zk[0].path, "/app");
  const std::int64_t zxid = ZxidOf(d.last_index());
  const std::int64_t now = d.wall_ms().ms();
  const ZkStat want{zxid, zxid, now, now, 0, 0, 0, 0, 5, 0, zxid};
  EXPECT_EQ(r.zk[0].stat, want);
  EXPECT_EQ(d.Stat("/app"), want);
  EXPECT_EQ(d.Get("/app")->value, "hello");
  const ZkStat root = d.Stat("/");
  EXPECT_EQ(root.num_children, 1);
  EXPECT_EQ(root.cversion, 1);
  EXPECT_EQ(root.pzxid, zxid);
  EXPECT_EQ(d.Children("/"), std::vector<std::string>{"app"});
}

// Under a fresh /m, create c1 and delete it; a sequential create of /m/s-
// is then /m/s-0000000001, and /m's visible cversion went 0, 1, 2, 3.
TEST(StoreZkTest, SequenceSuffixesCountCreationsAndCversionCountsDeletesToo) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/m")), ZkCode::kOk);
  EXPECT_EQ(d.Stat("/m").cversion, 0);
  ASSERT_EQ(d.Code(ZkCreateOp("/m/c1")), ZkCode::kOk);
  EXPECT_EQ(d.Stat("/m").cversion, 1);
  ASSERT_EQ(d.Code(ZkDeleteOp("/m/c1")), ZkCode::kOk);
  EXPECT_EQ(d.Stat("/m").cversion, 2);
  EXPECT_EQ(d.Stat("/m").pzxid, ZxidOf(d.last_index()));
  ApplyResult r = d.Zk({ZkCreateOp("/m/s-", "", false, true)});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.zk[0].path, "/m/s-0000000001");
  EXPECT_EQ(d.Stat("/m").cversion, 3);
  // The full path is checked after the suffix: "/m/" is a valid prefix.
  r = d.Zk({ZkCreateOp("/m/", "", false, true)});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.zk[0].path, "/m/0000000002");
  EXPECT_EQ(d.Code(ZkCreateOp("/m/")), ZkCode::kBadArguments);
}

// pRequest2TxnCreate's order: the mode, the session, a path with no '/' or
// a NUL, the parent (before the full path is checked), the path with its
// suffix, existence, an ephemeral parent.
TEST(StoreZkTest, CreateRefusalsComeInZooKeepersOrder) {
  ZkDriver d;
  const SessionId zk = d.ZkSession(0x51);
  const SessionId consul = d.NewSession();
  EXPECT_EQ(d.Code(ZkCreateOp("/c", "", true, false, true), zk), ZkCode::kBadArguments)
      << "no ephemeral container";
  EXPECT_EQ(d.Code(ZkCreateOp("/s", "", false, true, true)), ZkCode::kOk)
      << "a sequential container is one (createContainer with the sequential flag)";
  EXPECT_EQ(d.Code(ZkCreateOp("/e", "", true)), ZkCode::kEphemeralOnLocalSession);
  EXPECT_EQ(d.Code(ZkCreateOp("/e", "", true), consul), ZkCode::kEphemeralOnLocalSession);
  EXPECT_EQ(d.Code(ZkCreateOp("nope")), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkCreateOp(std::string("/a\0b", 4))), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkCreateOp("/missing/x")), ZkCode::kNoNode);
  EXPECT_EQ(d.Code(ZkCreateOp("/missing/")), ZkCode::kNoNode);
  EXPECT_EQ(d.Code(ZkCreateOp("/x/../y")), ZkCode::kNoNode);
  EXPECT_EQ(d.Code(ZkCreateOp("/a/")), ZkCode::kNoNode);
  EXPECT_EQ(d.Code(ZkCreateOp("/bad\x01")), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkCreateOp("/")), ZkCode::kNodeExists);
  EXPECT_EQ(d.Code(ZkCreateOp("/zookeeper/x")), ZkCode::kBadArguments);
  ASSERT_EQ(d.Code(ZkCreateOp("/e", "", true), zk), ZkCode::kOk);
  EXPECT_EQ(d.Code(ZkCreateOp("/e")), ZkCode::kNodeExists);
  EXPECT_EQ(d.Code(ZkCreateOp("/e/child")), ZkCode::kNoChildrenForEphemerals);
  EXPECT_EQ(d.store().kv_count(), 2u) << "the sequential container and /e";
  // A path is a key, at most 4,096 bytes with its suffix.
  const std::string longest = "/" + std::string(limits::kKvKeyBytesMax - 1, 'p');
  EXPECT_EQ(d.Code(ZkCreateOp(longest)), ZkCode::kOk);
  ASSERT_EQ(d.Code(ZkCreateOp("/q")), ZkCode::kOk);
  const std::string near = "/q/" + std::string(limits::kKvKeyBytesMax - 12, 'n');
  EXPECT_EQ(d.Code(ZkCreateOp(near, "", false, true)), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkCreateOp(near.substr(0, near.size() - 1), "", false, true)), ZkCode::kOk);
}

TEST(StoreZkTest, AnEphemeralIsHeldByItsSessionAndGoesWithIt) {
  ZkDriver d;
  const SessionId zk = d.ZkSession(0x7ead);
  ASSERT_EQ(d.Code(ZkCreateOp("/lock")), ZkCode::kOk);
  ApplyResult r = d.Zk({ZkCreateOp("/lock/n-", "", true, true)}, zk);
  ASSERT_TRUE(r.ok);
  const std::string node = r.zk[0].path;
  EXPECT_EQ(node, "/lock/n-0000000000");
  EXPECT_EQ(r.zk[0].stat.ephemeral_owner, 0x7ead);
  // Its czxid is the grant's fencing token.
  EXPECT_EQ(d.Get(node)->fence, d.last_index());
  EXPECT_EQ(d.Held(zk), std::vector<std::string>{node});
  d.Destroy(zk, DestroyReason::kExpired);
  EXPECT_FALSE(d.Get(node).has_value());
  const ZkStat lock = d.Stat("/lock");
  EXPECT_EQ(lock.num_children, 0);
  EXPECT_EQ(lock.cversion, 2);
  EXPECT_EQ(lock.pzxid, ZxidOf(d.last_index()));
  // A write by a session that ended is refused whole.
  r = d.Zk({ZkCreateOp("/lock/n-", "", true, true)}, zk);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.zk_error, ZkCode::kSessionExpired);
  EXPECT_TRUE(r.zk.empty());
}

// A Consul lock-delay window on a name keeps an ephemeral off it until it
// passes, as it keeps a Consul acquire or an etcd Put with a lease off.
TEST(StoreZkTest, AnEphemeralWaitsOutALockDelayWindowOnItsName) {
  ZkDriver d;
  const SessionId zk = d.ZkSession(0x1d);
  const SessionId consul = d.NewSession(15 * kNsPerSecond, Behavior::kDelete);
  ASSERT_TRUE(d.Acquire("/leader", consul).ok);
  d.Destroy(consul);
  ASSERT_FALSE(d.Get("/leader").has_value());
  EXPECT_EQ(d.Code(ZkCreateOp("/leader", "", true), zk), ZkCode::kNodeExists);
  d.AdvanceMs(15'001);
  EXPECT_EQ(d.Code(ZkCreateOp("/leader", "", true), zk), ZkCode::kOk);
  EXPECT_EQ(d.Get("/leader")->session, zk);
}

// delete: the path's shape, the node, the version, then the children.
TEST(StoreZkTest, DeleteChecksVersionBeforeChildren) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/p")), ZkCode::kOk);
  ASSERT_EQ(d.Code(ZkCreateOp("/p/c")), ZkCode::kOk);
  EXPECT_EQ(d.Code(ZkDeleteOp("/p", 5)), ZkCode::kBadVersion);
  EXPECT_EQ(d.Code(ZkDeleteOp("/p")), ZkCode::kNotEmpty);
  EXPECT_EQ(d.Code(ZkDeleteOp("/p", 0)), ZkCode::kNotEmpty);
  EXPECT_EQ(d.Code(ZkDeleteOp("/p/none")), ZkCode::kNoNode);
  EXPECT_EQ(d.Code(ZkDeleteOp("/")), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkDeleteOp("/zookeeper")), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkDeleteOp("p")), ZkCode::kBadArguments);
  const ZkStat before = d.Stat("/p");
  ASSERT_EQ(d.Code(ZkDeleteOp("/p/c", 0)), ZkCode::kOk);
  const ZkStat after = d.Stat("/p");
  // The parent's own fields stay; only its children's do not.
  EXPECT_EQ(after.mzxid, before.mzxid);
  EXPECT_EQ(after.version, before.version);
  EXPECT_EQ(after.mtime, before.mtime);
  EXPECT_EQ(after.pzxid, ZxidOf(d.last_index()));
  EXPECT_EQ(after.cversion, before.cversion + 1);
  EXPECT_EQ(d.Code(ZkDeleteOp("/p")), ZkCode::kOk);
  EXPECT_EQ(d.store().kv_count(), 0u);
  EXPECT_EQ(d.store().FindZkNode("/p"), nullptr);
}

// A lone setData, delete or check runs without ApplyZkWrite's journal
// (they check everything before their first change): failing, each leaves
// every key and node record as it was.
TEST(StoreZkTest, ALoneFailingSetDataDeleteOrCheckChangesNothing) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/p", "a")), ZkCode::kOk);
  ASSERT_EQ(d.Code(ZkCreateOp("/p/c", "b")), ZkCode::kOk);
  ASSERT_TRUE(d.Set("/p/c/other-api", "c").ok);  // a key with no node record
  const std::vector<std::string> keys = {"/p", "/p/c", "/p/c/other-api"};
  auto entries = [&d, &keys] {
    std::vector<std::optional<KvEntry>> out;
    for (const std::string& key : keys) out.push_back(d.Get(key));
    return out;
  };
  const auto entries_before = entries();
  const auto records_before = d.store().zk_nodes();
  const std::vector<std::pair<ZkOp, ZkCode>> failing = {
      {ZkSetDataOp("/p", "x", 7), ZkCode::kBadVersion},
      {ZkSetDataOp("/p/c/other-api", "x", 3), ZkCode::kBadVersion},
      {ZkSetDataOp("/p/none", "x"), ZkCode::kNoNode},
      {ZkSetDataOp("/none/c", "x"), ZkCode::kNoNode},
      {ZkSetDataOp("/p/", "x"), ZkCode::kBadArguments},
      {ZkDeleteOp("/p/c", 4), ZkCode::kBadVersion},
      {ZkDeleteOp("/p"), ZkCode::kNotEmpty},
      {ZkDeleteOp("/p/c/other-api/x"), ZkCode::kNoNode},
      {ZkCheckOp("/p", 9), ZkCode::kBadVersion},
      {ZkCheckOp("/q", -1), ZkCode::kNoNode},
  };
  for (const auto& [op, code] : failing) {
    ApplyResult r = d.Zk({op});
    EXPECT_FALSE(r.ok) << op.path;
    ASSERT_EQ(r.zk.size(), 1u);
    EXPECT_EQ(r.zk[0].code, code) << op.path;
    EXPECT_EQ(entries(), entries_before) << op.path;
    EXPECT_EQ(d.store().zk_nodes(), records_before) << op.path;
  }
}

TEST(StoreZkTest, SetDataMovesVersionMzxidAndMtimeOnly) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/s", "a")), ZkCode::kOk);
  const ZkStat created = d.Stat("/s");
  d.AdvanceMs(1500);
  EXPECT_EQ(d.Code(ZkSetDataOp("/s", "b", 1)), ZkCode::kBadVersion);
  ApplyResult r = d.Zk({ZkSetDataOp("/s", "bcd", 0)});
  ASSERT_TRUE(r.ok);
  const ZkStat changed = r.zk[0].stat;
  EXPECT_EQ(changed.version, 1);
  EXPECT_EQ(changed.mzxid, ZxidOf(d.last_index()));
  EXPECT_EQ(changed.mtime, d.wall_ms().ms());
  EXPECT_EQ(changed.ctime, created.ctime);
  EXPECT_EQ(changed.czxid, created.czxid);
  EXPECT_EQ(changed.pzxid, created.pzxid);
  EXPECT_EQ(changed.cversion, created.cversion);
  EXPECT_EQ(changed.data_length, 3);
  EXPECT_EQ(d.Code(ZkSetDataOp("/s", "x")), ZkCode::kOk);
  EXPECT_EQ(d.Stat("/s").version, 2);
  EXPECT_EQ(d.Code(ZkSetDataOp("/none", "x")), ZkCode::kNoNode);
  EXPECT_EQ(d.Code(ZkSetDataOp("/", "x")), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkSetDataOp("/s/", "x")), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkCheckOp("/s", 2)), ZkCode::kOk);
  EXPECT_EQ(d.Code(ZkCheckOp("/s", 1)), ZkCode::kBadVersion);
  EXPECT_EQ(d.Code(ZkCheckOp("/none", -1)), ZkCode::kNoNode);
  EXPECT_EQ(d.Code(ZkCheckOp("/", 0)), ZkCode::kOk);
}

// setACL counts the aversion, checked as a version is, and moves nothing
// else: no key is written, so no modify index, mzxid or mtime moves.
TEST(StoreZkTest, SetAclMovesTheAversionOnly) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/a", "v")), ZkCode::kOk);
  const ZkStat created = d.Stat("/a");
  const LogIndex kv_index = d.store().kv_index();
  d.AdvanceMs(1500);
  ApplyResult r = d.Zk({ZkSetAclOp("/a", 0)});
  ASSERT_TRUE(r.ok);
  ZkStat expected = created;
  expected.aversion = 1;
  EXPECT_EQ(r.zk[0].stat, expected);
  EXPECT_EQ(d.Stat("/a"), expected);
  EXPECT_EQ(d.store().kv_index(), kv_index);
  EXPECT_EQ(d.Code(ZkSetAclOp("/a", 0)), ZkCode::kBadVersion);
  EXPECT_EQ(d.Code(ZkSetAclOp("/a")), ZkCode::kOk);
  EXPECT_EQ(d.Stat("/a").aversion, 2);
  EXPECT_EQ(d.Code(ZkSetAclOp("/none")), ZkCode::kNoNode);
  EXPECT_EQ(d.Code(ZkSetAclOp("/a/")), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkSetAclOp("/zookeeper/config")), ZkCode::kBadArguments);
  EXPECT_EQ(d.Code(ZkSetAclOp("/", 0)), ZkCode::kOk);
  EXPECT_EQ(d.Stat("/").aversion, 1);
  // A multi that fails after it rolls the aversion back.
  ApplyResult failed = d.Zk({ZkSetAclOp("/a"), ZkDeleteOp("/none")});
  EXPECT_FALSE(failed.ok);
  EXPECT_EQ(d.Stat("/a").aversion, 2);
  // Snapshots carry it.
  std::string bytes;
  d.store().EncodeSnapshot(&bytes);
  Result<Store> restored = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->ZkStatOf("/a")->aversion, 2);
}

// multi(create ok, delete missing, setData): 0, NONODE, RUNTIMEINCONSISTENCY,
// and nothing of it applied.
TEST(StoreZkTest, AFailedMultiAnswersEachOpAndAppliesNothing) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/t")), ZkCode::kOk);
  const std::uint64_t digest_keys = d.store().kv_count();
  const ZkNode parent = *d.store().FindZkNode("/t");
  const LogIndex kv_index = d.store().kv_index();
  ApplyResult r = d.Zk({ZkCreateOp("/t/a"), ZkDeleteOp("/t/none"), ZkSetDataOp("/t", "x")});
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.zk.size(), 3u);
  EXPECT_EQ(r.zk[0], ZkOpResult());
  EXPECT_EQ(r.zk[1].code, ZkCode::kNoNode);
  EXPECT_EQ(r.zk[2].code, ZkCode::kRuntimeInconsistency);
  EXPECT_EQ(d.store().kv_count(), digest_keys);
  EXPECT_EQ(*d.store().FindZkNode("/t"), parent);
  EXPECT_EQ(d.store().FindZkNode("/t/a"), nullptr);
  EXPECT_EQ(d.store().kv_index(), kv_index);
}

// Each write of a key is listed with how it changed, in order, so the
// ZooKeeper port fires watches op by op (zk/client_port.cc); a multi that
// failed lists nothing.
TEST(StoreZkTest, ChangesListEachWriteOfAKeyAndHowInApplyOrder) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/w")), ZkCode::kOk);
  d.store().TakeChanges();
  ASSERT_TRUE(d.Zk({ZkCreateOp("/w/a"), ZkSetDataOp("/w/a", "1"), ZkDeleteOp("/w/a"),
                    ZkCreateOp("/w/a"), ZkSetDataOp("/w", "2")})
                  .ok);
  Changes changes = d.store().TakeChanges();
  EXPECT_EQ(changes.keys, (std::vector<std::string>{"/w/a", "/w/a", "/w/a", "/w/a", "/w"}));
  EXPECT_EQ(changes.key_changes,
            (std::vector<KeyChange>{KeyChange::kCreated, KeyChange::kChanged, KeyChange::kDeleted,
                                    KeyChange::kCreated, KeyChange::kChanged}));
  EXPECT_FALSE(d.Zk({ZkSetDataOp("/w", "3"), ZkDeleteOp("/w/none")}).ok);
  changes = d.store().TakeChanges();
  EXPECT_TRUE(changes.keys.empty());
  EXPECT_TRUE(changes.key_changes.empty());
}

// Each op sees what the ops before it did, in one entry: one zxid.
TEST(StoreZkTest, AMultiSeesItsOwnOpsAndSharesOneZxid) {
  ZkDriver d;
  ApplyResult r = d.Zk({ZkCreateOp("/u"), ZkCreateOp("/u/q-", "", false, true),
                        ZkSetDataOp("/u", "v", 0), ZkCheckOp("/u", 1),
                        ZkCreateOp("/u/q-", "", false, true), ZkDeleteOp("/u/q-0000000000")});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.zk[1].path, "/u/q-0000000000");
  EXPECT_EQ(r.zk[2].stat.version, 1);
  EXPECT_EQ(r.zk[4].path, "/u/q-0000000001");
  const std::int64_t zxid = ZxidOf(d.last_index());
  EXPECT_EQ(d.Stat("/u").czxid, zxid);
  EXPECT_EQ(d.Stat("/u/q-0000000001").czxid, zxid);
  EXPECT_EQ(d.Children("/u"), std::vector<std::string>{"q-0000000001"});
  EXPECT_EQ(d.Stat("/u").cversion, 3);  // two creates and a delete
  // An empty multi applies and changes nothing.
  r = d.Zk({});
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.zk.empty());
}

// The same keys through etcd's and Consul's APIs keep a record current.
TEST(StoreZkTest, OtherApisWritesKeepTheRecordsCurrent) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/x")), ZkCode::kOk);
  d.Apply(EtcdTxn{EtcdTxnRequest{{}, {testutil::Put("/x/etcd", "v")}, {}}});
  d.Set("/x/consul", "w");
  d.Set(std::string("/x/bad\x01", 7), "not a znode");
  d.Set("/x/deep/orphan", "its parent is no key");
  ZkStat x = d.Stat("/x");
  EXPECT_EQ(x.num_children, 2);
  EXPECT_EQ(x.cversion, 2);
  EXPECT_EQ(d.Children("/x"), (std::vector<std::string>{"consul", "etcd"}));
  EXPECT_FALSE(d.store().IsZnode("/x/deep/orphan"));
  EXPECT_FALSE(d.store().ZkStatOf("/x/deep/orphan").has_value());
  d.Delete("/x/etcd");
  x = d.Stat("/x");
  EXPECT_EQ(x.num_children, 1);
  EXPECT_EQ(x.cversion, 3);
  EXPECT_EQ(x.pzxid, ZxidOf(d.last_index()));
  // A change of the value through Consul is a change of ZooKeeper's data.
  d.AdvanceMs(2000);
  d.Set("/x", "new");
  x = d.Stat("/x");
  EXPECT_EQ(x.version, 1);
  EXPECT_EQ(x.mtime, d.wall_ms().ms());
  // A Consul delete of a parent leaves its children as orphans.
  d.Delete("/x");
  EXPECT_EQ(d.store().FindZkNode("/x"), nullptr);
  EXPECT_EQ(d.Stat("/").num_children, 0);
  EXPECT_EQ(d.Code(ZkCreateOp("/x")), ZkCode::kOk);
  EXPECT_EQ(d.Stat("/x").num_children, 1);  // the orphan /x/consul is its child again
  EXPECT_EQ(d.Code(ZkDeleteOp("/x")), ZkCode::kNotEmpty);
}

// A key no ZooKeeper write touched: ctime and mtime 0, children counted,
// each as if created once; a sequential create under it counts them.
TEST(StoreZkTest, AKeyWithoutARecordCountsItsChildrenOnRead) {
  ZkDriver d;
  d.Set("/e", "");
  d.Set("/e/1", "");
  d.Set("/e/2", "");
  const LogIndex second = d.last_index();
  d.Set("/e/2/below", "");
  const ZkStat e = d.Stat("/e");
  EXPECT_EQ(e.ctime, 0);
  EXPECT_EQ(e.mtime, 0);
  EXPECT_EQ(e.num_children, 2);
  EXPECT_EQ(e.cversion, 2);
  EXPECT_EQ(e.pzxid, ZxidOf(second));
  EXPECT_EQ(d.store().FindZkNode("/e"), nullptr);
  ApplyResult r = d.Zk({ZkCreateOp("/e/s", "", false, true)});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.zk[0].path, "/e/s0000000002");
  EXPECT_EQ(d.Stat("/e").num_children, 3);
  EXPECT_EQ(d.Stat("/e").cversion, 3);
}

// A Consul txn that fails puts the records back as they were.
TEST(StoreZkTest, ARolledBackConsulTxnLeavesTheRecordsAsTheyWere) {
  ZkDriver d;
  ASSERT_EQ(d.Code(ZkCreateOp("/r")), ZkCode::kOk);
  const ZkNode before = *d.store().FindZkNode("/r");
  ApplyResult r = d.RunTxn({testutil::SetOp("/r/new", "v"), testutil::CheckIndexOp("/r", 999)});
  EXPECT_FALSE(r.txn.errors.empty());
  EXPECT_EQ(*d.store().FindZkNode("/r"), before);
  EXPECT_FALSE(d.Get("/r/new").has_value());
}

TEST(StoreZkTest, ContainersAreFlaggedAndSnapshotsCarryTheRecords) {
  ZkDriver d;
  const SessionId zk = d.ZkSession(9);
  ASSERT_EQ(d.Code(ZkCreateOp("/locks", "", false, false, true)), ZkCode::kOk);
  EXPECT_TRUE(d.store().FindZkNode("/locks")->container);
  EXPECT_EQ(d.Stat("/locks").ephemeral_owner, 0);
  ASSERT_TRUE(d.Zk({ZkCreateOp("/locks/l-", "me", true, true)}, zk).ok);
  std::string bytes;
  d.store().EncodeSnapshot(&bytes);
  EXPECT_EQ(static_cast<int>(bytes[7]), 11);  // the version byte after "TNRSNAP"
  Result<Store> back = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->zk_nodes(), d.store().zk_nodes());
  EXPECT_EQ(back->Digest(), d.store().Digest());
  EXPECT_EQ(back->ZkStatOf("/locks/l-0000000000"), d.store().ZkStatOf("/locks/l-0000000000"));
}

// Bytes no encoder writes: a record of a key that does not exist, or one
// whose count of children is not what the keys show, or with a time past
// year 9999. Each is refused naming what is wrong.
TEST(StoreZkTest, ASnapshotWithAForgedRecordIsRefused) {
  auto refused = [](const std::function<void(TEST_StoreEditor&)>& forge) {
    ZkDriver d;
    EXPECT_EQ(d.Code(ZkCreateOp("/p")), ZkCode::kOk);
    EXPECT_EQ(d.Code(ZkCreateOp("/p/c")), ZkCode::kOk);
    TEST_StoreEditor editor(&d.store());
    forge(editor);
    std::string bytes;
    d.store().EncodeSnapshot(&bytes);
    Result<Store> decoded = Store::DecodeSnapshot(bytes);
    return decoded.ok() ? std::string("decoded") : std::string(decoded.status().message());
  };
  EXPECT_NE(refused([](TEST_StoreEditor& e) { e.ZkRecord("/none"); }).find("state invariant"),
            std::string::npos);
  EXPECT_NE(refused([](TEST_StoreEditor& e) {
              e.ZkRecord("/p").children = 2;
            }).find("ZkChildren(path).size()"),
            std::string::npos);
  EXPECT_NE(
      refused([](TEST_StoreEditor& e) { e.ZkRecord("/").container = true; }).find("container"),
      std::string::npos);
  EXPECT_NE(refused([](TEST_StoreEditor& e) {
              e.ZkRecord("/p").mtime = UnixMs(INT64_MAX);
            }).find("ZooKeeper node record \"/p\": mtime"),
            std::string::npos);
  EXPECT_EQ(refused([](TEST_StoreEditor&) {}), "decoded");
}

// The password secret is set once; snapshots carry it as version 12.
TEST(StoreZkTest, TheSessionSecretIsSetOnceAndSnapshotsCarryIt) {
  ZkDriver d;
  EXPECT_TRUE(d.store().zk_secret().empty());
  ApplyResult r = d.Apply(ZkSecret{std::string(31, 'x')});
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(), "ZooKeeper session secret of 31 bytes, not 32");
  EXPECT_TRUE(d.store().zk_secret().empty());
  ASSERT_TRUE(d.Apply(ZkSecret{std::string(32, 'a')}).status.ok());
  r = d.Apply(ZkSecret{std::string(32, 'b')});
  EXPECT_EQ(r.status.message(), "the ZooKeeper session secret is set already");
  EXPECT_EQ(d.store().zk_secret(), std::string(32, 'a'));
  std::string bytes;
  d.store().EncodeSnapshot(&bytes);
  EXPECT_EQ(static_cast<int>(bytes[7]), 12);
  Result<Store> back = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->zk_secret(), d.store().zk_secret());
  EXPECT_TRUE(back->zk_nodes().empty());
  EXPECT_EQ(back->Digest(), d.store().Digest());
}

// The format of version 11, pinned: the forged base state with a container
// and a sequential child under it, written at its next index
// (tests/testdata/snapshots.golden).
TEST(StoreZkTest, TheFormatMatchesTheGoldenFile) {
  Store store = testutil::ForgedBase();
  const LogIndex index = store.applied_index().Next();
  const ZkWrite write{
      SessionId(),
      {ZkCreateOp("/golden", "g", false, false, true), ZkCreateOp("/golden/n-", "", false, true)}};
  ASSERT_TRUE(store.Apply({testutil::kForgedNow, write, testutil::kForgedWall}, index).ok);
  const std::string got = EncodeBackup(store, 3, testutil::kForgedWall + 1000);
  std::ifstream file(std::string(TENURE_TESTDATA_DIR) + "/snapshots.golden");
  std::string line, want;
  while (std::getline(file, line)) {
    if (line.rfind("forged-base-v11 ", 0) == 0) want = testing::Unhex(line.substr(16));
  }
  ASSERT_FALSE(want.empty()) << "forged-base-v11 " << testing::Hex(got);
  EXPECT_EQ(testing::Hex(got), testing::Hex(want)) << "a changed format needs a new version";
  Result<OpenedBackup> opened = OpenBackup(want);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(static_cast<int>(opened->state[7]), 11);
  EXPECT_EQ(opened->store.zk_nodes(), store.zk_nodes());
}

// The format of version 12, pinned: the state of version 11's golden file
// with the session secret set at the index after.
TEST(StoreZkTest, TheSecretsFormatMatchesTheGoldenFile) {
  Store store = testutil::ForgedBase();
  LogIndex index = store.applied_index().Next();
  const ZkWrite write{
      SessionId(),
      {ZkCreateOp("/golden", "g", false, false, true), ZkCreateOp("/golden/n-", "", false, true)}};
  ASSERT_TRUE(store.Apply({testutil::kForgedNow, write, testutil::kForgedWall}, index).ok);
  index = index.Next();
  std::string secret;
  for (int i = 0; i < 32; ++i) secret.push_back(static_cast<char>(i * 7));
  ASSERT_TRUE(
      store.Apply({testutil::kForgedNow, ZkSecret{secret}, testutil::kForgedWall}, index).ok);
  const std::string got = EncodeBackup(store, 3, testutil::kForgedWall + 1000);
  std::ifstream file(std::string(TENURE_TESTDATA_DIR) + "/snapshots.golden");
  std::string line, want;
  while (std::getline(file, line)) {
    if (line.rfind("forged-base-v12 ", 0) == 0) want = testing::Unhex(line.substr(16));
  }
  ASSERT_FALSE(want.empty()) << "forged-base-v12 " << testing::Hex(got);
  EXPECT_EQ(testing::Hex(got), testing::Hex(want)) << "a changed format needs a new version";
  Result<OpenedBackup> opened = OpenBackup(want);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(static_cast<int>(opened->state[7]), 12);
  EXPECT_EQ(opened->store.zk_secret(), secret);
}

}  // namespace
}  // namespace tenure::state
