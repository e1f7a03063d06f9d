// tenure server: runs one server (a one-member raft cluster unless peers
// are given) with the Consul-compatible HTTP API. --dev uses a throwaway
// data dir that is removed on exit.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/flags.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/strings.h"
#include "http/api.h"
#include "http/server.h"
#include "raft/wire/cluster_key.h"
#include "server/server.h"

namespace tenure::cli {
namespace {

Result<std::pair<std::string, std::uint16_t>> SplitHostPort(const std::string& address,
                                                            std::string_view flag) {
  std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return Status::InvalidArgument("-" + std::string(flag) + ": expected host:port, got \"" +
                                   address + "\"");
  }
  std::string port_text = address.substr(colon + 1);
  unsigned long port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9' || port > 65535) {
      return Status::InvalidArgument("-" + std::string(flag) + ": bad port in \"" + address + "\"");
    }
    port = port * 10 + static_cast<unsigned long>(c - '0');
  }
  if (port > 65535) {
    return Status::InvalidArgument("-" + std::string(flag) + ": bad port in \"" + address + "\"");
  }
  return std::make_pair(address.substr(0, colon), static_cast<std::uint16_t>(port));
}

// "ID@HOST:PORT,ID@HOST:PORT,...": the cluster's first configuration, the
// same list on every member. Must name this node with its own -raft-addr.
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
      return Status::InvalidArgument("-bootstrap-peers: expected ID@HOST:PORT (ID > 0), got \"" +
                                     item + "\"");
    }
    const std::string address = item.substr(at + 1);
    if (auto valid = SplitHostPort(address, "bootstrap-peers"); !valid.ok()) return valid.status();
    for (const raft::Peer& peer : peers) {
      if (peer.id == id || peer.address == address) {
        return Status::InvalidArgument("-bootstrap-peers: id " + std::to_string(id) + " or address " +
                                       address + " appears twice");
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
    return Status::InvalidArgument("-bootstrap-peers gives this server (id " + std::to_string(self_id) +
                                   ") the address " + self->address + ", but -raft-addr is " +
                                   self_address);
  }
  return peers;
}

// The HTTP address other members forward to: -http-addr, except that a
// wildcard host (0.0.0.0, ::) is replaced by the raft address's host, which
// the other members already reach.
std::string AdvertisedHttpAddress(const std::pair<std::string, std::uint16_t>& http,
                                  const std::pair<std::string, std::uint16_t>& raft) {
  std::string host = http.first;
  if (host == "0.0.0.0" || host == "::" || host == "[::]" || host.empty()) host = raft.first;
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return host + ":" + std::to_string(http.second);
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

}  // namespace

int ServerCommand(const Args& args) {
  bool dev = false;
  std::string data_dir;
  std::string http_addr = "127.0.0.1:8500";
  std::string raft_addr = "127.0.0.1:8300";
  std::string node_name = Hostname();
  std::string datacenter = "dc1";
  std::uint64_t node_id = 1;
  int ttl_multiplier = 2;
  Flags flags("server");
  flags.Bool("dev", &dev, "development mode: a throwaway data dir, removed on exit");
  flags.String("data-dir", &data_dir, "directory for the raft log and snapshots (required unless -dev)");
  flags.String("http-addr", &http_addr, "address of the Consul-compatible HTTP API (default 127.0.0.1:8500)");
  flags.String("raft-addr", &raft_addr, "address of the raft transport (default 127.0.0.1:8300)");
  std::string raft_bind;
  flags.String("raft-bind-addr", &raft_bind,
               "listen for raft on this host:port instead of -raft-addr, which stays the "
               "address the other members dial (NAT, port mappings, fault-injecting proxies)");
  flags.String("node", &node_name, "node name reported to clients (default: the hostname)");
  flags.String("datacenter", &datacenter, "datacenter name (default dc1)");
  flags.Uint64("node-id", &node_id, "raft server id, unique in the cluster (default 1)");
  std::string join;
  flags.String("join", &join,
               "raft addresses (host:port,...: their -raft-addr) of members of a running "
               "cluster to join; starts with no configuration and asks them, over the "
               "authenticated raft transport, to add this server");
  std::string raft_key_file;
  flags.String("raft-key-file", &raft_key_file,
               "file with the cluster key (base64, from `tenure keygen`; mode 600), the same on "
               "every member: raft peers must prove they hold it. Without it anyone who can "
               "reach the raft port is trusted (docs/security.md)");
  std::string operator_token_file;
  flags.String("operator-token-file", &operator_token_file,
               "file with a secret token that lets a request remove peers and transfer "
               "leadership (sent as X-Consul-Token); without it nobody may, until ACLs exist");
  std::string bootstrap_peers;
  flags.String("bootstrap-peers", &bootstrap_peers,
               "first configuration of a new cluster, the same on every member: "
               "ID@HOST:PORT,... (raft addresses; default: this server alone)");
  std::string election_timeout = "500ms", heartbeat = "50ms";
  flags.String("raft-election-timeout", &election_timeout,
               "a follower that hears no leader for this long (to twice this, randomized) "
               "starts an election (default 500ms; 100ms to 60s)");
  flags.String("raft-heartbeat", &heartbeat,
               "how often the leader contacts followers (default 50ms; below the election timeout)");
  flags.Int("session-ttl-multiplier", &ttl_multiplier,
            "sessions expire between TTL and TTL x this after the last renewal (default 2, as Consul)");
  if (Status s = flags.Parse(args); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (!flags.positional().empty()) {
    std::fprintf(stderr, "tenure server: unexpected argument \"%s\"\n",
                 flags.positional()[0].c_str());
    return 2;
  }
  if (ttl_multiplier < 1 || ttl_multiplier > 10) {
    std::fprintf(stderr, "tenure server: -session-ttl-multiplier must be between 1 and 10\n");
    return 2;
  }
  if (node_id == 0) {
    std::fprintf(stderr, "tenure server: -node-id must be positive\n");
    return 2;
  }
  auto election_ns = ParseGoDuration(election_timeout);
  auto heartbeat_ns = ParseGoDuration(heartbeat);
  constexpr DurationNs kMs = 1'000'000;
  if (!election_ns.ok() || *election_ns < 100 * kMs || *election_ns > 60'000 * kMs) {
    std::fprintf(stderr, "tenure server: -raft-election-timeout must be a duration from 100ms to 60s, got \"%s\"\n",
                 election_timeout.c_str());
    return 2;
  }
  if (!heartbeat_ns.ok() || *heartbeat_ns < 10 * kMs || *heartbeat_ns >= *election_ns) {
    std::fprintf(stderr,
                 "tenure server: -raft-heartbeat must be a duration of at least 10ms and below "
                 "-raft-election-timeout, got \"%s\"\n",
                 heartbeat.c_str());
    return 2;
  }
  if (!raft_bind.empty()) {
    if (auto bind = SplitHostPort(raft_bind, "raft-bind-addr"); !bind.ok()) {
      std::fprintf(stderr, "tenure server: %s\n", std::string(bind.status().message()).c_str());
      return 2;
    }
  }
  auto http_host_port = SplitHostPort(http_addr, "http-addr");
  auto raft_host_port = SplitHostPort(raft_addr, "raft-addr");
  for (const Status* s : {&http_host_port.status(), &raft_host_port.status()}) {
    if (!s->ok()) {
      std::fprintf(stderr, "tenure server: %s\n", std::string(s->message()).c_str());
      return 2;
    }
  }

  http::HttpServerOptions http_options;
  http_options.host = http_host_port->first;
  http_options.port = http_host_port->second;
  if (Status s = http::TEST_ApplyEnvironment(&http_options); !s.ok()) {
    std::fprintf(stderr, "tenure server: %s\n", std::string(s.message()).c_str());
    return 2;
  }

  std::vector<raft::Peer> peers = {{node_id, raft_addr}};
  if (!join.empty() && !bootstrap_peers.empty()) {
    std::fprintf(stderr, "tenure server: -join and -bootstrap-peers exclude each other\n");
    return 2;
  }
  if (!join.empty()) {
    peers.clear();  // no configuration: the cluster's leader will send it
  } else if (!bootstrap_peers.empty()) {
    auto parsed = ParseBootstrapPeers(bootstrap_peers, node_id, raft_addr);
    if (!parsed.ok()) {
      std::fprintf(stderr, "tenure server: %s\n", std::string(parsed.status().message()).c_str());
      return 2;
    }
    peers = std::move(*parsed);
  }

  raft::wire::ClusterKey cluster_key;
  if (!raft_key_file.empty()) {
    auto key = raft::wire::LoadClusterKey(raft_key_file);
    if (!key.ok()) {
      std::fprintf(stderr, "tenure server: %s\n", std::string(key.status().message()).c_str());
      return 2;
    }
    cluster_key = std::move(*key);
  }
  std::string operator_token;
  if (!operator_token_file.empty()) {
    auto token = ReadSecretFile(operator_token_file, "operator-token-file");
    if (!token.ok()) {
      std::fprintf(stderr, "tenure server: %s\n", std::string(token.status().message()).c_str());
      return 2;
    }
    operator_token = std::move(*token);
  }

  std::string dev_dir;
  if (dev) {
    if (data_dir.empty()) {
      std::string pattern = (std::filesystem::temp_directory_path() / "tenure-dev-XXXXXX").string();
      if (mkdtemp(pattern.data()) == nullptr) {
        std::perror("tenure server: cannot create a dev data dir");
        return 1;
      }
      data_dir = dev_dir = pattern;
    }
  } else if (data_dir.empty()) {
    std::fprintf(stderr, "tenure server: -data-dir is required (or use -dev)\n");
    return 2;
  }

  boost::asio::io_context io(1);
  RealClock clock;
  server::ServerOptions options;
  options.node_name = node_name;
  options.datacenter = datacenter;
  options.session_ttl_multiplier = ttl_multiplier;
  options.raft.id = node_id;
  options.raft.address = raft_addr;
  options.raft.data_dir = (std::filesystem::path(data_dir) / "raft").string();
  options.raft.bootstrap = std::move(peers);
  options.raft.bind_address = raft_bind;
  options.raft.election_timeout_ms = static_cast<unsigned>(*election_ns / kMs);
  options.raft.heartbeat_timeout_ms = static_cast<unsigned>(*heartbeat_ns / kMs);
  options.http_address = AdvertisedHttpAddress(*http_host_port, *raft_host_port);
  options.raft.cluster_key = std::move(cluster_key);
  options.operator_token = std::move(operator_token);
  // Tests shrink the raft log's memory budget to see it bound RSS with a
  // few hundred writes instead of thousands (test_limits_raft_memory.py).
  if (const char* bytes = std::getenv("TENURE_TEST_RAFT_LOG_BYTES_MAX")) {
    options.raft.log_bytes_max = std::strtoull(bytes, nullptr, 10);
    options.raft.trailing_bytes_max = options.raft.log_bytes_max / 4;
  }

  server::Server server(io, clock, options);
  http::Api api(io, server);
  http::HttpServer http_server(io, [&api](http::HttpRequest request,
                                          std::shared_ptr<http::Responder> responder) {
    api.Handle(std::move(request), std::move(responder));
  });

  int exit_code = 0;
  if (Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "tenure server: %s\n", s.ToString().c_str());
    exit_code = 1;
  } else if (Status h = http_server.Listen(http_options); !h.ok()) {
    std::fprintf(stderr, "tenure server: %s\n", h.ToString().c_str());
    server.Stop([&io] { io.stop(); });
    io.run();
    exit_code = 1;
  } else {
    std::fprintf(stderr,
                 "tenure: server %s (id %llu) serving the Consul API on http://%s, raft on %s, "
                 "data in %s%s\n",
                 node_name.c_str(), static_cast<unsigned long long>(node_id), http_addr.c_str(),
                 raft_addr.c_str(), data_dir.c_str(),
                 dev_dir.empty() ? "" : " (dev mode: removed on exit)");
    if (raft_key_file.empty() && !dev) {
      std::fprintf(stderr,
                   "tenure: WARNING: no -raft-key-file: any process that can reach %s can join "
                   "this cluster, vote and write to its log (docs/security.md)\n",
                   (raft_bind.empty() ? raft_addr : raft_bind).c_str());
    }
    api.Start();
    if (!join.empty()) server.JoinCluster(SplitNonEmpty(join, ','));
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      std::fprintf(stderr, "tenure: signal %d, shutting down\n", signal);
      http_server.Stop();
      api.Shutdown();
      server.Stop([&io] { io.stop(); });
    });
    io.run();
  }
  if (!dev_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dev_dir, ec);
  }
  return exit_code;
}

}  // namespace tenure::cli
