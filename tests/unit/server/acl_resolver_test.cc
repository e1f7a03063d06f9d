// The resolver: a request's secret to the token and Authorizer every server
// would give it, from the replicated table alone; the cache never outlives
// a change of the table.
#include "server/acl_resolver.h"

#include <gtest/gtest.h>

#include "common/consul_texts.h"
#include "state/store.h"
#include "unit/state/store_fixture.h"

namespace tenure::server {
namespace {

using state::AclPolicy;
using state::AclToken;
using state::testutil::StoreDriver;
namespace testutil = state::testutil;

AclToken Token(std::string accessor, std::string secret, std::vector<std::string> policies,
               UnixMs expires = UnixMs()) {
  AclToken t;
  t.accessor_id = std::move(accessor);
  t.secret_id = std::move(secret);
  t.policy_ids = std::move(policies);
  t.expiration_time = expires;
  return t;
}

AclPolicy Policy(std::string id, std::string name, std::string rules) {
  AclPolicy p;
  p.id = std::move(id);
  p.name = std::move(name);
  p.rules = std::move(rules);
  return p;
}

AclConfig Enabled(acl::DefaultPolicy default_policy) {
  AclConfig config;
  config.enabled = true;
  config.default_policy = default_policy;
  return config;
}

class AclResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(d.Apply(state::AclSetup{}).status.ok());
    ASSERT_TRUE(d.Apply(state::AclPolicySet{Policy("p-svc", "svc", R"(key_prefix "svc/" {
  policy = "write"
})")})
                    .status.ok());
    ASSERT_TRUE(d.Apply(state::AclTokenSet{Token("acc-svc", "sec-svc", {"p-svc"})}).status.ok());
  }
  const state::AclTable& table() { return d.store().acl(); }

  StoreDriver d;
};

TEST_F(AclResolverTest, WithAclsOffEveryoneMayDoEverything) {
  AclResolver resolver({});
  Result<Caller> caller = resolver.Resolve(table(), "no-such-secret", testutil::kT0);
  ASSERT_TRUE(caller.ok());
  EXPECT_TRUE(caller->unrestricted);
  EXPECT_TRUE(caller->can().KeyWrite("anything").allowed());
  EXPECT_TRUE(caller->can().AclWrite().allowed());
  EXPECT_TRUE(caller->can().OperatorWrite().allowed());
}

TEST_F(AclResolverTest, NoTokenIsTheAnonymousTokenUnderTheDefaultPolicy) {
  AclResolver deny(Enabled(acl::DefaultPolicy::kDeny));
  Result<Caller> anonymous = deny.Resolve(table(), "", testutil::kT0);
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->accessor_id(), state::kAnonymousTokenAccessorId);
  EXPECT_FALSE(anonymous->sent_token);
  EXPECT_FALSE(anonymous->unrestricted);
  EXPECT_FALSE(anonymous->can().KeyRead("svc/a").allowed());
  EXPECT_EQ(anonymous->Denied(anonymous->can().KeyRead("svc/a"), "svc/a").message(),
            "Permission denied: anonymous token lacks permission 'key:read' on \"svc/a\". The "
            "anonymous token is used implicitly when a request does not specify a token.");

  AclResolver allow(Enabled(acl::DefaultPolicy::kAllow));
  Result<Caller> open = allow.Resolve(table(), "", testutil::kT0);
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->can().KeyWrite("svc/a").allowed());
  EXPECT_FALSE(open->can().AclRead().allowed()) << "the default policy never grants acl";
}

TEST_F(AclResolverTest, AnUnknownSecretIsRefusedNotAnonymous) {
  AclResolver resolver(Enabled(acl::DefaultPolicy::kAllow));
  Result<Caller> caller = resolver.Resolve(table(), "no-such-secret", testutil::kT0);
  ASSERT_FALSE(caller.ok());
  EXPECT_EQ(caller.status().code(), Code::kPermissionDenied);
  EXPECT_EQ(caller.status().message(), consul::kAclNotFound);
  EXPECT_EQ(resolver.cached(), 0u) << "guessed secrets must not grow the cache";
}

TEST_F(AclResolverTest, ATokensPoliciesDecide) {
  AclResolver resolver(Enabled(acl::DefaultPolicy::kDeny));
  Result<Caller> caller = resolver.Resolve(table(), "sec-svc", testutil::kT0);
  ASSERT_TRUE(caller.ok());
  EXPECT_EQ(caller->accessor_id(), "acc-svc");
  EXPECT_TRUE(caller->sent_token);
  EXPECT_TRUE(caller->can().KeyWrite("svc/x").allowed());
  EXPECT_FALSE(caller->can().KeyWrite("other").allowed());
  EXPECT_EQ(caller->Denied(caller->can().KeyWrite("other"), "other").message(),
            "Permission denied: token with AccessorID 'acc-svc' lacks permission 'key:write' on "
            "\"other\"");
  EXPECT_EQ(caller->Denied(caller->can().OperatorRead(), "").message(),
            "Permission denied: token with AccessorID 'acc-svc' lacks permission 'operator:read'");
}

TEST_F(AclResolverTest, AChangedPolicyOrDeletedTokenTakesEffectOnTheNextRequest) {
  AclResolver resolver(Enabled(acl::DefaultPolicy::kDeny));
  ASSERT_TRUE(
      resolver.Resolve(table(), "sec-svc", testutil::kT0)->can().KeyWrite("svc/x").allowed());
  EXPECT_EQ(resolver.cached(), 1u);
  ASSERT_TRUE(d.Apply(state::AclPolicySet{
                          Policy("p-svc", "svc", R"(key_prefix "svc/" { policy = "read" })")})
                  .status.ok());
  Result<Caller> after = resolver.Resolve(table(), "sec-svc", testutil::kT0);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->can().KeyWrite("svc/x").allowed());
  EXPECT_TRUE(after->can().KeyRead("svc/x").allowed());

  ASSERT_TRUE(d.Apply(state::AclTokenDelete{"acc-svc"}).status.ok());
  EXPECT_FALSE(resolver.Resolve(table(), "sec-svc", testutil::kT0).ok());
}

TEST_F(AclResolverTest, AnExpiredTokenIsRefusedBeforeTheLeaderDeletesIt) {
  AclResolver resolver(Enabled(acl::DefaultPolicy::kDeny));
  const UnixMs expires = testutil::kT0 + 60'000;
  ASSERT_TRUE(
      d.Apply(state::AclTokenSet{Token("acc-tmp", "sec-tmp", {"p-svc"}, expires)}).status.ok());
  EXPECT_TRUE(resolver.Resolve(table(), "sec-tmp", expires - 1).ok());
  Result<Caller> late = resolver.Resolve(table(), "sec-tmp", expires);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().message(), consul::kAclNotFound);
}

TEST_F(AclResolverTest, ManagementIsTheBuiltinPolicyAndADenyStillWins) {
  ASSERT_TRUE(d.Apply(state::AclPolicySet{Policy("p-deny", "deny-secrets",
                                                 R"(key_prefix "secret/" { policy = "deny" })")})
                  .status.ok());
  ASSERT_TRUE(
      d.Apply(state::AclTokenSet{Token("acc-root", "sec-root",
                                       {std::string(state::kGlobalManagementPolicyId), "p-deny"})})
          .status.ok());
  AclResolver resolver(Enabled(acl::DefaultPolicy::kDeny));
  Result<Caller> root = resolver.Resolve(table(), "sec-root", testutil::kT0);
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(root->can().AclWrite().allowed());
  EXPECT_TRUE(root->can().OperatorWrite().allowed());
  EXPECT_TRUE(root->can().KeyWrite("anything").allowed());
  EXPECT_FALSE(root->can().KeyRead("secret/x").allowed());
}

TEST_F(AclResolverTest, ACallerStandsUntilTheTablesChangeOrItsTokenExpires) {
  AclResolver resolver(Enabled(acl::DefaultPolicy::kDeny));
  const UnixMs expires = testutil::kT0 + 60'000;
  ASSERT_TRUE(
      d.Apply(state::AclTokenSet{Token("acc-tmp", "sec-tmp", {"p-svc"}, expires)}).status.ok());
  Result<Caller> forever = resolver.Resolve(table(), "sec-svc", testutil::kT0);
  Result<Caller> temporary = resolver.Resolve(table(), "sec-tmp", testutil::kT0);
  ASSERT_TRUE(forever.ok() && temporary.ok());
  EXPECT_TRUE(resolver.StillValid(table(), *forever, testutil::kT0 + 3'600'000));
  EXPECT_TRUE(resolver.StillValid(table(), *temporary, expires - 1));
  EXPECT_FALSE(resolver.StillValid(table(), *temporary, expires));
  // Any change to either table, even to another token, means resolve again.
  ASSERT_TRUE(d.Apply(state::AclTokenSet{Token("acc-new", "sec-new", {})}).status.ok());
  EXPECT_FALSE(resolver.StillValid(table(), *forever, testutil::kT0));
  EXPECT_TRUE(resolver.StillValid(table(), *resolver.Resolve(table(), "sec-svc", testutil::kT0),
                                  testutil::kT0));
}

TEST_F(AclResolverTest, ALinkToADeletedPolicyGrantsNothing) {
  ASSERT_TRUE(d.Apply(state::AclPolicyDelete{"p-svc"}).status.ok());
  AclResolver resolver(Enabled(acl::DefaultPolicy::kDeny));
  Result<Caller> caller = resolver.Resolve(table(), "sec-svc", testutil::kT0);
  ASSERT_TRUE(caller.ok());
  EXPECT_FALSE(caller->can().KeyRead("svc/x").allowed());
}

}  // namespace
}  // namespace tenure::server
