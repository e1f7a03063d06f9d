// The one list of `tenure server`'s settings: each one's flag, its key in a
// config file (docs/config.md), its type, the AgentConfig field it sets and
// its help text. The server command registers its flags from this list and
// the config file reader looks keys up in it, so a setting cannot exist in
// one and be forgotten in the other.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "agent/config.h"

namespace tenure::agent {

enum class SettingType {
  kString,
  kBool,
  kUint64,
  kInt,
  kList,  // a string of comma-separated items; a file may also give an array of strings
};

struct Setting {
  std::string_view key;   // in a config file: the flag's name in snake_case
  std::string_view flag;  // `tenure server -FLAG`
  SettingType type;
  std::variant<std::string AgentConfig::*, bool AgentConfig::*, std::uint64_t AgentConfig::*,
               int AgentConfig::*>
      field;
  std::string_view help;
  // Where a Consul config file puts the same setting, as dotted paths of
  // nested objects ("acl.tokens.initial_management"); also accepted. Every
  // acl_X key also gets "acl.X" (Consul's acl block).
  std::vector<std::string> nested;
};

const std::vector<Setting>& ServerSettings();

// The setting a config file's key names: a top-level key, or the dotted
// path of a nested one. nullptr when none does.
const Setting* FindSettingByPath(std::string_view path);
// True when some setting's nested path starts with "path.": an object there
// is a block to look inside ("acl", "acl.tokens", "tls").
bool IsSettingBlock(std::string_view path);
const Setting* FindSettingByFlag(std::string_view flag);

// Copies one setting's field.
void CopySetting(const Setting& setting, const AgentConfig& from, AgentConfig* to);
// The field's value as text ("true", "8500", "127.0.0.1:8500"), for docs and tests.
std::string SettingValue(const Setting& setting, const AgentConfig& config);
std::string_view SettingTypeName(SettingType type);

}  // namespace tenure::agent
