// tenure server: runs one server (a one-member raft cluster unless peers
// are given) with the Consul-compatible HTTP API. --dev uses a throwaway
// data dir that is removed on exit.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
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
#include "client/async_http.h"
#include "client/http_client.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/strings.h"
#include "http/api.h"
#include "http/server.h"
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

// -join: until this server is a voter of the configuration it has, ask the
// given members (PUT /v1/operator/raft/peer; a follower answers 500 and the
// client moves to the next address) to add it, every second.
class Joiner {
 public:
  Joiner(boost::asio::io_context& io, server::Server& server, std::vector<std::string> addresses,
         std::uint64_t id, std::string raft_addr)
      : server_(server),
        http_(io, client::AsyncHttpOptions{std::move(addresses), "", 2'000, 60'000, 1}),
        timer_(io),
        id_(id),
        raft_addr_(std::move(raft_addr)) {}

  void Attempt() {
    for (const raft::ServerInfo& member : server_.RaftConfiguration()) {
      if (member.id == id_ && member.voter) {
        std::fprintf(stderr, "tenure: server %llu is a voter of the cluster\n",
                     static_cast<unsigned long long>(id_));
        return;
      }
    }
    client::HttpCall call{"PUT",
                          "/v1/operator/raft/peer?id=" + std::to_string(id_) +
                              "&address=" + client::EscapeQueryValue(raft_addr_),
                          "", 60'000, {}};
    http_.Request(std::move(call), [this](Result<client::ClientResponse> result) {
      if (result.ok() && result->status == 200) {
        std::fprintf(stderr, "tenure: joined the cluster as server %llu\n",
                     static_cast<unsigned long long>(id_));
        return;
      }
      std::fprintf(stderr, "tenure: join failed (%s); retrying\n",
                   result.ok() ? (std::to_string(result->status) + " " + result->body).c_str()
                               : result.status().ToString().c_str());
      timer_.expires_after(std::chrono::seconds(1));
      timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) Attempt();
      });
    });
  }

 private:
  server::Server& server_;
  client::AsyncHttpClient http_;
  boost::asio::steady_timer timer_;
  std::uint64_t id_;
  std::string raft_addr_;
};

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
               "HTTP addresses (host:port,...) of members of a running cluster to join; "
               "starts with no configuration and asks them to add this server");
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
    api.Start();
    std::unique_ptr<Joiner> joiner;
    if (!join.empty()) {
      joiner = std::make_unique<Joiner>(io, server, SplitNonEmpty(join, ','), node_id, raft_addr);
      joiner->Attempt();
    }
    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      std::fprintf(stderr, "tenure: signal %d, shutting down\n", signal);
      http_server.Stop();
      api.Shutdown();
      joiner.reset();
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
