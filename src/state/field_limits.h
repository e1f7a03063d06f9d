// The live API's limits (common/limits.h) on every field that enters the
// state, checked where a field enters: Store::Apply refuses a command that
// breaks one (a leader never proposes it, since the HTTP layer refuses it
// first; only a forged or damaged entry can), and Store::Validate refuses a
// decoded state that breaks one (a restore file, an InstallSnapshot, a data
// dir's snapshot). So no path puts into the state what a client could not,
// and a state that passed once passes again after any apply: a node can
// always snapshot and restart (docs/snapshots.md, "What a restore accepts").
// Each check answers kInvalidArgument naming the field and its value:
//   session "0f…": TTL 9223372036854775807 ns is outside [10s, 24h]
// Pure.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"
#include "state/command.h"
#include "state/types.h"

namespace tenure::state {

// `text` quoted as Go quotes it, cut to its first 64 bytes ("…" after).
std::string QuoteCut(std::string_view text);

// A key of at most limits::kKvKeyBytesMax bytes. `what` names it in the
// message ("key", "tombstone", "lock-delay window of key").
Status CheckKeySize(std::string_view what, std::string_view key);
// A value of at most limits::kKvValueBytesMax bytes, of `key`.
Status CheckValueSize(std::string_view key, std::string_view value);
// A wall-clock time in [0, limits::kUnixMsMax] (years 1970 to 9999).
Status CheckUnixMs(std::string_view what, UnixMs time);
bool IsUnixMsInRange(UnixMs time);
// The replicated clock in the same range: it counts milliseconds of
// leadership from zero (or from a wall time, for logs written before
// decision 0037), so no cluster reaches year 9999's bound.
Status CheckClusterMs(std::string_view what, ClusterMs time);
bool IsClusterMsInRange(ClusterMs time);
// A session as POST /v1/session/create can make one: a non-empty id,
// Name and Node within kSessionNameBytesMax, a TTL of 0 (none) or in
// [kSessionTtlMinNs, kSessionTtlMaxNs] whose text says the same duration,
// at most kSessionChecksMax checks in each list, each id within
// kSessionNameBytesMax. LockDelay may be any value, as the live API stores
// any (it applies at most kLockDelayMaxNs, and nothing below 0).
Status CheckSessionFields(const Session& session);
// The fields of a command that the live API bounds (keys, values, a new
// session). Commands that carry none pass.
Status CheckCommandFields(const CommandBody& body);

}  // namespace tenure::state
