// tenure acl bootstrap|policy|token: Consul's `consul acl` against tenure's
// ACL endpoints (/v1/acl/...). This file dispatches and bootstraps; tokens
// and policies have a file each (acl_token_cmd.cc, acl_policy_cmd.cc), and
// what they share is cli/acl_support.h. As Consul's, every subcommand exits
// 0 on success and 1 otherwise, bad usage included.
#include <cstdio>

#include "cli/acl_support.h"
#include "cli/commands.h"

namespace tenure::cli {
namespace {

constexpr char kAclUsage[] =
    "Usage: tenure acl <subcommand> [options] [args]\n"
    "\n"
    "  Manages the ACL system of a server started with -acl-enabled, as\n"
    "  `consul acl` does: bootstrap it once, write policies (rules), and hand out\n"
    "  tokens linked to them. Most subcommands need a token with acl:write: give it\n"
    "  with -token, -token-file or $CONSUL_HTTP_TOKEN.\n"
    "\n"
    "  bootstrap                            creates the first management token\n"
    "  policy create|read|update|delete|list\n"
    "  token  create|read|update|clone|delete|list\n"
    "\n"
    "Run 'tenure acl <subcommand> -h' for its options.\n";

constexpr char kBootstrapUsage[] =
    "Usage: tenure acl bootstrap [options] [SECRET_FILE]\n"
    "\n"
    "  Creates the initial management token (policy global-management) and prints\n"
    "  it, SecretID included. It works once: a repeat is refused with the reset\n"
    "  index; writing that index into DATA_DIR/acl-bootstrap-reset on the leader\n"
    "  allows one more. SECRET_FILE (or - for stdin) holds the UUID to use as the\n"
    "  SecretID; by default the server picks one.\n"
    "\n";

}  // namespace

int AclBootstrapCommand(const Args& args) {
  HttpFlags http;
  AclOutputFlags out;
  Flags flags("acl bootstrap");
  out.Register(&flags);
  http.Register(&flags);
  flags.set_interspersed(true);
  if (auto code = ParseFlags(&flags, args, kBootstrapUsage, 1)) return *code;
  if (flags.positional().size() > 1) {
    PrintErr("Too many arguments (expected 0 or 1, got " +
             std::to_string(flags.positional().size()) + ")");
    return 1;
  }
  if (!out.Check()) return 1;
  std::string body;
  if (flags.positional().size() == 1) {
    const std::string& source = flags.positional()[0];
    auto secret = LoadDataSource(source == "-" ? source : "@" + source);
    if (!secret.ok()) {
      PrintErr("Error reading the bootstrap secret: " + std::string(secret.status().message()));
      return 1;
    }
    OrderedJson request = OrderedJson::object();
    request["BootstrapSecret"] = std::string(TrimSpace(*secret));
    body = GoJson(request, 0);
  }
  auto client = http.MakeClient();
  auto token = AclRequest(*client, "PUT", "/v1/acl/bootstrap", body);
  if (!token.ok()) {
    PrintErr("Failed ACL bootstrapping: " + std::string(token.status().message()));
    return 1;
  }
  PrintOut(FormatToken(*token, out));
  return 0;
}

int AclCommand(const Args& args) {
  return DispatchSubcommand("acl", kAclUsage, args,
                            {{"bootstrap", AclBootstrapCommand},
                             {"token", AclTokenCommand},
                             {"policy", AclPolicyCommand}},
                            1);
}

}  // namespace tenure::cli
