#include "agent/config_zk.h"

#include <cstdlib>
#include <utility>

#include "common/duration.h"
#include "common/host_port.h"

namespace tenure::agent {
namespace {

constexpr DurationNs kMsNs = 1'000'000;

Result<std::int32_t> TimeoutBound(const std::string& text, std::string_view flag) {
  Result<DurationNs> ns = ParseGoDuration(text);
  if (!ns.ok() || *ns < 2'000 * kMsNs || *ns > 24LL * 3600 * 1000 * kMsNs || *ns % kMsNs != 0) {
    return Status::InvalidArgument(
        "-" + std::string(flag) + " must be a whole number of milliseconds from 2s to 24h, got \"" +
        text + "\"");
  }
  return static_cast<std::int32_t>(*ns / kMsNs);
}

}  // namespace

Result<std::optional<zk::ClientPortOptions>> PlanZooKeeperPort(
    const AgentConfig& config, bool http_off, std::shared_ptr<const tls::Context> tls_context,
    std::vector<Listener>* listeners, std::string* dev_skipped) {
  TENURE_ASSIGN_OR_RETURN(const std::int32_t min_ms,
                          TimeoutBound(config.zk_session_timeout_min, "zk-session-timeout-min"));
  TENURE_ASSIGN_OR_RETURN(const std::int32_t max_ms,
                          TimeoutBound(config.zk_session_timeout_max, "zk-session-timeout-max"));
  if (min_ms > max_ms) {
    return Status::InvalidArgument("-zk-session-timeout-min (" + config.zk_session_timeout_min +
                                   ") is above -zk-session-timeout-max (" +
                                   config.zk_session_timeout_max + ")");
  }
  const bool dev_default = config.dev && config.zk_addr.empty() && !http_off;
  const bool clear_text = dev_default || (!config.zk_addr.empty() && config.zk_addr != "off");
  const bool secure = !config.zk_tls_addr.empty();
  if (!clear_text && !secure) return std::optional<zk::ClientPortOptions>();
  zk::ClientPortOptions options;
  if (secure) {
    Result<HostPort> address = ParseHostPort(config.zk_tls_addr, /*allow_zero_port=*/true);
    if (!address.ok()) {
      return Status::InvalidArgument("-zk-tls-addr: " + std::string(address.status().message()));
    }
    if (tls_context == nullptr) {
      return Status::InvalidArgument("-zk-tls-addr needs -tls-cert-file and -tls-key-file");
    }
    listeners->push_back({"zk-tls-addr", config.zk_tls_addr, *address});
    TENURE_RETURN_IF_ERROR(CheckListenersApart(*listeners));
    options.tls = true;
    options.tls_host = address->host;
    options.tls_port = address->port;
    options.tls_context = std::move(tls_context);
  }
  options.clear_text = false;
  if (clear_text) {
    const std::string text = dev_default ? "127.0.0.1:2181" : config.zk_addr;
    Result<HostPort> address = ParseHostPort(text, /*allow_zero_port=*/true);
    if (!address.ok()) {
      return Status::InvalidArgument("-zk-addr: " + std::string(address.status().message()));
    }
    listeners->push_back({"zk-addr", text, *address});
    if (Status apart = CheckListenersApart(*listeners); !apart.ok()) {
      listeners->pop_back();
      if (!dev_default) return apart;
      *dev_skipped = "-dev's ZooKeeper address 127.0.0.1:2181 is taken by another of its flags";
      if (!secure) return std::optional<zk::ClientPortOptions>();
    } else {
      options.clear_text = true;
      options.host = address->host;
      options.port = address->port;
    }
  }
  options.session_timeout_min_ms = min_ms;
  options.session_timeout_max_ms = max_ms;
  // Tests see an empty container go, and a silent connection closed, in a
  // fraction of a second (test_zookeeper_port.py).
  for (const auto& [name, ms] :
       {std::pair{"TENURE_TEST_ZK_CONTAINER_SWEEP_MS", &options.container_sweep_ms},
        std::pair{"TENURE_TEST_ZK_HANDSHAKE_MS", &options.handshake_timeout_ms}}) {
    if (const char* text = std::getenv(name)) {
      const long long value = std::strtoll(text, nullptr, 10);
      if (value <= 0) return Status::InvalidArgument(std::string(name) + " must be positive");
      *ms = value;
    }
  }
  return std::optional<zk::ClientPortOptions>(std::move(options));
}

}  // namespace tenure::agent
