// When an acquire is refused before anything else happens, in which order,
// and with which of Consul's texts. One rule for the two places that apply
// it: the Store at apply time (lock-delay windows it holds, sessions it
// knows) and the leader's early refusal before proposing (server/
// leader_duties: windows it inherited, sessions whose expiry is under way).
// Each passes its own predicates; the order and the texts live only here.
// Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/consul_texts.h"
#include "common/status.h"
#include "state/command.h"
#include "state/txn.h"

namespace tenure::state {

// A single acquire (PUT ?acquire): lock-delay first (Consul checks it before
// even the session), then the session. nullopt: no refusal here.
struct AcquireRefusal {
  bool lock_delayed = false;  // ok=false, no error: Consul's plain `false`
  Status error;               // the session's error, HTTP 500
};
template <typename LockDelayed, typename SessionInvalid>
std::optional<AcquireRefusal> RefuseAcquire(std::string_view key, const SessionId& session,
                                            LockDelayed&& lock_delayed,
                                            SessionInvalid&& session_invalid) {
  if (lock_delayed(key)) return AcquireRefusal{true, Status()};
  if (session.empty()) return AcquireRefusal{false, consul::AcquireMissingSession()};
  if (session_invalid(session))
    return AcquireRefusal{false, consul::AcquireInvalidSession(session.view())};
  return std::nullopt;
}

// The lock ops of a txn, before any op runs: every lock-delayed op is named,
// and any such op rejects the whole txn (Consul's pre-apply). The session of
// each lock op is the business of the op itself, in order (RefuseAcquire's
// session half, applied per op).
template <typename LockDelayed>
void RefuseLockDelayedTxnOps(const Txn& txn, LockDelayed&& lock_delayed, TxnOutcome* out) {
  for (std::size_t i = 0; i < txn.ops.size(); ++i) {
    const TxnOp& op = txn.ops[i];
    if (op.verb == TxnVerb::kLock && lock_delayed(op.key)) {
      out->errors.push_back({i, consul::TxnLockDelayed(op.key)});
    }
  }
}

}  // namespace tenure::state
