// `tenure server`'s flags, registered from the one list of its settings
// (agent/config_keys.h), and how they combine with its config files:
// defaults, then the files in command-line order, then the flags given.
#pragma once

#include <vector>

#include "agent/config.h"
#include "agent/config_file.h"
#include "agent/config_load.h"
#include "cli/flags.h"
#include "common/status.h"

namespace tenure::cli {

// Every setting's flag, writing into *config.
void RegisterServerFlags(Flags* flags, agent::AgentConfig* config);
// -config-file and -config-dir, each appended to *paths as given, so the
// two keep their command-line order.
void RegisterConfigPathFlags(Flags* flags, std::vector<agent::ConfigPath>* paths);

// The files over the defaults, then every flag that was given (its value
// from flagged) over the files. An error names the file and line.
Result<agent::FileConfig> LoadServerConfig(const std::vector<agent::ConfigPath>& paths,
                                           const Flags& flags, const agent::AgentConfig& flagged);

}  // namespace tenure::cli
