// tenure acl policy create|read|update|delete|list: Consul's
// `consul acl policy` over /v1/acl/policy and /v1/acl/policies
// (cli/acl_support.h has the output and the shared rules). Exit 0 on
// success, 1 otherwise.
#include <cstdio>
#include <optional>
#include <string>

#include "cli/acl_support.h"
#include "common/strings.h"
#include "net/url.h"

namespace tenure::cli {
namespace {

constexpr char kPolicyUsage[] =
    "Usage: tenure acl policy <subcommand> [options]\n"
    "\n"
    "  create   -name N [-description D] [-rules RULES|@FILE|-]\n"
    "  read     -id ID | -name N\n"
    "  update   (-id ID [-name NEW] | -name N) [-description D] [-rules RULES|@FILE|-]\n"
    "           [-no-merge]\n"
    "  delete   -id ID | -name N\n"
    "  list\n"
    "\n"
    "  ID is a policy's ID, a unique prefix of it, or \"global-management\". Rules\n"
    "  are Consul's, in HCL or JSON (docs/acl-rules.md).\n"
    "\n"
    "Run 'tenure acl policy <subcommand> -h' for its options.\n";

constexpr char kCreateUsage[] =
    "Usage: tenure acl policy create -name N [options]\n"
    "\n"
    "  Creates a policy and prints it. -rules takes the rules themselves, @FILE for\n"
    "  a file's contents, or - for stdin. Needs acl:write.\n"
    "\n";
constexpr char kReadUsage[] =
    "Usage: tenure acl policy read (-id ID | -name N) [options]\n"
    "\n"
    "  Prints a policy, its rules included. Needs acl:read.\n"
    "\n";
constexpr char kUpdateUsage[] =
    "Usage: tenure acl policy update (-id ID [-name NEW] | -name N) [options]\n"
    "\n"
    "  Changes a policy and prints it. The fields not given keep their values\n"
    "  (-no-merge: they become empty). With -id, -name renames the policy. Needs\n"
    "  acl:write.\n"
    "\n";
constexpr char kDeleteUsage[] =
    "Usage: tenure acl policy delete (-id ID | -name N) [options]\n"
    "\n"
    "  Deletes a policy; tokens linked to it lose what it granted. Needs acl:write.\n"
    "\n";
constexpr char kListUsage[] =
    "Usage: tenure acl policy list [options]\n"
    "\n"
    "  Prints every policy, without its rules. Needs acl:read.\n"
    "\n";

std::string PolicyPath(const std::string& id) {
  return "/v1/acl/policy/" + net::EscapeQueryValue(id);
}
std::string PolicyNamePath(const std::string& name) {
  return "/v1/acl/policy/name/" + net::EscapeQueryValue(name);
}

// The policy -id or -name names; prints the error and returns nullopt.
std::optional<OrderedJson> FindPolicy(net::BlockingHttpClient& client, const std::string& id,
                                      const std::string& name) {
  std::string what = name;
  std::string target;
  if (!id.empty()) {
    auto resolved = ResolvePolicyId(client, id);
    if (!resolved.ok()) {
      PrintErr("Error determining policy ID: " + std::string(resolved.status().message()));
      return std::nullopt;
    }
    what = *resolved;
    target = PolicyPath(*resolved);
  } else {
    target = PolicyNamePath(name);
  }
  auto policy = AclRequest(client, "GET", target);
  if (!policy.ok()) {
    PrintErr("Error reading policy " + GoQuote(what) + ": " +
             std::string(policy.status().message()));
    return std::nullopt;
  }
  return std::move(*policy);
}

// -rules as Consul's commands read it; prints the error and returns nullopt.
std::optional<std::string> LoadRules(const std::string& rules) {
  auto loaded = LoadDataSource(rules);
  if (!loaded.ok()) {
    PrintErr("Error loading rules: " + std::string(loaded.status().message()));
    return std::nullopt;
  }
  return *loaded;
}

int Create(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  std::string name, description, rules;
  Flags flags("acl policy create");
  flags.String("name", &name, "the policy's name (letters, digits, '-' and '_')");
  flags.String("description", &description, "a description of the policy");
  flags.String("rules", &rules, "the rules (HCL or JSON), @FILE to read them from a file, - stdin");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kCreateUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl policy create") || !out.Check()) return 1;
  if (name.empty()) {
    PrintErr("Missing required -name flag");
    return 1;
  }
  auto loaded = LoadRules(rules);
  if (!loaded) return 1;
  OrderedJson body = OrderedJson::object();
  body["Name"] = name;
  body["Description"] = description;
  body["Rules"] = *loaded;
  auto client = http.MakeClient();
  auto policy = AclRequest(*client, "PUT", "/v1/acl/policy", GoJson(body, 0));
  if (!policy.ok()) {
    PrintErr("Failed to create new policy: " + std::string(policy.status().message()));
    return 1;
  }
  PrintOut(FormatPolicy(*policy, out));
  return 0;
}

int Read(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  std::string id, name;
  Flags flags("acl policy read");
  flags.String("id", &id, "the policy's ID (or a unique prefix, or \"global-management\")");
  flags.String("name", &name, "the policy's name");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kReadUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl policy read") || !out.Check()) return 1;
  if (id.empty() == name.empty()) {
    PrintErr("Give exactly one of -id ID and -name N");
    return 1;
  }
  auto client = http.MakeClient();
  auto policy = FindPolicy(*client, id, name);
  if (!policy) return 1;
  PrintOut(FormatPolicy(*policy, out));
  return 0;
}

int Update(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  std::string id, name, description, rules;
  bool no_merge = false;
  Flags flags("acl policy update");
  flags.String("id", &id, "the policy's ID (or a unique prefix)");
  flags.String("name", &name, "with -id: the new name; alone: the name of the policy to update");
  flags.String("description", &description, "the new description");
  flags.String("rules", &rules, "the new rules, @FILE to read them from a file, - stdin");
  flags.Bool("no-merge", &no_merge, "fields not given become empty instead of staying");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kUpdateUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl policy update") || !out.Check()) return 1;
  if (id.empty() && name.empty()) {
    PrintErr("Cannot update a policy without -id or -name");
    return 1;
  }
  std::optional<std::string> loaded;
  if (flags.WasSet("rules")) {
    loaded = LoadRules(rules);
    if (!loaded) return 1;
  }
  auto client = http.MakeClient();
  auto current = FindPolicy(*client, id, id.empty() ? name : "");
  if (!current) return 1;
  const std::string policy_id = TextField(*current, "ID");
  OrderedJson body = OrderedJson::object();
  body["ID"] = policy_id;
  body["Name"] = !id.empty() && !name.empty() ? name : TextField(*current, "Name");
  if (flags.WasSet("description") || no_merge) {
    body["Description"] = description;
  } else {
    body["Description"] = TextField(*current, "Description");
  }
  if (loaded || no_merge) {
    body["Rules"] = loaded.value_or("");
  } else {
    body["Rules"] = TextField(*current, "Rules");
  }
  auto policy = AclRequest(*client, "PUT", PolicyPath(policy_id), GoJson(body, 0));
  if (!policy.ok()) {
    PrintErr("Error updating policy " + GoQuote(policy_id) + ": " +
             std::string(policy.status().message()));
    return 1;
  }
  PrintOut(FormatPolicy(*policy, out));
  return 0;
}

int Delete(const Args& args) {
  HttpFlags http;
  std::string id, name;
  Flags flags("acl policy delete");
  flags.String("id", &id, "the policy's ID (or a unique prefix)");
  flags.String("name", &name, "the policy's name");
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kDeleteUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl policy delete")) return 1;
  if (id.empty() == name.empty()) {
    PrintErr("Give exactly one of -id ID and -name N");
    return 1;
  }
  auto client = http.MakeClient();
  std::string policy_id;
  if (!id.empty()) {
    auto resolved = ResolvePolicyId(*client, id);
    if (!resolved.ok()) {
      PrintErr("Error determining policy ID: " + std::string(resolved.status().message()));
      return 1;
    }
    policy_id = *resolved;
  } else {
    auto policy = AclRequest(*client, "GET", PolicyNamePath(name));
    if (!policy.ok()) {
      PrintErr("Error determining policy ID: " + std::string(policy.status().message()));
      return 1;
    }
    policy_id = TextField(*policy, "ID");
  }
  auto deleted = AclRequest(*client, "DELETE", PolicyPath(policy_id));
  if (!deleted.ok()) {
    PrintErr("Error deleting policy " + GoQuote(policy_id) + ": " +
             std::string(deleted.status().message()));
    return 1;
  }
  PrintOut("Policy " + GoQuote(policy_id) + " deleted successfully");
  return 0;
}

int List(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  Flags flags("acl policy list");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kListUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl policy list") || !out.Check()) return 1;
  auto client = http.MakeClient();
  auto policies = AclRequest(*client, "GET", "/v1/acl/policies");
  if (!policies.ok()) {
    PrintErr("Failed to retrieve the policy list: " + std::string(policies.status().message()));
    return 1;
  }
  PrintOut(FormatPolicyList(*policies, out));
  return 0;
}

}  // namespace

int AclPolicyCommand(const Args& args) {
  return DispatchSubcommand(
      "acl policy", kPolicyUsage, args,
      {{"create", Create}, {"read", Read}, {"update", Update}, {"delete", Delete}, {"list", List}},
      1);
}

}  // namespace tenure::cli
