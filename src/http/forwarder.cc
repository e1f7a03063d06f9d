#include "http/forwarder.h"

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/consul_texts.h"
#include "common/strings.h"
#include "net/http_client.h"
#include "server/server.h"

namespace tenure::http {
namespace {

constexpr std::int64_t kConnectTimeoutMs = 2'000;

// Go's canonical header form (x-consul-knownleader -> X-Consul-Knownleader),
// which is what a Consul client sees from Consul's own Go server.
std::string CanonicalHeader(const std::string& lower) {
  std::string out = lower;
  bool upper = true;
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    upper = c == '-';
  }
  return out;
}

bool Relayed(const std::string& lower_name) {
  return StartsWith(lower_name, "x-consul-") || StartsWith(lower_name, "x-tenure-") ||
         lower_name == "allow" || lower_name == "location";
}

}  // namespace

Forwarder::Forwarder(boost::asio::io_context& io, server::Server& server)
    : io_(io), server_(server) {}

Forwarder::~Forwarder() {
  *alive_ = false;
  Shutdown();
}

net::HttpClient& Forwarder::ClientFor(const std::string& http_address) {
  auto& slot = clients_[http_address];
  if (!slot) {
    net::HttpClientOptions options;
    options.addresses = {http_address};
    options.connect_timeout_ms = kConnectTimeoutMs;
    // Enough idle connections that a burst of forwarded writes reuses them.
    options.max_idle_per_address = 64;
    // Servers that serve HTTPS forward over it, checking the leader's
    // certificate and presenting their own (docs/tls.md).
    if (server_.options().forward_tls) {
      options.tls.files = *server_.options().forward_tls;
      options.tls.by_default = true;
    }
    slot = std::make_unique<net::HttpClient>(io_, std::move(options));
  }
  return *slot;
}

void Forwarder::Forward(const HttpRequest& request, std::shared_ptr<Responder> responder,
                        DurationMs timeout_ms) {
  const server::Server::LeaderRoute leader = server_.RouteToLeader();
  if (shut_down_ || leader.id == 0 || leader.id == server_.NodeId()) {
    responder->Send(HttpResponse::Text(500, std::string(consul::kNoClusterLeader)));
    return;
  }
  if (leader.http_address.empty()) {
    // There is a leader; this server cannot reach it yet (no record, no
    // handshake from it). Clients retry a 500, as they do "No cluster leader".
    responder->Send(HttpResponse::Text(500, "rpc error making call: the leader (server " +
                                                std::to_string(leader.id) +
                                                ") has not yet told this server its HTTP address"));
    return;
  }
  net::HttpCall call;
  call.method = request.method;
  call.target = request.target;
  call.body = request.body;
  call.timeout_ms = timeout_ms;
  call.retry = net::RetryPolicy::None();  // the client retries, not us
  for (const auto& [name, value] : request.headers) {
    // Hop-by-hop and per-connection headers are the transport's business.
    if (name == "host" || name == "connection" || name == "content-length" ||
        name == "transfer-encoding" || name == "keep-alive" || name == "user-agent") {
      continue;
    }
    call.headers.emplace_back(name, value);
  }
  call.headers.emplace_back(kForwardedByHeader, std::to_string(server_.NodeId()));

  std::erase_if(retired_, [](const auto& http) { return http->in_flight() == 0; });
  std::string where = leader.http_address;
  net::HttpClient& http = ClientFor(where);
  net::RequestId id =
      http.Request(std::move(call), [responder, where](Result<net::ClientResponse> result) {
        if (!result.ok()) {
          responder->Send(
              HttpResponse::Text(500, "rpc error making call: forwarding to the leader at " +
                                          where + ": " + std::string(result.status().message())));
          return;
        }
        HttpResponse response;
        response.status = result->status;
        response.content_type = result->Header("content-type");
        for (const auto& [name, value] : result->headers) {
          if (Relayed(name)) response.headers.emplace_back(CanonicalHeader(name), value);
        }
        response.body = std::move(result->body);
        responder->Send(std::move(response));
      });
  // A client that hangs up (say, a blocking query's) frees the leader's slot.
  std::weak_ptr<bool> alive = alive_;
  responder->OnClose([this, alive, where, id] {
    if (alive.expired() || !*alive.lock()) return;
    auto it = clients_.find(where);
    if (it != clients_.end()) it->second->Cancel(id);
  });
}

void Forwarder::ReloadTls() {
  for (auto& [address, http] : clients_) retired_.push_back(std::move(http));
  clients_.clear();
}

void Forwarder::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& [address, http] : clients_) http->Shutdown();
  for (auto& http : retired_) http->Shutdown();
}

std::size_t Forwarder::in_flight() const {
  std::size_t n = 0;
  for (const auto& [address, http] : clients_) n += http->in_flight();
  return n;
}

}  // namespace tenure::http
