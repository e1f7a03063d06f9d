// tenure server: parses its flags into an agent::AgentConfig and runs the
// agent (src/agent), which assembles and runs the server. Bad usage exits 1
// as `consul agent` does (docs/cli.md).
#include <cstdio>
#include <string>

#include "agent/agent.h"
#include "agent/config.h"
#include "cli/client_support.h"
#include "cli/commands.h"
#include "cli/flags.h"

namespace tenure::cli {
namespace {

constexpr char kServerUsage[] =
    "Usage: tenure server [options]\n"
    "\n"
    "  Runs a tenure server: a raft member with the Consul-compatible HTTP API.\n"
    "  -dev runs a single server on a throwaway data dir. docs/cluster.md shows\n"
    "  a cluster; docs/security.md what each port exposes.\n"
    "\n";

}  // namespace

int ServerCommand(const Args& args) {
  agent::AgentConfig config;
  Flags flags("server");
  flags.Bool("dev", &config.dev, "development mode: a throwaway data dir, removed on exit");
  flags.String("data-dir", &config.data_dir,
               "directory for the raft log and snapshots (required unless -dev)");
  flags.String("http-addr", &config.http_addr,
               "address of the Consul-compatible HTTP API in clear text (default "
               "127.0.0.1:8500; off: none, with -https-addr)");
  flags.String("https-addr", &config.https_addr,
               "address of the same API over TLS (8501 by convention; needs -tls-cert-file and "
               "-tls-key-file; docs/tls.md)");
  flags.String("tls-cert-file", &config.tls_cert_file,
               "PEM certificate (then any intermediates) this server presents; reloaded on "
               "SIGHUP");
  flags.String("tls-key-file", &config.tls_key_file,
               "PEM private key of -tls-cert-file (unencrypted; mode 600); reloaded on SIGHUP");
  flags.String("tls-ca-file", &config.tls_ca_file,
               "PEM CA certificates that sign the certificates of clients and other servers");
  flags.Bool("tls-verify-incoming", &config.tls_verify_incoming,
             "HTTPS clients must present a certificate signed by -tls-ca-file");
  flags.String("raft-addr", &config.raft_addr,
               "address of the raft transport (default 127.0.0.1:8300)");
  flags.String("raft-bind-addr", &config.raft_bind_addr,
               "listen for raft on this host:port instead of -raft-addr, which stays the "
               "address the other members dial (NAT, port mappings, fault-injecting proxies)");
  flags.String("node", &config.node_name, "node name reported to clients (default: the hostname)");
  flags.String("datacenter", &config.datacenter, "datacenter name (default dc1)");
  flags.Uint64("node-id", &config.node_id, "raft server id, unique in the cluster (default 1)");
  flags.String("join", &config.join,
               "raft addresses (host:port,...: their -raft-addr) of members of a running "
               "cluster to join; starts with no configuration and asks them, over the "
               "authenticated raft transport, to add this server");
  flags.String("raft-key-file", &config.raft_key_file,
               "file with the cluster key (base64, from `tenure keygen`; mode 600), the same on "
               "every member: raft peers must prove they hold it. Without it anyone who can "
               "reach the raft port is trusted (docs/security.md)");
  flags.String("operator-token-file", &config.operator_token_file,
               "file with a secret token that lets a request remove peers and transfer "
               "leadership (sent as X-Consul-Token); without it nobody may, until ACLs exist");
  flags.String("bootstrap-peers", &config.bootstrap_peers,
               "first configuration of a new cluster, the same on every member: "
               "ID@HOST:PORT,... (raft addresses; default: this server alone)");
  flags.String("raft-election-timeout", &config.raft_election_timeout,
               "a follower that hears no leader for this long (to twice this, randomized) "
               "starts an election (default 500ms; 100ms to 60s)");
  flags.String(
      "raft-heartbeat", &config.raft_heartbeat,
      "how often the leader contacts followers (default 50ms; below the election timeout)");
  flags.Int(
      "session-ttl-multiplier", &config.session_ttl_multiplier,
      "sessions expire between TTL and TTL x this after the last renewal (default 2, as Consul)");
  flags.Bool("acl-enabled", &config.acl_enabled,
             "enforce ACL tokens and policies on every endpoint (docs/acl.md)");
  flags.String("acl-default-policy", &config.acl_default_policy,
               "allow or deny: what a request gets when no rule of its token decides "
               "(default allow, as Consul; deny is recommended)");
  flags.String("acl-initial-management", &config.acl_initial_management,
               "secret of a management token that exists from the first leader on (a UUID; "
               "visible in the process list: prefer -acl-initial-management-file)");
  flags.String("acl-initial-management-file", &config.acl_initial_management_file,
               "file (mode 600) holding the initial management token's secret");
  flags.Bool("acl-enable-key-list-policy", &config.acl_enable_key_list_policy,
             "recursive reads and key listings need `list` on the prefix (Consul's "
             "enable_key_list_policy)");
  flags.String("acl-token-min-expiration-ttl", &config.acl_token_min_expiration_ttl,
               "shortest ExpirationTTL a token may ask for (default 1m)");
  flags.String("acl-token-max-expiration-ttl", &config.acl_token_max_expiration_ttl,
               "longest ExpirationTTL a token may ask for (default 24h)");
  if (auto code = ParseFlags(&flags, args, kServerUsage, 1)) return *code;
  if (!flags.positional().empty()) {
    PrintErr("tenure server: unexpected argument \"" + flags.positional()[0] + "\"");
    return 1;
  }
  Result<agent::AgentPlan> plan = agent::ResolveAgentConfig(config);
  if (!plan.ok()) {
    PrintErr("tenure server: " + std::string(plan.status().message()));
    return 1;
  }
  if (Status ran = agent::RunAgent(std::move(*plan)); !ran.ok()) {
    PrintErr("tenure server: " + ran.ToString());
    return 1;
  }
  return 0;
}

}  // namespace tenure::cli
