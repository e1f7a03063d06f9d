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

template <typename R>
Done<R> RelayReplier(std::shared_ptr<Responder> responder) {
  return [responder = std::move(responder)](Answer<R> answer) {
    std::string body;
    if (answer.error.ok()) EncodeProto(answer.response, &body);
    responder->Send(RelayAnswer(answer.error, std::move(body)));
  };
}

// Decodes the relayed request, or answers why not.
template <typename M>
bool DecodeRelayed(const HttpRequest& request, M* message, Responder& responder) {
  std::string error = DecodeProto(request.body, message);
  if (error.empty()) return true;
  responder.Send(RelayAnswer(
      etcd_texts::Error(GrpcCode::kInvalidArgument, "grpc: error unmarshalling request: " + error),
      ""));
  return false;
}

}  // namespace

RelayServer::RelayServer(server::Server& server) : kv_(server), leases_(server) {}

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
  switch (info->method) {
    case Method::kRange: {
      state::EtcdRangeRequest range;
      if (!DecodeRelayed(request, &range, *responder)) return;
      return kv_.Range(std::move(range), RelayReplier<RangeResponse>(std::move(responder)));
    }
    case Method::kPut: {
      state::EtcdPutRequest put;
      if (!DecodeRelayed(request, &put, *responder)) return;
      return kv_.Put(std::move(put), RelayReplier<PutResponse>(std::move(responder)));
    }
    case Method::kDeleteRange: {
      state::EtcdDeleteRangeRequest del;
      if (!DecodeRelayed(request, &del, *responder)) return;
      return kv_.DeleteRange(std::move(del),
                             RelayReplier<DeleteRangeResponse>(std::move(responder)));
    }
    case Method::kTxn: {
      state::EtcdTxnRequest txn;
      if (!DecodeRelayed(request, &txn, *responder)) return;
      return kv_.Txn(std::move(txn), RelayReplier<TxnResponse>(std::move(responder)));
    }
    case Method::kCompact: {
      CompactionRequest compact;
      if (!DecodeRelayed(request, &compact, *responder)) return;
      return kv_.Compact(compact, RelayReplier<CompactionResponse>(std::move(responder)));
    }
    case Method::kLeaseGrant: {
      LeaseGrantRequest grant;
      if (!DecodeRelayed(request, &grant, *responder)) return;
      return leases_.Grant(grant, RelayReplier<LeaseGrantResponse>(std::move(responder)));
    }
    case Method::kLeaseRevoke: {
      LeaseIdRequest revoke;
      if (!DecodeRelayed(request, &revoke, *responder)) return;
      return leases_.Revoke(revoke, RelayReplier<LeaseRevokeResponse>(std::move(responder)));
    }
    case Method::kLeaseKeepAlive: {
      LeaseIdRequest renew;
      if (!DecodeRelayed(request, &renew, *responder)) return;
      return leases_.KeepAlive(renew, RelayReplier<LeaseKeepAliveResponse>(std::move(responder)));
    }
    case Method::kLeaseTimeToLive: {
      LeaseTimeToLiveRequest ttl;
      if (!DecodeRelayed(request, &ttl, *responder)) return;
      return leases_.TimeToLive(ttl, RelayReplier<LeaseTimeToLiveResponse>(std::move(responder)));
    }
    default:
      return responder->Send(RelayAnswer(
          etcd_texts::Error(GrpcCode::kUnimplemented,
                            "tenure: " + std::string(info->grpc_path) + " is not relayed"),
          ""));
  }
}

}  // namespace tenure::etcd
