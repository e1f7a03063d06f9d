// ZooKeeper's client port in `tenure server`'s settings (decision 0056):
// -zk-addr, -dev's default 127.0.0.1:2181, and the session timeout bounds.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/config_checks.h"
#include "common/status.h"
#include "tls/context.h"
#include "zk/client_port_options.h"

namespace tenure::agent {

// The ports to open, if any: where -zk-addr says ("off" or "": none), or
// -dev's 127.0.0.1:2181 unless the HTTP listener is off; and -zk-tls-addr,
// which needs `tls_context` (the -tls-* files' server context). The bounds must
// be durations from 2s (a numbered session's shortest TTL) to 24h, the
// minimum not above the maximum. Its listener is added to `listeners` and
// checked apart from them; -dev's default gives way to a flag that took
// its port (*dev_skipped says so).
Result<std::optional<zk::ClientPortOptions>> PlanZooKeeperPort(
    const AgentConfig& config, bool http_off, std::shared_ptr<const tls::Context> tls_context,
    std::vector<Listener>* listeners, std::string* dev_skipped);

}  // namespace tenure::agent
