#include "client/kv_pair.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "common/base64.h"

namespace tenure::client {
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
  auto parsed = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_array()) return bad("not a JSON array");
  std::vector<KvPair> pairs;
  for (const auto& item : parsed) {
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

}  // namespace tenure::client
