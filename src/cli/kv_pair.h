// KvPair: a KV entry as the CLI sees it, decoded from the server's DirEntry
// JSON and re-encoded the way Consul's CLI prints api.KVPair (field order
// Key, CreateIndex, ModifyIndex, LockIndex, Flags, Value, Session, plus
// tenure's Fence when the key is locked). Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tenure::cli {

struct KvPair {
  std::string key;
  std::uint64_t create_index = 0;
  std::uint64_t modify_index = 0;
  std::uint64_t lock_index = 0;
  std::uint64_t flags = 0;
  std::optional<std::string> value_base64;  // nullopt: JSON null (empty value)
  std::string session;                      // "" when unlocked
  std::optional<std::uint64_t> fence;       // tenure: set while locked

  // The value bytes (empty for a null value or undecodable base64).
  std::string Value() const;
};

// Decodes a GET /v1/kv response body (a JSON array of DirEntry).
Result<std::vector<KvPair>> ParseKvPairs(std::string_view body);

nlohmann::ordered_json KvPairToJson(const KvPair& pair);

// `consul kv get -detailed`: one "Name<pad>value" line per field, aligned
// like Go's tabwriter (padding 6), no trailing newline.
std::string DetailedKvPair(const KvPair& pair, bool base64_value);

}  // namespace tenure::cli
