// Forwarder: a follower's way to the leader (decision 0008). Requests that
// Consul answers on the leader (writes, default and ?consistent reads,
// blocking ones included) are sent as received to the leader's HTTP address,
// taken from its replicated member record, with X-Tenure-Forwarded-By; the
// answer is relayed as the leader gave it (status, X-Consul-*/X-Tenure-*
// headers, body). One hop only: a server that receives a forwarded request
// and does not lead answers 500 "No cluster leader" instead of forwarding
// again, so two servers that disagree about the leader cannot loop.
//
// It also keeps this server's own member record current while it follows:
// once a second, if the record is missing or stale, it asks the leader to
// write it (PUT /v1/operator/raft/member). A leader writes its own record
// (server::Server::WriteSelfRecord).
//
// Loop thread only.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/types.h"
#include "http/request.h"

namespace boost::asio {
class io_context;
}
namespace tenure::client {
class AsyncHttpClient;
}
namespace tenure::server {
class Server;
}

namespace tenure::http {

inline constexpr char kForwardedByHeader[] = "X-Tenure-Forwarded-By";

class Forwarder {
 public:
  Forwarder(boost::asio::io_context& io, server::Server& server);
  ~Forwarder();
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // Relays `request` to the leader and its answer to `responder`; 500 "No
  // cluster leader" when the leader's address is unknown, 500 "rpc error
  // making call: ..." when the leader cannot be reached in `timeout_ms`. A
  // client that goes away cancels the forwarded request.
  void Forward(const HttpRequest& request, std::shared_ptr<Responder> responder,
               MonoMs timeout_ms);

  // Starts the once-a-second check of this server's member record.
  void Start();
  // Cancels forwarded requests (their clients get a 500) and the check.
  void Shutdown();

  std::size_t in_flight() const;

 private:
  client::AsyncHttpClient& ClientFor(const std::string& http_address);
  void ScheduleSelfRecordCheck();
  void CheckSelfRecord();

  boost::asio::io_context& io_;
  server::Server& server_;
  // One client per leader address seen; bounded by the cluster's size.
  std::map<std::string, std::unique_ptr<client::AsyncHttpClient>> clients_;
  struct Timer;
  std::unique_ptr<Timer> timer_;
  bool registering_ = false;
  bool shut_down_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tenure::http
