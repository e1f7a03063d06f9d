// tenure validate PATH...: checks config files and directories as
// `tenure server -config-file/-config-dir` would read them, then the
// combined settings as the server would (agent::ResolveAgentConfig, which
// also opens the key and certificate files they name). Consul's
// `consul validate`: its text on success, exit 1 on any error.
#include <cstdio>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/config_file.h"
#include "agent/config_load.h"
#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/flags.h"

namespace tenure::cli {
namespace {

constexpr char kValidateUsage[] =
    "Usage: tenure validate [options] FILE_OR_DIRECTORY...\n"
    "\n"
    "  Checks config files of `tenure server` (docs/config.md): each file, and the\n"
    "  settings they make together, in the order given (a directory's *.json and\n"
    "  *.hcl files in lexical order), as the server would start with them and no\n"
    "  flags. Prints \"Configuration is valid!\" and exits 0, or prints the error\n"
    "  and exits 1.\n"
    "\n";

}  // namespace

int ValidateCommand(const Args& args) {
  bool quiet = false;
  Flags flags("validate");
  flags.Bool("quiet", &quiet, "print nothing when the configuration is valid");
  flags.set_interspersed(true);
  if (auto code = ParseFlags(&flags, args, kValidateUsage, 1)) return *code;
  if (flags.positional().empty()) {
    PrintErr("tenure validate: give at least one config file or directory");
    return 1;
  }
  std::vector<agent::ConfigPath> paths;
  for (const std::string& path : flags.positional()) {
    paths.push_back({agent::ConfigPath::Kind::kEither, path});
  }
  agent::FileConfig loaded;
  if (Status read = agent::LoadConfigPaths(paths, &loaded); !read.ok()) {
    PrintErr("tenure validate: " + std::string(read.message()));
    return 1;
  }
  Result<agent::AgentPlan> plan = agent::ResolveAgentConfig(loaded.config);
  if (!plan.ok()) {
    PrintErr("tenure validate: " + agent::WithOrigins(plan.status().message(), loaded));
    return 1;
  }
  if (!quiet) std::printf("Configuration is valid!\n");
  return 0;
}

}  // namespace tenure::cli
