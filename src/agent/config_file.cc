#include "agent/config_file.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <vector>

#include "agent/config_keys.h"
#include "agent/config_text.h"

namespace tenure::agent {
namespace {

// Consul keys tenure has under another name or shape: said with the refusal.
constexpr std::pair<std::string_view, std::string_view> kConsulHints[] = {
    {"ports", "tenure takes http_addr and https_addr as HOST:PORT"},
    {"addresses", "tenure takes http_addr and https_addr as HOST:PORT"},
    {"retry_join", "tenure's is join"},
    {"start_join", "tenure's is join"},
    {"bind_addr", "tenure's are raft_addr and raft_bind_addr"},
    {"client_addr", "tenure takes http_addr and https_addr as HOST:PORT"},
    {"node", "the node's name is node_name"},
    {"server", "every tenure server is a raft member: leave it out"},
    {"bootstrap_expect", "a new cluster's members are listed in bootstrap_peers"},
    {"encrypt", "tenure's cluster key is in the file raft_key_file names"},
};

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean "http_addr"?)" for a near miss, or a hint for a Consul key.
std::string Suggestion(std::string_view path) {
  for (const auto& [key, hint] : kConsulHints) {
    if (path == key) return " (" + std::string(hint) + ")";
  }
  std::string best;
  // Two typos at most, and fewer than half the key: "ab" is no near miss of "dev".
  std::size_t best_distance = std::min<std::size_t>(3, (path.size() + 1) / 2);
  auto consider = [&](std::string_view candidate) {
    const std::size_t distance = EditDistance(path, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(candidate);
    }
  };
  for (const Setting& setting : ServerSettings()) {
    consider(setting.key);
    for (const std::string& nested : setting.nested) consider(nested);
  }
  return best.empty() ? "" : " (did you mean \"" + best + "\"?)";
}

class FileApplier {
 public:
  FileApplier(std::string_view name, AgentConfig* config) : name_(name), config_(config) {}

  Status Object(const ConfigValue& object, const std::string& prefix) {
    for (const ConfigMember& member : object.members) {
      const std::string path = prefix.empty() ? member.name : prefix + "." + member.name;
      if (const Setting* setting = FindSettingByPath(path)) {
        TENURE_RETURN_IF_ERROR(Apply(*setting, path, member));
      } else if (IsSettingBlock(path)) {
        if (member.value.kind != ConfigValue::Kind::kObject) {
          return Fail(member.at.line, "\"" + path + "\" must be an object, got " +
                                          std::string(JsonKindName(member.value.kind)));
        }
        TENURE_RETURN_IF_ERROR(Object(member.value, path));
      } else {
        return Fail(member.at.line, "unknown key \"" + path + "\"" + Suggestion(path));
      }
    }
    return Status::Ok();
  }

  std::vector<std::pair<const Setting*, SettingOrigin>>& set() { return set_; }

 private:
  Status Fail(int line, const std::string& why) const {
    return Status::InvalidArgument(std::string(name_) + ":" + std::to_string(line) + ": " + why);
  }

  Status Apply(const Setting& setting, const std::string& path, const ConfigMember& member) {
    for (const auto& [earlier, origin] : set_) {
      if (earlier == &setting) {
        return Fail(member.at.line, "\"" + path + "\" sets " + std::string(setting.key) +
                                        " again (first at line " + std::to_string(origin.line) +
                                        " as \"" + origin.path + "\")");
      }
    }
    const ConfigValue& value = member.value;
    auto wrong = [&](std::string_view expected) {
      std::string why = path + ": expected " + std::string(expected) + ", got " +
                        std::string(JsonKindName(value.kind));
      if (value.kind == ConfigValue::Kind::kString &&
          (value.text == "true" || value.text == "false")) {
        why += " (write " + value.text + " without quotes)";
      } else if (value.kind == ConfigValue::Kind::kNumber) {
        why += " (" + value.text + ")";
      }
      return Fail(value.at.line, why);
    };
    switch (setting.type) {
      case SettingType::kString:
        if (value.kind != ConfigValue::Kind::kString) return wrong("a string");
        config_->*std::get<std::string AgentConfig::*>(setting.field) = value.text;
        break;
      case SettingType::kList: {
        std::string joined;
        if (value.kind == ConfigValue::Kind::kString) {
          joined = value.text;
        } else if (value.kind == ConfigValue::Kind::kList) {
          for (const ConfigValue& item : value.items) {
            if (item.kind != ConfigValue::Kind::kString) {
              return Fail(item.at.line, path + ": expected an array of strings, found " +
                                            std::string(JsonKindName(item.kind)) + " in it");
            }
            if (item.text.find(',') != std::string::npos) {
              return Fail(item.at.line, path + ": one address per item, got \"" + item.text + "\"");
            }
            joined += (joined.empty() ? "" : ",") + item.text;
          }
        } else {
          return wrong("a string or an array of strings");
        }
        config_->*std::get<std::string AgentConfig::*>(setting.field) = joined;
        break;
      }
      case SettingType::kBool:
        if (value.kind != ConfigValue::Kind::kBool) return wrong("true or false");
        config_->*std::get<bool AgentConfig::*>(setting.field) = value.boolean;
        break;
      case SettingType::kUint64:
      case SettingType::kInt: {
        const bool is_int = setting.type == SettingType::kInt;
        const std::string range = is_int ? "a whole number from 0 to 1000000000"
                                         : "a whole number from 0 to 18446744073709551615";
        if (value.kind != ConfigValue::Kind::kNumber) return wrong(range);
        std::uint64_t v = 0;
        bool ok = value.text.find_first_not_of("0123456789") == std::string::npos;
        for (char c : value.text) {
          const auto digit = static_cast<std::uint64_t>(c - '0');
          if (!ok || v > (UINT64_MAX - digit) / 10) {
            ok = false;
            break;
          }
          v = v * 10 + digit;
        }
        if (!ok || (is_int && v > 1'000'000'000)) {
          return Fail(value.at.line, path + ": expected " + range + ", got " + value.text);
        }
        if (is_int) {
          config_->*std::get<int AgentConfig::*>(setting.field) = static_cast<int>(v);
        } else {
          config_->*std::get<std::uint64_t AgentConfig::*>(setting.field) = v;
        }
        break;
      }
    }
    set_.push_back({&setting, SettingOrigin{std::string(name_), member.at.line, path}});
    return Status::Ok();
  }

  std::string_view name_;
  AgentConfig* config_;
  std::vector<std::pair<const Setting*, SettingOrigin>> set_;
};

}  // namespace

Status ApplyConfigText(std::string_view name, std::string_view text, FileConfig* into) {
  const bool hcl = name.size() > 4 && name.substr(name.size() - 4) == ".hcl";
  TENURE_ASSIGN_OR_RETURN(ConfigValue root,
                          hcl ? ParseHclWithLines(name, text) : ParseJsonWithLines(name, text));
  if (root.kind != ConfigValue::Kind::kObject) {
    return Status::InvalidArgument(std::string(name) + ":" + std::to_string(root.at.line) +
                                   ": expected a JSON object of settings, got " +
                                   std::string(JsonKindName(root.kind)));
  }
  AgentConfig config = into->config;  // *into changes only if the whole file is good
  FileApplier applier(name, &config);
  TENURE_RETURN_IF_ERROR(applier.Object(root, ""));
  into->config = std::move(config);
  for (auto& [setting, origin] : applier.set()) {
    into->origins[std::string(setting->key)] = std::move(origin);
  }
  return Status::Ok();
}

std::string WithOrigins(std::string_view message, const FileConfig& loaded) {
  // The flags named in the message, in its order: "-node" is not "-node-id".
  std::vector<std::pair<std::size_t, std::string>> notes;
  for (const Setting& setting : ServerSettings()) {
    auto origin = loaded.origins.find(setting.key);
    if (origin == loaded.origins.end()) continue;
    const std::string flag = "-" + std::string(setting.flag);
    for (std::size_t at = message.find(flag); at != std::string_view::npos;
         at = message.find(flag, at + 1)) {
      const std::size_t end = at + flag.size();
      const bool starts = at == 0 || message[at - 1] == ' ' || message[at - 1] == '(';
      const bool ends =
          end == message.size() || !(std::isalnum(static_cast<unsigned char>(message[end])) ||
                                     message[end] == '-' || message[end] == '_');
      if (starts && ends) {
        notes.push_back({at, flag + " set by " + origin->second.path + " at " +
                                 origin->second.file + ":" + std::to_string(origin->second.line)});
        break;
      }
    }
  }
  if (notes.empty()) return std::string(message);
  std::sort(notes.begin(), notes.end());
  std::string out = std::string(message) + " (";
  for (std::size_t i = 0; i < notes.size(); ++i) out += (i ? "; " : "") + notes[i].second;
  return out + ")";
}

}  // namespace tenure::agent
