// What `tenure server` is told, as the operator wrote it (flags and config
// files: config_keys.h, config_file.h), and its check: ResolveAgentConfig
// turns it into the options of the server, its raft node and its HTTP
// listener, or says which setting is wrong and why (kInvalidArgument, the
// flag's name first).
// Reads the key and token files it names; otherwise pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/host_port.h"
#include "common/log.h"
#include "common/status.h"
#include "listen/server.h"
#include "server/server.h"
#include "tls/context.h"
#include "zk/client_port_options.h"

namespace tenure::agent {

struct AgentConfig {
  bool dev = false;                          // a throwaway data dir, removed on exit
  std::string data_dir;                      // required unless dev
  std::string http_addr = "127.0.0.1:8500";  // "off": no clear-text listener
  // TLS (docs/tls.md): the HTTPS listener and the files it serves with.
  std::string https_addr;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;
  bool tls_verify_incoming = false;
  // Open connections from one client address, both listeners together
  // (Consul's limits.http_max_conns_per_client); 0: no per-client limit.
  std::uint64_t http_max_conns_per_client = 200;
  // etcd's v3 API (docs/etcd.md): "" is off, except that -dev serves it on
  // 127.0.0.1:2379 when that port is free; "off": none even with -dev.
  std::string grpc_addr;
  // etcd's v3 API over TLS (the -tls-* files, client certificates with
  // -tls-verify-incoming, as the HTTPS listener), as Consul's ports.grpc_tls
  // beside ports.grpc: "" is none.
  std::string grpc_tls_addr;
  // The events a server keeps for etcd's reads of past revisions (decision
  // 0048 section 1), in bytes; only while the etcd API is served.
  std::uint64_t etcd_history_bytes = 64ull << 20;
  // ZooKeeper's client port (docs/zookeeper-compat.md): "" is off, except
  // that -dev serves it on 127.0.0.1:2181 when that port is free; "off":
  // none even with -dev. And the bounds of a negotiated session timeout.
  std::string zk_addr;
  // ZooKeeper's secureClientPort: TLS with the -tls-* files, as
  // -grpc-tls-addr; "" is none.
  std::string zk_tls_addr;
  std::string zk_session_timeout_min = "4s";
  std::string zk_session_timeout_max = "40s";
  std::string raft_addr = "127.0.0.1:8300";
  std::string raft_bind_addr;  // listen here instead of raft_addr (NAT, proxies)
  std::string node_name;       // empty: the hostname
  std::string datacenter = "dc1";
  std::uint64_t node_id = 1;
  std::string join;             // raft addresses of running members, comma-separated
  std::string bootstrap_peers;  // ID@HOST:PORT,... the first configuration
  std::string raft_key_file;
  // Lets a server with peers run without a cluster key or mutual TLS, which
  // it otherwise refuses outside -dev (docs/security.md).
  bool raft_insecure_keyless = false;
  std::string operator_token_file;
  std::string raft_election_timeout = "500ms";
  std::string raft_heartbeat = "50ms";
  int session_ttl_multiplier = 2;
  // The log (common/log.h): trace, debug, info, warn or error; text or JSON.
  std::string log_level = "info";
  bool log_json = false;
  // Consul's acl { } block (docs/acl.md).
  bool acl_enabled = false;
  std::string acl_default_policy = "allow";  // Consul's default; docs/acl.md recommends deny
  std::string acl_initial_management;        // a secret on the command line (visible in ps)
  std::string acl_initial_management_file;   // the same from a file (mode 600)
  bool acl_enable_key_list_policy = false;
  std::string acl_token_min_expiration_ttl = "1m";
  std::string acl_token_max_expiration_ttl = "24h";
  // Metrics (docs/metrics.md): on unless disabled.
  bool disable_metrics = false;
  // The fair acquire's queue (docs/leadership.md, "The queue"): on unless off.
  bool fair_queue = true;
};

// A checked AgentConfig.
struct AgentPlan {
  server::ServerOptions server;                       // raft.data_dir is set by RunAgent (dev mode)
  std::optional<listen::HttpServerOptions> http;      // the clear-text listener, unless off
  std::optional<listen::HttpServerOptions> https;     // the TLS listener, with its context
  std::optional<listen::HttpServerOptions> etcd;      // etcd's v3 API, when served
  std::optional<listen::HttpServerOptions> etcd_tls;  // and over TLS, with its context
  // The etcd listener is -dev's default: a port in use means no etcd API
  // (said in the log), not a failed start.
  bool etcd_dev_default = false;
  // Why -dev serves no etcd API although it would by default ("" if it does).
  std::string etcd_dev_skipped;
  // ZooKeeper's client port, when served; -dev's default gives way as etcd's.
  std::optional<zk::ClientPortOptions> zk;
  bool zk_dev_default = false;
  std::string zk_dev_skipped;
  tls::ServerFiles tls_files;     // reloaded on SIGHUP
  std::vector<std::string> join;  // empty: no -join
  std::string data_dir;           // empty with dev: RunAgent makes one
  bool dev = false;
  bool keyed = false;             // a cluster key was given
  bool insecure_keyless = false;  // -raft-insecure-keyless, for the warning
  std::string http_addr;          // as given, for the banner
  std::string https_addr;
  std::string raft_listen;              // where raft listens, for the warning
  std::vector<std::string> test_hooks;  // TENURE_TEST_* variables set, for a warning
  log::Options log;
};

Result<AgentPlan> ResolveAgentConfig(const AgentConfig& config);

// Every TLS context the server uses, from its -tls-* files; at start and on
// SIGHUP. Raft's are set when the files include a CA (peers are checked
// against it); otherwise raft stays in clear.
struct TlsContexts {
  std::shared_ptr<const tls::Context> https;
  std::shared_ptr<const tls::Context> raft_accept;  // requires the peer's certificate
  std::shared_ptr<const tls::Context> raft_dial;    // presents this server's
};
Result<TlsContexts> LoadTlsContexts(const tls::ServerFiles& files);

// "ID@HOST:PORT,ID@HOST:PORT,...": the cluster's first configuration, the
// same list on every member. Must name this node with its own raft address.
Result<std::vector<raft::Peer>> ParseBootstrapPeers(const std::string& list, std::uint64_t self_id,
                                                    const std::string& self_address);

// The HTTP address other members forward to: -http-addr, except that a
// wildcard host (0.0.0.0, ::) is replaced by the raft address's host, which
// the other members already reach.
std::string AdvertisedHttpAddress(const HostPort& http, const HostPort& raft);

}  // namespace tenure::agent
