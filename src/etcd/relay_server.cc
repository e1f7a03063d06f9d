#include "etcd/relay_server.h"

#include <string>

#include "etcd/grpc_wire.h"
#include "etcd/leader_relay.h"
#include "etcd/proto_codec.h"
#include "etcd/routes.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;
using listen::HttpRequest;
using listen::HttpResponse;
using listen::Responder;

namespace {

HttpResponse RelayAnswer(const EtcdError& error, std::string body) {
  HttpResponse response;
  response.content_type = kRelayContentType;
  response.headers.emplace_back(kRelayStatusHeader, std::to_string(static_cast<int>(error.code)));
  if (!error.ok()) {
    response.headers.emplace_back(kRelayMessageHeader, PercentEncodeGrpcMessage(error.message));
  }
  response.body = std::move(body);
  return response;
}

// Decodes the relayed request for `call` on `service` and runs it, its answer
// (or why the bytes were refused) sent back as the relay writes answers.
template <typename Service, typename Request, typename Response>
void Run(Service& service, void (Service::*call)(const Client&, Request, Done<Response>),
         const Client& client, const HttpRequest& request, std::shared_ptr<Responder> responder) {
  Request message;
  if (std::string error = DecodeProto(request.body, &message); !error.empty()) {
    return responder->Send(
        RelayAnswer(etcd_texts::Error(GrpcCode::kInvalidArgument,
                                      "grpc: error unmarshalling request: " + error),
                    ""));
  }
  (service.*call)(client, std::move(message),
                  [responder = std::move(responder)](Answer<Response> answer) {
                    std::string body;
                    if (answer.error.ok()) EncodeProto(answer.response, &body);
                    responder->Send(RelayAnswer(answer.error, std::move(body)));
                  });
}

}  // namespace

RelayServer::RelayServer(server::Server& server) : server_(server), kv_(server), leases_(server) {}

bool RelayServer::IsRelayPath(std::string_view path) {
  return path.starts_with(kRelayPathPrefix) && path.size() > kRelayPathPrefix.size() &&
         path[kRelayPathPrefix.size()] == '/';
}

void RelayServer::Handle(const HttpRequest& request, std::shared_ptr<Responder> responder) {
  if (request.method != "POST") {
    return responder->Send(HttpResponse::Text(405, "tenure: relayed etcd calls are POST\n"));
  }
  EtcdError error;
  const MethodInfo* info =
      FindGrpcMethod(std::string_view(request.path).substr(kRelayPathPrefix.size()), &error);
  if (info == nullptr) return responder->Send(RelayAnswer(error, ""));
  // The follower checked nothing: the call is decided here, with the token
  // its client sent, as if sent here.
  Client client;
  if (error = ResolveClient(server_, TokenOf(request), &client); !error.ok()) {
    return responder->Send(RelayAnswer(error, ""));
  }
  switch (info->method) {
    case Method::kRange:
      return Run(kv_, &KvService::Range, client, request, std::move(responder));
    case Method::kPut:
      return Run(kv_, &KvService::Put, client, request, std::move(responder));
    case Method::kDeleteRange:
      return Run(kv_, &KvService::DeleteRange, client, request, std::move(responder));
    case Method::kTxn:
      return Run(kv_, &KvService::Txn, client, request, std::move(responder));
    case Method::kCompact:
      return Run(kv_, &KvService::Compact, client, request, std::move(responder));
    case Method::kLeaseGrant:
      return Run(leases_, &LeaseService::Grant, client, request, std::move(responder));
    case Method::kLeaseRevoke:
      return Run(leases_, &LeaseService::Revoke, client, request, std::move(responder));
    case Method::kLeaseKeepAlive:
      return Run(leases_, &LeaseService::KeepAlive, client, request, std::move(responder));
    case Method::kLeaseTimeToLive:
      return Run(leases_, &LeaseService::TimeToLive, client, request, std::move(responder));
    default:
      return responder->Send(RelayAnswer(
          etcd_texts::Error(GrpcCode::kUnimplemented,
                            "tenure: " + std::string(info->grpc_path) + " is not relayed"),
          ""));
  }
}

}  // namespace tenure::etcd
