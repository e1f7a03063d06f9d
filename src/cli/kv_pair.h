// KvPair (client/kv_pair.h), re-encoded the way Consul's CLI prints api.KVPair (field order
// Key, CreateIndex, ModifyIndex, LockIndex, Flags, Value, Session, plus
// tenure's Fence when the key is locked). Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/kv_pair.h"
#include "common/status.h"

namespace tenure::cli {

// The one decoder lives in libtenure (client/kv_pair.h).
using client::KvPair;
using client::ParseKvPairs;

nlohmann::ordered_json KvPairToJson(const KvPair& pair);

// `consul kv get -detailed`: one "Name<pad>value" line per field, aligned
// like Go's tabwriter (padding 6), no trailing newline.
std::string DetailedKvPair(const KvPair& pair, bool base64_value);

}  // namespace tenure::cli
