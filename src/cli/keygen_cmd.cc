// tenure keygen: prints a new cluster key (base64 of 32 random bytes), as
// `consul keygen` prints a gossip key. Save it with mode 600 and give the
// same file to every server (-raft-key-file).
#include <cstdio>

#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "raft/wire/cluster_key.h"

namespace tenure::cli {
namespace {

constexpr char kKeygenUsage[] =
    "Usage: tenure keygen\n"
    "\n"
    "  Prints a new cluster key (base64 of 32 random bytes) for -raft-key-file.\n"
    "  Save it with mode 600 and give the same file to every server.\n"
    "\n";

}  // namespace

int KeygenCommand(const Args& args) {
  Flags flags("keygen");
  if (auto code = ParseFlags(&flags, args, kKeygenUsage, 1)) return *code;
  if (!flags.positional().empty()) {
    PrintErr("tenure keygen: takes no arguments");
    return 1;
  }
  std::printf("%s\n", raft::wire::GenerateClusterKeyText().c_str());
  return 0;
}

}  // namespace tenure::cli
