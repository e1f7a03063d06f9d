// tenure keygen: prints a new cluster key (base64 of 32 random bytes), as
// `consul keygen` prints a gossip key. Save it with mode 600 and give the
// same file to every server (-raft-key-file).
#include <cstdio>

#include "cli/commands.h"
#include "cli/flags.h"
#include "raft/wire/cluster_key.h"

namespace tenure::cli {

int KeygenCommand(const Args& args) {
  Flags flags("keygen");
  if (Status s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (!flags.positional().empty()) {
    std::fprintf(stderr, "tenure keygen: takes no arguments\n");
    return 2;
  }
  std::printf("%s\n", raft::wire::GenerateClusterKeyText().c_str());
  return 0;
}

}  // namespace tenure::cli
