#include "etcd/leader_relay.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <charconv>

#include "etcd/grpc_wire.h"
#include "net/http_client.h"
#include "server/server.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;

namespace {

constexpr std::int64_t kConnectTimeoutMs = 2'000;

EtcdError Unreachable(const std::string& why) {
  return etcd_texts::Error(GrpcCode::kUnavailable, "tenure: relaying to the leader: " + why);
}

}  // namespace

LeaderRelay::LeaderRelay(boost::asio::io_context& io, server::Server& server,
                         std::optional<tls::ClientFiles> tls)
    : io_(io), server_(server), tls_(std::move(tls)) {}

LeaderRelay::~LeaderRelay() { Shutdown(); }

bool LeaderRelay::Relays() const { return !server_.IsLeader(); }

net::HttpClient& LeaderRelay::ClientFor(const std::string& address) {
  auto& slot = clients_[address];
  if (!slot) {
    net::HttpClientOptions options;
    options.addresses = {address};
    options.connect_timeout_ms = kConnectTimeoutMs;
    // Enough idle connections that a burst of relayed writes reuses them.
    options.max_idle_per_address = 64;
    // An https:// address is dialled over TLS, checking the leader's
    // certificate against the CA and presenting this server's.
    if (tls_.has_value()) options.tls.files = *tls_;
    slot = std::make_unique<net::HttpClient>(io_, std::move(options));
  }
  return *slot;
}

void LeaderRelay::Send(Method method, std::string_view token, std::string body, Reply reply) {
  const server::Server::LeaderRoute leader = server_.RouteToLeader();
  if (shut_down_) return reply(etcd_texts::Stopped(), "");
  if (leader.id == 0) return reply(etcd_texts::NoLeader(), "");
  if (leader.id == server_.NodeId()) return reply(etcd_texts::LeaderChanged(), "");
  if (leader.etcd_address.empty()) {
    // A leader whose record is not written yet, or one that serves no etcd
    // API (a member started without -grpc-addr, or with port 0).
    return reply(Unreachable("the leader (server " + std::to_string(leader.id) +
                             ") has not told this server an etcd address"),
                 "");
  }
  net::HttpCall call;
  call.method = "POST";
  call.target = std::string(kRelayPathPrefix);
  call.target += InfoOf(method).grpc_path;
  call.body = std::move(body);
  call.timeout_ms = kRelayTimeoutMs;
  call.retry = net::RetryPolicy::None();  // the client retries, not us
  call.headers.emplace_back("content-type", kRelayContentType);
  call.headers.emplace_back(kRelayForwardedByHeader, std::to_string(server_.NodeId()));
  if (!token.empty()) {
    // Resolved here already, so a real token; anything that could not be
    // one header value is refused rather than written into the request.
    if (!std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; })) {
      return reply(etcd_texts::Error(GrpcCode::kUnauthenticated, "etcdserver: invalid auth token"),
                   "");
    }
    call.headers.emplace_back("token", std::string(token));
  }
  const std::string where = leader.etcd_address;
  std::erase_if(retired_, [](const auto& http) { return http->in_flight() == 0; });
  ClientFor(where).Request(std::move(call), [where, reply = std::move(reply)](
                                                Result<net::ClientResponse> result) {
    if (!result.ok()) {
      if (result.status().code() == Code::kTimeout) return reply(etcd_texts::RequestTimeout(), "");
      return reply(Unreachable(where + ": " + std::string(result.status().message())), "");
    }
    if (result->status != 200) {
      return reply(Unreachable(where + " answered HTTP " + std::to_string(result->status)), "");
    }
    const std::string status = result->Header(kRelayStatusHeader);
    int code = -1;
    const auto [end, parsed] = std::from_chars(status.data(), status.data() + status.size(), code);
    if (parsed != std::errc() || end != status.data() + status.size() || code < 0 || code > 16) {
      return reply(Unreachable(where + " answered without a grpc-status"), "");
    }
    if (code != 0) {
      EtcdError error =
          etcd_texts::Error(static_cast<GrpcCode>(code),
                            PercentDecodeGrpcMessage(result->Header(kRelayMessageHeader)));
      // The leader lost its office between our look and its answer:
      // clients retry this one (they do not retry "not leader").
      if (error == etcd_texts::NotLeader()) error = etcd_texts::LeaderChanged();
      return reply(std::move(error), "");
    }
    reply({}, std::move(result->body));
  });
}

void LeaderRelay::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& [address, http] : clients_) http->Shutdown();
  for (auto& http : retired_) http->Shutdown();
}

void LeaderRelay::ReloadTls() {
  for (auto& [address, http] : clients_) retired_.push_back(std::move(http));
  clients_.clear();
}

std::size_t LeaderRelay::in_flight() const {
  std::size_t n = 0;
  for (const auto& [address, http] : clients_) n += http->in_flight();
  return n;
}

}  // namespace tenure::etcd
