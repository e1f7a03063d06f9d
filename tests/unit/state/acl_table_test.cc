// The replicated ACL state through the Store: bootstrap once (and again only
// with the reset index), the built-ins and their protections, policy names,
// token secrets and policy links, and the snapshot's version 4 section.
#include <gtest/gtest.h>

#include <string>

#include "common/limits.h"
#include "state/store.h"
#include "unit/state/store_fixture.h"

namespace tenure::state {
namespace {

using testutil::StoreDriver;

AclToken MakeToken(std::string accessor, std::string secret,
                   std::vector<std::string> policies = {}) {
  AclToken t;
  t.accessor_id = std::move(accessor);
  t.secret_id = std::move(secret);
  t.description = "test token";
  t.policy_ids = std::move(policies);
  t.create_time = testutil::kT0;
  return t;
}

AclPolicy MakePolicy(std::string id, std::string name, std::string rules = "") {
  AclPolicy p;
  p.id = std::move(id);
  p.name = std::move(name);
  p.rules = std::move(rules);
  return p;
}

TEST(StoreAclTest, BootstrapCreatesTheBuiltinsAndAManagementTokenOnce) {
  StoreDriver d;
  EXPECT_FALSE(d.store().acl().has_builtins());
  ApplyResult first = d.Apply(AclBootstrap{MakeToken("acc-1", "secret-1"), LogIndex()});
  ASSERT_TRUE(first.status.ok()) << first.status.ToString();
  const AclTable& acl = d.store().acl();
  EXPECT_TRUE(acl.has_builtins());
  EXPECT_EQ(acl.bootstrap_index(), d.last_index());
  const AclToken* token = acl.FindTokenBySecret("secret-1");
  ASSERT_NE(token, nullptr);
  EXPECT_EQ(token->accessor_id, "acc-1");
  EXPECT_EQ(token->policy_ids, std::vector<std::string>{std::string(kGlobalManagementPolicyId)});
  EXPECT_EQ(acl.FindPolicyByName("global-management")->id, kGlobalManagementPolicyId);
  EXPECT_EQ(acl.FindTokenBySecret("anonymous")->accessor_id, kAnonymousTokenAccessorId);

  const AclTable before = d.store().acl();
  ApplyResult again = d.Apply(AclBootstrap{MakeToken("acc-2", "secret-2"), LogIndex()});
  EXPECT_EQ(again.status.code(), Code::kPermissionDenied);
  EXPECT_EQ(again.status.message(),
            "Permission denied: ACL bootstrap no longer allowed (reset index: " +
                std::to_string(acl.bootstrap_index().value()) + ")");
  EXPECT_TRUE(d.store().acl() == before) << "a refused bootstrap changes nothing";
}

TEST(StoreAclTest, TheResetIndexAllowsOneMoreBootstrap) {
  StoreDriver d;
  ASSERT_TRUE(d.Apply(AclBootstrap{MakeToken("acc-1", "secret-1"), LogIndex()}).status.ok());
  const LogIndex first = d.store().acl().bootstrap_index();
  EXPECT_FALSE(d.Apply(AclBootstrap{MakeToken("acc-2", "s2"), first.Next()}).status.ok());
  ASSERT_TRUE(d.Apply(AclBootstrap{MakeToken("acc-2", "s2"), first}).status.ok());
  EXPECT_GT(d.store().acl().bootstrap_index(), first);
  // The old reset index is spent.
  EXPECT_FALSE(d.Apply(AclBootstrap{MakeToken("acc-3", "s3"), first}).status.ok());
  EXPECT_NE(d.store().acl().FindTokenBySecret("secret-1"), nullptr) << "lost tokens stay";
}

TEST(StoreAclTest, TheBuiltinsCannotBeDeletedNorTheManagementRulesChanged) {
  StoreDriver d;
  ASSERT_TRUE(d.Apply(AclSetup{}).status.ok());
  ApplyResult policy = d.Apply(AclPolicyDelete{std::string(kGlobalManagementPolicyId)});
  EXPECT_EQ(policy.status.message(),
            "Delete operation not permitted on the builtin global-management policy");
  ApplyResult token = d.Apply(AclTokenDelete{std::string(kAnonymousTokenAccessorId)});
  EXPECT_EQ(token.status.message(), "Delete operation not permitted on the anonymous token");
  AclPolicy changed = *d.store().acl().FindPolicy(kGlobalManagementPolicyId);
  changed.rules = "key_prefix \"\" { policy = \"read\" }";
  EXPECT_EQ(d.Apply(AclPolicySet{changed}).status.message(),
            "Changing the Rules for the builtin global-management policy is not permitted");
  // Its description may change, as in Consul.
  changed = *d.store().acl().FindPolicy(kGlobalManagementPolicyId);
  changed.description = "ours";
  EXPECT_TRUE(d.Apply(AclPolicySet{changed}).status.ok());
  // The anonymous token may be given policies.
  ASSERT_TRUE(d.Apply(AclPolicySet{MakePolicy("p1", "read-all",
                                              "key_prefix \"\" { policy = "
                                              "\"read\" }")})
                  .status.ok());
  AclToken anonymous = *d.store().acl().FindToken(kAnonymousTokenAccessorId);
  anonymous.policy_ids = {"p1"};
  EXPECT_TRUE(d.Apply(AclTokenSet{anonymous}).status.ok());
  EXPECT_EQ(d.store().acl().FindToken(kAnonymousTokenAccessorId)->policy_ids,
            std::vector<std::string>{"p1"});
}

TEST(StoreAclTest, PolicyNamesAreUniqueValidAndRulesMustParse) {
  StoreDriver d;
  ASSERT_TRUE(d.Apply(AclPolicySet{MakePolicy("p1", "candidates")}).status.ok());
  EXPECT_EQ(d.Apply(AclPolicySet{MakePolicy("p2", "candidates")}).status.message(),
            "Invalid Policy: A Policy with Name \"candidates\" already exists");
  EXPECT_EQ(d.Apply(AclPolicySet{MakePolicy("p2", "bad name")}).status.message(),
            "Invalid Policy: invalid Name. Only alphanumeric characters, '-' and '_' are allowed");
  ApplyResult broken = d.Apply(AclPolicySet{MakePolicy("p2", "broken", "key \"a\" { polcy }")});
  EXPECT_EQ(broken.status.code(), Code::kInvalidArgument);
  EXPECT_EQ(broken.status.message().rfind("Invalid Policy: line 1, column ", 0), 0u)
      << broken.status.message();
  EXPECT_EQ(d.store().acl().policies().size(), 1u);
  // A rename frees the old name; create and modify indexes as Consul's.
  const LogIndex created = d.store().acl().FindPolicy("p1")->create_index;
  ASSERT_TRUE(d.Apply(AclPolicySet{MakePolicy("p1", "renamed")}).status.ok());
  EXPECT_EQ(d.store().acl().FindPolicyByName("candidates"), nullptr);
  EXPECT_EQ(d.store().acl().FindPolicyByName("renamed")->create_index, created);
  EXPECT_EQ(d.store().acl().FindPolicyByName("renamed")->modify_index, d.last_index());
  EXPECT_EQ(d.store().acl().policies_index(), d.last_index());
}

TEST(StoreAclTest, TokensNeedExistingPoliciesAndTheirOwnSecret) {
  StoreDriver d;
  ASSERT_TRUE(d.Apply(AclPolicySet{MakePolicy("p1", "one")}).status.ok());
  EXPECT_EQ(d.Apply(AclTokenSet{MakeToken("a1", "s1", {"p9"})}).status.message(),
            "No such ACL policy with ID \"p9\"");
  ASSERT_TRUE(d.Apply(AclTokenSet{MakeToken("a1", "s1", {"p1"})}).status.ok());
  EXPECT_EQ(d.Apply(AclTokenSet{MakeToken("a2", "s1")}).status.message(),
            "Invalid Token: SecretID is already in use");
  EXPECT_EQ(d.Apply(AclTokenSet{MakeToken("a1", "other")}).status.message(),
            "Changing a token's SecretID is not permitted");
  AclToken local = MakeToken("a1", "s1", {"p1"});
  local.local = true;
  EXPECT_EQ(d.Apply(AclTokenSet{local}).status.message(), "Cannot toggle local mode of a1");
  // An update keeps the create time and create index.
  AclToken update = MakeToken("a1", "s1");
  update.create_time = testutil::kT0 + 99'000;
  update.description = "now without policies";
  ASSERT_TRUE(d.Apply(AclTokenSet{update}).status.ok());
  const AclToken* stored = d.store().acl().FindToken("a1");
  EXPECT_EQ(stored->create_time, testutil::kT0);
  EXPECT_LT(stored->create_index, stored->modify_index);
  EXPECT_TRUE(stored->policy_ids.empty());
  // A deleted policy's link stays on its tokens (Consul ignores it on read).
  ASSERT_TRUE(d.Apply(AclTokenSet{MakeToken("a2", "s2", {"p1"})}).status.ok());
  ASSERT_TRUE(d.Apply(AclPolicyDelete{"p1"}).status.ok());
  EXPECT_EQ(d.store().acl().FindToken("a2")->policy_ids, std::vector<std::string>{"p1"});
  EXPECT_EQ(d.Apply(AclTokenDelete{"a9"}).status.message(), "Cannot find token to delete");
  ASSERT_TRUE(d.Apply(AclTokenDelete{"a2"}).status.ok());
  EXPECT_EQ(d.store().acl().FindTokenBySecret("s2"), nullptr);
}

TEST(StoreAclTest, SetupAddsTheInitialManagementTokenOnce) {
  StoreDriver d;
  AclSetup setup;
  setup.initial_management = MakeToken("init", "root-secret");
  ASSERT_TRUE(d.Apply(setup).status.ok());
  const LogIndex tokens_index = d.store().acl().tokens_index();
  EXPECT_EQ(d.store().acl().FindTokenBySecret("root-secret")->policy_ids,
            std::vector<std::string>{std::string(kGlobalManagementPolicyId)});
  // The configured token is the bootstrap: the endpoint is closed after it.
  EXPECT_EQ(d.store().acl().bootstrap_index(), d.last_index());
  EXPECT_EQ(d.Apply(AclBootstrap{MakeToken("acc-2", "secret-2"), LogIndex()}).status.code(),
            Code::kPermissionDenied);
  // Every later leader writes the same setup: nothing changes.
  const AclTable before = d.store().acl();
  ASSERT_TRUE(d.Apply(setup).status.ok());
  EXPECT_EQ(d.store().acl().tokens_index(), tokens_index);
  EXPECT_TRUE(d.store().acl() == before);
  EXPECT_EQ(d.store().acl().tokens().size(), 2u);  // the anonymous token and this one
}

// Found by the soak (seed 29928203233): a table whose objects were all
// deleted still has its indexes; a snapshot must carry them, or a replica
// restored from it diverges at the next ACL write.
TEST(StoreAclTest, ASnapshotOfAnEmptiedTableKeepsItsIndexes) {
  StoreDriver d;
  ASSERT_TRUE(d.Apply(AclPolicySet{MakePolicy("p1", "one")}).status.ok());
  ASSERT_TRUE(d.Apply(AclPolicyDelete{"p1"}).status.ok());
  ASSERT_FALSE(d.store().acl().policies_index().is_none());
  std::string bytes;
  d.store().EncodeSnapshot(&bytes);
  Result<Store> restored = Store::DecodeSnapshot(bytes);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_TRUE(restored->acl() == d.store().acl());
  EXPECT_EQ(restored->Digest(), d.store().Digest());
}

TEST(StoreAclTest, ExpiryIsFoundByTheLeadersClock) {
  StoreDriver d;
  AclToken soon = MakeToken("a1", "s1");
  soon.expiration_time = testutil::kT0 + 5'000;
  AclToken later = MakeToken("a2", "s2");
  later.expiration_time = testutil::kT0 + 9'000;
  ASSERT_TRUE(d.Apply(AclTokenSet{soon}).status.ok());
  ASSERT_TRUE(d.Apply(AclTokenSet{later}).status.ok());
  ASSERT_TRUE(d.Apply(AclTokenSet{MakeToken("a3", "s3")}).status.ok());
  EXPECT_EQ(d.store().acl().NextExpiration(), testutil::kT0 + 5'000);
  EXPECT_TRUE(d.store().acl().ExpiredAt(testutil::kT0 + 4'999).empty());
  EXPECT_EQ(d.store().acl().ExpiredAt(testutil::kT0 + 5'000), std::vector<std::string>{"a1"});
  EXPECT_EQ(d.store().acl().ExpiredAt(testutil::kT0 + 10'000),
            (std::vector<std::string>{"a1", "a2"}));
}

TEST(StoreAclTest, LimitsAreRefusedWithoutChange) {
  StoreDriver d;
  AclPolicy wordy = MakePolicy("p1", "wordy");
  wordy.description = std::string(limits::kAclDescriptionBytesMax + 1, 'd');
  EXPECT_EQ(d.Apply(AclPolicySet{wordy}).status.code(), Code::kInvalidArgument);
  AclPolicy big = MakePolicy("p1", "big", std::string(limits::kAclRulesBytesMax + 1, ' '));
  EXPECT_FALSE(d.Apply(AclPolicySet{big}).status.ok());
  ASSERT_TRUE(d.Apply(AclPolicySet{MakePolicy("p1", "one")}).status.ok());
  AclToken many = MakeToken("a1", "s1");
  many.policy_ids.assign(limits::kAclPoliciesPerTokenMax + 1, "p1");
  EXPECT_EQ(d.Apply(AclTokenSet{many}).status.code(), Code::kInvalidArgument);
  EXPECT_TRUE(d.store().acl().tokens().empty());
}

// Version 4 carries the ACL section; a store without ACL state still writes
// version 3 byte for byte, so its digest does not change with this feature.
TEST(StoreAclTest, SnapshotsCarryTheAclSectionOnlyWhenThereIsOne) {
  StoreDriver d;
  d.Set("k", "v");
  std::string plain;
  d.store().EncodeSnapshot(&plain);
  EXPECT_EQ(plain[7], 3);

  ASSERT_TRUE(d.Apply(AclBootstrap{MakeToken("acc", "sec"), LogIndex()}).status.ok());
  ASSERT_TRUE(d.Apply(AclPolicySet{MakePolicy("p1", "one", "operator = \"read\"")}).status.ok());
  std::string with_acl;
  d.store().EncodeSnapshot(&with_acl);
  EXPECT_EQ(with_acl[7], 4);
  Result<Store> restored = Store::DecodeSnapshot(with_acl);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_TRUE(restored->acl() == d.store().acl());
  EXPECT_EQ(restored->Digest(), d.store().Digest());
  EXPECT_EQ(restored->acl().FindTokenBySecret("sec")->accessor_id, "acc");

  // The digest covers the ACL state: one policy's description differs.
  AclPolicy p = *d.store().acl().FindPolicy("p1");
  p.description = "changed";
  const std::uint64_t before = d.store().Digest();
  ASSERT_TRUE(d.Apply(AclPolicySet{p}).status.ok());
  EXPECT_NE(d.store().Digest(), before);

  // Every truncation of a version 4 snapshot is refused.
  for (std::size_t cut = 8; cut < with_acl.size(); cut += 7) {
    EXPECT_FALSE(Store::DecodeSnapshot(with_acl.substr(0, cut)).ok()) << cut;
  }
}

}  // namespace
}  // namespace tenure::state
