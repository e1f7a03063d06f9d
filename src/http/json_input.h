// Reading request bodies parsed by nlohmann-json the way Go's encoding/json
// reads them into Consul's structs. Loop thread only.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/strings.h"

namespace tenure::http {

// The value of `name` in a JSON object, matched case-insensitively as Go
// does (python-consul and Patroni send "ttl", "lockdelay", ...); nullptr if
// absent.
inline const nlohmann::json* Field(const nlohmann::json& object, std::string_view name) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (EqualsIgnoreCase(it.key(), name)) return &it.value();
  }
  return nullptr;
}

}  // namespace tenure::http
