// A follower's way to the leader for etcd calls (decision 0055). etcd's
// members answer every client: serializable reads from their own state, and
// writes, linearizable reads and lease calls through the leader. The
// services (KvService, LeaseService) hand such a call to the relay when this
// server does not lead; it goes, as the protobuf request the gRPC method
// takes, in one HTTP/1.1 `POST /tenure/relay/<gRPC method>` to the leader's
// etcd port (its replicated member record, else its raft handshake), with
// X-Tenure-Forwarded-By. The leader runs it on services that never relay
// (one hop, so two servers that disagree about the leader cannot loop) and
// answers the protobuf response with the call's grpc-status. Watches,
// Observe and the waits of Campaign and Lock stay on the follower, on its
// own state; only the writes they make go through here.
//
// Errors, so that clients retry where etcd's would: no leader known
// ("etcdserver: no leader"), a leader that no longer leads ("etcdserver:
// leader changed"), one that cannot be reached or has no etcd address yet
// (Unavailable, saying which), no answer in time ("etcdserver: request
// timed out"); all Unavailable, which clientv3 retries.
//
// Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/etcd_texts.h"
#include "etcd/kv_service.h"
#include "etcd/proto_codec.h"
#include "etcd/routes.h"
#include "tls/context.h"

namespace boost::asio {
class io_context;
}
namespace tenure::net {
class HttpClient;
}
namespace tenure::server {
class Server;
}

namespace tenure::etcd {

// The path prefix of relayed calls on the etcd port; the gRPC method follows.
inline constexpr std::string_view kRelayPathPrefix = "/tenure/relay";
inline constexpr char kRelayContentType[] = "application/x-protobuf";
inline constexpr char kRelayForwardedByHeader[] = "X-Tenure-Forwarded-By";
// etcd's request timeout (5 s) and two election timeouts' slack.
inline constexpr std::int64_t kRelayTimeoutMs = 7'000;

class LeaderRelay {
 public:
  // `tls`: the CA and this server's certificate for a leader whose etcd
  // address is a TLS port (https://...); none: the system's CAs, no
  // certificate.
  LeaderRelay(boost::asio::io_context& io, server::Server& server,
              std::optional<tls::ClientFiles> tls = std::nullopt);
  ~LeaderRelay();
  LeaderRelay(const LeaderRelay&) = delete;
  LeaderRelay& operator=(const LeaderRelay&) = delete;

  // True while calls that need the leader go through the relay: this
  // server does not lead.
  bool Relays() const;

  // Sends `request` as `method` to the leader with the client's `token`
  // (the leader resolves and checks it again); `done` gets its answer.
  template <typename Request, typename Response>
  void Call(Method method, std::string_view token, const Request& request, Done<Response> done) {
    std::string bytes;
    EncodeProto(request, &bytes);
    Send(method, token, std::move(bytes),
         [done = std::move(done)](etcd_texts::EtcdError error, std::string answer) {
           Answer<Response> out;
           out.error = std::move(error);
           if (out.error.ok()) {
             if (std::string bad = DecodeProto(answer, &out.response); !bad.empty()) {
               out.error = etcd_texts::Error(etcd_texts::GrpcCode::kInternal,
                                             "tenure: the leader's relayed answer: " + bad);
             }
           }
           done(std::move(out));
         });
  }

  // Cancels the relayed calls in flight (their callers get an error).
  void Shutdown();
  // The TLS files changed (SIGHUP): later calls use clients that read them
  // again; the current ones finish first.
  void ReloadTls();
  std::size_t in_flight() const;

 private:
  using Reply = std::function<void(etcd_texts::EtcdError, std::string)>;
  void Send(Method method, std::string_view token, std::string body, Reply reply);
  net::HttpClient& ClientFor(const std::string& address);

  boost::asio::io_context& io_;
  server::Server& server_;
  const std::optional<tls::ClientFiles> tls_;
  // One client per leader address seen; bounded by the cluster's size.
  std::map<std::string, std::unique_ptr<net::HttpClient>> clients_;
  // Replaced by ReloadTls; dropped once they have nothing in flight.
  std::vector<std::unique_ptr<net::HttpClient>> retired_;
  bool shut_down_ = false;
};

// The answer of a relayed call as the leader writes it: its grpc-status
// and, when not OK, grpc-message (percent-encoded) as headers.
inline constexpr char kRelayStatusHeader[] = "grpc-status";
inline constexpr char kRelayMessageHeader[] = "grpc-message";

}  // namespace tenure::etcd
