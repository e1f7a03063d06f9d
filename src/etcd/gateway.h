// etcd's JSON gateway (decision 0048 section 5) as a handler of the listen
// layer's requests: `POST /v3/...` (and its /v3beta/ and /v3alpha/ forms)
// decoded from the gateway's JSON, handed to the services, and answered as
// etcd 3.4's grpc-gateway writes answers and errors; `GET /version` and
// `GET /health` as etcd's own HTTP handlers answer them. A keep-alive's
// body of one or more requests is answered with one `{"result": ...}` line
// each, in order, once they are all renewed (the body has ended, as a
// client's that sends its requests and reads). Watch and Observe answer
// Unimplemented until the watch hub comes. Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/kv_service.h"
#include "etcd/lease_service.h"
#include "listen/request.h"

namespace tenure::server {
class Server;
}

namespace tenure::etcd {

struct GatewayOptions {
  // This server's etcd address as clients reach it ("http://127.0.0.1:2379"),
  // which MemberList reports as its clientURLs.
  std::string client_url;
};

class Gateway {
 public:
  Gateway(server::Server& server, GatewayOptions options);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  void Handle(listen::HttpRequest request, std::shared_ptr<listen::Responder> responder);

 private:
  void Version(const listen::HttpRequest& request, listen::Responder& responder) const;
  void Health(const listen::HttpRequest& request, listen::Responder& responder) const;
  void Status(const listen::HttpRequest& request, listen::Responder& responder) const;
  void MemberList(const listen::HttpRequest& request, listen::Responder& responder) const;
  void KeepAlive(const listen::HttpRequest& request, std::shared_ptr<listen::Responder> responder);
  struct KeepAliveRun;
  void RenewNext(std::shared_ptr<KeepAliveRun> run);

  server::Server& server_;
  const GatewayOptions options_;
  const std::uint64_t cluster_id_;
  KvService kv_;
  LeaseService leases_;
};

// Keep-alive requests in one gateway body (a client stream sent whole over
// HTTP/1.1), each a renewal answered in order (docs/limits.md).
inline constexpr std::size_t kKeepAlivesPerBody = 1024;

// The JSON values of a stream's body, one after another (grpc-gateway
// reads a client stream so): each top-level object's text, at most
// `max_values`. Empty, with *error set, when the body is not a sequence of
// objects or holds more.
std::vector<std::string_view> SplitJsonObjects(std::string_view body, std::size_t max_values,
                                               std::string* error);

}  // namespace tenure::etcd
