// Where an HTTP agent listens, as users write it. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tenure::net {

inline constexpr std::uint16_t kDefaultHttpPort = 8500;

struct HttpAddress {
  std::string host;  // without the brackets of an IPv6 literal
  std::uint16_t port = kDefaultHttpPort;
  std::string ToString() const;  // "host:port" ("[::1]:8500"), as in messages and Host:
};

// Accepts "host:port", "host" (port 8500), "http://host:port[/]", "[::1]:8500"
// and a bare "::1"; https:// (until TLS) and unix:// are refused. The host and
// port are checked by the one host:port parser (common/host_port.h).
Result<HttpAddress> ParseHttpAddress(std::string_view address);

}  // namespace tenure::net
