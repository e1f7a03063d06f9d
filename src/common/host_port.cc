#include "common/host_port.h"

namespace tenure {

Result<HostPort> ParseHostPort(std::string_view address, bool allow_zero_port) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("expected host:port, got \"" + std::string(address) + "\" (" +
                                   std::string(why) + ")");
  };
  std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = address.substr(0, colon);
  std::string_view port_text = address.substr(colon + 1);
  const bool bracketed = !host.empty() && host.front() == '[';
  if (bracketed) {
    if (host.size() < 3 || host.back() != ']') return bad("unbalanced brackets");
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string_view::npos) return bad("brackets around a name");
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address needs brackets");
  }
  if (host.empty()) return bad("no host");
  // A DNS name, an IPv4 address, or inside brackets an IPv6 one (with a
  // %zone): nothing that would change the meaning of a URL built from it.
  for (char c : host) {
    const bool name_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
    if (!name_char && !(bracketed && (c == ':' || c == '%'))) return bad("bad host");
  }
  if (port_text.empty() || port_text.size() > 5) return bad("bad port");
  unsigned port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9') return bad("bad port");
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port > 65535 || (port == 0 && !allow_zero_port)) return bad("port out of range");
  return HostPort{std::string(host), static_cast<std::uint16_t>(port)};
}

std::string FormatHostPort(const HostPort& host_port) {
  if (host_port.host.find(':') != std::string::npos) {
    return "[" + host_port.host + "]:" + std::to_string(host_port.port);
  }
  return host_port.host + ":" + std::to_string(host_port.port);
}

}  // namespace tenure
