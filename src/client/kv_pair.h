// KvPair: a KV entry as a client sees it, decoded from the server's JSON
// answer to GET /v1/kv (Consul's DirEntry, plus tenure's Fence). The one
// client-side decoder of that answer: libtenure's elections and the CLI's kv,
// leader and watch commands all use it. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tenure::client {

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

// Decodes a GET /v1/kv response body (a JSON array of DirEntry). Absent or
// null fields decode as zero or empty, as Go's decoder does; a mistyped one,
// or an entry without a Key, is kCorruption naming the problem.
Result<std::vector<KvPair>> ParseKvPairs(std::string_view body);

}  // namespace tenure::client
