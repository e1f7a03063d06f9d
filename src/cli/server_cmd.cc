// tenure server: parses its flags into an agent::AgentConfig and runs the
// agent (src/agent), which assembles and runs the server. Bad usage exits 1
// as `consul agent` does (docs/cli.md).
#include <cstdio>
#include <string>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/config_file.h"
#include "agent/config_load.h"
#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/server_flags.h"

namespace tenure::cli {
namespace {

constexpr char kServerUsage[] =
    "Usage: tenure server [options]\n"
    "\n"
    "  Runs a tenure server: a raft member with the Consul-compatible HTTP API.\n"
    "  -dev runs a single server on a throwaway data dir. docs/cluster.md shows\n"
    "  a cluster; docs/security.md what each port exposes. Settings may also\n"
    "  come from JSON or HCL files (-config-file, -config-dir; docs/config.md):\n"
    "  flags win over files, later files over earlier ones.\n"
    "\n";

}  // namespace

int ServerCommand(const Args& args) {
  // Flags land in `flagged`; the files are read after parsing, and a flag
  // that was given then wins over every file (docs/config.md).
  agent::AgentConfig flagged;
  Flags flags("server");
  RegisterServerFlags(&flags, &flagged);
  std::vector<agent::ConfigPath> config_paths;
  RegisterConfigPathFlags(&flags, &config_paths);
  if (auto code = ParseFlags(&flags, args, kServerUsage, 1)) return *code;
  if (!flags.positional().empty()) {
    PrintErr("tenure server: unexpected argument \"" + flags.positional()[0] + "\"");
    return 1;
  }
  Result<agent::FileConfig> loaded = LoadServerConfig(config_paths, flags, flagged);
  if (!loaded.ok()) {
    PrintErr("tenure server: " + std::string(loaded.status().message()));
    return 1;
  }
  Result<agent::AgentPlan> plan = agent::ResolveAgentConfig(loaded->config);
  if (!plan.ok()) {
    PrintErr("tenure server: " + agent::WithOrigins(plan.status().message(), *loaded));
    return 1;
  }
  if (Status ran = agent::RunAgent(std::move(*plan)); !ran.ok()) {
    PrintErr("tenure server: " + ran.ToString());
    return 1;
  }
  return 0;
}

}  // namespace tenure::cli
