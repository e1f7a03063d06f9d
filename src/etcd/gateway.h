// etcd's JSON gateway (decision 0048 section 5) as a handler of the listen
// layer's requests: `POST /v3/...` (and its /v3beta/ and /v3alpha/ forms)
// decoded from the gateway's JSON, handed to the services, and answered as
// etcd 3.4's grpc-gateway writes answers and errors; `GET /version` and
// `GET /health` as etcd's own HTTP handlers answer them. A keep-alive's
// body of one or more requests is answered with one `{"result": ...}` line
// each, in order, once they are all renewed (the body has ended, as a
// client's that sends its requests and reads). Watch and Observe are
// streamed answers (listen::Responder::StartStream) of one `{"result": ...}`
// line per message, as grpc-gateway writes them, until the client goes; a
// Campaign or Lock whose client goes first gives its key back. Loop thread
// only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/election_service.h"
#include "etcd/kv_service.h"
#include "etcd/lease_service.h"
#include "etcd/relay_server.h"
#include "etcd/watch_hub.h"
#include "listen/request.h"

namespace tenure::server {
class Server;
}

namespace tenure::etcd {

class LeaderRelay;

struct GatewayOptions {
  // This server's etcd address as clients reach it ("http://127.0.0.1:2379"),
  // which MemberList reports as its clientURLs.
  std::string client_url;
};

class Gateway {
 public:
  // Watch requests register their watchers in `watch_hub`, and calls that
  // need the leader go through `relay` while this server does not lead; both
  // must outlive this. Relayed calls from followers (RelayServer) come in
  // here too.
  Gateway(server::Server& server, WatchHub& watch_hub, LeaderRelay& relay, GatewayOptions options);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  void Handle(listen::HttpRequest request, std::shared_ptr<listen::Responder> responder);
  // The listener's ParkedReadRule: Campaign and Lock wait for their turn,
  // and a client that goes away meanwhile must be noticed (its key is
  // given back), as for a Consul blocking query.
  static bool IsParkedRead(const listen::HttpRequest& request);
  // The listener's LargeBodyGate: a POST to the gateway or to the
  // followers' relay may carry limits::kEtcdGatewayBodyBytesMax (a request
  // of gRPC's largest message, as base64 JSON); anything else the usual
  // limit.
  static std::size_t BodyBytesMax(const listen::HttpRequest& request);
  // The listener's BodyTooLargeAnswer: etcd's answer to a message past
  // gRPC's limit, as its gateway relays it (429, ResourceExhausted).
  static listen::HttpResponse BodyTooLarge(std::uint64_t bytes, std::size_t max);

 private:
  void Version(const listen::HttpRequest& request, listen::Responder& responder) const;
  void Health(const listen::HttpRequest& request, listen::Responder& responder) const;
  void Status(const listen::HttpRequest& request, listen::Responder& responder) const;
  void MemberList(const listen::HttpRequest& request, listen::Responder& responder) const;
  void KeepAlive(const Client& client, const listen::HttpRequest& request,
                 std::shared_ptr<listen::Responder> responder);
  struct KeepAliveRun;
  void RenewNext(std::shared_ptr<KeepAliveRun> run);
  // Watch and Observe: streamed answers, one {"result": ...} line each.
  class StreamRun;
  void ServeWatch(const Client& client, const listen::HttpRequest& request,
                  std::shared_ptr<listen::Responder> responder);
  void ServeObserve(const Client& client, const listen::HttpRequest& request,
                    std::shared_ptr<listen::Responder> responder);
  StreamRun& Open(std::shared_ptr<listen::Responder> responder);

  server::Server& server_;
  WatchHub& watch_hub_;
  const GatewayOptions options_;
  const std::uint64_t cluster_id_;
  KvService kv_;
  LeaseService leases_;
  ElectionService elections_;
  RelayServer relay_server_;
  std::map<StreamRun*, std::unique_ptr<StreamRun>> streams_;  // until each client goes
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Keep-alive requests in one gateway body (a client stream sent whole over
// HTTP/1.1), each a renewal answered in order (docs/limits.md).
inline constexpr std::size_t kKeepAlivesPerBody = 1024;
// Watch requests in one gateway body (creates, cancels, progress requests).
inline constexpr std::size_t kWatchRequestsPerBody = 1024;

// The JSON values of a stream's body, one after another (grpc-gateway
// reads a client stream so): each top-level object's text, at most
// `max_values`. Empty, with *error set, when the body is not a sequence of
// objects or holds more.
std::vector<std::string_view> SplitJsonObjects(std::string_view body, std::size_t max_values,
                                               std::string* error);

}  // namespace tenure::etcd
