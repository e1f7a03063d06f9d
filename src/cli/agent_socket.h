// The candidate agent's local socket (`tenure elect` serves it; is-leader,
// leader-set and resign ask it): where it lives and the client side of its
// protocol. One request per connection: a JSON object on one line, answered
// by a JSON object on one line, e.g.
//   {"Op":"status","Election":"job"}
//   {"Ok":true,"Leader":true,"FencingToken":12,...}
//   {"Ok":false,"Error":"not the leader: ..."}
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "common/types.h"

namespace tenure::cli {

// Longest request the agent reads (a leader-set of many settings).
constexpr std::size_t kAgentMaxRequestBytes = 1 << 20;

// The default socket of election `name`: $XDG_RUNTIME_DIR/tenure/NAME.sock,
// or /tmp/tenure-UID/NAME.sock without XDG_RUNTIME_DIR.
std::string DefaultAgentSocket(const std::string& name);

// For clients: the -socket flag, else $TENURE_SOCKET (set in hooks), else
// the default.
std::string ResolveAgentSocket(const std::string& flag, const std::string& name);

// Sends one request and waits up to timeout_ms for the answer. Errors:
// kUnavailable (no agent at the path, or it closed without answering),
// kTimeout (no answer in time), kInternal (an answer that is not JSON).
Result<nlohmann::json> AskAgent(const std::string& path, const nlohmann::json& request,
                                DurationMs timeout_ms);

}  // namespace tenure::cli
