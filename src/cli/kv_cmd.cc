// tenure kv get|put|delete: dispatches to the subcommands
// (cli/kv_subcommands.h), which mirror Consul's `consul kv`.
#include <cstdio>

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
  if (args.empty()) {
    std::fputs(kKvUsage, stderr);
    return 1;
  }
  const std::string& sub = args[0];
  Args rest(args.begin() + 1, args.end());
  if (sub == "get") return KvGetCommand(rest);
  if (sub == "put") return KvPutCommand(rest);
  if (sub == "delete") return KvDeleteCommand(rest);
  if (sub == "-h" || sub == "-help" || sub == "--help" || sub == "help") {
    std::fputs(kKvUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "tenure kv: unknown subcommand \"%s\"\n\n%s", sub.c_str(), kKvUsage);
  return 1;
}

}  // namespace tenure::cli
