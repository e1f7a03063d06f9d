// Cluster member records (decision 0008): upsert and removal by command,
// carried by snapshots and the digest; version-1 snapshots (written before
// members existed) still restore.
#include <gtest/gtest.h>

#include <string>

#include "common/coding.h"
#include "state/command.h"
#include "state/store.h"

namespace tenure::state {
namespace {

Member MakeMember(std::uint64_t id, std::string http) {
  return {id,
          "n" + std::to_string(id),
          "127.0.0.1:830" + std::to_string(id),
          std::move(http),
          "",
          "",
          LogIndex()};
}

TEST(StoreMembersTest, SetMemberUpsertsAndRemoveMemberForgets) {
  Store store;
  ApplyResult r =
      store.Apply({ClusterMs(1), SetMember{MakeMember(2, "127.0.0.1:8502")}}, LogIndex(1));
  ASSERT_TRUE(r.ok);
  ASSERT_NE(store.FindMember(2), nullptr);
  EXPECT_EQ(store.FindMember(2)->http_address, "127.0.0.1:8502");
  EXPECT_EQ(store.FindMember(2)->modify_index, LogIndex(1));

  (void)store.Apply({ClusterMs(2), SetMember{MakeMember(2, "127.0.0.1:9502")}}, LogIndex(2));
  (void)store.Apply({ClusterMs(3), SetMember{MakeMember(1, "127.0.0.1:8501")}}, LogIndex(3));
  ASSERT_EQ(store.ListMembers().size(), 2u);
  EXPECT_EQ(store.ListMembers()[0]->id, 1u);  // by id
  EXPECT_EQ(store.FindMember(2)->http_address, "127.0.0.1:9502");
  EXPECT_EQ(store.FindMember(2)->modify_index, LogIndex(2));

  (void)store.Apply({ClusterMs(4), RemoveMember{2}}, LogIndex(4));
  EXPECT_EQ(store.FindMember(2), nullptr);
  (void)store.Apply({ClusterMs(5), RemoveMember{7}}, LogIndex(5));  // unknown: nothing to do
  EXPECT_EQ(store.ListMembers().size(), 1u);
  store.CheckInvariants();
}

TEST(StoreMembersTest, IdZeroIsRefusedAndChangesNothing) {
  Store store;
  ApplyResult r = store.Apply({ClusterMs(1), SetMember{MakeMember(0, "x:1")}}, LogIndex(1));
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(store.ListMembers().empty());
  store.CheckInvariants();
}

TEST(StoreMembersTest, MembersSurviveSnapshotsAndChangeTheDigest) {
  Store a, b;
  (void)a.Apply({ClusterMs(1), SetMember{MakeMember(1, "127.0.0.1:8501")}}, LogIndex(1));
  (void)b.Apply({ClusterMs(1), SetMember{MakeMember(1, "127.0.0.1:9999")}}, LogIndex(1));
  EXPECT_NE(a.Digest(), b.Digest());

  std::string bytes;
  a.EncodeSnapshot(&bytes);
  Result<Store> restored = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  ASSERT_NE(restored->FindMember(1), nullptr);
  EXPECT_EQ(*restored->FindMember(1), *a.FindMember(1));
  EXPECT_EQ(restored->Digest(), a.Digest());
}

// A member's etcd address (decision 0055) makes the snapshot version 10 and
// comes back whole; a state whose members have none keeps its older version.
TEST(StoreMembersTest, AnEtcdAddressIsInTheSnapshotAndTheDigest) {
  Store plain, with_etcd;
  (void)plain.Apply({ClusterMs(1), SetMember{MakeMember(1, "127.0.0.1:8501")}}, LogIndex(1));
  Member member = MakeMember(1, "127.0.0.1:8501");
  member.etcd_address = "127.0.0.1:2379";
  (void)with_etcd.Apply({ClusterMs(1), SetMember{member}}, LogIndex(1));
  EXPECT_NE(plain.Digest(), with_etcd.Digest());

  std::string plain_bytes, etcd_bytes;
  plain.EncodeSnapshot(&plain_bytes);
  with_etcd.EncodeSnapshot(&etcd_bytes);
  EXPECT_EQ(static_cast<int>(plain_bytes[7]), 3);
  EXPECT_EQ(static_cast<int>(etcd_bytes[7]), 10);
  Result<Store> restored = Store::DecodeSnapshot(etcd_bytes);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  ASSERT_NE(restored->FindMember(1), nullptr);
  EXPECT_EQ(restored->FindMember(1)->etcd_address, "127.0.0.1:2379");
  EXPECT_EQ(restored->Digest(), with_etcd.Digest());
}

// A member's ZooKeeper address (decision 0056) makes the snapshot version
// 13, with the etcd address beside it and no ZooKeeper secret made yet;
// the set-member entry carries both.
TEST(StoreMembersTest, AZooKeeperAddressIsInTheSnapshotTheEntryAndTheDigest) {
  Store plain, with_zk;
  Member member = MakeMember(1, "127.0.0.1:8501");
  (void)plain.Apply({ClusterMs(1), SetMember{member}}, LogIndex(1));
  member.zk_address = "tls://127.0.0.1:2281";
  (void)with_zk.Apply({ClusterMs(1), SetMember{member}}, LogIndex(1));
  EXPECT_NE(plain.Digest(), with_zk.Digest());

  std::string bytes;
  with_zk.EncodeSnapshot(&bytes);
  EXPECT_EQ(static_cast<int>(bytes[7]), 13);
  Result<Store> restored = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  ASSERT_NE(restored->FindMember(1), nullptr);
  EXPECT_EQ(restored->FindMember(1)->zk_address, "tls://127.0.0.1:2281");
  EXPECT_EQ(restored->FindMember(1)->etcd_address, "");
  EXPECT_TRUE(restored->zk_secret().empty());
  EXPECT_EQ(restored->Digest(), with_zk.Digest());

  for (const std::string etcd : {"", "127.0.0.1:2379"}) {
    member.etcd_address = etcd;
    std::string entry;
    EncodeCommand({ClusterMs(1), SetMember{member}}, &entry);
    Result<Command> decoded = DecodeCommand(entry);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    const auto* set = std::get_if<SetMember>(&decoded->body);
    ASSERT_NE(set, nullptr);
    EXPECT_EQ(set->member, member);
    EXPECT_EQ(CommandName(*decoded), "set-member");
  }
}

// A version-2 snapshot is a version-3 one without the trailing checksum; a
// version-1 snapshot is a version-2 one without the member count. Both are
// still read (data dirs written by older servers).
TEST(StoreMembersTest, VersionOneAndTwoSnapshotsStillRestore) {
  Store store;
  (void)store.Apply({ClusterMs(1), KvSet{"k", "v", 0}}, LogIndex(1));
  std::string v3;
  store.EncodeSnapshot(&v3);
  ASSERT_EQ(v3[7], 3);  // the version byte after "TNRSNAP"
  std::string v2 = v3.substr(0, v3.size() - 4);
  v2[7] = 2;
  ASSERT_EQ(v2.back(), '\0');  // zero members, one varint byte
  std::string v1 = v2.substr(0, v2.size() - 1);
  v1[7] = 1;
  for (const std::string* old : {&v1, &v2}) {
    Result<Store> restored = Store::DecodeSnapshot(*old);
    ASSERT_TRUE(restored.ok()) << restored.status().ToString();
    EXPECT_TRUE(restored->ListMembers().empty());
    EXPECT_EQ(restored->FindKv("k")->value, "v");
    // ... and re-encodes as version 3.
    EXPECT_EQ(restored->Digest(), store.Digest());
    Result<int> version = Store::CheckSnapshotBytes(*old);
    ASSERT_TRUE(version.ok());
    EXPECT_EQ(*version, (*old)[7]);
  }

  v3[7] = 14;  // the first version no tenure writes yet
  Result<Store> unknown = Store::DecodeSnapshot(v3);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown version 14"), std::string_view::npos);
}

// Version 3's checksum: a changed byte in a value (which decodes fine on its
// own) is refused instead of restored.
TEST(StoreMembersTest, AChangedValueByteFailsTheChecksum) {
  Store store;
  (void)store.Apply({ClusterMs(1), KvSet{"key", "value-bytes", 0}}, LogIndex(1));
  std::string bytes;
  store.EncodeSnapshot(&bytes);
  ASSERT_TRUE(Store::CheckSnapshotBytes(bytes).ok());
  const std::size_t at = bytes.find("value-bytes");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] = 'X';
  Result<Store> decoded = Store::DecodeSnapshot(bytes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), Code::kCorruption);
  EXPECT_NE(decoded.status().message().find("checksum mismatch"), std::string_view::npos)
      << decoded.status().ToString();
  // The same bytes as version 2 (no checksum) decode: what version 3 fixes.
  std::string v2 = bytes.substr(0, bytes.size() - 4);
  v2[7] = 2;
  Result<Store> silent = Store::DecodeSnapshot(v2);
  ASSERT_TRUE(silent.ok());
  EXPECT_EQ(silent->FindKv("key")->value, "valXe-bytes");
}

}  // namespace
}  // namespace tenure::state
