// The keys, flag values and the semaphore's `.lock` document as Consul's
// api.Lock and api.Semaphore use them (docs/consul-api.md 7.2, 7.3), so that
// client::ConsulLock (`tenure lock`) and `consul lock` contend on one prefix;
// and what the lock reads from a KV answer. No I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/kv_pair.h"
#include "common/status.h"
#include "net/http_client.h"

namespace tenure::client {

// Consul's LockFlagValue and SemaphoreFlagValue (both above 2^53).
constexpr std::uint64_t kLockFlagValue = 0x2ddccbc058a50c18ULL;
constexpr std::uint64_t kSemaphoreFlagValue = 0xe0f69a2baa414de0ULL;

// Consul's error texts for a key used the other way.
constexpr char kLockConflict[] = "Existing key does not match lock use";
constexpr char kSemaphoreConflict[] = "Existing key does not match semaphore use";

// "<prefix>/.lock": the lock's key (-n 1) and the semaphore's coordination
// key (-n N) alike, on purpose. `prefix` without leading or trailing '/'.
std::string LockKeyOf(std::string_view prefix);
// The prefix as consul lock takes it: leading and trailing '/' removed.
std::string CleanPrefix(std::string_view prefix);

// The semaphore's `.lock` value: {"Limit":N,"Holders":{"<session>":true}}.
struct SemaphoreLock {
  int limit = 0;
  std::map<std::string, bool> holders;  // sorted, as Go marshals a map
};

// Decodes a `.lock` value; an empty value is an empty lock (Limit 0).
// Errors: kCorruption "lock decoding failed: ..." (Consul's text).
Result<SemaphoreLock> DecodeSemaphoreLock(std::string_view value);
// Go's json.Marshal of it (compact, keys sorted).
std::string EncodeSemaphoreLock(const SemaphoreLock& lock);
// Drops the holders that no pair under the prefix names as its Session
// (their contender key is gone or unlocked), as api.Semaphore does.
void PruneHolders(const std::vector<KvPair>& pairs, SemaphoreLock* lock);

// A KV read's pairs (404: none) and the index to wait on next, by the rule
// of client/blocking_read.h (`waited`: the index the read waited on).
struct PairsRead {
  std::vector<KvPair> pairs;
  std::uint64_t next_index = 0;
};
// Errors name `what`, in api.Lock's words ("failed to read lock: ..."): a
// failed request, a status other than 200 and 404, a bad body or index.
Result<PairsRead> ReadPairs(const Result<net::ClientResponse>& result, std::uint64_t waited,
                            const std::string& what);
// The pair of `key` among `pairs`, or nullptr.
const KvPair* FindPair(const std::vector<KvPair>& pairs, const std::string& key);

}  // namespace tenure::client
