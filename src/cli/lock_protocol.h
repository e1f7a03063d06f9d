// The pure part of `tenure lock` (docs/cli.md, "tenure lock"): the key names,
// flag values and the semaphore's `.lock` document as Consul's api.Lock and
// api.Semaphore use them (docs/consul-api.md 7.2, 7.3), so that `tenure lock`
// and `consul lock` contend on one prefix. No I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/kv_pair.h"
#include "common/status.h"

namespace tenure::cli {

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
void PruneHolders(const std::vector<client::KvPair>& pairs, SemaphoreLock* lock);

// The child's argv: with `shell`, {$SHELL or /bin/sh, "-c", args joined by
// spaces} (consul lock's -shell); without, the arguments as given.
std::vector<std::string> ChildArgv(const std::vector<std::string>& args, bool shell,
                                   const char* shell_env);

// consul lock's default session name: Consul lock for '<args>' at '<prefix>',
// cut to `max_bytes` (the server's limit on a session's Name).
std::string DefaultSessionName(const std::vector<std::string>& args, std::string_view prefix,
                               std::size_t max_bytes);

}  // namespace tenure::cli
