// Checks of `tenure server`'s settings taken together, for ResolveAgentConfig
// (agent/config.h): what each setting's own check cannot see. Pure, but for
// the name resolution of listen hosts that share a port.
#pragma once

#include <string>
#include <vector>

#include "agent/config.h"
#include "common/host_port.h"
#include "common/status.h"

namespace tenure::agent {

// No string setting holds a NUL byte: the system would read a path or an
// address cut short there (a config file's "\u0000" can carry one; a
// command-line flag cannot). kInvalidArgument naming the flag.
Status CheckNoNulBytes(const AgentConfig& config);

// One socket the server listens on: its flag ("http-addr"), as written and parsed.
struct Listener {
  std::string flag;
  std::string text;
  HostPort address;
};
// No two listeners take the same port of the same address: equal addresses,
// or a wildcard (0.0.0.0, or :: which takes IPv4 too) and any address of its
// family, on the same port (port 0, "pick one", never collides). A host name
// is resolved to its first address, as the listeners do. kInvalidArgument
// naming both flags.
Status CheckListenersApart(const std::vector<Listener>& listeners);

}  // namespace tenure::agent
