#include "cli/server_flags.h"

#include <string>

#include "agent/config_keys.h"

namespace tenure::cli {

void RegisterServerFlags(Flags* flags, agent::AgentConfig* config) {
  using agent::AgentConfig;
  for (const agent::Setting& setting : agent::ServerSettings()) {
    std::string name(setting.flag);
    std::string help(setting.help);
    if (auto* s = std::get_if<std::string AgentConfig::*>(&setting.field)) {
      flags->String(name, &(config->**s), help);
    } else if (auto* b = std::get_if<bool AgentConfig::*>(&setting.field)) {
      flags->Bool(name, &(config->**b), help);
    } else if (auto* u = std::get_if<std::uint64_t AgentConfig::*>(&setting.field)) {
      flags->Uint64(name, &(config->**u), help);
    } else if (auto* i = std::get_if<int AgentConfig::*>(&setting.field)) {
      flags->Int(name, &(config->**i), help);
    }
  }
}

void RegisterConfigPathFlags(Flags* flags, std::vector<agent::ConfigPath>* paths) {
  auto add = [paths](agent::ConfigPath::Kind kind) {
    return [paths, kind](const std::string& path) {
      if (path.empty()) return Status::InvalidArgument("an empty path");
      paths->push_back({kind, path});
      return Status::Ok();
    };
  };
  flags->Func("config-file", add(agent::ConfigPath::Kind::kFile),
              "a JSON file of settings, HCL if its name ends in .hcl (docs/config.md); may be "
              "given more than once, later files win, flags win over files");
  flags->Func("config-dir", add(agent::ConfigPath::Kind::kDir),
              "a directory whose *.json and *.hcl files are read as -config-file, in lexical "
              "order; may be given more than once");
}

Result<agent::FileConfig> LoadServerConfig(const std::vector<agent::ConfigPath>& paths,
                                           const Flags& flags, const agent::AgentConfig& flagged) {
  agent::FileConfig loaded;
  TENURE_RETURN_IF_ERROR(agent::LoadConfigPaths(paths, &loaded));
  for (const agent::Setting& setting : agent::ServerSettings()) {
    if (!flags.WasSet(setting.flag)) continue;
    agent::CopySetting(setting, flagged, &loaded.config);
    loaded.origins.erase(std::string(setting.key));  // a message about it blames the flag
  }
  return loaded;
}

}  // namespace tenure::cli
