// Blocking reads (Consul's blocking queries, docs/consul-api.md §3) as every
// client of tenure sends them: libtenure's elections, `tenure lock`, `tenure
// watch`, `tenure leader -watch`. One target shape, one client timeout, and
// ONE rule for the next index, Consul's documented one (decision 0044):
//
//   X-Consul-Index absent          -> 0 (as Consul's Go api: no index seen)
//   not a decimal uint64           -> error kCorruption "bad X-Consul-Index <text>"
//     (a sign, a space, garbage, or past 18446744073709551615)
//   less than the index waited on  -> 0: the index went backwards (a restored
//     or replaced server); start again with an immediate read
//   otherwise                      -> the index, but at least 1, so the next
//     read blocks even when a server wrongly answered 0
//
// No I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/limits.h"
#include "common/status.h"
#include "net/http_client.h"

namespace tenure::client {

inline constexpr char kIndexHeader[] = "X-Consul-Index";

// Client timeout for a blocking GET that sends no ?wait= (the server's
// default, at most its maximum plus jitter): past this, the server is gone.
constexpr std::int64_t kBlockingReadTimeoutMs =
    limits::kBlockingWaitMaxMs + limits::kBlockingWaitMaxMs / limits::kBlockingJitterFraction +
    30'000;

// The value of an X-Consul-Index header: empty is 0. Errors: kCorruption
// "bad X-Consul-Index <text>" for anything but a decimal uint64.
Result<std::uint64_t> ParseIndexHeader(std::string_view text);

// The index to wait on next after an answer carrying `returned`, to a read
// that waited on `waited` (0: an immediate read): 0 when `returned` went
// backwards, else max(returned, 1).
std::uint64_t NextWaitIndex(std::uint64_t returned, std::uint64_t waited);

// Both steps on an answer's header.
Result<std::uint64_t> NextWaitIndex(const net::ClientResponse& response, std::uint64_t waited);

// One blocking GET: the target and the client's timeout for it.
struct BlockingGet {
  std::string target;
  std::int64_t timeout_ms = 0;
};

// GET `target` (a path, with its query if any) blocking past `index` when
// it is > 0: "index=N" is appended, and "wait=<wait_ms>ms" when wait_ms > 0.
// The timeout covers the wait, the server's jitter (< wait/16) and 5 s of
// slack; an immediate read (index 0) with a wait gets 0, the client's
// default. With wait_ms 0 (the server's default wait) it is always
// kBlockingReadTimeoutMs.
BlockingGet BlockingRead(std::string target, std::uint64_t index, std::int64_t wait_ms);

}  // namespace tenure::client
