// tenure kv get|put|delete: dispatches to the subcommands
// (cli/kv_subcommands.h), which mirror Consul's `consul kv`.
#include <cstdio>

#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/kv_subcommands.h"

namespace tenure::cli {
namespace {

constexpr char kKvUsage[] =
    "Usage: tenure kv <subcommand> [options] [args]\n"
    "\n"
    "  get     [-recurse] [-keys] [-separator=/] [-detailed] [-base64] [KEY_OR_PREFIX]\n"
    "  put     [-acquire|-release -session=ID] [-cas -modify-index=N] [-flags=N] [-base64]\n"
    "          [-fence] KEY [DATA]\n"
    "  delete  [-recurse] [-cas -modify-index=N] KEY_OR_PREFIX\n"
    "\n"
    "Run 'tenure kv <subcommand> -h' for its options.\n";

}  // namespace

int KvCommand(const Args& args) {
  return DispatchSubcommand(
      "kv", kKvUsage, args,
      {{"get", KvGetCommand}, {"put", KvPutCommand}, {"delete", KvDeleteCommand}}, 1);
}

}  // namespace tenure::cli
