// Go time.Duration syntax, as Consul parses it (TTL, LockDelay, ?wait=):
// a sequence of decimal numbers, each with an optional fraction and a unit
// (ns, us, µs, ms, s, m, h), optional leading sign, e.g. "15s", "15.0s",
// "1h30m", "0.001s". A bare "0" is allowed; any other number without a unit
// is an error. Pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"

namespace tenure {

// Errors carry Go's texts: `time: invalid duration "x"`,
// `time: missing unit in duration "15"`, `time: unknown unit "x" in duration "15x"`.
Result<DurationNs> ParseGoDuration(std::string_view text);

// Go's Duration.String(): "15s", "1m30s", "1.5s", "0s".
std::string FormatGoDuration(DurationNs ns);

}  // namespace tenure
