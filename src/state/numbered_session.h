// Sessions named by a number (decision 0048, section 3): an etcd lease is a
// tenure session whose id is the lease's int64 as a UUID with a zero upper
// half, "00000000-0000-0000-HHHH-HHHHHHHHHHHH" (16 lowercase hex digits,
// two's complement). The leader's own ids are version-4 UUIDs, whose third
// group starts with '4', so the shape alone tells the two apart. Numbered
// sessions end at their TTL (SessionTimers), not at TTL x the multiplier.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "state/types.h"

namespace tenure::state {

// The names the etcd and ZooKeeper ports give the sessions they make (the
// Consul API shows them): each stored once for all of them (ShortText).
inline constexpr std::string_view kEtcdLeaseSessionName = "etcd lease";
inline constexpr std::string_view kZkSessionName = "zookeeper";

// True when `id` has the numbered shape (36 characters, lowercase hex).
bool IsNumberedSession(std::string_view id);
inline bool IsNumberedSession(const SessionId& id) { return IsNumberedSession(id.view()); }
// The session id of lease `number` (any int64; 0 included, which etcd's
// clients never name since it asks the server to choose).
SessionId NumberedSessionId(std::int64_t number);
// The number of a numbered id; nullopt for any other id.
std::optional<std::int64_t> SessionNumber(std::string_view id);

}  // namespace tenure::state
