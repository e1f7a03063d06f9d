#include "agent/config_checks.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "agent/config_keys.h"

namespace tenure::agent {
namespace {

struct Ip {
  int family = 0;
  std::array<unsigned char, 16> bytes{};
  bool any() const {
    const std::size_t n = family == AF_INET ? 4 : 16;
    return std::all_of(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n),
                       [](unsigned char b) { return b == 0; });
  }
};

// The address a listener binds for `host`: the literal, or the first
// address the resolver gives (asio's resolver, as listen/server.cc and
// raft/transport.cc use it, asks getaddrinfo with AI_ADDRCONFIG).
std::optional<Ip> AddressOf(const std::string& host) {
  Ip ip;
  if (::inet_pton(AF_INET, host.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET;
    return ip;
  }
  if (::inet_pton(AF_INET6, host.c_str(), ip.bytes.data()) == 1) {
    ip.family = AF_INET6;
    return ip;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return std::nullopt;  // the listener reports it when it starts
  }
  if (found->ai_family == AF_INET) {
    ip.family = AF_INET;
    const auto* in = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
    std::memcpy(ip.bytes.data(), &in->sin_addr, 4);
  } else if (found->ai_family == AF_INET6) {
    ip.family = AF_INET6;
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(found->ai_addr);
    std::memcpy(ip.bytes.data(), &in6->sin6_addr, 16);
  }
  ::freeaddrinfo(found);
  if (ip.family == 0) return std::nullopt;
  return ip;
}

// Linux refuses the second bind: the same address, a wildcard of the same
// family, or :: (dual-stack, as the listeners open it) and anything.
bool Overlap(const Ip& a, const Ip& b) {
  if (a.family == b.family) return a.any() || b.any() || a.bytes == b.bytes;
  const Ip& v6 = a.family == AF_INET6 ? a : b;
  return v6.any();
}

}  // namespace

Status CheckNoNulBytes(const AgentConfig& config) {
  for (const Setting& setting : ServerSettings()) {
    const auto* field = std::get_if<std::string AgentConfig::*>(&setting.field);
    if (field == nullptr) continue;
    const std::string& value = config.*(*field);
    if (const std::size_t at = value.find('\0'); at != std::string::npos) {
      return Status::InvalidArgument("-" + std::string(setting.flag) +
                                     ": contains a NUL byte (at byte " + std::to_string(at) +
                                     "), which no path, address or name may hold");
    }
  }
  return Status::Ok();
}

Status CheckListenersApart(const std::vector<Listener>& listeners) {
  for (std::size_t i = 0; i < listeners.size(); ++i) {
    for (std::size_t j = i + 1; j < listeners.size(); ++j) {
      const Listener& a = listeners[i];
      const Listener& b = listeners[j];
      if (a.address.port == 0 || a.address.port != b.address.port) continue;
      const std::optional<Ip> ip_a = AddressOf(a.address.host);
      const std::optional<Ip> ip_b = AddressOf(b.address.host);
      if (!ip_a || !ip_b || !Overlap(*ip_a, *ip_b)) continue;
      return Status::InvalidArgument("-" + a.flag + " " + a.text + " and -" + b.flag + " " +
                                     b.text + " would both listen on port " +
                                     std::to_string(a.address.port) +
                                     " of the same address; give each its own port");
    }
  }
  return Status::Ok();
}

}  // namespace tenure::agent
