// Forwarder: a follower's way to the leader (decision 0008). Requests that
// Consul answers on the leader (writes, default and ?consistent reads,
// blocking ones included) are sent as received to the leader's HTTP address,
// taken from its replicated member record, with X-Tenure-Forwarded-By; the
// answer is relayed as the leader gave it (status, X-Consul-*/X-Tenure-*
// headers, body). One hop only: a server that receives a forwarded request
// and does not lead answers 500 "No cluster leader" instead of forwarding
// again, so two servers that disagree about the leader cannot loop.
//
// Member records are written by the leader only: its own, and the others'
// from what each said in its authenticated raft handshake (decision 0012).
//
// Loop thread only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/types.h"
#include "http/listen_types.h"

namespace boost::asio {
class io_context;
}
namespace tenure::net {
class HttpClient;
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
               DurationMs timeout_ms);

  // Cancels forwarded requests (their clients get a 500).
  void Shutdown();

  // The TLS files changed (SIGHUP): later forwards use clients that read
  // them again; the current ones finish their requests first.
  void ReloadTls();

  std::size_t in_flight() const;

 private:
  net::HttpClient& ClientFor(const std::string& http_address);

  boost::asio::io_context& io_;
  server::Server& server_;
  // One client per leader address seen; bounded by the cluster's size.
  std::map<std::string, std::unique_ptr<net::HttpClient>> clients_;
  // Replaced by ReloadTls; dropped once they have nothing in flight.
  std::vector<std::unique_ptr<net::HttpClient>> retired_;
  bool shut_down_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tenure::http
