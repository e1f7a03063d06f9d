// ZooKeeper sessions' passwords and timeouts (decision 0056 section 3).
// A password is derived from the session's id and the replicated secret
// (state::ZkSecret), so any server checks a reconnect without storing one
// per session, and nobody derives it from the id alone (ZooKeeper's own is
// java.util.Random seeded with the id and a constant). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenure::zk {

// The 16 bytes a ConnectResponse carries: the first 16 of
// HMAC-SHA-256(secret, the id's 8 bytes, big-endian).
// REQUIRES: !secret.empty().
std::string SessionPassword(std::string_view secret, std::int64_t session_id);

// Whether `password` is `session_id`'s, compared in constant time. False
// for a password of another length, and with no secret.
bool PasswordMatches(std::string_view secret, std::int64_t session_id, std::string_view password);

// The timeout a ConnectResponse grants: the requested one clamped to
// [min_ms, max_ms], as ZooKeeper clamps it (its defaults with tickTime 2000:
// 4,000 and 40,000 ms). REQUIRES: min_ms <= max_ms.
std::int32_t NegotiatedTimeoutMs(std::int32_t requested_ms, std::int32_t min_ms,
                                 std::int32_t max_ms);

}  // namespace tenure::zk
