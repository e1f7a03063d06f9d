// The Authorizer: Consul's precedence (exact over prefix, the longest prefix,
// the merge of policies), what each disposition grants, the default policy,
// management, KeyList's option, KeyWritePrefix, and the denial's permission.
#include "acl/authorizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "acl/rules.h"

namespace tenure::acl {
namespace {

Rules Parse(std::string_view text) {
  Result<Rules> rules = ParseRules(text);
  EXPECT_TRUE(rules.ok()) << rules.status().ToString();
  return rules.ok() ? *rules : Rules{};
}

AuthorizerOptions Deny() { return {.default_policy = DefaultPolicy::kDeny}; }
AuthorizerOptions Allow() { return {.default_policy = DefaultPolicy::kAllow}; }

Authorizer Compile(std::string_view text, AuthorizerOptions options = Deny()) {
  const Rules rules = Parse(text);
  return Authorizer::Compile({&rules}, options);
}

TEST(AuthorizerTest, ExactRuleBeatsEveryPrefixRule) {
  const Authorizer authz = Compile(R"(
key_prefix "svc/" { policy = "deny" }
key "svc/leader" { policy = "write" }
key_prefix "app/" { policy = "write" }
key "app/secret" { policy = "deny" }
)");
  EXPECT_TRUE(authz.KeyWrite("svc/leader").allowed());
  EXPECT_FALSE(authz.KeyRead("svc/leader2").allowed());
  EXPECT_FALSE(authz.KeyRead("svc/").allowed());
  EXPECT_TRUE(authz.KeyWrite("app/x").allowed());
  EXPECT_FALSE(authz.KeyRead("app/secret").allowed());
  EXPECT_TRUE(authz.KeyWrite("app/secret/x").allowed());  // exact means exact
}

TEST(AuthorizerTest, TheLongestMatchingPrefixWins) {
  const Authorizer authz = Compile(R"(
key_prefix "" { policy = "read" }
key_prefix "a/" { policy = "write" }
key_prefix "a/b/" { policy = "deny" }
key_prefix "a/b/c/" { policy = "list" }
)");
  EXPECT_TRUE(authz.KeyRead("").allowed());
  EXPECT_TRUE(authz.KeyRead("z").allowed());
  EXPECT_FALSE(authz.KeyWrite("z").allowed());
  EXPECT_TRUE(authz.KeyWrite("a/").allowed());
  EXPECT_TRUE(authz.KeyWrite("a/x").allowed());
  EXPECT_TRUE(authz.KeyWrite("a/b").allowed());
  EXPECT_FALSE(authz.KeyRead("a/b/").allowed());
  EXPECT_FALSE(authz.KeyRead("a/b/x").allowed());
  EXPECT_TRUE(authz.KeyRead("a/b/c/d").allowed());
  EXPECT_FALSE(authz.KeyWrite("a/b/c/d").allowed());
}

TEST(AuthorizerTest, AnEmptyPrefixMatchesEverything) {
  const Authorizer authz = Compile("key_prefix \"\" { policy = \"write\" }");
  for (const char* key : {"", "a", "a/b/c", "\xff\x00"}) EXPECT_TRUE(authz.KeyWrite(key).allowed());
  EXPECT_FALSE(authz.SessionRead("node1").allowed());  // other resources: the default
}

TEST(AuthorizerTest, WriteImpliesListImpliesRead) {
  const Authorizer authz =
      Compile(R"(
key "w" { policy = "write" }
key "l" { policy = "list" }
key "r" { policy = "read" }
key "d" { policy = "deny" }
)",
              {.default_policy = DefaultPolicy::kAllow, .enable_key_list_policy = true});
  struct Case {
    const char* key;
    bool read, list, write;
  };
  for (const Case& c :
       {Case{"w", true, true, true}, Case{"l", true, true, false}, Case{"r", true, false, false},
        Case{"d", false, false, false}, Case{"none", true, true, true}}) {
    EXPECT_EQ(authz.KeyRead(c.key).allowed(), c.read) << c.key;
    EXPECT_EQ(authz.KeyList(c.key).allowed(), c.list) << c.key;
    EXPECT_EQ(authz.KeyWrite(c.key).allowed(), c.write) << c.key;
  }
}

TEST(AuthorizerTest, PoliciesMergeDenyOverWriteOverListOverRead) {
  const Rules read = Parse("key \"k\" { policy = \"read\" }\noperator = \"read\"");
  const Rules list = Parse("key \"k\" { policy = \"list\" }");
  const Rules write = Parse("key \"k\" { policy = \"write\" }\noperator = \"write\"");
  const Rules deny = Parse("key \"k\" { policy = \"deny\" }\noperator = \"deny\"");
  const AuthorizerOptions options = {.default_policy = DefaultPolicy::kAllow,
                                     .enable_key_list_policy = true};
  // Not "the most restrictive": read and write give write.
  const Authorizer read_write = Authorizer::Compile({&read, &write}, options);
  EXPECT_TRUE(read_write.KeyWrite("k").allowed());
  EXPECT_TRUE(read_write.OperatorWrite().allowed());
  const Authorizer write_read = Authorizer::Compile({&write, &read}, options);
  EXPECT_TRUE(write_read.KeyWrite("k").allowed());
  const Authorizer read_list = Authorizer::Compile({&read, &list}, options);
  EXPECT_TRUE(read_list.KeyList("k").allowed());
  EXPECT_FALSE(read_list.KeyWrite("k").allowed());
  // ...but a deny anywhere wins.
  for (const auto& policies : std::vector<std::vector<const Rules*>>{
           {&write, &deny}, {&deny, &write}, {&read, &list, &write, &deny}}) {
    const Authorizer authz = Authorizer::Compile(policies, options);
    EXPECT_FALSE(authz.KeyRead("k").allowed());
    EXPECT_FALSE(authz.OperatorRead().allowed());
  }
  // The same label repeated in one policy merges the same way.
  const Authorizer repeated =
      Compile("key \"k\" { policy = \"write\" }\nkey \"k\" { policy = \"read\" }");
  EXPECT_TRUE(repeated.KeyWrite("k").allowed());
}

TEST(AuthorizerTest, MergingIsPerLabelAndKindSoExactStillBeatsPrefix) {
  const Rules a = Parse("key_prefix \"k\" { policy = \"deny\" }");
  const Rules b = Parse("key \"k\" { policy = \"write\" }");
  const Authorizer authz = Authorizer::Compile({&a, &b}, Deny());
  EXPECT_TRUE(authz.KeyWrite("k").allowed());
  EXPECT_FALSE(authz.KeyRead("k2").allowed());
}

TEST(AuthorizerTest, NoRuleMeansTheDefaultPolicy) {
  const Authorizer deny = Compile("key \"a\" { policy = \"read\" }", Deny());
  const Authorizer allow = Compile("key \"a\" { policy = \"read\" }", Allow());
  EXPECT_FALSE(deny.KeyRead("b").allowed());
  EXPECT_TRUE(allow.KeyWrite("b").allowed());
  EXPECT_FALSE(allow.KeyWrite("a").allowed());  // a rule decides even under allow
  EXPECT_FALSE(deny.SessionWrite("n").allowed());
  EXPECT_TRUE(allow.SessionWrite("n").allowed());
  EXPECT_TRUE(allow.NodeWrite("n").allowed());
  EXPECT_TRUE(allow.AgentWrite("n").allowed());
  EXPECT_TRUE(allow.OperatorWrite().allowed());
  EXPECT_FALSE(deny.OperatorRead().allowed());
}

TEST(AuthorizerTest, TheDefaultPolicyNeverGrantsAcl) {
  const Authorizer allow = Authorizer::Compile({}, Allow());
  EXPECT_FALSE(allow.AclRead().allowed());
  EXPECT_FALSE(allow.AclWrite().allowed());
  const Authorizer reader = Compile("acl = \"read\"", Allow());
  EXPECT_TRUE(reader.AclRead().allowed());
  EXPECT_FALSE(reader.AclWrite().allowed());
  EXPECT_TRUE(Compile("acl = \"write\"", Deny()).AclWrite().allowed());
}

TEST(AuthorizerTest, ManagementAllowsEverythingButAnotherPolicysDeny) {
  const Authorizer management = Authorizer::Compile({}, {.management = true});
  EXPECT_TRUE(management.KeyWrite("any").allowed());
  EXPECT_TRUE(management.KeyWritePrefix("").allowed());
  EXPECT_TRUE(management.SessionWrite("n").allowed());
  EXPECT_TRUE(management.NodeWrite("n").allowed());
  EXPECT_TRUE(management.AgentWrite("n").allowed());
  EXPECT_TRUE(management.OperatorWrite().allowed());
  EXPECT_TRUE(management.AclWrite().allowed());
  // global-management is an ordinary policy of write rules: a deny in another
  // policy of the token still wins, as in Consul.
  const Rules deny = Parse("key \"secret\" { policy = \"deny\" }\nacl = \"deny\"");
  const Authorizer both = Authorizer::Compile({&deny}, {.management = true});
  EXPECT_FALSE(both.KeyRead("secret").allowed());
  EXPECT_TRUE(both.KeyWrite("secret2").allowed());
  EXPECT_FALSE(both.KeyWritePrefix("").allowed());
  EXPECT_FALSE(both.AclRead().allowed());
  EXPECT_TRUE(both.OperatorWrite().allowed());
}

TEST(AuthorizerTest, KeyListIsCheckedOnlyWhenTheListPolicyIsOn) {
  const char* rules =
      "key_prefix \"r/\" { policy = \"read\" }\nkey_prefix \"l/\" { policy = "
      "\"list\" }";
  const Authorizer off = Compile(rules);
  EXPECT_TRUE(off.KeyList("r/").allowed());
  EXPECT_TRUE(off.KeyList("nothing/").allowed());
  const Authorizer on = Compile(rules, {.enable_key_list_policy = true});
  EXPECT_FALSE(on.KeyList("r/").allowed());
  EXPECT_TRUE(on.KeyList("l/").allowed());
  EXPECT_TRUE(on.KeyRead("l/x").allowed());
  EXPECT_FALSE(on.KeyList("nothing/").allowed());
}

TEST(AuthorizerTest, KeyWritePrefixNeedsWriteOnEverythingUnderThePrefix) {
  // Default deny: a write rule covering the prefix is needed.
  const Authorizer deny = Compile(R"(
key_prefix "a/" { policy = "write" }
key_prefix "a/locked/" { policy = "read" }
key_prefix "b/c/" { policy = "write" }
)");
  EXPECT_FALSE(deny.KeyWritePrefix("a/").allowed());         // a/locked/ under it is read
  EXPECT_TRUE(deny.KeyWritePrefix("a/x").allowed());         // nothing below write under a/x
  EXPECT_FALSE(deny.KeyWritePrefix("a/locked/").allowed());  // covered by read
  EXPECT_FALSE(deny.KeyWritePrefix("a/lock").allowed());     // a/locked/ starts with it
  EXPECT_FALSE(deny.KeyWritePrefix("b/").allowed());         // no covering rule: the default
  EXPECT_TRUE(deny.KeyWritePrefix("b/c/").allowed());
  EXPECT_FALSE(deny.KeyWritePrefix("").allowed());

  // Default allow: any rule below write under the prefix refuses it.
  const Authorizer allow = Compile(R"(
key "x/y" { policy = "read" }
key "z/" { policy = "deny" }
key_prefix "w/" { policy = "write" }
)",
                                   Allow());
  EXPECT_FALSE(allow.KeyWritePrefix("x/").allowed());
  EXPECT_FALSE(allow.KeyWritePrefix("x/y").allowed());  // the exact rule is under it
  EXPECT_TRUE(allow.KeyWritePrefix("x/y/").allowed());
  EXPECT_FALSE(allow.KeyWritePrefix("z/").allowed());
  EXPECT_FALSE(allow.KeyWritePrefix("").allowed());
  EXPECT_TRUE(allow.KeyWritePrefix("w/").allowed());
  EXPECT_TRUE(allow.KeyWritePrefix("q/").allowed());

  // An exact rule for the prefix itself counts as under it, not as covering it.
  const Authorizer exact = Compile(R"(
key "e/" { policy = "write" }
key_prefix "f/" { policy = "write" }
key "f/" { policy = "read" }
)");
  EXPECT_FALSE(exact.KeyWritePrefix("e/").allowed());  // no covering prefix rule: the default
  EXPECT_FALSE(exact.KeyWritePrefix("f/").allowed());
}

TEST(AuthorizerTest, SessionsNodesAndAgentsByNodeName) {
  const Authorizer authz = Compile(R"(
session_prefix "" { policy = "read" }
session "db1" { policy = "write" }
node_prefix "web-" { policy = "write" }
node "web-9" { policy = "deny" }
agent_prefix "" { policy = "read" }
agent "ops" { policy = "write" }
)");
  EXPECT_TRUE(authz.SessionRead("any").allowed());
  EXPECT_FALSE(authz.SessionWrite("any").allowed());
  EXPECT_TRUE(authz.SessionWrite("db1").allowed());
  EXPECT_FALSE(authz.SessionWrite("db10").allowed());
  EXPECT_TRUE(authz.NodeWrite("web-1").allowed());
  EXPECT_FALSE(authz.NodeRead("web-9").allowed());
  EXPECT_FALSE(authz.NodeRead("db1").allowed());
  EXPECT_TRUE(authz.AgentRead("x").allowed());
  EXPECT_FALSE(authz.AgentWrite("x").allowed());
  EXPECT_TRUE(authz.AgentWrite("ops").allowed());
  // Resources stay apart: key rules say nothing of sessions.
  EXPECT_FALSE(authz.KeyRead("db1").allowed());
}

TEST(AuthorizerTest, EveryDenialNamesThePermissionConsulNames) {
  const Authorizer authz = Authorizer::Compile({}, {.enable_key_list_policy = true});
  EXPECT_EQ(authz.KeyRead("k").permission(), "key:read");
  EXPECT_EQ(authz.KeyList("k").permission(), "key:list");
  EXPECT_EQ(authz.KeyWrite("k").permission(), "key:write");
  EXPECT_EQ(authz.KeyWritePrefix("k").permission(), "key:write");
  EXPECT_EQ(authz.SessionRead("n").permission(), "session:read");
  EXPECT_EQ(authz.SessionWrite("n").permission(), "session:write");
  EXPECT_EQ(authz.NodeRead("n").permission(), "node:read");
  EXPECT_EQ(authz.NodeWrite("n").permission(), "node:write");
  EXPECT_EQ(authz.AgentRead("n").permission(), "agent:read");
  EXPECT_EQ(authz.AgentWrite("n").permission(), "agent:write");
  EXPECT_EQ(authz.OperatorRead().permission(), "operator:read");
  EXPECT_EQ(authz.OperatorWrite().permission(), "operator:write");
  EXPECT_EQ(authz.AclRead().permission(), "acl:read");
  EXPECT_EQ(authz.AclWrite().permission(), "acl:write");
  const Decision d = authz.KeyWrite("k");
  EXPECT_FALSE(d.allowed());
  EXPECT_EQ(d.resource(), Resource::kKey);
  EXPECT_EQ(d.access(), Access::kWrite);
  EXPECT_EQ(ResourceName(Resource::kSession), "session");
  EXPECT_EQ(AccessName(Access::kList), "list");
}

TEST(AuthorizerTest, ListingsAreFilteredSilentlyInOrder) {
  const Authorizer authz = Compile(R"(
key_prefix "pub/" { policy = "read" }
key "pub/secret" { policy = "deny" }
session_prefix "web-" { policy = "read" }
)");
  struct Entry {
    std::string key;
  };
  std::vector<Entry> entries = {{"pub/a"}, {"priv/b"}, {"pub/secret"}, {"pub/c"}};
  EXPECT_EQ(EraseUnreadableKeys(authz, entries, [](const Entry& e) { return e.key; }), 2u);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].key, "pub/a");
  EXPECT_EQ(entries[1].key, "pub/c");
  std::vector<std::string> nodes = {"web-1", "db-1", "web-2"};
  EXPECT_EQ(EraseUnreadableSessions(authz, nodes, [](const std::string& n) { return n; }), 1u);
  EXPECT_EQ(nodes, (std::vector<std::string>{"web-1", "web-2"}));
  EXPECT_EQ(EraseUnreadableKeys(authz, entries, [](const Entry& e) { return e.key; }), 0u);
}

TEST(AuthorizerTest, NullPoliciesAreSkipped) {
  const Rules rules = Parse("key \"a\" { policy = \"write\" }");
  const Authorizer authz = Authorizer::Compile({nullptr, &rules, nullptr}, Deny());
  EXPECT_TRUE(authz.KeyWrite("a").allowed());
}

TEST(AuthorizerTest, ThousandsOfRulesAndLongLabels) {
  // A chain of labels each the prefix of the next, and a label of 64 KiB:
  // building and checking neither recurses nor scans every rule.
  Rules rules;
  std::string label;
  for (int i = 0; i < 5000; ++i) {
    label += static_cast<char>('a' + i % 3);
    rules.keys.push_back({label, true, i % 2 == 0 ? Disposition::kWrite : Disposition::kRead});
  }
  rules.keys.push_back({std::string(64 * 1024, 'z'), false, Disposition::kWrite});
  const Authorizer authz = Authorizer::Compile({&rules}, Deny());
  EXPECT_TRUE(authz.KeyWrite(label.substr(0, 4999) + "x").allowed());  // rule 4998: write
  EXPECT_FALSE(authz.KeyWrite(label + "x").allowed());                 // rule 4999: read
  EXPECT_TRUE(authz.KeyRead(label).allowed());
  EXPECT_TRUE(authz.KeyWrite(std::string(64 * 1024, 'z')).allowed());
  EXPECT_FALSE(authz.KeyWrite(std::string(64 * 1024 - 1, 'z')).allowed());
  EXPECT_FALSE(authz.KeyWritePrefix("a").allowed());
}

TEST(AuthorizerTest, KeyReadPrefixNeedsReadOnTheWholePrefixAndNoDenyUnderIt) {
  const Authorizer authz = Compile(
      "key_prefix \"app/\" { policy = \"read\" }\n"
      "key_prefix \"app/secret/\" { policy = \"deny\" }\n"
      "key_prefix \"web/\" { policy = \"list\" }",
      Deny());
  EXPECT_TRUE(authz.KeyReadPrefix("app/public/").allowed());
  EXPECT_TRUE(authz.KeyReadPrefix("web/").allowed());  // list and write grant read too
  // A range that would include a denied key is refused whole, not filtered.
  EXPECT_FALSE(authz.KeyReadPrefix("app/").allowed());
  EXPECT_FALSE(authz.KeyReadPrefix("app/secret/x").allowed());
  // No covering rule: the default decides, and a deny below still refuses.
  EXPECT_FALSE(authz.KeyReadPrefix("").allowed());
  EXPECT_FALSE(Compile("key \"a/b\" { policy = \"deny\" }", Allow()).KeyReadPrefix("a/").allowed());
  EXPECT_TRUE(Compile("key \"a/b\" { policy = \"read\" }", Allow()).KeyReadPrefix("a/").allowed());
  EXPECT_EQ(authz.KeyReadPrefix("").permission(), "key:read");
}

}  // namespace
}  // namespace tenure::acl
