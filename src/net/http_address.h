// Where an HTTP agent listens, as users write it. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tenure::net {

inline constexpr std::uint16_t kDefaultHttpPort = 8500;
inline constexpr std::uint16_t kDefaultHttpsPort = 8501;  // Consul's

struct HttpAddress {
  std::string host;  // without the brackets of an IPv6 literal
  std::uint16_t port = kDefaultHttpPort;
  bool tls = false;              // https
  std::string ToString() const;  // "host:port" ("[::1]:8500"), as in Host:
  // How messages name the agent: "host:port", or "https://host:port" over TLS.
  std::string Describe() const;
};

// Accepts "host:port", "host", "http://host:port[/]", "https://host:port[/]",
// "[::1]:8500" and a bare "::1"; unix:// is refused. An address without a
// scheme is https when `tls_by_default` ($CONSUL_HTTP_SSL). Without a port:
// 8500, or 8501 for https. The host and port are checked by the one
// host:port parser (common/host_port.h).
Result<HttpAddress> ParseHttpAddress(std::string_view address, bool tls_by_default = false);

}  // namespace tenure::net
