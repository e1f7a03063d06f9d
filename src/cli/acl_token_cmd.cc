// tenure acl token create|read|update|clone|delete|list: Consul's
// `consul acl token` over /v1/acl/token(s) (cli/acl_support.h has the
// output and the shared rules). Exit 0 on success, 1 otherwise.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/acl_support.h"
#include "common/duration.h"
#include "common/strings.h"
#include "net/url.h"

namespace tenure::cli {
namespace {

constexpr char kTokenUsage[] =
    "Usage: tenure acl token <subcommand> [options]\n"
    "\n"
    "  create   [-description D] [-policy-name N]... [-policy-id ID]... [-secret UUID]\n"
    "           [-accessor UUID] [-expires-ttl 1h] [-local]\n"
    "  read     -id ID | -self\n"
    "  update   -id ID [-description D] [-policy-name N]... [-policy-id ID]...\n"
    "           [-append-policy-name N]... [-append-policy-id ID]...\n"
    "  clone    -id ID [-description D]\n"
    "  delete   -id ID\n"
    "  list\n"
    "\n"
    "  ID is a token's AccessorID, a unique prefix of it, or \"anonymous\".\n"
    "  read, update, clone and list print the token(s) (-format json for JSON).\n"
    "\n"
    "Run 'tenure acl token <subcommand> -h' for its options.\n";

constexpr char kCreateUsage[] =
    "Usage: tenure acl token create [options]\n"
    "\n"
    "  Creates a token linked to the policies given by name or ID (an ID may be a\n"
    "  unique prefix) and prints it, SecretID included. Needs acl:write.\n"
    "\n";
constexpr char kReadUsage[] =
    "Usage: tenure acl token read (-id ID | -self) [options]\n"
    "\n"
    "  Prints a token: the one with AccessorID ID (acl:read; the SecretID shows only\n"
    "  with acl:write), or with -self the token this command sends.\n"
    "\n";
constexpr char kUpdateUsage[] =
    "Usage: tenure acl token update -id ID [options]\n"
    "\n"
    "  Changes a token's description or policies and prints it. -policy-name and\n"
    "  -policy-id replace the token's policies; -append-policy-name and\n"
    "  -append-policy-id add to them; without either the policies stay. Its\n"
    "  secret, locality and expiry do not change. Needs acl:write.\n"
    "\n";
constexpr char kCloneUsage[] =
    "Usage: tenure acl token clone -id ID [options]\n"
    "\n"
    "  Creates a token with the policies, locality and expiry of token ID under a\n"
    "  new AccessorID and SecretID, and prints it. Needs acl:write.\n"
    "\n";
constexpr char kDeleteUsage[] =
    "Usage: tenure acl token delete -id ID [options]\n"
    "\n"
    "  Deletes a token: requests carrying its secret are refused from then on.\n"
    "  Needs acl:write.\n"
    "\n";
constexpr char kListUsage[] =
    "Usage: tenure acl token list [options]\n"
    "\n"
    "  Prints every token (acl:read; SecretIDs show only with acl:write).\n"
    "\n";

OrderedJson Link(const char* field, const std::string& value) {
  OrderedJson link = OrderedJson::object();
  link[field] = value;
  return link;
}

std::string TokenPath(const std::string& id) {
  return "/v1/acl/token/" + net::EscapeQueryValue(id);
}

// Links to the policies named, then to those given by ID (IDs resolved
// from prefixes). Prints the error and returns nullopt when one fails.
std::optional<OrderedJson> PolicyLinks(net::BlockingHttpClient& client,
                                       const std::vector<std::string>& names,
                                       const std::vector<std::string>& ids) {
  OrderedJson links = OrderedJson::array();
  for (const std::string& name : names) links.push_back(Link("Name", name));
  for (const std::string& id : ids) {
    auto resolved = ResolvePolicyId(client, id);
    if (!resolved.ok()) {
      PrintErr("Error resolving policy ID " + GoQuote(id) + ": " +
               std::string(resolved.status().message()));
      return std::nullopt;
    }
    links.push_back(Link("ID", *resolved));
  }
  return links;
}

// The full AccessorID of -id; prints the error and returns nullopt.
std::optional<std::string> TokenId(net::BlockingHttpClient& client, const std::string& id) {
  auto resolved = ResolveTokenId(client, id);
  if (!resolved.ok()) {
    PrintErr("Error determining token ID: " + std::string(resolved.status().message()));
    return std::nullopt;
  }
  return *resolved;
}

int Create(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  std::string description, accessor, secret, expires_ttl;
  std::vector<std::string> policy_ids, policy_names;
  bool local = false;
  Flags flags("acl token create");
  flags.String("description", &description, "a description of the token");
  flags.Strings("policy-id", &policy_ids, "the ID (or a unique ID prefix) of a policy to link");
  flags.Strings("policy-name", &policy_names, "the name of a policy to link");
  flags.String("accessor", &accessor, "the AccessorID, a UUID (default: the server picks one)");
  flags.String("secret", &secret, "the SecretID, a UUID (default: the server picks one)");
  flags.String("expires-ttl", &expires_ttl,
               "how long the token is valid, a Go duration such as 1h (default: forever)");
  flags.Bool("local", &local, "a token local to this datacenter");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kCreateUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl token create") || !out.Check()) return 1;
  DurationNs ttl_ns = 0;
  if (!expires_ttl.empty()) {
    auto parsed = ParseGoDuration(expires_ttl);
    if (!parsed.ok()) {
      PrintErr("invalid value " + GoQuote(expires_ttl) +
               " for flag -expires-ttl: " + std::string(parsed.status().message()));
      return 1;
    }
    ttl_ns = *parsed;
  }
  auto client = http.MakeClient();
  auto links = PolicyLinks(*client, policy_names, policy_ids);
  if (!links) return 1;
  OrderedJson body = OrderedJson::object();
  if (!accessor.empty()) body["AccessorID"] = accessor;
  if (!secret.empty()) body["SecretID"] = secret;
  body["Description"] = description;
  if (!links->empty()) body["Policies"] = std::move(*links);
  body["Local"] = local;
  if (ttl_ns != 0) body["ExpirationTTL"] = ttl_ns;  // Go's time.Duration: nanoseconds
  auto token = AclRequest(*client, "PUT", "/v1/acl/token", GoJson(body, 0));
  if (!token.ok()) {
    PrintErr("Failed to create new token: " + std::string(token.status().message()));
    return 1;
  }
  PrintOut(FormatToken(*token, out));
  return 0;
}

int Read(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  std::string id;
  bool self = false;
  Flags flags("acl token read");
  flags.String("id", &id, "the AccessorID of the token (or a unique prefix, or \"anonymous\")");
  flags.Bool("self", &self, "read the token this command sends (-token, -token-file, ...)");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kReadUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl token read") || !out.Check()) return 1;
  if (id.empty() == !self) {
    PrintErr("Give exactly one of -id ID and -self");
    return 1;
  }
  auto client = http.MakeClient();
  if (self) {
    auto token = AclRequest(*client, "GET", TokenPath("self"));
    if (!token.ok()) {
      PrintErr("Error reading token: " + std::string(token.status().message()));
      return 1;
    }
    PrintOut(FormatToken(*token, out));
    return 0;
  }
  auto accessor = TokenId(*client, id);
  if (!accessor) return 1;
  auto token = AclRequest(*client, "GET", TokenPath(*accessor));
  if (!token.ok()) {
    PrintErr("Error reading token " + GoQuote(*accessor) + ": " +
             std::string(token.status().message()));
    return 1;
  }
  PrintOut(FormatToken(*token, out));
  return 0;
}

int Update(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  std::string id, description;
  std::vector<std::string> policy_ids, policy_names, append_ids, append_names;
  bool merge = false;
  Flags flags("acl token update");
  flags.String("id", &id, "the AccessorID of the token (or a unique prefix)");
  flags.String("description", &description, "the new description (default: unchanged)");
  flags.Strings("policy-id", &policy_ids, "replace the policies: link this policy ID");
  flags.Strings("policy-name", &policy_names, "replace the policies: link this policy name");
  flags.Strings("append-policy-id", &append_ids, "add a link to this policy ID");
  flags.Strings("append-policy-name", &append_names, "add a link to this policy name");
  flags.Bool("merge-policies", &merge,
             "deprecated, as in Consul: -policy-id/-policy-name add instead of replacing");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kUpdateUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl token update") || !out.Check()) return 1;
  if (id.empty()) {
    PrintErr("Cannot update a token without -id");
    return 1;
  }
  const bool replace = !policy_ids.empty() || !policy_names.empty();
  const bool append = !append_ids.empty() || !append_names.empty();
  if (replace && append) {
    PrintErr(
        "Give -policy-id/-policy-name (replace the policies) or -append-policy-id/"
        "-append-policy-name (add to them), not both");
    return 1;
  }
  auto client = http.MakeClient();
  auto accessor = TokenId(*client, id);
  if (!accessor) return 1;
  auto current = AclRequest(*client, "GET", TokenPath(*accessor));
  if (!current.ok()) {
    PrintErr("Error reading token " + GoQuote(*accessor) + ": " +
             std::string(current.status().message()));
    return 1;
  }
  OrderedJson links = OrderedJson::array();
  if (!replace || merge) {
    if (auto it = current->find("Policies"); it != current->end() && it->is_array()) {
      for (const auto& link : *it) {
        if (std::string linked = TextField(link, "ID"); !linked.empty()) {
          links.push_back(Link("ID", linked));
        }
      }
    }
  }
  auto added = replace ? PolicyLinks(*client, policy_names, policy_ids)
                       : PolicyLinks(*client, append_names, append_ids);
  if (!added) return 1;
  for (auto& link : *added) {
    if (std::find(links.begin(), links.end(), link) == links.end()) links.push_back(link);
  }
  // The whole token, as Consul's update replaces it; the secret and the
  // expiry are left out, so the server keeps them.
  OrderedJson body = OrderedJson::object();
  body["AccessorID"] = *accessor;
  body["Description"] =
      flags.WasSet("description") ? description : TextField(*current, "Description");
  body["Policies"] = std::move(links);
  body["Local"] = BoolField(*current, "Local");
  auto token = AclRequest(*client, "PUT", TokenPath(*accessor), GoJson(body, 0));
  if (!token.ok()) {
    PrintErr("Failed to update token " + *accessor + ": " + std::string(token.status().message()));
    return 1;
  }
  PrintOut(FormatToken(*token, out));
  return 0;
}

int Clone(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  std::string id, description;
  Flags flags("acl token clone");
  flags.String("id", &id, "the AccessorID of the token to clone (or a unique prefix)");
  flags.String("description", &description, "the clone's description (default: the original's)");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kCloneUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl token clone") || !out.Check()) return 1;
  if (id.empty()) {
    PrintErr("Cannot clone a token without -id");
    return 1;
  }
  auto client = http.MakeClient();
  auto accessor = TokenId(*client, id);
  if (!accessor) return 1;
  OrderedJson body = OrderedJson::object();
  if (!description.empty()) body["Description"] = description;
  auto token = AclRequest(*client, "PUT", TokenPath(*accessor) + "/clone", GoJson(body, 0));
  if (!token.ok()) {
    PrintErr("Failed to clone token: " + std::string(token.status().message()));
    return 1;
  }
  PrintOut(FormatToken(*token, out));
  return 0;
}

int Delete(const Args& args) {
  HttpFlags http;
  std::string id;
  Flags flags("acl token delete");
  flags.String("id", &id, "the AccessorID of the token to delete (or a unique prefix)");
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kDeleteUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl token delete")) return 1;
  if (id.empty()) {
    PrintErr("Cannot delete a token without -id");
    return 1;
  }
  auto client = http.MakeClient();
  auto accessor = TokenId(*client, id);
  if (!accessor) return 1;
  auto deleted = AclRequest(*client, "DELETE", TokenPath(*accessor));
  if (!deleted.ok()) {
    PrintErr("Error deleting token " + GoQuote(*accessor) + ": " +
             std::string(deleted.status().message()));
    return 1;
  }
  PrintOut("Token " + GoQuote(*accessor) + " deleted successfully");
  return 0;
}

int List(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  Flags flags("acl token list");
  out.Register(&flags);
  http.Register(&flags);
  if (auto code = ParseFlags(&flags, args, kListUsage, 1)) return *code;
  if (!NoArguments(flags, "tenure acl token list") || !out.Check()) return 1;
  auto client = http.MakeClient();
  auto tokens = AclRequest(*client, "GET", "/v1/acl/tokens");
  if (!tokens.ok()) {
    PrintErr("Failed to retrieve the token list: " + std::string(tokens.status().message()));
    return 1;
  }
  PrintOut(FormatTokenList(*tokens, out));
  return 0;
}

}  // namespace

int AclTokenCommand(const Args& args) {
  return DispatchSubcommand("acl token", kTokenUsage, args,
                            {{"create", Create},
                             {"read", Read},
                             {"update", Update},
                             {"clone", Clone},
                             {"delete", Delete},
                             {"list", List}},
                            1);
}

}  // namespace tenure::cli
