#include "agent/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include "agent/config_checks.h"
#include "agent/config_zk.h"
#include "common/duration.h"
#include "common/limits.h"
#include "common/strings.h"
#include "raft/wire/cluster_key.h"

namespace tenure::agent {
namespace {

Status Bad(std::string_view flag, std::string_view why) {
  return Status::InvalidArgument("-" + std::string(flag) + ": " + std::string(why));
}

Result<HostPort> FlagHostPort(const std::string& text, std::string_view flag,
                              bool allow_zero_port = false) {
  Result<HostPort> parsed = ParseHostPort(text, allow_zero_port);
  if (!parsed.ok()) return Bad(flag, parsed.status().message());
  return parsed;
}

// A secret in a file: trimmed of surrounding whitespace, not empty, and not
// readable by group or others (as ssh insists for private keys).
Result<std::string> ReadSecretFile(const std::string& path, std::string_view flag) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::InvalidArgument("-" + std::string(flag) + " " + path + ": " +
                                   std::strerror(errno));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return Status::InvalidArgument("-" + std::string(flag) + " " + path +
                                   ": readable by group or others (chmod 600 it)");
  }
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return Status::InvalidArgument("-" + std::string(flag) + " " + path + ": cannot read it");
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  std::size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  text.erase(0, start);
  if (text.size() < 16 || text.find_first_of(" \t\r\n") != std::string::npos) {
    return Status::InvalidArgument("-" + std::string(flag) + " " + path +
                                   ": the token must be one word of at least 16 characters");
  }
  return text;
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "tenure";
  return name;
}

Result<server::AclConfig> ResolveAclConfig(const AgentConfig& config) {
  server::AclConfig acl;
  acl.enabled = config.acl_enabled;
  if (config.acl_default_policy == "allow") {
    acl.default_policy = acl::DefaultPolicy::kAllow;
  } else if (config.acl_default_policy == "deny") {
    acl.default_policy = acl::DefaultPolicy::kDeny;
  } else {
    return Bad("acl-default-policy",
               "must be allow or deny, got \"" + config.acl_default_policy + "\"");
  }
  acl.enable_key_list_policy = config.acl_enable_key_list_policy;
  if (!config.acl_initial_management.empty() && !config.acl_initial_management_file.empty()) {
    return Status::InvalidArgument(
        "-acl-initial-management and -acl-initial-management-file exclude each other");
  }
  if (!config.acl_initial_management_file.empty()) {
    TENURE_ASSIGN_OR_RETURN(
        acl.initial_management,
        ReadSecretFile(config.acl_initial_management_file, "acl-initial-management-file"));
  } else {
    acl.initial_management = config.acl_initial_management;
    if (!acl.initial_management.empty() &&
        (acl.initial_management.size() < 16 || acl.initial_management.size() > 128 ||
         acl.initial_management.find_first_of(" \t\r\n") != std::string::npos)) {
      return Bad("acl-initial-management",
                 "the secret must be one word of 16 to 128 characters (a UUID, as "
                 "`uuidgen` prints)");
    }
  }
  if (acl.initial_management == "anonymous") {
    return Bad("acl-initial-management", "\"anonymous\" is the anonymous token's secret");
  }
  if (!acl.enabled && !acl.initial_management.empty()) {
    return Status::InvalidArgument("-acl-initial-management needs -acl-enabled");
  }
  auto ttl = [](const std::string& text, std::string_view flag) -> Result<DurationNs> {
    Result<DurationNs> ns = ParseGoDuration(text);
    if (!ns.ok() || *ns < kNsPerSecond || *ns > 10LL * 365 * 24 * 3600 * kNsPerSecond) {
      return Bad(flag, "must be a duration from 1s to 87600h, got \"" + text + "\"");
    }
    return ns;
  };
  TENURE_ASSIGN_OR_RETURN(acl.token_min_expiration_ttl_ns,
                          ttl(config.acl_token_min_expiration_ttl, "acl-token-min-expiration-ttl"));
  TENURE_ASSIGN_OR_RETURN(acl.token_max_expiration_ttl_ns,
                          ttl(config.acl_token_max_expiration_ttl, "acl-token-max-expiration-ttl"));
  if (acl.token_min_expiration_ttl_ns > acl.token_max_expiration_ttl_ns) {
    return Status::InvalidArgument(
        "-acl-token-min-expiration-ttl must not be above -acl-token-max-expiration-ttl");
  }
  return acl;
}

}  // namespace

Result<std::vector<raft::Peer>> ParseBootstrapPeers(const std::string& list, std::uint64_t self_id,
                                                    const std::string& self_address) {
  std::vector<raft::Peer> peers;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    const std::size_t at = item.find('@');
    std::uint64_t id = 0;
    bool ok = at != std::string::npos && at > 0 && at <= 19;
    for (std::size_t i = 0; ok && i < at; ++i) {
      ok = item[i] >= '0' && item[i] <= '9';
      id = id * 10 + static_cast<std::uint64_t>(item[i] - '0');
    }
    if (!ok || id == 0) {
      return Bad("bootstrap-peers", "expected ID@HOST:PORT (ID > 0), got \"" + item + "\"");
    }
    const std::string address = item.substr(at + 1);
    if (auto valid = FlagHostPort(address, "bootstrap-peers"); !valid.ok()) return valid.status();
    for (const raft::Peer& peer : peers) {
      if (peer.id == id || peer.address == address) {
        return Bad("bootstrap-peers",
                   "id " + std::to_string(id) + " or address " + address + " appears twice");
      }
    }
    peers.push_back({id, address});
  }
  auto self = std::find_if(peers.begin(), peers.end(),
                           [&](const raft::Peer& peer) { return peer.id == self_id; });
  if (self == peers.end()) {
    return Status::InvalidArgument("-bootstrap-peers must include this server (-node-id " +
                                   std::to_string(self_id) + ")");
  }
  if (self->address != self_address) {
    return Status::InvalidArgument("-bootstrap-peers gives this server (id " +
                                   std::to_string(self_id) + ") the address " + self->address +
                                   ", but -raft-addr is " + self_address);
  }
  return peers;
}

std::string AdvertisedHttpAddress(const HostPort& http, const HostPort& raft) {
  HostPort advertised = http;
  if (advertised.host == "0.0.0.0" || advertised.host == "::" || advertised.host.empty()) {
    advertised.host = raft.host;
  }
  return FormatHostPort(advertised);
}

namespace {

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

// A listener on loopback while raft is reached on another address: other
// servers cannot reach it.
bool LoopbackOnlyHere(std::string_view host, std::string_view raft_host) {
  return IsLoopbackHost(host) && !IsLoopbackHost(raft_host);
}

// The -tls-* flags checked together.
Status CheckTlsFlags(const AgentConfig& config) {
  const bool any = !config.tls_cert_file.empty() || !config.tls_key_file.empty() ||
                   !config.tls_ca_file.empty() || config.tls_verify_incoming;
  if (!any) return Status::Ok();
  if (config.tls_cert_file.empty() || config.tls_key_file.empty()) {
    return Status::InvalidArgument("-tls-cert-file and -tls-key-file go together");
  }
  if (config.tls_verify_incoming && config.tls_ca_file.empty()) {
    return Status::InvalidArgument("-tls-verify-incoming needs -tls-ca-file");
  }
  return Status::Ok();
}

}  // namespace

Result<TlsContexts> LoadTlsContexts(const tls::ServerFiles& files) {
  TlsContexts out;
  if (files.cert_file.empty()) return out;
  auto fail = [](const Status& status) {
    return Status::InvalidArgument("TLS: " + std::string(status.message()));
  };
  auto https = tls::Context::ForServer(files);
  if (!https.ok()) return fail(https.status());
  out.https = *https;
  if (files.ca_file.empty()) return out;
  tls::ServerFiles peers = files;
  peers.verify_incoming = true;
  auto accept = tls::Context::ForServer(peers);
  if (!accept.ok()) return fail(accept.status());
  tls::ClientFiles dial;
  dial.ca_file = files.ca_file;
  dial.cert_file = files.cert_file;
  dial.key_file = files.key_file;
  // Peers are known by the CA's signature (a cluster CA, docs/tls.md), not
  // by a name: raft addresses may be IPs behind NAT.
  auto dialer = tls::Context::ForClient(dial);
  if (!dialer.ok()) return fail(dialer.status());
  out.raft_accept = *accept;
  out.raft_dial = *dialer;
  return out;
}

Result<AgentPlan> ResolveAgentConfig(const AgentConfig& config) {
  TENURE_RETURN_IF_ERROR(CheckNoNulBytes(config));
  if (config.session_ttl_multiplier < 1 || config.session_ttl_multiplier > 10) {
    return Status::InvalidArgument("-session-ttl-multiplier must be between 1 and 10");
  }
  if (config.node_id == 0) return Status::InvalidArgument("-node-id must be positive");
  Result<log::Level> log_level = log::ParseLevel(config.log_level);
  if (!log_level.ok()) {
    return Status::InvalidArgument("-log-level: " + std::string(log_level.status().message()));
  }
  constexpr DurationNs kMs = 1'000'000;
  auto election_ns = ParseGoDuration(config.raft_election_timeout);
  if (!election_ns.ok() || *election_ns < 100 * kMs || *election_ns > 60'000 * kMs) {
    return Status::InvalidArgument(
        "-raft-election-timeout must be a duration from 100ms to 60s, got \"" +
        config.raft_election_timeout + "\"");
  }
  auto heartbeat_ns = ParseGoDuration(config.raft_heartbeat);
  if (!heartbeat_ns.ok() || *heartbeat_ns < 10 * kMs || *heartbeat_ns >= *election_ns) {
    return Status::InvalidArgument(
        "-raft-heartbeat must be a duration of at least 10ms and below -raft-election-timeout, "
        "got \"" +
        config.raft_heartbeat + "\"");
  }
  std::optional<HostPort> raft_bind;
  if (!config.raft_bind_addr.empty()) {
    Result<HostPort> bind = FlagHostPort(config.raft_bind_addr, "raft-bind-addr");
    if (!bind.ok()) return bind.status();
    raft_bind = *bind;
  }
  const bool http_off = config.http_addr == "off";
  std::optional<HostPort> http;
  if (!http_off) {
    Result<HostPort> parsed = FlagHostPort(config.http_addr, "http-addr", /*allow_zero_port=*/true);
    if (!parsed.ok()) return parsed.status();
    http = *parsed;
  }
  std::optional<HostPort> https;
  if (!config.https_addr.empty()) {
    Result<HostPort> parsed =
        FlagHostPort(config.https_addr, "https-addr", /*allow_zero_port=*/true);
    if (!parsed.ok()) return parsed.status();
    https = *parsed;
  }
  // etcd's API: where asked, or -dev's 127.0.0.1:2379 (decision 0048), in
  // clear text like -dev's HTTP listener: not when that one is off (a TLS-only
  // dev server opens no clear-text port).
  const bool etcd_dev_default = config.dev && config.grpc_addr.empty() && !http_off;
  std::optional<HostPort> etcd;
  if (etcd_dev_default) {
    etcd = HostPort{"127.0.0.1", 2379};
  } else if (!config.grpc_addr.empty() && config.grpc_addr != "off") {
    Result<HostPort> parsed = FlagHostPort(config.grpc_addr, "grpc-addr", /*allow_zero_port=*/true);
    if (!parsed.ok()) return parsed.status();
    etcd = *parsed;
  }
  std::optional<HostPort> etcd_tls;
  if (!config.grpc_tls_addr.empty()) {
    Result<HostPort> parsed =
        FlagHostPort(config.grpc_tls_addr, "grpc-tls-addr", /*allow_zero_port=*/true);
    if (!parsed.ok()) return parsed.status();
    etcd_tls = *parsed;
  }
  if (!http && !https) {
    return Status::InvalidArgument(
        "-http-addr off needs -https-addr: the API must listen somewhere");
  }
  TENURE_RETURN_IF_ERROR(CheckTlsFlags(config));
  const tls::ServerFiles tls_files{config.tls_cert_file, config.tls_key_file, config.tls_ca_file,
                                   config.tls_verify_incoming};
  TENURE_ASSIGN_OR_RETURN(TlsContexts tls, LoadTlsContexts(tls_files));
  if (https && tls.https == nullptr) {
    return Status::InvalidArgument("-https-addr needs -tls-cert-file and -tls-key-file");
  }
  if (etcd_tls && tls.https == nullptr) {
    return Status::InvalidArgument("-grpc-tls-addr needs -tls-cert-file and -tls-key-file");
  }
  Result<HostPort> raft_address = FlagHostPort(config.raft_addr, "raft-addr");
  if (!raft_address.ok()) return raft_address.status();
  // Raft listens on -raft-bind-addr when given (-raft-addr is then only
  // what the other members dial).
  std::vector<Listener> listeners = {
      raft_bind ? Listener{"raft-bind-addr", config.raft_bind_addr, *raft_bind}
                : Listener{"raft-addr", config.raft_addr, *raft_address}};
  if (http) listeners.push_back({"http-addr", config.http_addr, *http});
  if (https) listeners.push_back({"https-addr", config.https_addr, *https});
  if (etcd_tls) listeners.push_back({"grpc-tls-addr", config.grpc_tls_addr, *etcd_tls});
  TENURE_RETURN_IF_ERROR(CheckListenersApart(listeners));
  std::string etcd_dev_skipped;
  if (etcd) {
    listeners.push_back(
        {"grpc-addr", etcd_dev_default ? "127.0.0.1:2379" : config.grpc_addr, *etcd});
    if (Status apart = CheckListenersApart(listeners); !apart.ok()) {
      if (!etcd_dev_default) return apart;
      etcd_dev_skipped = "-dev's etcd address 127.0.0.1:2379 is taken by another of its flags";
      etcd.reset();
    }
  }
  std::string zk_dev_skipped;
  TENURE_ASSIGN_OR_RETURN(
      std::optional<zk::ClientPortOptions> zk,
      PlanZooKeeperPort(config, http_off, tls.https, &listeners, &zk_dev_skipped));
  if (!config.join.empty() && !config.bootstrap_peers.empty()) {
    return Status::InvalidArgument("-join and -bootstrap-peers exclude each other");
  }
  if (!config.dev && config.data_dir.empty()) {
    return Status::InvalidArgument("-data-dir is required (or use -dev)");
  }

  if (config.http_max_conns_per_client > limits::kHttpConnectionsMax) {
    return Status::InvalidArgument(
        "-http-max-conns-per-client: " + std::to_string(config.http_max_conns_per_client) +
        " is more than the " + std::to_string(limits::kHttpConnectionsMax) +
        " connections a listener serves in all (0 turns the per-client limit off)");
  }

  AgentPlan plan;
  listen::HttpServerOptions listener;
  listener.connections_per_client_max = config.http_max_conns_per_client;
  // One count per address over both listeners, as Consul's one limiter.
  listener.clients = std::make_shared<listen::ClientTable>();
  TENURE_RETURN_IF_ERROR(listen::TEST_ApplyEnvironment(&listener));
  if (http) {
    plan.http = listener;
    plan.http->host = http->host;
    plan.http->port = http->port;
  }
  if (https) {
    plan.https = listener;
    plan.https->host = https->host;
    plan.https->port = https->port;
    plan.https->tls = tls.https;
  }
  plan.tls_files = tls_files;

  std::vector<raft::Peer> peers = {{config.node_id, config.raft_addr}};
  if (!config.join.empty()) {
    peers.clear();  // no configuration: the cluster's leader will send it
    plan.join = SplitNonEmpty(config.join, ',');
    for (const std::string& address : plan.join) {
      if (auto valid = FlagHostPort(address, "join"); !valid.ok()) return valid.status();
    }
  } else if (!config.bootstrap_peers.empty()) {
    auto parsed = ParseBootstrapPeers(config.bootstrap_peers, config.node_id, config.raft_addr);
    if (!parsed.ok()) return parsed.status();
    peers = std::move(*parsed);
  }

  server::ServerOptions& options = plan.server;
  if (!config.raft_key_file.empty()) {
    auto key = raft::wire::LoadClusterKey(config.raft_key_file);
    if (!key.ok()) return key.status();
    options.raft.cluster_key = std::move(*key);
    plan.keyed = true;
  }
  // Keyless is a choice: without a key or mutual TLS, anyone who reaches the
  // raft port and names a member (ids and addresses are public) is that
  // member, so a server with peers refuses to start unless told so.
  const bool secured = plan.keyed || tls.raft_accept != nullptr;
  if (!config.dev && !secured && !config.raft_insecure_keyless &&
      (!config.join.empty() || peers.size() > 1)) {
    return Status::InvalidArgument(
        "-raft-key-file (or mutual TLS: -tls-cert-file, -tls-key-file and -tls-ca-file) is "
        "required for a server with peers (" +
        std::string(config.join.empty() ? "-bootstrap-peers" : "-join") +
        "): without either, any process that can reach the raft port can pose as a member, "
        "vote and write to the log. Make a key with `tenure keygen` and give every member the "
        "same file, or accept the risk with -raft-insecure-keyless (docs/security.md)");
  }
  options.raft.refuse_keyless_joins = !config.dev && !config.raft_insecure_keyless;
  plan.insecure_keyless = config.raft_insecure_keyless && !secured;
  if (!config.operator_token_file.empty()) {
    auto token = ReadSecretFile(config.operator_token_file, "operator-token-file");
    if (!token.ok()) return token.status();
    options.operator_token = std::move(*token);
  }
  TENURE_ASSIGN_OR_RETURN(options.acl, ResolveAclConfig(config));
  if (etcd) {
    plan.etcd = listener;
    plan.etcd->host = etcd->host;
    plan.etcd->port = etcd->port;
    plan.etcd_dev_default = etcd_dev_default;
  }
  if (etcd_tls) {
    plan.etcd_tls = listener;
    plan.etcd_tls->host = etcd_tls->host;
    plan.etcd_tls->port = etcd_tls->port;
    plan.etcd_tls->tls = tls.https;
  }
  if (etcd || etcd_tls) {
    options.etcd_history_bytes = static_cast<std::size_t>(config.etcd_history_bytes);
  }
  plan.etcd_dev_skipped = std::move(etcd_dev_skipped);
  plan.zk = std::move(zk);
  plan.zk_dev_default = config.dev && config.zk_addr.empty();
  plan.zk_dev_skipped = std::move(zk_dev_skipped);
  if (options.acl.enabled && !config.operator_token_file.empty()) {
    return Status::InvalidArgument(
        "-operator-token-file is for servers without ACLs; with -acl-enabled, give the "
        "operator a token whose policy has operator = \"write\" (docs/acl.md)");
  }
  options.node_name = config.node_name.empty() ? Hostname() : config.node_name;
  options.datacenter = config.datacenter;
  options.session_ttl_multiplier = config.session_ttl_multiplier;
  options.metrics_enabled = !config.disable_metrics;
  options.fair_queue = config.fair_queue;
  // Followers forward to this address: the TLS listener when there is one.
  options.http_address = AdvertisedHttpAddress(https ? *https : *http, *raft_address);
  // Followers relay etcd calls here (decision 0055), over TLS where there is
  // a TLS port; a port the kernel picks (0) is known only once bound, too
  // late for the raft handshake.
  if (etcd_tls && etcd_tls->port != 0) {
    options.etcd_address = "https://" + AdvertisedHttpAddress(*etcd_tls, *raft_address);
  } else if (etcd && etcd->port != 0) {
    options.etcd_address = AdvertisedHttpAddress(*etcd, *raft_address);
  }
  // Followers splice ZooKeeper connections here (decision 0056): the
  // TLS port where there is one, known only when its port is given, and
  // never a loopback port that other machines' servers would take for
  // their own.
  if (plan.zk && plan.zk->tls && plan.zk->tls_port != 0 &&
      !LoopbackOnlyHere(plan.zk->tls_host, raft_address->host)) {
    options.zk_address =
        "tls://" + AdvertisedHttpAddress({plan.zk->tls_host, plan.zk->tls_port}, *raft_address);
  } else if (plan.zk && plan.zk->clear_text && plan.zk->port != 0 &&
             !LoopbackOnlyHere(plan.zk->host, raft_address->host)) {
    options.zk_address = AdvertisedHttpAddress({plan.zk->host, plan.zk->port}, *raft_address);
  }
  if (https) {
    tls::ClientFiles forward;
    forward.ca_file = config.tls_ca_file;  // "" = the system's CAs
    forward.cert_file = config.tls_cert_file;
    forward.key_file = config.tls_key_file;
    options.forward_tls = forward;
  }
  options.raft.id = config.node_id;
  options.raft.address = config.raft_addr;
  options.raft.bootstrap = std::move(peers);
  options.raft.bind_address = config.raft_bind_addr;
  options.raft.tls_accept = tls.raft_accept;
  options.raft.tls_dial = tls.raft_dial;
  options.raft.election_timeout_ms = static_cast<unsigned>(*election_ns / kMs);
  options.raft.heartbeat_timeout_ms = static_cast<unsigned>(*heartbeat_ns / kMs);
  // Tests shrink the raft log's memory budget to see it bound RSS with a
  // few hundred writes instead of thousands (test_limits_raft_memory.py).
  if (const char* bytes = std::getenv("TENURE_TEST_RAFT_LOG_BYTES_MAX")) {
    options.raft.log_bytes_max = std::strtoull(bytes, nullptr, 10);
    options.raft.trailing_bytes_max = options.raft.log_bytes_max / 4;
  }
  // Tests see a trickled raft message cut, and the budget of messages in
  // progress bound memory, in seconds (test_raft_strangers.py).
  if (const char* ms = std::getenv("TENURE_TEST_RAFT_MESSAGE_TIME_MS")) {
    options.raft.message_time_ms = std::strtoll(ms, nullptr, 10);
  }
  if (const char* bytes = std::getenv("TENURE_TEST_RAFT_INBOUND_BYTES_MAX")) {
    options.raft.inbound_bytes_max = std::strtoull(bytes, nullptr, 10);
  }
  // Tests see a diverged replica stop (test_divergence.py) in seconds.
  if (const char* period = std::getenv("TENURE_TEST_CHECKPOINT_PERIOD_MS")) {
    options.checkpoint_period_ms = std::strtoll(period, nullptr, 10);
  }
  if (const char* key = std::getenv("TENURE_TEST_DIVERGE_KEY")) options.TEST_diverge_key = key;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    std::string_view entry(*variable);
    if (StartsWith(entry, "TENURE_TEST_")) {
      plan.test_hooks.emplace_back(entry.substr(0, entry.find('=')));
    }
  }
  plan.log = {*log_level, config.log_json};
  plan.data_dir = config.data_dir;
  plan.dev = config.dev;
  plan.http_addr = config.http_addr;
  plan.https_addr = config.https_addr;
  plan.raft_listen = config.raft_bind_addr.empty() ? config.raft_addr : config.raft_bind_addr;
  return plan;
}

}  // namespace tenure::agent
