// Standard base64 with padding (RFC 4648 section 4), as Go's
// encoding/base64.StdEncoding, which Consul uses for KV values. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tenure {

std::string Base64Encode(std::string_view bytes);
// nullopt on any character outside the alphabet, bad padding or bad length.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace tenure
