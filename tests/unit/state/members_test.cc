// Cluster member records (decision 0008): upsert and removal by command,
// carried by snapshots and the digest; version-1 snapshots (written before
// members existed) still restore.
#include <gtest/gtest.h>

#include <string>

#include "common/coding.h"
#include "state/store.h"

namespace tenure::state {
namespace {

Member MakeMember(std::uint64_t id, std::string http) {
  return {id, "n" + std::to_string(id), "127.0.0.1:830" + std::to_string(id), std::move(http), 0};
}

TEST(StoreMembersTest, SetMemberUpsertsAndRemoveMemberForgets) {
  Store store;
  ApplyResult r = store.Apply({1, SetMember{MakeMember(2, "127.0.0.1:8502")}}, 1);
  ASSERT_TRUE(r.ok);
  ASSERT_NE(store.FindMember(2), nullptr);
  EXPECT_EQ(store.FindMember(2)->http_address, "127.0.0.1:8502");
  EXPECT_EQ(store.FindMember(2)->modify_index, 1u);

  (void)store.Apply({2, SetMember{MakeMember(2, "127.0.0.1:9502")}}, 2);
  (void)store.Apply({3, SetMember{MakeMember(1, "127.0.0.1:8501")}}, 3);
  ASSERT_EQ(store.ListMembers().size(), 2u);
  EXPECT_EQ(store.ListMembers()[0]->id, 1u);  // by id
  EXPECT_EQ(store.FindMember(2)->http_address, "127.0.0.1:9502");
  EXPECT_EQ(store.FindMember(2)->modify_index, 2u);

  (void)store.Apply({4, RemoveMember{2}}, 4);
  EXPECT_EQ(store.FindMember(2), nullptr);
  (void)store.Apply({5, RemoveMember{7}}, 5);  // unknown: nothing to do
  EXPECT_EQ(store.ListMembers().size(), 1u);
  store.CheckInvariants();
}

TEST(StoreMembersTest, IdZeroIsRefusedAndChangesNothing) {
  Store store;
  ApplyResult r = store.Apply({1, SetMember{MakeMember(0, "x:1")}}, 1);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(store.ListMembers().empty());
  store.CheckInvariants();
}

TEST(StoreMembersTest, MembersSurviveSnapshotsAndChangeTheDigest) {
  Store a, b;
  (void)a.Apply({1, SetMember{MakeMember(1, "127.0.0.1:8501")}}, 1);
  (void)b.Apply({1, SetMember{MakeMember(1, "127.0.0.1:9999")}}, 1);
  EXPECT_NE(a.Digest(), b.Digest());

  std::string bytes;
  a.EncodeSnapshot(&bytes);
  Result<Store> restored = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  ASSERT_NE(restored->FindMember(1), nullptr);
  EXPECT_EQ(*restored->FindMember(1), *a.FindMember(1));
  EXPECT_EQ(restored->Digest(), a.Digest());
}

// A version-1 snapshot is a version-2 one without the member count.
TEST(StoreMembersTest, VersionOneSnapshotsRestoreWithNoMembers) {
  Store store;
  (void)store.Apply({1, KvSet{"k", "v", 0}}, 1);
  std::string v2;
  store.EncodeSnapshot(&v2);
  ASSERT_EQ(v2.back(), '\0');  // zero members, one varint byte
  std::string v1 = v2.substr(0, v2.size() - 1);
  v1[7] = 1;  // the version byte after "TNRSNAP"
  Result<Store> restored = Store::DecodeSnapshot(v1);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_TRUE(restored->ListMembers().empty());
  EXPECT_EQ(restored->FindKv("k")->value, "v");
  // ... and re-encodes as version 2.
  EXPECT_EQ(restored->Digest(), store.Digest());

  v2[7] = 3;
  EXPECT_FALSE(Store::DecodeSnapshot(v2).ok());
}

}  // namespace
}  // namespace tenure::state
