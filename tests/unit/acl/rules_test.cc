// ParseRules: every form of Consul's rules tenure accepts (HCL blocks and
// objects, JSON objects and lists), and every error with its exact text.
#include "acl/rules.h"

#include <gtest/gtest.h>

#include <string>

#include "common/limits.h"

namespace tenure::acl {
namespace {

constexpr Disposition kRead = Disposition::kRead;
constexpr Disposition kList = Disposition::kList;
constexpr Disposition kWrite = Disposition::kWrite;
constexpr Disposition kDeny = Disposition::kDeny;

Rules Parse(std::string_view text) {
  Result<Rules> rules = ParseRules(text);
  EXPECT_TRUE(rules.ok()) << rules.status().ToString() << "\n" << text;
  return rules.ok() ? *rules : Rules{};
}

std::string Error(std::string_view text) {
  Result<Rules> rules = ParseRules(text);
  EXPECT_FALSE(rules.ok()) << text;
  if (rules.ok()) return "(parsed)";
  EXPECT_EQ(rules.status().code(), Code::kInvalidArgument) << text;
  return std::string(rules.status().message());
}

TEST(AclRulesTest, EmptyTextWhiteSpaceAndCommentsAreAPolicyWithoutRules) {
  for (const char* text : {"", "  \n\t\r\n", "# nothing\n", "// nothing", "/* nothing */",
                           "/* a\nlonger\ncomment */ # and more\n// and more"}) {
    EXPECT_EQ(Parse(text), Rules{}) << text;
  }
}

TEST(AclRulesTest, HclLabeledBlocksOfEveryEnforcedResource) {
  const Rules rules = Parse(R"(
key "a/b" { policy = "read" }
key_prefix "a/" {
  policy = "write"
}
session "node1" { policy = "write" }
session_prefix "" { policy = "read" }
node "node1" { policy = "deny" }
node_prefix "web-" { policy = "read" }
agent "node1" { policy = "write" }
agent_prefix "" { policy = "read" }
operator = "read"
acl = "write"
)");
  EXPECT_EQ(rules.keys, (std::vector<LabeledRule>{{"a/b", false, kRead}, {"a/", true, kWrite}}));
  EXPECT_EQ(rules.sessions,
            (std::vector<LabeledRule>{{"node1", false, kWrite}, {"", true, kRead}}));
  EXPECT_EQ(rules.nodes,
            (std::vector<LabeledRule>{{"node1", false, kDeny}, {"web-", true, kRead}}));
  EXPECT_EQ(rules.agents, (std::vector<LabeledRule>{{"node1", false, kWrite}, {"", true, kRead}}));
  EXPECT_EQ(rules.operator_rule, kRead);
  EXPECT_EQ(rules.acl_rule, kWrite);
}

TEST(AclRulesTest, RepeatedLabelsAreKeptInOrderForTheAuthorizerToMerge) {
  const Rules rules = Parse(R"(
key "a" { policy = "read" }
key "a" { policy = "deny" }
key_prefix "a" { policy = "write" }
key "a" { policy = "write" }
)");
  EXPECT_EQ(
      rules.keys,
      (std::vector<LabeledRule>{
          {"a", false, kRead}, {"a", false, kDeny}, {"a", true, kWrite}, {"a", false, kWrite}}));
}

TEST(AclRulesTest, RepeatedOperatorAndAclMergeAsConsulMergesPolicies) {
  EXPECT_EQ(Parse("operator = \"read\"\noperator = \"write\"").operator_rule, kWrite);
  EXPECT_EQ(Parse("operator = \"write\"\noperator = \"read\"").operator_rule, kWrite);
  EXPECT_EQ(Parse("operator = \"deny\"\noperator = \"write\"").operator_rule, kDeny);
  EXPECT_EQ(Parse("acl = \"write\"\nacl = \"deny\"").acl_rule, kDeny);
  EXPECT_EQ(Parse("acl = \"read\" acl = \"read\"").acl_rule, kRead);
}

TEST(AclRulesTest, MergeDispositionsIsDenyThenWriteThenListThenRead) {
  const Disposition all[] = {kRead, kList, kWrite, kDeny};
  for (Disposition a : all) {
    for (Disposition b : all) {
      const Disposition merged = MergeDispositions(a, b);
      EXPECT_EQ(merged, MergeDispositions(b, a));
      if (a == kDeny || b == kDeny) {
        EXPECT_EQ(merged, kDeny);
      } else if (a == kWrite || b == kWrite) {
        EXPECT_EQ(merged, kWrite);
      } else if (a == kList || b == kList) {
        EXPECT_EQ(merged, kList);
      } else {
        EXPECT_EQ(merged, kRead);
      }
    }
  }
}

TEST(AclRulesTest, EmptyOperatorOrAclIsNoRule) {
  const Rules rules = Parse("operator = \"\"\nacl = \"\"\nkeyring = \"\"");
  EXPECT_FALSE(rules.operator_rule.has_value());
  EXPECT_FALSE(rules.acl_rule.has_value());
}

TEST(AclRulesTest, CommentsEverywhereAndOptionalCommas) {
  const Rules rules = Parse(R"(# a policy
key "a" { # the key a
  policy = "read", // read only
}, /* between */ key_prefix /* here too */ "b/" {
  /* before */ policy /* between */ = /* and */ "write" /* after */
}
operator = "read", acl = "deny",
)");
  EXPECT_EQ(rules.keys, (std::vector<LabeledRule>{{"a", false, kRead}, {"b/", true, kWrite}}));
  EXPECT_EQ(rules.operator_rule, kRead);
  EXPECT_EQ(rules.acl_rule, kDeny);
}

TEST(AclRulesTest, QuotedStringsWithEscapes) {
  const Rules rules = Parse(R"(key "q\"b\\s\n\t\x41\101\u00e9\U0001F600" { policy = "read" })"
                            "\n"
                            R"(key "" { policy = "write" })");
  ASSERT_EQ(rules.keys.size(), 2u);
  EXPECT_EQ(rules.keys[0].label, "q\"b\\s\n\tAA\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(rules.keys[1].label, "");
  EXPECT_EQ(Parse(R"(key "\a\b\f\r\v\000\377" { policy = "read" })").keys[0].label,
            std::string("\a\b\f\r\v\0\xff", 7));
}

TEST(AclRulesTest, UnquotedIdentifierLabelsAndQuotedResourceNames) {
  const Rules rules = Parse(R"(key foo.bar-1 { policy = "read" }
"key_prefix" "x/" { "policy" = "write" })");
  EXPECT_EQ(rules.keys,
            (std::vector<LabeledRule>{{"foo.bar-1", false, kRead}, {"x/", true, kWrite}}));
}

TEST(AclRulesTest, HclObjectForm) {
  const Rules rules = Parse(R"(
key = {
  "a" = { policy = "read" }
  "b" { policy = "write" }
}
key_prefix = [{ "c/" = { policy = "list" } }, { "d/" = { policy = "deny" } }]
)");
  EXPECT_EQ(
      rules.keys,
      (std::vector<LabeledRule>{
          {"a", false, kRead}, {"b", false, kWrite}, {"c/", true, kList}, {"d/", true, kDeny}}));
}

TEST(AclRulesTest, DispositionsAreReadWithoutRegardToCase) {
  const Rules rules = Parse(R"(key "a" { policy = "WRITE" }
key "b" { policy = "Read" }
key "c" { policy = "LiSt" }
operator = "DENY")");
  EXPECT_EQ(rules.keys, (std::vector<LabeledRule>{
                            {"a", false, kWrite}, {"b", false, kRead}, {"c", false, kList}}));
  EXPECT_EQ(rules.operator_rule, kDeny);
}

TEST(AclRulesTest, ListIsValidForKeyAndKeyPrefix) {
  const Rules rules = Parse(R"(key "a" { policy = "list" }
key_prefix "b/" { policy = "list" })");
  EXPECT_EQ(rules.keys, (std::vector<LabeledRule>{{"a", false, kList}, {"b/", true, kList}}));
}

TEST(AclRulesTest, ConsulResourcesTenureDoesNotServeAreCheckedAndDropped) {
  const Rules rules = Parse(R"(
service "web" { policy = "read" }
service_prefix "" {
  policy = "write"
  intentions = "read"
}
event "deploy" { policy = "write" }
event_prefix "" { policy = "read" }
query "q" { policy = "read" }
query_prefix "" { policy = "deny" }
identity "i" { policy = "write" intentions = "" }
identity_prefix "" { policy = "read" }
keyring = "write"
mesh = "read"
peering = "deny"
key "kept" { policy = "read" }
)");
  Rules expected;
  expected.keys = {{"kept", false, kRead}};
  EXPECT_EQ(rules, expected);
}

TEST(AclRulesTest, ConsulsOwnPolicyShapesLoad) {
  // Consul's built-in global-management policy, and a policy of the kind
  // its documentation shows, both as Consul writes them.
  const Rules management = Parse(R"(
acl = "write"
agent_prefix "" {
	policy = "write"
}
event_prefix "" {
	policy = "write"
}
key_prefix "" {
	policy = "write"
}
keyring = "write"
node_prefix "" {
	policy = "write"
}
operator = "write"
mesh = "write"
peering = "write"
query_prefix "" {
	policy = "write"
}
service_prefix "" {
	policy = "write"
	intentions = "write"
}
session_prefix "" {
	policy = "write"
})");
  EXPECT_EQ(management, GlobalManagementRules());
  const Rules consumer = Parse(R"(
key_prefix "" {
  policy = "deny"
}
key_prefix "app/config/" {
  policy = "read"
}
service_prefix "" {
  policy = "deny"
}
acl = "deny"
operator = "read"
)");
  EXPECT_EQ(consumer.keys,
            (std::vector<LabeledRule>{{"", true, kDeny}, {"app/config/", true, kRead}}));
  EXPECT_EQ(consumer.acl_rule, kDeny);
  EXPECT_EQ(consumer.operator_rule, kRead);
}

TEST(AclRulesTest, JsonFormOfEveryResource) {
  const Rules rules = Parse(R"(  {
  "key": {"a/b": {"policy": "read"}},
  "key_prefix": {"a/": {"policy": "write"}, "": {"policy": "list"}},
  "session": {"node1": {"policy": "write"}},
  "session_prefix": {"": {"policy": "read"}},
  "node": {"node1": {"policy": "deny"}},
  "node_prefix": {"web-": {"policy": "read"}},
  "agent": {"node1": {"policy": "write"}},
  "agent_prefix": {"": {"policy": "read"}},
  "service_prefix": {"": {"policy": "read", "intentions": "write"}},
  "keyring": "read",
  "operator": "read",
  "acl": "write"
})");
  EXPECT_EQ(rules.keys, (std::vector<LabeledRule>{
                            {"a/b", false, kRead}, {"a/", true, kWrite}, {"", true, kList}}));
  EXPECT_EQ(rules.sessions,
            (std::vector<LabeledRule>{{"node1", false, kWrite}, {"", true, kRead}}));
  EXPECT_EQ(rules.nodes,
            (std::vector<LabeledRule>{{"node1", false, kDeny}, {"web-", true, kRead}}));
  EXPECT_EQ(rules.agents, (std::vector<LabeledRule>{{"node1", false, kWrite}, {"", true, kRead}}));
  EXPECT_EQ(rules.operator_rule, kRead);
  EXPECT_EQ(rules.acl_rule, kWrite);
}

TEST(AclRulesTest, JsonListsRepeatedNamesAndEscapes) {
  const Rules rules = Parse(R"({
  "key": [{"a": {"policy": "read"}}, {"b\"\\\u00e9": {"policy": "write"}}],
  "key_prefix": {"c/": [{"policy": "read"}, {"policy": "deny"}]},
  "key": {"a": {"policy": "deny"}},
  "operator": "read", "operator": "write"
})");
  EXPECT_EQ(rules.keys, (std::vector<LabeledRule>{{"a", false, kRead},
                                                  {"b\"\\\xc3\xa9", false, kWrite},
                                                  {"c/", true, kRead},
                                                  {"c/", true, kDeny},
                                                  {"a", false, kDeny}}));
  EXPECT_EQ(rules.operator_rule, kWrite);
  EXPECT_EQ(Parse("{}"), Rules{});
}

TEST(AclRulesTest, HclAndJsonGiveTheSameRules) {
  const Rules hcl = Parse(R"(
key_prefix "svc/" { policy = "write" }
key "svc/leader" { policy = "read" }
session_prefix "" { policy = "write" }
node_prefix "" { policy = "read" }
operator = "read"
)");
  const Rules json = Parse(R"({
  "key_prefix": {"svc/": {"policy": "write"}},
  "key": {"svc/leader": {"policy": "read"}},
  "session_prefix": {"": {"policy": "write"}},
  "node_prefix": {"": {"policy": "read"}},
  "operator": "read"
})");
  EXPECT_EQ(hcl, json);
}

// --- Errors ----------------------------------------------------------------------

TEST(AclRulesTest, SyntaxErrorsNameTheLineColumnAndWhatWasExpected) {
  EXPECT_EQ(Error("key \"a\" {\n  policy \"read\"\n}"),
            "line 2, column 10: expected \"=\" after \"policy\", found \"read\"");
  EXPECT_EQ(Error("key \"a\" {\n\n  policy = \"read\"\n  other read\n}"),
            "line 4, column 9: expected \"=\" after \"other\", found read");
  EXPECT_EQ(Error("key \"a\" policy = \"read\""),
            "line 1, column 9: expected \"{\" after key \"a\", found policy");
  EXPECT_EQ(Error("key {\n policy = \"read\" }"),
            "line 1, column 5: expected a quoted label or \"=\" after \"key\", found \"{\"");
  EXPECT_EQ(Error("operator \"read\""),
            "line 1, column 10: expected \"=\" after \"operator\", found \"read\"");
  EXPECT_EQ(Error("operator { policy = \"read\" }"),
            "line 1, column 10: expected \"=\" after \"operator\", found \"{\"");
  EXPECT_EQ(Error("operator = }"), "line 1, column 12: expected a value after \"=\", found \"}\"");
  EXPECT_EQ(Error("operator ="),
            "line 1, column 11: expected a value after \"=\", found the end of "
            "the rules");
  EXPECT_EQ(Error("key \"a\" {\n  policy = \"read\"\n"),
            "line 1, column 9: this \"{\" is never closed: expected \"}\", found the end of the "
            "rules");
  EXPECT_EQ(Error("key \"a\" { policy = \"read\" }\n}"),
            "line 2, column 1: expected a resource name such as key_prefix, found \"}\"");
  EXPECT_EQ(Error("key \"a\" { = \"read\" }"),
            "line 1, column 11: expected an attribute name or \"}\", found \"=\"");
  EXPECT_EQ(Error("= \"read\""),
            "line 1, column 1: expected a resource name such as key_prefix, found \"=\"");
  EXPECT_EQ(Error("key = [ {} {} ]"),
            "line 1, column 12: expected \",\" or \"]\" after a list element, found \"{\"");
  EXPECT_EQ(Error("key = [ {}, "),
            "line 1, column 7: this \"[\" is never closed: expected \"]\", found the end of the "
            "rules");
  EXPECT_EQ(Error("key = [ = ]"),
            "line 1, column 9: expected a value or \"]\" in a list, found \"=\"");
  EXPECT_EQ(Error("key \"a\" { policy = read }"),
            "line 1, column 20: expected a value after \"=\", found read");
}

TEST(AclRulesTest, LexicalErrors) {
  EXPECT_EQ(Error("key \"a\n\" { policy = \"read\" }"),
            "line 1, column 5: this string is never closed: expected '\"' before the end of the "
            "line");
  EXPECT_EQ(Error("key \"a"),
            "line 1, column 5: this string is never closed: expected '\"' before the end of the "
            "line");
  EXPECT_EQ(Error("key \"a\" { policy = \"read\" }\n  /* open"),
            "line 2, column 3: this /* comment is never closed with */");
  EXPECT_EQ(Error(R"(key "a\q" { policy = "read" })"),
            R"(line 1, column 7: unknown escape \q in a string; use \\ for a backslash)");
  EXPECT_EQ(Error(R"(key "\x4" { policy = "read" })"),
            R"(line 1, column 6: \x needs 2 hexadecimal digits)");
  EXPECT_EQ(Error(R"(key "\ud800" { policy = "read" })"),
            R"(line 1, column 6: \u escape is not a Unicode code point)");
  EXPECT_EQ(Error(R"(key "\U00110000" { policy = "read" })"),
            R"(line 1, column 6: \U escape is not a Unicode code point)");
  EXPECT_EQ(Error(R"(key "\400" { policy = "read" })"),
            R"(line 1, column 6: an octal escape above \377)");
  EXPECT_EQ(Error(R"(key "\18" { policy = "read" })"),
            R"(line 1, column 6: an octal escape needs 3 digits)");
  EXPECT_EQ(Error("key \"a\" { policy = @ }"), "line 1, column 20: unexpected character '@'");
  EXPECT_EQ(Error(std::string("key \"a\" {\0}", 11)), "line 1, column 10: unexpected byte 0x00");
  EXPECT_EQ(Error("key \"a\" { policy = \xff }"), "line 1, column 20: unexpected byte 0xff");
  EXPECT_EQ(Error("key \"a\" { policy = <<EOF\nread\nEOF\n }"),
            "line 1, column 20: heredoc strings (<<) are not supported in ACL rules; use a quoted "
            "string");
  EXPECT_EQ(Error("key \"a\" { policy = 1.e5 }"), "line 1, column 20: malformed number");
  EXPECT_EQ(Error("key \"a\" { policy = 12ab }"), "line 1, column 20: malformed number");
}

TEST(AclRulesTest, UnknownResourcesAreNamed) {
  const std::string known =
      "expected one of acl, agent, agent_prefix, event, event_prefix, identity, identity_prefix, "
      "key, key_prefix, keyring, mesh, node, node_prefix, operator, peering, query, "
      "query_prefix, service, service_prefix, session, session_prefix";
  EXPECT_EQ(Error("key \"a\" { policy = \"read\" }\nkye \"a\" { policy = \"read\" }"),
            "line 2, column 1: unknown resource \"kye\"; " + known);
  EXPECT_EQ(Error("{\n  \"key\": {},\n  \"Key\": {}\n}"),
            "line 3, column 3: unknown resource \"Key\"; " + known);
  EXPECT_EQ(Error("namespace \"team\" { key \"a\" { policy = \"read\" } }"),
            "line 1, column 1: \"namespace\" rules are a Consul Enterprise feature; tenure has no "
            "namespaces or partitions");
  EXPECT_EQ(Error("{\"partition_prefix\": {}}"),
            "line 1, column 2: \"partition_prefix\" rules are a Consul Enterprise feature; tenure "
            "has no namespaces or partitions");
}

TEST(AclRulesTest, UnknownDispositionsAreNamedWithTheAllowedOnes) {
  EXPECT_EQ(
      Error("key \"a\" { policy = \"wirte\" }"),
      "line 1, column 20: unknown policy \"wirte\" for key \"a\"; expected \"read\", \"list\", "
      "\"write\" or \"deny\"");
  EXPECT_EQ(Error("session_prefix \"\" {\n  policy = \"all\"\n}"),
            "line 2, column 12: unknown policy \"all\" for session_prefix \"\"; expected \"read\", "
            "\"write\" or \"deny\"");
  EXPECT_EQ(Error("operator = \"manage\""),
            "line 1, column 12: unknown policy \"manage\" for operator; expected \"read\", "
            "\"write\" or \"deny\"");
  EXPECT_EQ(Error("service \"web\" { policy = \"read\" intentions = \"all\" }"),
            "line 1, column 46: unknown policy \"all\" for service \"web\"; expected \"read\", "
            "\"write\" or \"deny\"");
  EXPECT_EQ(Error("session \"n\" { policy = \"list\" }"),
            "line 1, column 24: policy \"list\" is only valid in key and key_prefix rules, not in "
            "session rules");
  EXPECT_EQ(Error("operator = \"list\""),
            "line 1, column 12: policy \"list\" is only valid in key and key_prefix rules, not in "
            "operator rules");
  EXPECT_EQ(Error("event \"e\" { policy = \"list\" }"),
            "line 1, column 22: policy \"list\" is only valid in key and key_prefix rules, not in "
            "event rules");
}

TEST(AclRulesTest, RuleBodiesAreChecked) {
  EXPECT_EQ(Error("key \"a\" { }"), "line 1, column 9: the rule for key \"a\" has no \"policy\"");
  EXPECT_EQ(Error("key \"a\" { polcy = \"read\" }"),
            "line 1, column 11: unknown attribute \"polcy\" in the rule for key \"a\"; expected "
            "\"policy\"");
  EXPECT_EQ(Error("key \"a\" { policy = \"read\" intentions = \"read\" }"),
            "line 1, column 27: unknown attribute \"intentions\" in the rule for key \"a\"; "
            "expected \"policy\"");
  EXPECT_EQ(Error("service \"a\" { policy = \"read\" foo = \"read\" }"),
            "line 1, column 31: unknown attribute \"foo\" in the rule for service \"a\"; expected "
            "\"policy\" or \"intentions\"");
  EXPECT_EQ(Error("key \"a\" { policy = 1 }"),
            "line 1, column 20: \"policy\" in the rule for key \"a\" must be a quoted string, "
            "found a number");
  EXPECT_EQ(Error("key \"a\" { policy = [\"read\"] }"),
            "line 1, column 20: \"policy\" in the rule for key \"a\" must be a quoted string, "
            "found a list");
  EXPECT_EQ(Error("key \"a\" { policy = \"read\"\n policy = \"write\" }"),
            "line 2, column 2: \"policy\" is set twice in the rule for key \"a\"");
  EXPECT_EQ(Error("key = \"read\""),
            "line 1, column 7: \"key\" rules need a label, as in key \"<name>\" { policy = "
            "\"read\" }; found a string");
  EXPECT_EQ(Error("key = { \"a\" = \"read\" }"),
            "line 1, column 15: the rule for key \"a\" must be a block such as { policy = "
            "\"read\" }, found a string");
  EXPECT_EQ(Error("operator = { policy = \"read\" }"),
            "line 1, column 12: \"operator\" takes a quoted policy, as in operator = \"read\"; "
            "found an object");
  EXPECT_EQ(Error("acl = true"),
            "line 1, column 7: \"acl\" takes a quoted policy, as in acl = \"read\"; found a "
            "boolean");
}

TEST(AclRulesTest, JsonErrorsNameTheLineAndColumnToo) {
  EXPECT_EQ(
      Error(R"({"key": {"a": {"policy": "nope"}}})"),
      "line 1, column 26: unknown policy \"nope\" for key \"a\"; expected \"read\", \"list\", "
      "\"write\" or \"deny\"");
  EXPECT_EQ(Error("{\n  \"operator\": 5\n}"),
            "line 2, column 15: \"operator\" takes a quoted policy, as in operator = \"read\"; "
            "found a number");
  EXPECT_EQ(Error("{\"operator\": -12.5e3}"),
            "line 1, column 14: \"operator\" takes a quoted policy, as in operator = \"read\"; "
            "found a number");
  EXPECT_EQ(Error("{\"operator\": null}"),
            "line 1, column 14: \"operator\" takes a quoted policy, as in operator = \"read\"; "
            "found null");
  EXPECT_EQ(Error("{\"operator\": false}"),
            "line 1, column 14: \"operator\" takes a quoted policy, as in operator = \"read\"; "
            "found a boolean");
  EXPECT_EQ(Error(R"({"key": {"a\"\\": {"polcy": "read"}}})"),
            "line 1, column 20: unknown attribute \"polcy\" in the rule for key \"a\\\"\\\\\"; "
            "expected \"policy\"");
  EXPECT_EQ(Error(R"({"key": {"a": {}}})"),
            "line 1, column 15: the rule for key \"a\" has no "
            "\"policy\"");
  EXPECT_EQ(Error(R"({"key": "read"})"),
            "line 1, column 9: \"key\" rules need a label, as in key \"<name>\" { policy = "
            "\"read\" }; found a string");
  EXPECT_EQ(Error(R"({"key": [[{"a": {"policy": "read"}}]]})"),
            "line 1, column 10: \"key\" rules need a label, as in key \"<name>\" { policy = "
            "\"read\" }; found a list");
  EXPECT_EQ(Error(R"({"key": {"a": [[{"policy": "read"}]]}})"),
            "line 1, column 16: the rule for key \"a\" must be an object, found a list");
}

TEST(AclRulesTest, JsonSyntaxErrors) {
  EXPECT_EQ(Error("{\"key\": {\"a\": {\"policy\": \"read\"}}"),
            "line 1, column 34: invalid JSON: syntax error while parsing object - unexpected end "
            "of input; expected '}'");
  EXPECT_EQ(Error("{\n  \"key\": {\n    \"a\": {\"policy\": read}\n  }\n}"),
            "line 3, column 21: invalid JSON: syntax error while parsing value - invalid literal");
  EXPECT_EQ(Error("{\"operator\": \"read\",}"),
            "line 1, column 21: invalid JSON: syntax error while parsing object key - unexpected "
            "'}'; expected string literal");
  EXPECT_EQ(Error("{\"operator\": \"read\"} x"),
            "line 1, column 22: invalid JSON: syntax error while parsing value - invalid literal; "
            "expected end of input");
  EXPECT_EQ(Error("{\"a\": // no comments in JSON\n}"),
            "line 1, column 7: invalid JSON: syntax error while parsing value - invalid literal");
}

// The JSON errors of every kind keep the texts, lines and columns they had
// when nlohmann::json read the rules (decision 0045): its lexer's complaints,
// a NUL ending the text, UTF-8 checked, numbers past a double refused.
TEST(AclRulesTest, JsonErrorsOfEveryKindKeepTheirTexts) {
  EXPECT_EQ(Error("{\"key\": 1e999}"),
            "line 1, column 13: invalid JSON: [json.exception.out_of_range.406] number overflow "
            "parsing '1e999'");
  EXPECT_EQ(Error("{\"key\": \"a\x01\"}"),
            "line 1, column 11: invalid JSON: syntax error while parsing value - invalid string: "
            "control character U+0001 (SOH) must be escaped to \\u0001");
  EXPECT_EQ(Error("{\"key\": \"\xc3(\"}"),
            "line 1, column 11: invalid JSON: syntax error while parsing value - invalid string: "
            "ill-formed UTF-8 byte");
  EXPECT_EQ(Error("{\"key\": \"\\ud800\"}"),
            "line 1, column 16: invalid JSON: syntax error while parsing value - invalid string: "
            "surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF");
  EXPECT_EQ(Parse(std::string_view("{} \0 junk", 9)), Rules{});
  EXPECT_EQ(Error("{\"key\": [1 2]}"),
            "line 1, column 12: invalid JSON: syntax error while parsing array - unexpected number "
            "literal; expected ']'");
  EXPECT_EQ(Error("{\"a\" 1}"),
            "line 1, column 6: invalid JSON: syntax error while parsing object separator - "
            "unexpected number literal; expected ':'");
  EXPECT_EQ(Error("{\"key\": -}"),
            "line 1, column 10: invalid JSON: syntax error while parsing value - invalid number; "
            "expected digit after '-'");
  EXPECT_EQ(Error("{\"key\": \"\\q\"}"),
            "line 1, column 11: invalid JSON: syntax error while parsing value - invalid string: "
            "forbidden character after backslash");
  EXPECT_EQ(Error("{\"key\"\n:\n  tru}"),
            "line 3, column 6: invalid JSON: syntax error while parsing value - invalid literal");
  // The bytes read since the last token began ("last read") are cut from
  // the text up to an "'; expected ", even one inside those bytes.
  EXPECT_EQ(Error("{\"k\": \"'; expected x"),
            "line 1, column 21: invalid JSON: syntax error while parsing value - invalid string: "
            "missing closing quote; expected x'");
}

TEST(AclRulesTest, NestingIsBounded) {
  std::string hcl = "key = ";
  for (int i = 0; i < 40; ++i) hcl += "[";
  EXPECT_EQ(Error(hcl), "line 1, column 23: rules nest deeper than 16 levels");
  std::string blocks = "key = ";
  for (int i = 0; i < 40; ++i) blocks += "{ a = ";
  EXPECT_EQ(Error(blocks), "line 1, column 103: rules nest deeper than 16 levels");
  std::string json = "{\"key\": ";
  for (int i = 0; i < 60000; ++i) json += "[";
  EXPECT_EQ(Error(json), "line 1, column 24: rules nest deeper than 16 levels");
  // Sixteen open braces and brackets are allowed (and mean nothing to the interpreter).
  std::string ok = "{\"key\": ";
  for (int i = 0; i < 15; ++i) ok += "[";
  for (int i = 0; i < 15; ++i) ok += "]";
  EXPECT_EQ(Error(ok + "}"),
            "line 1, column 10: \"key\" rules need a label, as in key \"<name>\" "
            "{ policy = \"read\" }; found a list");
}

TEST(AclRulesTest, SizeIsBounded) {
  std::string text = "key \"a\" { policy = \"read\" }\n";
  text.resize(limits::kAclRulesBytesMax, '#');
  text[text.size() - 1] = '\n';
  EXPECT_TRUE(ParseRules(text).ok());
  text += " ";
  Result<Rules> rules = ParseRules(text);
  ASSERT_FALSE(rules.ok());
  EXPECT_EQ(rules.status().code(), Code::kTooLarge);
  EXPECT_EQ(rules.status().message(), "ACL rules are 65537 bytes, more than the 65536 allowed");
}

}  // namespace
}  // namespace tenure::acl
