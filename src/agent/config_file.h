// `tenure server`'s config files (docs/config.md): JSON objects (or HCL,
// for a name ending in .hcl) whose keys are the settings of config_keys.h,
// applied in order over the defaults.
// Pure: the caller reads the files (config_load.h) and hands in their text.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "agent/config.h"
#include "common/status.h"

namespace tenure::agent {

// Where a setting's value came from: for messages about it.
struct SettingOrigin {
  std::string file;
  int line = 0;
  std::string path;  // the key as written: "http_addr", "acl.tokens.initial_management"
};

struct FileConfig {
  AgentConfig config;  // the defaults, then each file's settings over them
  std::map<std::string, SettingOrigin, std::less<>> origins;  // by Setting::key
};

// Applies one file (name: its path, for messages and its format) over *into; a later file
// wins over an earlier one. On any error ("NAME:LINE: why") *into is left
// as it was.
Status ApplyConfigText(std::string_view name, std::string_view text, FileConfig* into);

// ResolveAgentConfig's message, which names flags, with where the files set
// each flag it names: "-http-addr: ... (-http-addr set by http_addr at a.json:3)".
std::string WithOrigins(std::string_view message, const FileConfig& loaded);

}  // namespace tenure::agent
