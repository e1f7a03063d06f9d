#include "agent/agent.h"

#include <fmt/core.h>
#include <systemd/sd-daemon.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "common/assert.h"
#include "common/clock.h"
#include "common/host_port.h"
#include "common/limits.h"
#include "common/log.h"
#include "etcd/gateway.h"
#include "etcd/grpc_server.h"
#include "etcd/leader_relay.h"
#include "http/api.h"
#include "listen/server.h"
#include "server/server.h"
#include "tls/context.h"
#include "zk/client_port.h"

namespace tenure::agent {
namespace {

// The dev mode's data dir: removed when the agent returns.
class DevDir {
 public:
  ~DevDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  Result<std::string> Make() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tenure-dev-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return Status::IoError(
          fmt::format("cannot create a dev data dir {}: {}", pattern, std::strerror(errno)));
    }
    path_ = pattern;
    return path_;
  }
  bool made() const { return !path_.empty(); }

 private:
  std::string path_;
};

// The listeners that serve the API, as the ACLs-off warning names them:
// "http://A or https://B", the HTTPS one "with a client certificate from
// CA" when -tls-verify-incoming lets no one else through (docs/security.md).
std::string WhoReachesTheApi(const AgentPlan& plan) {
  std::string who;
  if (plan.http) who = "http://" + plan.http_addr;
  if (plan.https) {
    who += (who.empty() ? "https://" : " or https://") + plan.https_addr;
    if (plan.tls_files.verify_incoming) {
      who += " with a client certificate from " + plan.tls_files.ca_file;
    }
  }
  // etcd's API is as open (docs/security.md, "The etcd port").
  auto etcd = [&who](const char* scheme, const listen::HttpServerOptions& options) {
    who += fmt::format("{}{}{}:{} (etcd)", who.empty() ? "" : " or ", scheme, options.host,
                       options.port);
  };
  if (plan.etcd) etcd("http://", *plan.etcd);
  if (plan.etcd_tls) etcd("https://", *plan.etcd_tls);
  if (plan.zk && plan.zk->clear_text) {
    who +=
        fmt::format("{}{}:{} (ZooKeeper)", who.empty() ? "" : " or ", plan.zk->host, plan.zk->port);
  }
  if (plan.zk && plan.zk->tls) {
    who += fmt::format("{}{}:{} (ZooKeeper over TLS)", who.empty() ? "" : " or ", plan.zk->tls_host,
                       plan.zk->tls_port);
  }
  return who;
}

}  // namespace

Status RunAgent(AgentPlan plan) {
  log::Configure(plan.log);
  DevDir dev_dir;
  if (plan.dev && plan.data_dir.empty()) {
    Result<std::string> made = dev_dir.Make();
    if (!made.ok()) return made.status();
    plan.data_dir = *made;
  }
  // What the plan's checks (config.cc) promise: a data dir, a listener, and
  // a certificate for an HTTPS one.
  TENURE_ASSERT(!plan.data_dir.empty());
  TENURE_ASSERT(plan.http.has_value() || plan.https.has_value());
  if (plan.https) TENURE_ASSERT((*plan.https).tls != nullptr);
  plan.server.data_dir = plan.data_dir;
  plan.server.raft.data_dir = (std::filesystem::path(plan.data_dir) / "raft").string();

  boost::asio::io_context io(1);
  RealClock clock;
  server::Server server(io, clock, plan.server);
  http::Api api(io, server);
  auto handler = [&api](listen::HttpRequest request, std::shared_ptr<listen::Responder> responder) {
    api.Handle(std::move(request), std::move(responder));
  };
  listen::HttpServer http_server(io, handler);
  listen::HttpServer https_server(io, handler);
  // etcd's API: its gateway is made once the listener knows its port (the
  // client URL MemberList reports); no request arrives before io.run.
  std::unique_ptr<etcd::WatchHub> watch_hub;      // before its users: they hold watchers in it
  std::unique_ptr<etcd::LeaderRelay> etcd_relay;  // likewise: they relay through it
  std::unique_ptr<etcd::Gateway> gateway;
  std::unique_ptr<etcd::GrpcServer> grpc;
  auto etcd_handler = [&gateway](listen::HttpRequest request,
                                 std::shared_ptr<listen::Responder> responder) {
    gateway->Handle(std::move(request), std::move(responder));
  };
  listen::HttpServer etcd_server(io, etcd_handler);
  listen::HttpServer etcd_tls_server(io, etcd_handler);  // -grpc-tls-addr
  zk::ClientPort zk_port(server, io);

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  boost::asio::signal_set reload_signal(io, SIGHUP);
  bool stopping = false;
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    // Under systemd (Type=notify) the unit shows "deactivating" from here on;
    // elsewhere NOTIFY_SOCKET is unset and this does nothing.
    sd_notify(0, "STOPPING=1");
    signals.cancel();
    reload_signal.cancel();
    // Parked fair acquires learn why before their connections close: a 500
    // tells the client to send again elsewhere (decision 0027).
    server.queue_parking().Flush();
    http_server.Stop();
    https_server.Stop();
    etcd_server.Stop();
    etcd_tls_server.Stop();
    zk_port.Stop();
    if (etcd_relay != nullptr) etcd_relay->Shutdown();
    api.Shutdown();
    server.Stop([&io] { io.stop(); });
  };
  Status fatal;
  server.set_on_fatal([&](Status why) {
    fatal = std::move(why);
    stop();
  });

  if (Status started = server.Start(); !started.ok()) return started;
  if (stopping) {  // diverged while replaying its own log
    io.run();
    return fatal;
  }
  for (auto [listener, options] :
       {std::pair{&http_server, &plan.http}, std::pair{&https_server, &plan.https}}) {
    if (!options->has_value()) continue;
    (*options)->large_body_gate = [&api](const listen::HttpRequest& request) {
      return api.MaySendLargeBody(request) ? limits::kSnapshotBytesMax : std::size_t{0};
    };
    (*options)->parked_read = &http::Api::IsParkedRead;
    (*options)->exempt_client = [&server](const std::string& ip) {
      return server.IsMemberHost(ip);
    };
    if (Status listening = listener->Listen(**options); !listening.ok()) {
      http_server.Stop();
      server.Stop([&io] { io.stop(); });
      io.run();
      return listening;
    }
  }
  // gRPC (HTTP/2) and the JSON gateway (HTTP/1.1 and HTTP/2) on one port, as
  // etcd's; over TLS, ALPN decides (decision 0053).
  auto prepare_etcd = [&](listen::HttpServerOptions& options) {
    options.exempt_client = [&server](const std::string& ip) { return server.IsMemberHost(ip); };
    options.http2 = true;
    options.parked_read = &etcd::Gateway::IsParkedRead;
    options.large_body_gate = &etcd::Gateway::BodyBytesMax;
    options.body_too_large = &etcd::Gateway::BodyTooLarge;
    options.stream_router = [&grpc](std::shared_ptr<listen::Stream> stream) {
      grpc->Serve(std::move(stream));
    };
  };
  auto stop_all = [&] {
    http_server.Stop();
    https_server.Stop();
    etcd_server.Stop();
    server.Stop([&io] { io.stop(); });
    io.run();
  };
  // This server's etcd address as clients reach it, the TLS one first
  // (MemberList's clientURLs).
  std::string etcd_url;
  auto advertised = [&](const std::string& host, std::uint16_t port) {
    Result<HostPort> raft_address = ParseHostPort(plan.server.raft.address);
    const HostPort bound{host, port};
    return raft_address.ok() ? AdvertisedHttpAddress(bound, *raft_address) : FormatHostPort(bound);
  };
  if (plan.etcd) {
    prepare_etcd(*plan.etcd);
    if (Status listening = etcd_server.Listen(*plan.etcd); !listening.ok()) {
      if (!plan.etcd_dev_default) {
        stop_all();
        return listening;
      }
      plan.etcd_dev_skipped = "127.0.0.1:2379 is in use (" + std::string(listening.message()) +
                              "); give -grpc-addr another address";
      plan.etcd.reset();
    } else {
      etcd_url = "http://" + advertised(plan.etcd->host, etcd_server.port());
      log::Info("agent", fmt::format("serving etcd's v3 API (gRPC and its JSON gateway) on {}",
                                     FormatHostPort({plan.etcd->host, etcd_server.port()})));
    }
  }
  if (plan.etcd_tls) {
    prepare_etcd(*plan.etcd_tls);
    if (Status listening = etcd_tls_server.Listen(*plan.etcd_tls); !listening.ok()) {
      stop_all();
      return listening;
    }
    etcd_url = "https://" + advertised(plan.etcd_tls->host, etcd_tls_server.port());
    log::Info("agent",
              fmt::format("serving etcd's v3 API (gRPC and its JSON gateway) over TLS on {}{}",
                          FormatHostPort({plan.etcd_tls->host, etcd_tls_server.port()}),
                          plan.tls_files.verify_incoming ? " (client certificates required)" : ""));
  }
  if (!etcd_url.empty()) {
    etcd::GatewayOptions options;
    options.client_url = etcd_url;
    watch_hub = std::make_unique<etcd::WatchHub>(server, io);
    std::optional<tls::ClientFiles> relay_tls;
    if (!plan.tls_files.cert_file.empty()) {
      // A TLS etcd port is dialled with the cluster's CA and this server's
      // certificate, as the Consul forwarder dials HTTPS (docs/tls.md).
      relay_tls = tls::ClientFiles{};
      relay_tls->ca_file = plan.tls_files.ca_file;
      relay_tls->cert_file = plan.tls_files.cert_file;
      relay_tls->key_file = plan.tls_files.key_file;
    }
    etcd_relay = std::make_unique<etcd::LeaderRelay>(io, server, relay_tls);
    grpc =
        std::make_unique<etcd::GrpcServer>(server, io, *watch_hub, *etcd_relay, options.client_url);
    gateway = std::make_unique<etcd::Gateway>(server, *watch_hub, *etcd_relay, std::move(options));
  }
  if (plan.dev && !plan.etcd_dev_skipped.empty()) {
    log::Info("agent", "no etcd API in this dev server: " + plan.etcd_dev_skipped);
  }
  // A follower dials a leader's TLS ZooKeeper port with the cluster's CA and
  // this server's certificate, as the etcd relay dials (decision 0056,
  // "Followers"); SIGHUP makes it again.
  auto zk_leader_tls = [&plan]() {
    tls::ClientFiles dial;
    dial.ca_file = plan.tls_files.ca_file;
    dial.cert_file = plan.tls_files.cert_file;
    dial.key_file = plan.tls_files.key_file;
    return tls::Context::ForClient(dial);
  };
  if (plan.zk && !plan.tls_files.cert_file.empty()) {
    Result<std::shared_ptr<const tls::Context>> context = zk_leader_tls();
    if (!context.ok()) {
      stop_all();
      return context.status();
    }
    plan.zk->leader_tls = std::move(*context);
  }
  if (plan.zk) {
    bool clear_text_failed = false;
    Status listening = zk_port.Listen(*plan.zk, &clear_text_failed);
    if (!listening.ok() && clear_text_failed && plan.zk_dev_default) {
      // -dev's 2181 is taken: no clear-text port, the TLS one if asked.
      plan.zk_dev_skipped = "127.0.0.1:2181 is in use (" + std::string(listening.message()) + ")";
      plan.zk->clear_text = false;
      listening = plan.zk->tls ? zk_port.Listen(*plan.zk) : Status::Ok();
      if (!plan.zk->tls) plan.zk.reset();
    }
    if (!listening.ok()) {
      stop_all();
      return listening;
    }
    if (plan.zk && plan.zk->clear_text) {
      log::Info("agent", fmt::format("serving ZooKeeper's client protocol on {}",
                                     FormatHostPort({plan.zk->host, zk_port.port()})));
    }
    if (plan.zk && plan.zk->tls) {
      log::Info(
          "agent",
          fmt::format("serving ZooKeeper's client protocol over TLS on {}{}",
                      FormatHostPort({plan.zk->tls_host, zk_port.tls_port()}),
                      plan.tls_files.verify_incoming ? " (client certificates required)" : ""));
    }
  }
  if (plan.dev && !plan.zk_dev_skipped.empty()) {
    log::Info("agent", "no ZooKeeper port in this dev server: " + plan.zk_dev_skipped);
  }
  std::string api_addresses;
  if (plan.http) api_addresses = "http://" + plan.http_addr;
  if (plan.https) {
    api_addresses += (api_addresses.empty() ? "https://" : " and https://") + plan.https_addr;
    if (plan.tls_files.verify_incoming) api_addresses += " (client certificates required)";
  }
  const raft::NodeOptions& raft = plan.server.raft;
  log::Info("agent",
            fmt::format("server {} (id {}) serving the Consul API on {}, raft on {}, data in "
                        "{}{}",
                        plan.server.node_name, raft.id, api_addresses, raft.address, plan.data_dir,
                        dev_dir.made() ? " (dev mode: removed on exit)" : ""));
  if (raft.tls_accept != nullptr) {
    log::Info("agent", fmt::format("raft over mutual TLS: peers need a certificate signed by {}",
                                   plan.tls_files.ca_file));
  } else if (!plan.tls_files.cert_file.empty()) {
    log::Warn("agent",
              "WARNING: raft runs in clear: mutual TLS between servers needs "
              "-tls-ca-file (docs/tls.md)");
  }
  if (plan.insecure_keyless && !plan.dev) {
    log::Write(log::Level::kWarn, "agent",
               fmt::format("WARNING: -raft-insecure-keyless: no cluster key or mutual TLS; any "
                           "process that can reach {} can pose as a member, join this cluster, "
                           "vote and write to its log (docs/security.md)",
                           plan.raft_listen));
  }
  const server::AclConfig& acl = plan.server.acl;
  if (acl.enabled) {
    log::Write(
        log::Level::kInfo, "agent",
        fmt::format(
            "ACLs enabled, default policy {}{}",
            acl.default_policy == acl::DefaultPolicy::kDeny ? "deny" : "allow",
            acl.initial_management.empty()
                ? "; PUT /v1/acl/bootstrap (tenure acl bootstrap) makes the first management "
                  "token"
                : "; the initial management token is configured"));
  } else if (!plan.dev) {
    log::Write(
        log::Level::kWarn, "agent",
        fmt::format("WARNING: ACLs are off: anyone who can reach {} can read and write every "
                    "key, lock and session (-acl-enabled; docs/acl.md)",
                    WhoReachesTheApi(plan)));
  }
  for (const std::string& hook : plan.test_hooks) {
    log::Warn("agent",
              fmt::format("WARNING: test hook {} is set: it changes limits or behaviour for tests "
                          "and has no place in production (docs/security.md)",
                          hook));
  }
  api.Start();
  if (!plan.join.empty()) server.JoinCluster(plan.join);
  // Raft has started and the listeners accept: tell systemd (Type=notify) the
  // service is up. Without NOTIFY_SOCKET this does nothing.
  sd_notify(0, "READY=1");
  // SIGHUP reloads the certificates: new connections get them, established
  // ones and leadership are left alone; broken files keep the old ones.
  std::function<void()> await_reload = [&] {
    reload_signal.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      if (plan.tls_files.cert_file.empty()) {
        log::Info("agent", "SIGHUP: no TLS configured, nothing to reload");
      } else if (auto contexts = LoadTlsContexts(plan.tls_files); !contexts.ok()) {
        log::Warn("agent", fmt::format("SIGHUP: keeping the old TLS certificates: {}",
                                       contexts.status().message().substr(5)));  // without "TLS: "
      } else {
        if (plan.https) https_server.SetTlsContext(contexts->https);
        if (plan.etcd_tls) etcd_tls_server.SetTlsContext(contexts->https);
        if (plan.zk && plan.zk->tls) zk_port.SetTlsContext(contexts->https);
        if (plan.zk) {
          if (auto dial = zk_leader_tls(); dial.ok()) zk_port.SetLeaderTls(*dial);
        }
        if (etcd_relay != nullptr) etcd_relay->ReloadTls();
        if (contexts->raft_accept) server.SetRaftTls(contexts->raft_accept, contexts->raft_dial);
        api.ReloadTls();
        log::Info("agent", fmt::format("SIGHUP: reloaded TLS certificate {} and key {}",
                                       plan.tls_files.cert_file, plan.tls_files.key_file));
      }
      await_reload();
    });
  };
  await_reload();
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    log::Info("agent", fmt::format("signal {}, shutting down", signal));
    stop();
  });
  io.run();
  return fatal;
}

}  // namespace tenure::agent
