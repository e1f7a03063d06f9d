// RFC 3339 times as Go's encoding/json writes and reads time.Time (Consul's
// CreateTime and ExpirationTime): "2026-11-26T10:18:15.123Z". Pure.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "common/types.h"

namespace tenure {

// UTC, with the fraction's trailing zeros trimmed as Go's RFC3339Nano does
// ("...15Z", "...15.1Z", "...15.123Z").
std::string FormatRfc3339(UnixMs time);

// "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)", years 1970-9999; the
// fraction is cut to milliseconds. kInvalidArgument names what is wrong.
Result<UnixMs> ParseRfc3339(std::string_view text);

}  // namespace tenure
