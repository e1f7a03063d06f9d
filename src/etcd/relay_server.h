// The leader's side of LeaderRelay (decision 0055): a relayed call, `POST
// /tenure/relay/<gRPC method>` on the etcd port with the method's protobuf
// request, run on a KvService and LeaseService that never relay (one hop),
// and answered 200 with the protobuf response and its grpc-status (and
// grpc-message) as headers. Only the methods a follower relays are taken
// (KV's, Lease's unary ones and one keep-alive); any other answers
// Unimplemented. Who may call it: whoever may call the same gRPC method on
// this port; it carries no privilege of its own: the token the follower
// forwards (its client's) is resolved and checked here as if the client had
// sent the call here (docs/security.md). Loop thread only.
#pragma once

#include <memory>

#include "etcd/kv_service.h"
#include "etcd/lease_service.h"
#include "listen/request.h"

namespace tenure::etcd {

class RelayServer {
 public:
  explicit RelayServer(server::Server& server);
  RelayServer(const RelayServer&) = delete;
  RelayServer& operator=(const RelayServer&) = delete;

  // Whether `path` is a relayed call's.
  static bool IsRelayPath(std::string_view path);
  void Handle(const listen::HttpRequest& request, std::shared_ptr<listen::Responder> responder);

 private:
  server::Server& server_;
  KvService kv_;
  LeaseService leases_;
};

}  // namespace tenure::etcd
