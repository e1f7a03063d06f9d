#include "cli/lock_protocol.h"

#include <nlohmann/json.hpp>

namespace tenure::cli {

std::string CleanPrefix(std::string_view prefix) {
  while (!prefix.empty() && prefix.front() == '/') prefix.remove_prefix(1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  return std::string(prefix);
}

std::string LockKeyOf(std::string_view prefix) { return std::string(prefix) + "/.lock"; }

Result<SemaphoreLock> DecodeSemaphoreLock(std::string_view value) {
  SemaphoreLock lock;
  if (value.empty()) return lock;
  nlohmann::json doc = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::Corruption("lock decoding failed: not a JSON object");
  }
  if (auto limit = doc.find("Limit"); limit != doc.end() && !limit->is_null()) {
    if (!limit->is_number_integer() || limit->get<std::int64_t>() < 0 ||
        limit->get<std::int64_t>() > 1'000'000'000) {
      return Status::Corruption("lock decoding failed: Limit is not a count");
    }
    lock.limit = static_cast<int>(limit->get<std::int64_t>());
  }
  if (auto holders = doc.find("Holders"); holders != doc.end() && !holders->is_null()) {
    if (!holders->is_object()) return Status::Corruption("lock decoding failed: Holders");
    for (const auto& [id, held] : holders->items()) {
      if (!held.is_boolean()) return Status::Corruption("lock decoding failed: Holders");
      lock.holders[id] = held.get<bool>();
    }
  }
  return lock;
}

std::string EncodeSemaphoreLock(const SemaphoreLock& lock) {
  nlohmann::json holders = nlohmann::json::object();
  for (const auto& [id, held] : lock.holders) holders[id] = held;
  // Go writes a struct's fields in their order (Limit, Holders) and a map's
  // keys sorted; nlohmann sorts every object, so the outer one is by hand.
  return "{\"Limit\":" + std::to_string(lock.limit) + ",\"Holders\":" + holders.dump() + "}";
}

void PruneHolders(const std::vector<client::KvPair>& pairs, SemaphoreLock* lock) {
  std::map<std::string, bool> alive;
  for (const client::KvPair& pair : pairs) {
    if (!pair.session.empty()) alive[pair.session] = true;
  }
  for (auto it = lock->holders.begin(); it != lock->holders.end();) {
    if (alive.count(it->first) == 0) {
      it = lock->holders.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<std::string> ChildArgv(const std::vector<std::string>& args, bool shell,
                                   const char* shell_env) {
  if (!shell) return args;
  std::string script;
  for (const std::string& arg : args) {
    if (!script.empty()) script += ' ';
    script += arg;
  }
  std::string sh = shell_env != nullptr && shell_env[0] != '\0' ? shell_env : "/bin/sh";
  return {sh, "-c", script};
}

std::string DefaultSessionName(const std::vector<std::string>& args, std::string_view prefix,
                               std::size_t max_bytes) {
  std::string script;
  for (const std::string& arg : args) {
    if (!script.empty()) script += ' ';
    script += arg;
  }
  std::string name = "Consul lock for '" + script + "' at '" + std::string(prefix) + "'";
  if (name.size() > max_bytes) {
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    name.resize(cut);  // never half a UTF-8 character
  }
  return name;
}

}  // namespace tenure::cli
