// etcd's gRPC services on the listener's HTTP/2 streams (decision 0048
// section 5): each stream the listener routes here (content-type
// application/grpc) is one call. Its :path names the method (grpc-go's
// answers for unknown ones), its DATA carries 5-byte-prefixed protobuf
// messages, and the answer is HEADERS, the response messages and trailers
// with grpc-status (trailers-only for an error before any answer). Unary
// calls are answered once the client ends its side with one request; a
// call with `grpc-timeout` ends DeadlineExceeded when it passes;
// LeaseKeepAlive answers each request in order while the stream is open.
// Watch streams answer through the watch hub (etcd/watch_hub.h), from this
// server's own state; the Election and Lock services through
// etcd/election_service.h (a Campaign or Lock whose call ends first gives
// its key back; Observe lasts until the client ends it). Loop thread
// only.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "etcd/election_service.h"
#include "etcd/kv_service.h"
#include "etcd/lease_service.h"
#include "etcd/watch_hub.h"
#include "listen/stream.h"

namespace tenure::etcd {

class LeaderRelay;

class GrpcServer {
 public:
  // `client_url`: this server's etcd address as clients reach it (MemberList).
  // Watch calls register their watchers in `watch_hub`, and calls that need
  // the leader go through `relay` while this server does not lead; both
  // must outlive this.
  GrpcServer(server::Server& server, boost::asio::io_context& io, WatchHub& watch_hub,
             LeaderRelay& relay, std::string client_url);
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // The listener's StreamRouter.
  void Serve(std::shared_ptr<listen::Stream> stream);

  struct Call;  // one call's state (grpc_server.cc)

 private:
  void OnMessage(const std::shared_ptr<Call>& call, std::string message);
  void OnEnd(const std::shared_ptr<Call>& call);
  void Unary(const std::shared_ptr<Call>& call, const std::string& message);
  void KeepAliveNext(const std::shared_ptr<Call>& call);

  server::Server& server_;
  boost::asio::io_context& io_;
  WatchHub& watch_hub_;
  const std::string client_url_;
  const std::uint64_t cluster_id_;
  KvService kv_;
  LeaseService leases_;
  ElectionService elections_;
  std::set<std::shared_ptr<Call>> calls_;  // until each one's stream is over
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tenure::etcd
