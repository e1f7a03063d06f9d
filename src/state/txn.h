// /v1/txn KV operations and their outcome (docs/consul-api.md section 4).
// Pure value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "state/types.h"

namespace tenure::state {

enum class TxnVerb : std::uint8_t {
  kSet = 0,
  kCas,
  kLock,
  kUnlock,
  kGet,
  kGetOrEmpty,
  kGetTree,
  kCheckIndex,
  kCheckSession,
  kCheckNotExists,
  kDelete,
  kDeleteTree,
  kDeleteCas,
  // tenure extension: passes only while `key` is locked and its fencing token
  // equals `index` (docs/fencing.md).
  kCheckFence,
};

// Consul's verb names ("set", "check-index", ...); nullopt for unknown ones.
std::optional<TxnVerb> ParseTxnVerb(std::string_view name);
std::string_view TxnVerbName(TxnVerb verb);
// True for verbs that change state and therefore go through raft.
bool IsWriteVerb(TxnVerb verb);

struct TxnOp {
  TxnVerb verb = TxnVerb::kGet;
  std::string key;
  std::string value;
  std::uint64_t flags = 0;
  LogIndex index;  // ModifyIndex for cas/check-index/delete-cas; token for check-fence
  SessionId session;
  bool operator==(const TxnOp&) const = default;
};

struct TxnError {
  std::size_t op_index = 0;
  std::string what;  // Consul's text, e.g. `failed to set key "k", index is stale`
  bool operator==(const TxnError&) const = default;
};

struct TxnResultEntry {
  KvEntry entry;
  bool with_value = false;  // only get, get-or-empty and get-tree report the value
  bool operator==(const TxnResultEntry&) const = default;
};

struct TxnOutcome {
  std::vector<TxnResultEntry> results;  // empty when errors is non-empty
  std::vector<TxnError> errors;         // non-empty means rolled back
  bool ok() const { return errors.empty(); }
};

}  // namespace tenure::state
