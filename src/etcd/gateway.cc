#include "etcd/gateway.h"

#include <string>
#include <utility>

#include "common/limits.h"
#include "etcd/cluster_info.h"
#include "etcd/grpc_wire.h"
#include "etcd/json_codec.h"
#include "etcd/messages_services.h"
#include "etcd/proto_codec.h"
#include "etcd/routes.h"
#include "server/health.h"
#include "server/server.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;
using listen::HttpRequest;
using listen::HttpResponse;
using listen::Responder;

namespace {

// Go's http.Error: a text body with a newline, as etcd's handlers and the
// gateway's mux answer what they do not route.
HttpResponse GoHttpError(int status, std::string text) {
  HttpResponse response = HttpResponse::Text(status, std::move(text) + "\n");
  response.content_type = "text/plain; charset=utf-8";
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return response;
}

HttpResponse MethodNotAllowed(std::string_view allow) {
  HttpResponse response = GoHttpError(405, "Method Not Allowed");
  if (!allow.empty()) response.headers.emplace_back("Allow", std::string(allow));
  return response;
}

HttpResponse ErrorAnswer(const EtcdError& error) {
  return HttpResponse::Json(GatewayErrorBody(error), HttpStatusFromGrpcCode(error.code));
}

template <typename M>
HttpResponse JsonAnswer(const M& message) {
  std::string body;
  EncodeJson(message, &body);
  return HttpResponse::Json(std::move(body));
}

// Sends an Answer<Response> from a service: the message, or its error.
template <typename R>
Done<R> Replier(std::shared_ptr<Responder> responder) {
  return [responder = std::move(responder)](Answer<R> answer) {
    if (!answer.error.ok()) return responder->Send(ErrorAnswer(answer.error));
    responder->Send(JsonAnswer(answer.response));
  };
}

// Decodes the request body as the gateway does: an empty body is the empty
// request (Go's decoder reports EOF, which the gateway accepts); anything
// else must be one JSON object of the request's fields.
template <typename M>
bool DecodeBody(const HttpRequest& request, M* message, Responder& responder) {
  if (request.body.find_first_not_of(" \t\r\n") == std::string::npos) return true;
  std::string error = DecodeJson(request.body, message);
  if (!error.empty()) {
    responder.Send(ErrorAnswer(etcd_texts::Error(GrpcCode::kInvalidArgument, error)));
    return false;
  }
  // The gateway hands the decoded request to etcd's server as a gRPC
  // message, which passes gRPC's limit or not.
  if (const std::size_t bytes = ProtoSize(*message); bytes > kMaxGrpcMessageBytes) {
    responder.Send(ErrorAnswer(MessageLargerThanMax(std::to_string(bytes))));
    return false;
  }
  return true;
}

}  // namespace

Gateway::Gateway(server::Server& server, WatchHub& watch_hub, LeaderRelay& relay,
                 GatewayOptions options)
    : server_(server),
      watch_hub_(watch_hub),
      options_(std::move(options)),
      cluster_id_(ClusterIdOf(server)),
      kv_(server, &relay),
      leases_(server, &relay),
      elections_(server, kv_),
      relay_server_(server) {}

Gateway::~Gateway() {
  *alive_ = false;
  streams_.clear();  // their watchers leave the hub now
}

// A streamed answer's messages as grpc-gateway writes them: one
// {"result": ...} object and a newline each.
class Gateway::StreamRun final : public WatchSink {
 public:
  explicit StreamRun(std::shared_ptr<Responder> responder) : responder_(std::move(responder)) {
    responder_->StartStream(200, {{"Content-Type", "application/json"}});
  }
  template <typename M>
  void SendResult(const M& message) {
    std::string line = "{\"result\":";
    EncodeJson(message, &line);
    line += "}\n";
    responder_->SendChunk(line);
  }
  void Send(const WatchResponse& response) override { SendResult(response); }
  std::size_t unsent_bytes() const override { return responder_->unsent_bytes(); }
  void OnDrained(std::function<void()> callback) override {
    responder_->OnDrained(std::move(callback));
  }

 private:
  std::shared_ptr<Responder> responder_;  // first: `watch` uses it until it goes

 public:
  std::unique_ptr<WatchStream> watch;
  std::uint64_t observer_id = 0;
};

void Gateway::ServeWatch(const Client& client, const HttpRequest& request,
                         std::shared_ptr<Responder> responder) {
  std::string error;
  const std::vector<std::string_view> values =
      SplitJsonObjects(request.body, kWatchRequestsPerBody, &error);
  std::vector<WatchRequest> requests;
  for (std::string_view value : values) {
    if (!error.empty()) break;
    error = DecodeJson(value, &requests.emplace_back());
  }
  if (!error.empty()) {
    return responder->Send(ErrorAnswer(etcd_texts::Error(GrpcCode::kInvalidArgument, error)));
  }
  StreamRun& run = Open(std::move(responder));
  run.watch = std::make_unique<WatchStream>(watch_hub_, run, client);
  for (const WatchRequest& one : requests) run.watch->Handle(one);
}

void Gateway::ServeObserve(const Client& client, const HttpRequest& request,
                           std::shared_ptr<Responder> responder) {
  NameRequest name;
  if (!DecodeBody(request, &name, *responder)) return;
  // Refused before the streamed answer starts, as an error answer.
  if (EtcdError denied = MayObserve(client.can(), name.name); !denied.ok()) {
    return responder->Send(ErrorAnswer(denied));
  }
  StreamRun& run = Open(std::move(responder));
  EtcdError refused;
  run.observer_id = elections_.Observe(
      client, std::move(name), [&run](const LeaderResponse& leader) { run.SendResult(leader); },
      &refused);
}

Gateway::StreamRun& Gateway::Open(std::shared_ptr<Responder> responder) {
  auto run = std::make_unique<StreamRun>(responder);
  StreamRun* raw = run.get();
  streams_.emplace(raw, std::move(run));
  std::weak_ptr<bool> alive = alive_;
  // A stream lasts until its client goes (etcd's watch never ends it).
  responder->OnClose([this, alive, raw] {
    if (alive.expired()) return;
    auto it = streams_.find(raw);
    if (it == streams_.end()) return;
    if (it->second->observer_id != 0) elections_.StopObserving(it->second->observer_id);
    streams_.erase(it);
  });
  return *raw;
}

bool Gateway::IsParkedRead(const HttpRequest& request) {
  if (request.method == "GET" || request.method == "HEAD") return true;
  const MethodInfo* info = FindGatewayMethod(request.path);
  return info != nullptr && (info->method == Method::kCampaign || info->method == Method::kLock);
}

std::size_t Gateway::BodyBytesMax(const HttpRequest& request) {
  if (request.method != "POST") return 0;
  const std::string_view path =
      std::string_view(request.target).substr(0, request.target.find('?'));
  if (path.starts_with("/v3") || RelayServer::IsRelayPath(path)) {
    return limits::kEtcdGatewayBodyBytesMax;
  }
  return 0;
}

HttpResponse Gateway::BodyTooLarge(std::uint64_t bytes, std::size_t max) {
  // The message's own size is not known unread; the body's stands for it.
  return ErrorAnswer(
      MessageLargerThanMax(bytes > 0 ? std::to_string(bytes) + " bytes of JSON"
                                     : "a body past " + std::to_string(max) + " bytes of JSON"));
}

void Gateway::Handle(HttpRequest request, std::shared_ptr<Responder> responder) {
  if (request.path == "/version") return Version(request, *responder);
  if (request.path == "/health") return Health(request, *responder);
  if (RelayServer::IsRelayPath(request.path)) {
    return relay_server_.Handle(request, std::move(responder));
  }
  const MethodInfo* info = FindGatewayMethod(request.path);
  if (info == nullptr) return responder->Send(GoHttpError(404, "Not Found"));
  // The gateway registers every method for POST only; another verb on a
  // known path is grpc-gateway's 405.
  if (request.method != "POST") return responder->Send(MethodNotAllowed(""));
  if (!info->served) return responder->Send(ErrorAnswer(NotServed(*info)));
  Client client;
  if (!OpenToAnyone(info->method)) {
    if (EtcdError error = ResolveClient(server_, TokenOf(request), &client); !error.ok()) {
      return responder->Send(ErrorAnswer(error));
    }
  }

  switch (info->method) {
    case Method::kRange: {
      state::EtcdRangeRequest range;
      if (!DecodeBody(request, &range, *responder)) return;
      return kv_.Range(client, std::move(range), Replier<RangeResponse>(std::move(responder)));
    }
    case Method::kPut: {
      state::EtcdPutRequest put;
      if (!DecodeBody(request, &put, *responder)) return;
      return kv_.Put(client, std::move(put), Replier<PutResponse>(std::move(responder)));
    }
    case Method::kDeleteRange: {
      state::EtcdDeleteRangeRequest del;
      if (!DecodeBody(request, &del, *responder)) return;
      return kv_.DeleteRange(client, std::move(del),
                             Replier<DeleteRangeResponse>(std::move(responder)));
    }
    case Method::kTxn: {
      state::EtcdTxnRequest txn;
      if (!DecodeBody(request, &txn, *responder)) return;
      return kv_.Txn(client, std::move(txn), Replier<TxnResponse>(std::move(responder)));
    }
    case Method::kCompact: {
      CompactionRequest compact;
      if (!DecodeBody(request, &compact, *responder)) return;
      return kv_.Compact(client, compact, Replier<CompactionResponse>(std::move(responder)));
    }
    case Method::kLeaseGrant: {
      LeaseGrantRequest grant;
      if (!DecodeBody(request, &grant, *responder)) return;
      return leases_.Grant(client, grant, Replier<LeaseGrantResponse>(std::move(responder)));
    }
    case Method::kLeaseRevoke: {
      LeaseIdRequest revoke;
      if (!DecodeBody(request, &revoke, *responder)) return;
      return leases_.Revoke(client, revoke, Replier<LeaseRevokeResponse>(std::move(responder)));
    }
    case Method::kLeaseTimeToLive: {
      LeaseTimeToLiveRequest ttl;
      if (!DecodeBody(request, &ttl, *responder)) return;
      return leases_.TimeToLive(client, ttl,
                                Replier<LeaseTimeToLiveResponse>(std::move(responder)));
    }
    case Method::kLeaseLeases: {
      Empty none;
      if (!DecodeBody(request, &none, *responder)) return;
      return Replier<LeaseLeasesResponse>(std::move(responder))(leases_.Leases(client));
    }
    case Method::kLeaseKeepAlive:
      return KeepAlive(client, request, std::move(responder));
    case Method::kWatch:
      return ServeWatch(client, request, std::move(responder));
    case Method::kObserve:
      return ServeObserve(client, request, std::move(responder));
    case Method::kCampaign:
    case Method::kLock: {
      std::uint64_t wait = 0;
      if (info->method == Method::kCampaign) {
        CampaignRequest campaign;
        if (!DecodeBody(request, &campaign, *responder)) return;
        wait =
            elections_.Campaign(client, std::move(campaign), Replier<CampaignResponse>(responder));
      } else {
        LockRequest lock;
        if (!DecodeBody(request, &lock, *responder)) return;
        wait = elections_.Lock(client, std::move(lock), Replier<LockResponse>(responder));
      }
      // A client that goes away before its turn gives its key back.
      std::weak_ptr<bool> alive = alive_;
      if (wait != 0) {
        responder->OnClose([this, alive, wait] {
          if (!alive.expired()) elections_.Abandon(wait);
        });
      }
      return;
    }
    case Method::kProclaim: {
      ProclaimRequest proclaim;
      if (!DecodeBody(request, &proclaim, *responder)) return;
      return elections_.Proclaim(client, std::move(proclaim),
                                 Replier<ProclaimResponse>(std::move(responder)));
    }
    case Method::kResign: {
      ResignRequest resign;
      if (!DecodeBody(request, &resign, *responder)) return;
      return elections_.Resign(client, std::move(resign),
                               Replier<ResignResponse>(std::move(responder)));
    }
    case Method::kLeader: {
      NameRequest name;
      if (!DecodeBody(request, &name, *responder)) return;
      return elections_.Leader(client, std::move(name),
                               Replier<LeaderResponse>(std::move(responder)));
    }
    case Method::kUnlock: {
      UnlockRequest unlock;
      if (!DecodeBody(request, &unlock, *responder)) return;
      return elections_.Unlock(client, std::move(unlock),
                               Replier<UnlockResponse>(std::move(responder)));
    }
    case Method::kStatus:
      return Status(request, *responder);
    case Method::kMemberList:
      return MemberList(request, *responder);
    case Method::kAuthenticate: {
      AuthenticateRequest auth;
      if (!DecodeBody(request, &auth, *responder)) return;
      // tenure's tokens are the credentials (decision 0048 section 6).
      Answer<AuthenticateResponse> answer;
      answer.error = LogIn(server_, auth, &answer.response.body.token);
      answer.response.header = HeaderAt(server_, cluster_id_, server_.store().applied_index());
      return Replier<AuthenticateResponse>(std::move(responder))(std::move(answer));
    }
    default:
      break;
  }
  // Served over gRPC's streams or by services still to come on the gateway.
  responder->Send(ErrorAnswer(etcd_texts::Error(
      GrpcCode::kUnimplemented,
      "tenure: " + std::string(info->grpc_path) + " is not served on the JSON gateway yet")));
}

// The answers of a keep-alive body's requests, renewed one after another.
struct Gateway::KeepAliveRun {
  Client client;
  std::vector<LeaseIdRequest> requests;
  std::size_t next = 0;
  std::string body;
  std::shared_ptr<Responder> responder;
};

void Gateway::KeepAlive(const Client& client, const HttpRequest& request,
                        std::shared_ptr<Responder> responder) {
  auto run = std::make_shared<KeepAliveRun>();
  run->client = client;
  run->responder = std::move(responder);
  std::string error;
  const std::vector<std::string_view> values =
      SplitJsonObjects(request.body, kKeepAlivesPerBody, &error);
  for (std::string_view value : values) {
    if (!error.empty()) break;
    error = DecodeJson(value, &run->requests.emplace_back());
  }
  if (!error.empty()) {
    return run->responder->Send(ErrorAnswer(etcd_texts::Error(GrpcCode::kInvalidArgument, error)));
  }
  RenewNext(std::move(run));
}

// Each renewal waits for the one before, so answers keep the requests' order.
void Gateway::RenewNext(std::shared_ptr<KeepAliveRun> run) {
  if (run->next == run->requests.size() || run->responder->closed()) {
    return run->responder->Send(HttpResponse::Json(std::move(run->body)));
  }
  const LeaseIdRequest& request = run->requests[run->next++];
  leases_.KeepAlive(run->client, request, [this, run](Answer<LeaseKeepAliveResponse> answer) {
    if (!answer.error.ok()) {
      run->body += GatewayStreamError(answer.error);
      run->next = run->requests.size();  // a stream ends at its first error
    } else {
      run->body += "{\"result\":";
      EncodeJson(answer.response, &run->body);
      run->body += "}";
    }
    run->body += "\n";
    RenewNext(run);
  });
}

std::vector<std::string_view> SplitJsonObjects(std::string_view body, std::size_t max_values,
                                               std::string* error) {
  std::vector<std::string_view> values;
  std::size_t depth = 0;
  std::size_t start = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (depth == 0) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
      if (c != '{') {
        *error = "malformed JSON: expected an object at offset " + std::to_string(i);
        return {};
      }
      if (values.size() == max_values) {
        *error = "more than " + std::to_string(max_values) + " requests in one body";
        return {};
      }
      start = i;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      // Only the outer pair is matched here (the parser checks the rest):
      // an object its "]" closes is no object.
      if (c != '}') {
        *error = "malformed JSON: an object closed by ']' at offset " + std::to_string(i);
        return {};
      }
      values.push_back(body.substr(start, i + 1 - start));
    }
  }
  if (depth != 0 || in_string) {
    *error = "malformed JSON: the body ends inside an object";
    return {};
  }
  return values;
}

void Gateway::Version(const HttpRequest& request, Responder& responder) const {
  if (request.method != "GET") return responder.Send(MethodNotAllowed("GET"));
  responder.Send(HttpResponse::Json("{\"etcdserver\":\"" + std::string(kEtcdServerVersion) +
                                    "\",\"etcdcluster\":\"" + std::string(kEtcdClusterVersion) +
                                    "\"}"));
}

// etcd's /health: true while this member knows a leader (etcd also asks a
// linearizable read of the leader; tenure's readiness rule, which the
// Consul port's /v1/health/ready answers, says the same without one).
void Gateway::Health(const HttpRequest& request, Responder& responder) const {
  if (request.method != "GET") return responder.Send(MethodNotAllowed("GET"));
  if (server::NotReadyReason(server::ReadinessOf(server_)).empty()) {
    return responder.Send(HttpResponse::Json("{\"health\":\"true\"}"));
  }
  // etcd writes the unhealthy JSON through http.Error: text/plain, newline.
  responder.Send(GoHttpError(503, "{\"health\":\"false\"}"));
}

void Gateway::Status(const HttpRequest& request, Responder& responder) const {
  Empty body;
  if (!DecodeBody(request, &body, responder)) return;
  responder.Send(JsonAnswer(StatusOf(server_, cluster_id_)));
}

void Gateway::MemberList(const HttpRequest& request, Responder& responder) const {
  Empty body;
  if (!DecodeBody(request, &body, responder)) return;
  responder.Send(JsonAnswer(MembersOf(server_, cluster_id_, options_.client_url)));
}

}  // namespace tenure::etcd
