#include "cli/kv_pair.h"

#include <algorithm>
#include <utility>

#include "cli/client_support.h"
#include "common/base64.h"

namespace tenure::cli {
namespace {

bool GetUint(const nlohmann::ordered_json& object, const char* name, std::uint64_t* out) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return true;  // absent: zero, as Go decodes it
  if (!it->is_number_unsigned()) return false;
  *out = it->get<std::uint64_t>();
  return true;
}

bool GetString(const nlohmann::ordered_json& object, const char* name,
               std::optional<std::string>* out) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

}  // namespace

std::string KvPair::Value() const {
  if (!value_base64) return "";
  return Base64Decode(*value_base64).value_or("");
}

Result<std::vector<KvPair>> ParseKvPairs(std::string_view body) {
  auto bad = [](std::string_view why) {
    return Status::Corruption("unexpected KV response from the server: " + std::string(why));
  };
  auto parsed = ParseJson(body);
  if (!parsed || !parsed->is_array()) return bad("not a JSON array");
  std::vector<KvPair> pairs;
  for (const auto& item : *parsed) {
    if (!item.is_object()) return bad("an entry is not an object");
    KvPair pair;
    std::optional<std::string> key, session;
    std::uint64_t fence = 0;
    bool ok = GetString(item, "Key", &key) && GetString(item, "Session", &session) &&
              GetString(item, "Value", &pair.value_base64) &&
              GetUint(item, "CreateIndex", &pair.create_index) &&
              GetUint(item, "ModifyIndex", &pair.modify_index) &&
              GetUint(item, "LockIndex", &pair.lock_index) && GetUint(item, "Flags", &pair.flags) &&
              GetUint(item, "Fence", &fence);
    if (!ok || !key) return bad("an entry has a missing or mistyped field");
    pair.key = std::move(*key);
    pair.session = session.value_or("");
    if (item.contains("Fence") && item["Fence"].is_number_unsigned()) pair.fence = fence;
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

nlohmann::ordered_json KvPairToJson(const KvPair& pair) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["Key"] = pair.key;
  out["CreateIndex"] = pair.create_index;
  out["ModifyIndex"] = pair.modify_index;
  out["LockIndex"] = pair.lock_index;
  out["Flags"] = pair.flags;
  out["Value"] = pair.value_base64 ? nlohmann::ordered_json(*pair.value_base64) : nullptr;
  out["Session"] = pair.session;
  if (pair.fence) out["Fence"] = *pair.fence;
  return out;
}

std::string DetailedKvPair(const KvPair& pair, bool base64_value) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"CreateIndex", std::to_string(pair.create_index)},
      {"Flags", std::to_string(pair.flags)},
      {"Key", pair.key},
      {"LockIndex", std::to_string(pair.lock_index)},
      {"ModifyIndex", std::to_string(pair.modify_index)},
      {"Session", pair.session.empty() ? "-" : pair.session},
  };
  if (pair.fence) rows.emplace_back("Fence", std::to_string(*pair.fence));
  rows.emplace_back("Value", base64_value ? pair.value_base64.value_or("") : pair.Value());
  std::size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  std::string out;
  for (const auto& [name, value] : rows) {
    if (!out.empty()) out += '\n';
    out += name;
    out.append(width + 6 - name.size(), ' ');  // tabwriter padding 6
    out += value;
  }
  return out;
}

}  // namespace tenure::cli
