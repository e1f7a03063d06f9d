#include "agent/config_keys.h"

#include <algorithm>

namespace tenure::agent {
namespace {

using T = SettingType;
using C = AgentConfig;

std::vector<Setting> MakeSettings() {
  std::vector<Setting> settings = {
      {"dev", "dev", T::kBool, &C::dev, "development mode: a throwaway data dir, removed on exit"},
      {"data_dir", "data-dir", T::kString, &C::data_dir,
       "directory for the raft log and snapshots (required unless -dev)"},
      {"http_addr", "http-addr", T::kString, &C::http_addr,
       "address of the Consul-compatible HTTP API in clear text (default 127.0.0.1:8500; off: "
       "none, with -https-addr)"},
      {"https_addr", "https-addr", T::kString, &C::https_addr,
       "address of the same API over TLS (8501 by convention; needs -tls-cert-file and "
       "-tls-key-file; docs/tls.md)"},
      {"tls_cert_file",
       "tls-cert-file",
       T::kString,
       &C::tls_cert_file,
       "PEM certificate (then any intermediates) this server presents; reloaded on SIGHUP",
       {"tls.defaults.cert_file"}},
      {"tls_key_file",
       "tls-key-file",
       T::kString,
       &C::tls_key_file,
       "PEM private key of -tls-cert-file (unencrypted; mode 600); reloaded on SIGHUP",
       {"tls.defaults.key_file"}},
      {"tls_ca_file",
       "tls-ca-file",
       T::kString,
       &C::tls_ca_file,
       "PEM CA certificates that sign the certificates of clients and other servers",
       {"tls.defaults.ca_file"}},
      // Consul's defaults block applies to every listener; tenure's raft
      // links always verify, so both of Consul's spellings mean HTTPS here.
      {"tls_verify_incoming",
       "tls-verify-incoming",
       T::kBool,
       &C::tls_verify_incoming,
       "HTTPS clients must present a certificate signed by -tls-ca-file",
       {"tls.defaults.verify_incoming", "tls.https.verify_incoming"}},
      {"http_max_conns_per_client",
       "http-max-conns-per-client",
       T::kUint64,
       &C::http_max_conns_per_client,
       "open connections one client address may hold, HTTP and HTTPS together; more get 429 "
       "at once (default 200, as Consul; 0: no limit per address, only the server's cap; "
       "cluster members are not limited)",
       {"limits.http_max_conns_per_client"}},
      {"grpc_addr", "grpc-addr", T::kString, &C::grpc_addr,
       "address of etcd's v3 API, gRPC and its JSON gateway, in clear text (-dev: "
       "127.0.0.1:2379 when free; off: none; docs/etcd.md)"},
      {"grpc_tls_addr", "grpc-tls-addr", T::kString, &C::grpc_tls_addr,
       "address of etcd's v3 API over TLS, with the -tls-* files (client certificates with "
       "-tls-verify-incoming; docs/tls.md)"},
      {"etcd_history_bytes", "etcd-history-bytes", T::kUint64, &C::etcd_history_bytes,
       "bytes of recent changes each server keeps for etcd's reads of past revisions (default "
       "67108864; docs/limits.md)"},
      {"zk_addr", "zk-addr", T::kString, &C::zk_addr,
       "address of ZooKeeper's client protocol, in clear text (-dev: 127.0.0.1:2181 when "
       "free; off: none; docs/zookeeper-compat.md)"},
      {"zk_tls_addr", "zk-tls-addr", T::kString, &C::zk_tls_addr,
       "address of ZooKeeper's secure client port, TLS with the -tls-* files (client "
       "certificates with -tls-verify-incoming; docs/zookeeper-compat.md)"},
      {"zk_session_timeout_min", "zk-session-timeout-min", T::kString, &C::zk_session_timeout_min,
       "the shortest session timeout a ZooKeeper client is given; shorter requests are raised "
       "to it (default 4s, ZooKeeper's 2 ticks)"},
      {"zk_session_timeout_max", "zk-session-timeout-max", T::kString, &C::zk_session_timeout_max,
       "the longest session timeout a ZooKeeper client is given; longer requests are cut to it "
       "(default 40s, ZooKeeper's 20 ticks)"},
      {"raft_addr", "raft-addr", T::kString, &C::raft_addr,
       "address of the raft transport (default 127.0.0.1:8300)"},
      {"raft_bind_addr", "raft-bind-addr", T::kString, &C::raft_bind_addr,
       "listen for raft on this host:port instead of -raft-addr, which stays the address the "
       "other members dial (NAT, port mappings, fault-injecting proxies)"},
      // Consul's key for its -node flag.
      {"node_name", "node", T::kString, &C::node_name,
       "node name reported to clients (default: the hostname)"},
      {"datacenter", "datacenter", T::kString, &C::datacenter, "datacenter name (default dc1)"},
      {"node_id", "node-id", T::kUint64, &C::node_id,
       "raft server id, unique in the cluster (default 1)"},
      {"join", "join", T::kList, &C::join,
       "raft addresses (host:port,...: their -raft-addr) of members of a running cluster to "
       "join; starts with no configuration and asks them, over the authenticated raft "
       "transport, to add this server"},
      {"raft_key_file", "raft-key-file", T::kString, &C::raft_key_file,
       "file with the cluster key (base64, from `tenure keygen`; mode 600), the same on every "
       "member: raft peers must prove they hold it. Without it anyone who can reach the raft "
       "port is trusted (docs/security.md)"},
      {"raft_insecure_keyless", "raft-insecure-keyless", T::kBool, &C::raft_insecure_keyless,
       "INSECURE: let this server have peers (-bootstrap-peers, -join, a server joining it) "
       "without -raft-key-file or mutual TLS; then anyone who can reach the raft port can pose "
       "as a member, vote and write to the log (docs/security.md). Not needed with -dev"},
      {"operator_token_file", "operator-token-file", T::kString, &C::operator_token_file,
       "file with a secret token that lets a request remove peers and transfer leadership "
       "(sent as X-Consul-Token); without it nobody may, until ACLs exist"},
      {"bootstrap_peers", "bootstrap-peers", T::kList, &C::bootstrap_peers,
       "first configuration of a new cluster, the same on every member: ID@HOST:PORT,... (raft "
       "addresses; default: this server alone)"},
      {"raft_election_timeout", "raft-election-timeout", T::kString, &C::raft_election_timeout,
       "a follower that hears no leader for this long (to twice this, randomized) starts an "
       "election (default 500ms; 100ms to 60s)"},
      {"raft_heartbeat", "raft-heartbeat", T::kString, &C::raft_heartbeat,
       "how often the leader contacts followers (default 50ms; below the election timeout)"},
      {"session_ttl_multiplier", "session-ttl-multiplier", T::kInt, &C::session_ttl_multiplier,
       "sessions expire between TTL and TTL x this after the last renewal (default 2, as "
       "Consul)"},
      {"log_level", "log-level", T::kString, &C::log_level,
       "trace, debug, info, warn or error: the least severe lines logged (default info)"},
      {"log_json", "log-json", T::kBool, &C::log_json,
       "log one JSON object a line (time, level, component, message and the event's fields) "
       "instead of text"},
      {"acl_enabled", "acl-enabled", T::kBool, &C::acl_enabled,
       "enforce ACL tokens and policies on every endpoint (docs/acl.md)"},
      {"acl_default_policy", "acl-default-policy", T::kString, &C::acl_default_policy,
       "allow or deny: what a request gets when no rule of its token decides (default allow, as "
       "Consul; deny is recommended)"},
      {"acl_initial_management",
       "acl-initial-management",
       T::kString,
       &C::acl_initial_management,
       "secret of a management token that exists from the first leader on (a UUID; visible in "
       "the process list: prefer -acl-initial-management-file)",
       {"acl.tokens.initial_management"}},
      {"acl_initial_management_file", "acl-initial-management-file", T::kString,
       &C::acl_initial_management_file,
       "file (mode 600) holding the initial management token's secret"},
      {"acl_enable_key_list_policy", "acl-enable-key-list-policy", T::kBool,
       &C::acl_enable_key_list_policy,
       "recursive reads and key listings need `list` on the prefix (Consul's "
       "enable_key_list_policy)"},
      {"acl_token_min_expiration_ttl", "acl-token-min-expiration-ttl", T::kString,
       &C::acl_token_min_expiration_ttl, "shortest ExpirationTTL a token may ask for (default 1m)"},
      {"acl_token_max_expiration_ttl", "acl-token-max-expiration-ttl", T::kString,
       &C::acl_token_max_expiration_ttl, "longest ExpirationTTL a token may ask for (default 24h)"},
      {"disable_metrics", "disable-metrics", T::kBool, &C::disable_metrics,
       "count nothing and answer 404 at /v1/agent/metrics and /metrics (docs/metrics.md)"},
      {"fair_queue", "fair-queue", T::kBool, &C::fair_queue,
       "serve ?acquire=S&queue from the key's FIFO queue (default true; false: ignore ?queue "
       "as Consul does, a plain acquire)"},
  };
  // Consul's acl block: every acl_ key may also be written inside it
  // without the prefix ("acl": {"enabled": true}).
  for (Setting& setting : settings) {
    if (setting.key.substr(0, 4) == "acl_") {
      setting.nested.insert(setting.nested.begin(), "acl." + std::string(setting.key.substr(4)));
    }
  }
  return settings;
}

}  // namespace

const std::vector<Setting>& ServerSettings() {
  static const std::vector<Setting>* settings = new std::vector<Setting>(MakeSettings());
  return *settings;
}

const Setting* FindSettingByPath(std::string_view path) {
  for (const Setting& setting : ServerSettings()) {
    if (setting.key == path) return &setting;
    for (const std::string& nested : setting.nested) {
      if (nested == path) return &setting;
    }
  }
  return nullptr;
}

bool IsSettingBlock(std::string_view path) {
  const std::string prefix = std::string(path) + ".";
  for (const Setting& setting : ServerSettings()) {
    for (const std::string& nested : setting.nested) {
      if (nested.compare(0, prefix.size(), prefix) == 0) return true;
    }
  }
  return false;
}

const Setting* FindSettingByFlag(std::string_view flag) {
  for (const Setting& setting : ServerSettings()) {
    if (setting.flag == flag) return &setting;
  }
  return nullptr;
}

void CopySetting(const Setting& setting, const AgentConfig& from, AgentConfig* to) {
  std::visit([&](auto member) { to->*member = from.*member; }, setting.field);
}

std::string SettingValue(const Setting& setting, const AgentConfig& config) {
  struct Text {
    const AgentConfig& config;
    std::string operator()(std::string AgentConfig::*m) const { return config.*m; }
    std::string operator()(bool AgentConfig::*m) const { return config.*m ? "true" : "false"; }
    std::string operator()(std::uint64_t AgentConfig::*m) const {
      return std::to_string(config.*m);
    }
    std::string operator()(int AgentConfig::*m) const { return std::to_string(config.*m); }
  };
  return std::visit(Text{config}, setting.field);
}

std::string_view SettingTypeName(SettingType type) {
  switch (type) {
    case SettingType::kString:
      return "string";
    case SettingType::kBool:
      return "boolean";
    case SettingType::kUint64:
    case SettingType::kInt:
      return "number";
    case SettingType::kList:
      return "string or array of strings";
  }
  return "value";
}

}  // namespace tenure::agent
