#include "net/http_address.h"

#include <algorithm>

#include "common/host_port.h"
#include "common/strings.h"

namespace tenure::net {
std::string HttpAddress::ToString() const { return FormatHostPort(HostPort{host, port}); }

std::string HttpAddress::Describe() const { return (tls ? "https://" : "") + ToString(); }

Result<HttpAddress> ParseHttpAddress(std::string_view address, bool tls_by_default) {
  const std::string original(address);
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("http address " + GoQuote(original) + ": " + std::string(why));
  };
  bool tls = tls_by_default;
  if (std::size_t scheme = address.find("://"); scheme != std::string_view::npos) {
    std::string name = AsciiLower(address.substr(0, scheme));
    if (name != "http" && name != "https") {
      return bad("scheme " + GoQuote(name) + " is not supported (use http:// or https://)");
    }
    tls = name == "https";
    address.remove_prefix(scheme + 3);
  }
  if (std::size_t slash = address.find('/'); slash != std::string_view::npos) {
    if (address.substr(slash) != "/") return bad("a path is not allowed");
    address = address.substr(0, slash);
  }
  if (address.empty()) return bad("missing host");
  // Without a port: "host", "[::1]" or a bare IPv6 literal take the scheme's.
  const std::uint16_t default_port = tls ? kDefaultHttpsPort : kDefaultHttpPort;
  std::string with_port(address);
  const bool bracketed = address.front() == '[';
  const std::size_t colons =
      static_cast<std::size_t>(std::count(address.begin(), address.end(), ':'));
  if (bracketed ? address.back() == ']' : colons != 1) {
    with_port = (bracketed || colons == 0 ? with_port : "[" + with_port + "]") + ":" +
                std::to_string(default_port);
  }
  Result<HostPort> parsed = ParseHostPort(with_port);
  if (!parsed.ok()) return bad(parsed.status().message());
  return HttpAddress{std::move(parsed->host), parsed->port, tls};
}

}  // namespace tenure::net
