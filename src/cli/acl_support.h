// What the `tenure acl` subcommands share (acl_cmd.cc dispatches and
// bootstraps, acl_token_cmd.cc and acl_policy_cmd.cc do the rest): the
// -format/-meta flags, the requests with Consul's api error texts, the
// resolution of an -id prefix, and the output as `consul acl` prints it.
//
// Output ("pretty", the default): one "Label:" per line, values aligned
// (tokens at column 18, policies at column 14), a token's policies as
// "   <id> - <name>", times as Go prints a time.Time ("2023-11-14 22:13:20
// +0000 UTC"). -format json: the object 4-space indented as Go's
// json.MarshalIndent writes Consul's api structs (a token's CreateIndex and
// ModifyIndex first, an empty Policies left out). Errors on stderr, exit 1.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "common/status.h"
#include "net/blocking_http_client.h"

namespace tenure::cli {

int AclBootstrapCommand(const Args& args);
int AclTokenCommand(const Args& args);
int AclPolicyCommand(const Args& args);

// Consul's built-ins, accepted by name wherever an -id is.
inline constexpr char kAnonymousTokenId[] = "00000000-0000-0000-0000-000000000002";
inline constexpr char kGlobalManagementPolicyId[] = "00000000-0000-0000-0000-000000000001";

using OrderedJson = nlohmann::ordered_json;

struct AclOutputFlags {
  std::string format = "pretty";
  bool meta = false;

  void Register(Flags* flags);
  // False (after printing why) unless -format is pretty or json.
  bool Check() const;
  bool json() const { return format == "json"; }
};

// A field of a JSON object without exceptions: a string as it is, a
// number as written, anything missing or null as "" (false).
std::string TextField(const OrderedJson& object, const char* name);
bool BoolField(const OrderedJson& object, const char* name);

// Sends the request; the JSON answer on 200. Otherwise the error as
// Consul's api words it ("Unexpected response code: 403 (ACL not found)"),
// or the transport's failure.
Result<OrderedJson> AclRequest(net::BlockingHttpClient& client, std::string_view method,
                               std::string_view target, std::string_view body = "");

// The full AccessorID (policy ID) an -id names: "anonymous"
// ("global-management"), a whole UUID as given, or else the one ID that
// starts with it (a request for the list).
Result<std::string> ResolveTokenId(net::BlockingHttpClient& client, const std::string& id);
Result<std::string> ResolvePolicyId(net::BlockingHttpClient& client, const std::string& id);

// RFC 3339 as Go's time.Time String() prints it; anything else unchanged.
std::string GoTimeString(std::string_view rfc3339);

// The text to print for a token, a token list, a policy, a policy list.
std::string FormatToken(const OrderedJson& token, const AclOutputFlags& out);
std::string FormatTokenList(const OrderedJson& tokens, const AclOutputFlags& out);
std::string FormatPolicy(const OrderedJson& policy, const AclOutputFlags& out);
std::string FormatPolicyList(const OrderedJson& policies, const AclOutputFlags& out);

// Rejects positional arguments: prints "<command>: unexpected argument X"
// and returns false.
bool NoArguments(const Flags& flags, std::string_view command);

}  // namespace tenure::cli
