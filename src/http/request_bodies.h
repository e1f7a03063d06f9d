// Decoders of the JSON bodies clients send (session create, txn) and of
// session ids in paths: Consul's rules and error texts, no I/O, no Store.
// Pure; the handlers call them and the fuzz targets feed them anything.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "state/txn.h"
#include "state/types.h"

namespace tenure::http {

// PUT /v1/session/create: the session the body asks for (defaults from
// Consul: lock-delay 15 s, the serfHealth check, Node = node_name when the
// body names none). Errors are Consul's 400/500 texts.
Result<state::Session> ParseSessionCreate(const std::string& body, const std::string& node_name);

// PUT /v1/txn: the operations, in order.
struct ParsedTxn {
  std::vector<state::TxnOp> ops;
  std::vector<state::TxnError> errors;  // unknown verbs: reported like Consul, as a rollback
  bool writes = false;
};
Result<ParsedTxn> ParseTxn(const std::string& body);

// The session id in a path: present (Consul's `Missing session`) and shaped
// like a UUID (go-memdb's UUIDFieldIndex texts).
Status CheckSessionId(std::string_view id);
// The same check, and the id as the state knows it when it passes.
Result<state::SessionId> ParseSessionId(std::string_view id);

}  // namespace tenure::http
