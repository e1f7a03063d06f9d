// host:port parsing, one way everywhere. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tenure {

struct HostPort {
  std::string host;  // without the brackets of an IPv6 literal
  std::uint16_t port = 0;
};

// "127.0.0.1:8300", "node1.example:8300", "[::1]:8300". The port is 1-65535
// (0 only when allow_zero_port: "pick one", for listeners in tests).
// kInvalidArgument naming the text otherwise.
Result<HostPort> ParseHostPort(std::string_view address, bool allow_zero_port = false);

// The inverse: brackets an IPv6 host.
std::string FormatHostPort(const HostPort& host_port);

}  // namespace tenure
