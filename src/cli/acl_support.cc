#include "cli/acl_support.h"

#include <cstdint>
#include <vector>

#include "common/strings.h"

namespace tenure::cli {
namespace {

std::string Text(const OrderedJson& object, const char* name) { return TextField(object, name); }
bool Flag(const OrderedJson& object, const char* name) { return BoolField(object, name); }

std::string Padded(std::string_view label, std::size_t width) {
  std::string out(label);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

// "Label:" padded to `width`, the value, a newline.
std::string Line(std::string_view label, std::string_view value, std::size_t width,
                 std::string_view indent = "") {
  return std::string(indent) + Padded(std::string(label) + ":", width) + std::string(value) + "\n";
}

constexpr std::size_t kTokenWidth = 18;   // "Expiration Time:  "
constexpr std::size_t kPolicyWidth = 14;  // "Description:  "

std::string Datacenters(const OrderedJson& policy) {
  std::string out;
  auto it = policy.find("Datacenters");
  if (it == policy.end() || !it->is_array()) return out;
  for (const auto& dc : *it) {
    if (!out.empty()) out += ", ";
    out += dc.is_string() ? dc.get<std::string>() : dc.dump();
  }
  return out;
}

std::string PrettyToken(const OrderedJson& token, bool meta) {
  std::string out;
  out += Line("AccessorID", Text(token, "AccessorID"), kTokenWidth);
  out += Line("SecretID", Text(token, "SecretID"), kTokenWidth);
  out += Line("Description", Text(token, "Description"), kTokenWidth);
  out += Line("Local", Flag(token, "Local") ? "true" : "false", kTokenWidth);
  out += Line("Create Time", GoTimeString(Text(token, "CreateTime")), kTokenWidth);
  if (std::string expires = Text(token, "ExpirationTime"); !expires.empty()) {
    out += Line("Expiration Time", GoTimeString(expires), kTokenWidth);
  }
  if (meta) {
    out += Line("Create Index", Text(token, "CreateIndex"), kTokenWidth);
    out += Line("Modify Index", Text(token, "ModifyIndex"), kTokenWidth);
  }
  auto policies = token.find("Policies");
  if (policies != token.end() && policies->is_array() && !policies->empty()) {
    out += "Policies:\n";
    for (const auto& link : *policies) {
      out += "   " + Text(link, "ID") + " - " + Text(link, "Name") + "\n";
    }
  }
  return out;
}

// Go marshals Consul's api.ACLToken with the indexes first and an empty
// Policies left out (omitempty); the rest keeps the server's order.
OrderedJson GoTokenOrder(const OrderedJson& token) {
  if (!token.is_object()) return token;
  OrderedJson out = OrderedJson::object();
  for (const char* first : {"CreateIndex", "ModifyIndex"}) {
    if (auto it = token.find(first); it != token.end()) out[first] = *it;
  }
  for (auto it = token.begin(); it != token.end(); ++it) {
    if (it.key() == "CreateIndex" || it.key() == "ModifyIndex") continue;
    if (it.key() == "Policies" && (it->is_null() || (it->is_array() && it->empty()))) continue;
    out[it.key()] = it.value();
  }
  return out;
}

std::string PrettyPolicyListEntry(const OrderedJson& policy, bool meta) {
  constexpr std::string_view kIndent = "   ";
  std::string out = Text(policy, "Name") + ":\n";
  out += Line("ID", Text(policy, "ID"), kPolicyWidth, kIndent);
  out += Line("Description", Text(policy, "Description"), kPolicyWidth, kIndent);
  out += Line("Datacenters", Datacenters(policy), kPolicyWidth, kIndent);
  if (meta) {
    out += Line("Create Index", Text(policy, "CreateIndex"), kPolicyWidth, kIndent);
    out += Line("Modify Index", Text(policy, "ModifyIndex"), kPolicyWidth, kIndent);
  }
  return out;
}

// The one ID of `list` (objects) whose `field` starts with `prefix`.
Result<std::string> UniqueIdWithPrefix(const OrderedJson& list, const char* field,
                                       const std::string& prefix, const char* what) {
  std::string found;
  if (list.is_array()) {
    for (const auto& entry : list) {
      std::string id = Text(entry, field);
      if (!StartsWith(id, prefix)) continue;
      if (!found.empty() && found != id) {
        return Status::InvalidArgument(GoQuote(prefix) + " is the start of more than one " + what +
                                       " ID; give more of it");
      }
      found = id;
    }
  }
  if (found.empty())
    return Status::NotFound(std::string("no ") + what + " ID starts with " + GoQuote(prefix));
  return found;
}

}  // namespace

std::string TextField(const OrderedJson& object, const char* name) {
  if (!object.is_object()) return "";
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

bool BoolField(const OrderedJson& object, const char* name) {
  if (!object.is_object()) return false;
  auto it = object.find(name);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

void AclOutputFlags::Register(Flags* flags) {
  flags->String("format", &format, "output format: pretty (default) or json");
  flags->Bool("meta", &meta, "also show the Create Index and Modify Index");
}

bool AclOutputFlags::Check() const {
  if (format == "pretty" || format == "json") return true;
  PrintErr("Invalid format " + GoQuote(format) + ": expected pretty or json");
  return false;
}

Result<OrderedJson> AclRequest(net::BlockingHttpClient& client, std::string_view method,
                               std::string_view target, std::string_view body) {
  auto response = client.Request(method, target, body);
  if (!response.ok()) return response.status();
  if (response->status != 200) {
    const Code code = response->status == 403   ? Code::kPermissionDenied
                      : response->status == 404 ? Code::kNotFound
                                                : Code::kInvalidArgument;
    return Status(code, UnexpectedResponse(*response));
  }
  auto parsed = ParseJson(response->body);
  if (!parsed) return Status::Internal("unexpected answer from the server: " + response->body);
  return std::move(*parsed);
}

Result<std::string> ResolveTokenId(net::BlockingHttpClient& client, const std::string& id) {
  if (id == "anonymous") return std::string(kAnonymousTokenId);
  if (id.size() == 36) return id;
  auto tokens = AclRequest(client, "GET", "/v1/acl/tokens");
  if (!tokens.ok()) return tokens.status();
  return UniqueIdWithPrefix(*tokens, "AccessorID", id, "token");
}

Result<std::string> ResolvePolicyId(net::BlockingHttpClient& client, const std::string& id) {
  if (id == "global-management") return std::string(kGlobalManagementPolicyId);
  if (id.size() == 36) return id;
  auto policies = AclRequest(client, "GET", "/v1/acl/policies");
  if (!policies.ok()) return policies.status();
  return UniqueIdWithPrefix(*policies, "ID", id, "policy");
}

std::string GoTimeString(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
  if (text.size() < 20 || text[10] != 'T') return std::string(text);
  std::string_view rest = text.substr(11);
  std::size_t zone = rest.find_first_of("Z+-");
  if (zone == std::string_view::npos || zone < 8) return std::string(text);
  std::string clock(rest.substr(0, zone));
  if (std::size_t dot = clock.find('.'); dot != std::string::npos) {
    while (!clock.empty() && clock.back() == '0') clock.pop_back();
    if (clock.back() == '.') clock.pop_back();
  }
  std::string_view offset = rest.substr(zone);
  std::string suffix;
  if (offset == "Z") {
    suffix = "+0000 UTC";
  } else if (offset.size() == 6 && offset[3] == ':') {
    // A fixed zone without a name: Go prints the offset in its place.
    std::string hhmm = std::string(offset.substr(0, 3)) + std::string(offset.substr(4));
    suffix = hhmm + " " + hhmm;
  } else {
    return std::string(text);
  }
  return std::string(text.substr(0, 10)) + " " + clock + " " + suffix;
}

std::string FormatToken(const OrderedJson& token, const AclOutputFlags& out) {
  if (out.json()) return GoJson(GoTokenOrder(token), 4);
  return PrettyToken(token, out.meta);
}

std::string FormatTokenList(const OrderedJson& tokens, const AclOutputFlags& out) {
  if (out.json()) {
    OrderedJson list = OrderedJson::array();
    if (tokens.is_array()) {
      for (const auto& token : tokens) list.push_back(GoTokenOrder(token));
    }
    return GoJson(list, 4);
  }
  std::string text;
  if (!tokens.is_array()) return text;
  for (const auto& token : tokens) {
    if (!text.empty()) text += "\n";
    text += PrettyToken(token, out.meta);
  }
  return text;
}

std::string FormatPolicy(const OrderedJson& policy, const AclOutputFlags& out) {
  if (out.json()) return GoJson(policy, 4);
  std::string text;
  text += Line("ID", Text(policy, "ID"), kPolicyWidth);
  text += Line("Name", Text(policy, "Name"), kPolicyWidth);
  text += Line("Description", Text(policy, "Description"), kPolicyWidth);
  text += Line("Datacenters", Datacenters(policy), kPolicyWidth);
  if (out.meta) {
    text += Line("Create Index", Text(policy, "CreateIndex"), kPolicyWidth);
    text += Line("Modify Index", Text(policy, "ModifyIndex"), kPolicyWidth);
  }
  text += "Rules:\n" + Text(policy, "Rules");
  return text;
}

std::string FormatPolicyList(const OrderedJson& policies, const AclOutputFlags& out) {
  if (out.json()) return GoJson(policies, 4);
  std::string text;
  if (!policies.is_array()) return text;
  for (const auto& policy : policies) {
    if (!text.empty()) text += "\n";
    text += PrettyPolicyListEntry(policy, out.meta);
  }
  return text;
}

bool NoArguments(const Flags& flags, std::string_view command) {
  if (flags.positional().empty()) return true;
  PrintErr(std::string(command) + ": unexpected argument " + GoQuote(flags.positional()[0]));
  return false;
}

}  // namespace tenure::cli
