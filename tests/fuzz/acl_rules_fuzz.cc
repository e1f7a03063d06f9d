// Fuzz target: ACL rules as a policy's author writes them (HCL or JSON). The
// first byte picks the Authorizer's options, the rest is the text. What
// parses must parse the same again, survive a trip through the HCL it
// renders to, and compile into an Authorizer whose answers keep the
// implications that hold whatever the rules: write on a name implies list
// implies read, and write on a prefix implies write on every key under it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acl/authorizer.h"
#include "acl/rules.h"
#include "common/limits.h"
#include "fuzz_check.h"

namespace {

using tenure::acl::Authorizer;
using tenure::acl::AuthorizerOptions;
using tenure::acl::DefaultPolicy;
using tenure::acl::DispositionName;
using tenure::acl::LabeledRule;
using tenure::acl::Rules;

// A quoted HCL string for any bytes: printable ASCII as is, the rest escaped.
std::string HclQuote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out + "\"";
}

std::string ToHcl(const Rules& rules) {
  std::string text;
  auto block = [&](const char* exact, const char* prefix, const std::vector<LabeledRule>& list) {
    for (const LabeledRule& r : list) {
      text += std::string(r.prefix ? prefix : exact) + " " + HclQuote(r.label) + " { policy = \"" +
              std::string(DispositionName(r.disposition)) + "\" }\n";
    }
  };
  block("key", "key_prefix", rules.keys);
  block("session", "session_prefix", rules.sessions);
  block("node", "node_prefix", rules.nodes);
  block("agent", "agent_prefix", rules.agents);
  if (rules.operator_rule) {
    text += "operator = \"" + std::string(DispositionName(*rules.operator_rule)) + "\"\n";
  }
  if (rules.acl_rule) text += "acl = \"" + std::string(DispositionName(*rules.acl_rule)) + "\"\n";
  return text;
}

void CheckImplications(const Authorizer& authz, const std::string& name) {
  const bool read = authz.KeyRead(name).allowed();
  const bool list = authz.KeyList(name).allowed();
  const bool write = authz.KeyWrite(name).allowed();
  if (write) FUZZ_CHECK(read);
  if (authz.options().enable_key_list_policy && list) FUZZ_CHECK(read);
  if (authz.options().enable_key_list_policy && write) FUZZ_CHECK(list);
  if (authz.KeyWritePrefix(name).allowed()) {
    FUZZ_CHECK(write);
    FUZZ_CHECK(authz.KeyWrite(name + "x").allowed());
    FUZZ_CHECK(authz.KeyWrite(name + "/deeper/key").allowed());
  }
  if (authz.SessionWrite(name).allowed()) FUZZ_CHECK(authz.SessionRead(name).allowed());
  if (authz.NodeWrite(name).allowed()) FUZZ_CHECK(authz.NodeRead(name).allowed());
  if (authz.AgentWrite(name).allowed()) FUZZ_CHECK(authz.AgentRead(name).allowed());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto rules = tenure::acl::ParseRules(text);
  auto again = tenure::acl::ParseRules(text);
  FUZZ_CHECK(rules.ok() == again.ok());
  if (!rules.ok()) {
    FUZZ_CHECK(rules.status().message() == again.status().message());
    FUZZ_CHECK(!rules.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(*rules == *again);

  // The rules, written back as HCL, parse to the same rules (when the
  // rendering fits the size limit: escapes can make it four times longer).
  const std::string hcl = ToHcl(*rules);
  if (hcl.size() <= tenure::limits::kAclRulesBytesMax) {
    auto round_trip = tenure::acl::ParseRules(hcl);
    FUZZ_CHECK(round_trip.ok());
    FUZZ_CHECK(*round_trip == *rules);
  }

  const AuthorizerOptions options = {
      .default_policy = (data[0] & 1) != 0 ? DefaultPolicy::kAllow : DefaultPolicy::kDeny,
      .management = (data[0] & 2) != 0,
      .enable_key_list_policy = (data[0] & 4) != 0};
  const Rules& parsed = *rules;
  const Authorizer authz = Authorizer::Compile({&parsed, &parsed}, options);
  // Names around every label: the label, one byte more, one byte less.
  std::vector<std::string> names = {"", "a", "a/b"};
  for (const auto* list : {&parsed.keys, &parsed.sessions, &parsed.nodes, &parsed.agents}) {
    for (const LabeledRule& rule : *list) {
      if (names.size() > 64) break;
      names.push_back(rule.label);
      names.push_back(rule.label + "/");
      if (!rule.label.empty()) names.push_back(rule.label.substr(0, rule.label.size() - 1));
    }
  }
  for (const std::string& name : names) CheckImplications(authz, name);
  (void)authz.OperatorRead();
  (void)authz.OperatorWrite();
  if (authz.AclWrite().allowed()) FUZZ_CHECK(authz.AclRead().allowed());
  return 0;
}
