#include "cli/kv_pair.h"

#include <algorithm>
#include <utility>

#include "cli/client_support.h"
#include "common/base64.h"

namespace tenure::cli {

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
