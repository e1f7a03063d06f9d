#include "etcd/grpc_server.h"

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <utility>

#include "etcd/cluster_info.h"
#include "etcd/grpc_wire.h"
#include "etcd/messages_services.h"
#include "etcd/proto_codec.h"
#include "etcd/routes.h"
#include "etcd/watch_hub.h"
#include "server/server.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;
using etcd_texts::GrpcCode;
using listen::HeaderFields;
using listen::Stream;

// One call: its stream, its method, the messages read so far.
struct GrpcServer::Call {
  std::shared_ptr<Stream> stream;
  server::Server* server = nullptr;  // for the metrics
  const MethodInfo* info = nullptr;
  Client client;  // who the call's token names (etcd/access.h)
  GrpcMessageSplitter splitter;
  bool headers_sent = false;
  bool finished = false;
  bool client_done = false;
  // Unary: the one request message, once it came.
  std::string request;
  int requests = 0;
  // LeaseKeepAlive: requests waiting for the renewal before them.
  std::deque<LeaseIdRequest> keepalives;
  bool renewing = false;
  // Watch: the call's watchers, answering through `watch_sink`.
  class WatchSinkOfCall;
  std::unique_ptr<WatchSinkOfCall> watch_sink;
  std::unique_ptr<WatchStream> watch;
  // Campaign, Lock: the parked wait (ElectionService), abandoned if the
  // call ends first; Observe: the observer, stopped when it ends.
  std::uint64_t wait_id = 0;
  std::uint64_t observer_id = 0;
  // The client's grpc-timeout: past it the call ends DeadlineExceeded.
  std::unique_ptr<boost::asio::steady_timer> deadline;

  // `framed`: a message with gRPC's 5-byte prefix (Framed).
  void SendMessage(std::string_view framed) {
    if (finished) return;
    if (!headers_sent) {
      stream->SendHeaders(200, {{"content-type", "application/grpc"}});
      headers_sent = true;
    }
    stream->SendData(framed);
  }
  void Finish(const EtcdError& error) {
    if (finished) return;
    finished = true;
    if (info != nullptr && server != nullptr) {
      server->CountEtcdCall(info->grpc_path.substr(1), static_cast<int>(error.code));
    }
    if (deadline != nullptr) deadline->cancel();
    HeaderFields trailers;
    // Trailers-only (no answer yet): the HEADERS frame carries the call's
    // content-type with its status, as grpc-go's early errors.
    if (!headers_sent) trailers.emplace_back("content-type", "application/grpc");
    trailers.emplace_back("grpc-status", std::to_string(static_cast<int>(error.code)));
    if (!error.ok()) trailers.emplace_back("grpc-message", PercentEncodeGrpcMessage(error.message));
    stream->SendTrailers(trailers);
  }
};

namespace {

template <typename M>
std::string Framed(const M& message);

}  // namespace

// A Watch call's answers as gRPC messages on its stream.
class GrpcServer::Call::WatchSinkOfCall final : public WatchSink {
 public:
  explicit WatchSinkOfCall(Call& call) : call_(call) {}
  void Send(const WatchResponse& response) override { call_.SendMessage(Framed(response)); }
  bool takes_protobuf() const override { return true; }
  void SendEncoded(std::string_view header, std::string_view watch_id,
                   std::string_view events) override {
    std::string framed;
    framed.reserve(kGrpcPrefixBytes + header.size() + watch_id.size() + events.size());
    framed.append(kGrpcPrefixBytes, '\0');
    framed.append(header);
    framed.append(watch_id);
    framed.append(events);
    SetGrpcPrefix(&framed);
    call_.SendMessage(framed);
  }
  std::size_t unsent_bytes() const override { return call_.stream->unsent_bytes(); }
  void OnDrained(std::function<void()> callback) override {
    call_.stream->OnDrained(std::move(callback));
  }

 private:
  Call& call_;
};

namespace {

// The message's encoding behind gRPC's prefix, written in place (no
// second copy of the message).
template <typename M>
std::string Framed(const M& message) {
  std::string out(kGrpcPrefixBytes, '\0');
  EncodeProto(message, &out);
  SetGrpcPrefix(&out);
  return out;
}

// Decodes a request message, or finishes the call with InvalidArgument.
template <typename M>
bool Decode(const std::string& bytes, M* message, GrpcServer::Call* call) {
  std::string error = DecodeProto(bytes, message);
  if (error.empty()) return true;
  call->Finish(
      etcd_texts::Error(GrpcCode::kInvalidArgument, "grpc: error unmarshalling request: " + error));
  return false;
}

// Answers an Answer<Response> from a service on the call, then ends it.
template <typename R>
Done<R> Replier(std::shared_ptr<GrpcServer::Call> call) {
  return [call = std::move(call)](Answer<R> answer) {
    if (answer.error.ok()) call->SendMessage(Framed(answer.response));
    call->Finish(answer.error);
  };
}

}  // namespace

GrpcServer::GrpcServer(server::Server& server, boost::asio::io_context& io, WatchHub& watch_hub,
                       LeaderRelay& relay, std::string client_url)
    : server_(server),
      io_(io),
      watch_hub_(watch_hub),
      client_url_(std::move(client_url)),
      cluster_id_(ClusterIdOf(server)),
      kv_(server, &relay),
      leases_(server, &relay),
      elections_(server, kv_) {}

GrpcServer::~GrpcServer() { *alive_ = false; }

void GrpcServer::Serve(std::shared_ptr<Stream> stream) {
  auto call = std::make_shared<Call>();
  call->stream = std::move(stream);
  call->server = &server_;
  const listen::HttpRequest& request = call->stream->request();
  if (std::optional<std::string_view> encoding = request.Header("grpc-encoding");
      encoding.has_value() && *encoding != "identity") {
    return call->Finish(UnsupportedEncoding(*encoding));
  }
  if (request.method != "POST") {
    return call->Finish(etcd_texts::Error(GrpcCode::kUnimplemented,
                                          "tenure: gRPC calls are POST, not " + request.method));
  }
  EtcdError error;
  call->info = FindGrpcMethod(request.path, &error);
  if (call->info == nullptr) return call->Finish(error);
  if (!OpenToAnyone(call->info->method)) {
    error = ResolveClient(server_, TokenOf(request), &call->client);
    if (!error.ok()) return call->Finish(error);
  }
  std::weak_ptr<bool> alive = alive_;
  std::weak_ptr<Call> weak = call;
  if (std::optional<std::string_view> timeout = request.Header("grpc-timeout");
      timeout.has_value()) {
    // grpc-go's deadline: the call ends DeadlineExceeded when it passes; a
    // write already proposed still applies (its fate unknown to the
    // client, as etcd's).
    const std::optional<std::int64_t> ns = ParseGrpcTimeout(*timeout);
    if (!ns.has_value()) {
      return call->Finish(etcd_texts::Error(
          GrpcCode::kInternal, "transport: malformed grpc-timeout: " + std::string(*timeout)));
    }
    call->deadline = std::make_unique<boost::asio::steady_timer>(io_);
    call->deadline->expires_after(std::chrono::nanoseconds(*ns));
    call->deadline->async_wait([this, alive, weak](const boost::system::error_code& ec) {
      std::shared_ptr<Call> late = weak.lock();
      if (ec || late == nullptr || alive.expired() || late->finished) return;
      // A Campaign or Lock still waiting gives its key back, as etcd's
      // server does when the call's context ends.
      if (late->wait_id != 0) elections_.Abandon(late->wait_id);
      late->Finish(etcd_texts::Error(GrpcCode::kDeadlineExceeded, "context deadline exceeded"));
    });
  }
  // The server holds the call until its stream is over (answered, reset, or
  // its connection gone); callbacks hold it weakly.
  calls_.insert(call);
  call->stream->OnClose([this, alive, weak] {
    std::shared_ptr<Call> over = weak.lock();
    if (over == nullptr || alive.expired()) return;
    if (!over->finished && over->info != nullptr) {
      server_.CountEtcdCall(over->info->grpc_path.substr(1),
                            static_cast<int>(GrpcCode::kCancelled));
    }
    if (over->wait_id != 0 && !over->finished) elections_.Abandon(over->wait_id);
    if (over->observer_id != 0) elections_.StopObserving(over->observer_id);
    over->finished = true;
    over->keepalives.clear();
    over->watch.reset();
    over->watch_sink.reset();
    if (over->deadline != nullptr) over->deadline->cancel();
    calls_.erase(over);
  });
  call->stream->OnData([this, alive, weak](std::string_view data, bool end) {
    std::shared_ptr<Call> reading = weak.lock();
    if (reading == nullptr || alive.expired() || reading->finished) return;
    reading->splitter.Feed(data);
    // The splitter holds at most one message (bounded by its limit), and
    // each message is handled as it completes: give the window back now.
    reading->stream->Consume(data.size());
    std::string message;
    while (!reading->finished && reading->splitter.Next(&message)) {
      OnMessage(reading, std::move(message));
    }
    if (!reading->splitter.error().ok()) return reading->Finish(reading->splitter.error());
    if (end && !reading->finished) {
      if (reading->splitter.partial()) {
        return reading->Finish(etcd_texts::Error(GrpcCode::kInternal, "unexpected EOF"));
      }
      OnEnd(reading);
    }
  });
}

void GrpcServer::OnMessage(const std::shared_ptr<Call>& call, std::string message) {
  if (call->info->method == Method::kLeaseKeepAlive) {
    LeaseIdRequest request;
    if (!Decode(message, &request, call.get())) return;
    call->keepalives.push_back(request);
    if (!call->renewing) KeepAliveNext(call);
    return;
  }
  if (call->info->method == Method::kWatch) {
    WatchRequest request;
    if (!Decode(message, &request, call.get())) return;
    if (call->watch == nullptr) {
      call->watch_sink = std::make_unique<Call::WatchSinkOfCall>(*call);
      call->watch = std::make_unique<WatchStream>(watch_hub_, *call->watch_sink, call->client);
    }
    call->watch->Handle(request);
    return;
  }
  if (call->info->method == Method::kObserve) {
    NameRequest request;
    if (!Decode(message, &request, call.get())) return;
    if (call->observer_id != 0) {
      return call->Finish(etcd_texts::Error(
          GrpcCode::kInternal, "grpc: a server-streaming call carried more than one request"));
    }
    std::weak_ptr<Call> weak = call;
    EtcdError refused;
    call->observer_id = elections_.Observe(
        call->client, std::move(request),
        [weak](const LeaderResponse& leader) {
          if (std::shared_ptr<Call> observing = weak.lock()) observing->SendMessage(Framed(leader));
        },
        &refused);
    if (!refused.ok()) call->Finish(refused);
    return;
  }
  if (++call->requests > 1) {
    return call->Finish(etcd_texts::Error(
        GrpcCode::kInternal, "grpc: a unary call carried more than one request message"));
  }
  call->request = std::move(message);
}

void GrpcServer::OnEnd(const std::shared_ptr<Call>& call) {
  call->client_done = true;
  // etcd's watch goes on after its client ends its side (grpc-gateway
  // ends its side once the request body is sent): the call lasts until the
  // client resets it or goes.
  if (call->info->method == Method::kWatch) return;
  if (call->info->method == Method::kObserve) {
    if (call->observer_id == 0) {
      call->Finish(etcd_texts::Error(GrpcCode::kInternal,
                                     "grpc: a server-streaming call ended without its request"));
    }
    return;  // as Watch: it goes on until the client resets it or goes
  }
  if (call->info->method == Method::kLeaseKeepAlive) {
    if (!call->renewing) call->Finish({});
    return;
  }
  if (call->requests == 0) {
    return call->Finish(etcd_texts::Error(GrpcCode::kInternal,
                                          "grpc: a unary call ended without its request message"));
  }
  Unary(call, call->request);
}

void GrpcServer::KeepAliveNext(const std::shared_ptr<Call>& call) {
  if (call->finished) return;
  if (call->keepalives.empty()) {
    call->renewing = false;
    if (call->client_done) call->Finish({});
    return;
  }
  call->renewing = true;
  LeaseIdRequest request = call->keepalives.front();
  call->keepalives.pop_front();
  std::weak_ptr<bool> alive = alive_;
  leases_.KeepAlive(call->client, request,
                    [this, alive, call](Answer<LeaseKeepAliveResponse> answer) {
                      if (alive.expired()) return;
                      if (!answer.error.ok()) return call->Finish(answer.error);
                      call->SendMessage(Framed(answer.response));
                      KeepAliveNext(call);
                    });
}

void GrpcServer::Unary(const std::shared_ptr<Call>& call, const std::string& message) {
  switch (call->info->method) {
    case Method::kRange: {
      state::EtcdRangeRequest request;
      if (!Decode(message, &request, call.get())) return;
      return kv_.Range(call->client, std::move(request), Replier<RangeResponse>(call));
    }
    case Method::kPut: {
      state::EtcdPutRequest request;
      if (!Decode(message, &request, call.get())) return;
      return kv_.Put(call->client, std::move(request), Replier<PutResponse>(call));
    }
    case Method::kDeleteRange: {
      state::EtcdDeleteRangeRequest request;
      if (!Decode(message, &request, call.get())) return;
      return kv_.DeleteRange(call->client, std::move(request), Replier<DeleteRangeResponse>(call));
    }
    case Method::kTxn: {
      state::EtcdTxnRequest request;
      if (!Decode(message, &request, call.get())) return;
      return kv_.Txn(call->client, std::move(request), Replier<TxnResponse>(call));
    }
    case Method::kCompact: {
      CompactionRequest request;
      if (!Decode(message, &request, call.get())) return;
      return kv_.Compact(call->client, request, Replier<CompactionResponse>(call));
    }
    case Method::kLeaseGrant: {
      LeaseGrantRequest request;
      if (!Decode(message, &request, call.get())) return;
      return leases_.Grant(call->client, request, Replier<LeaseGrantResponse>(call));
    }
    case Method::kLeaseRevoke: {
      LeaseIdRequest request;
      if (!Decode(message, &request, call.get())) return;
      return leases_.Revoke(call->client, request, Replier<LeaseRevokeResponse>(call));
    }
    case Method::kLeaseTimeToLive: {
      LeaseTimeToLiveRequest request;
      if (!Decode(message, &request, call.get())) return;
      return leases_.TimeToLive(call->client, request, Replier<LeaseTimeToLiveResponse>(call));
    }
    case Method::kLeaseLeases: {
      Empty request;
      if (!Decode(message, &request, call.get())) return;
      return Replier<LeaseLeasesResponse>(call)(leases_.Leases(call->client));
    }
    case Method::kCampaign: {
      CampaignRequest request;
      if (!Decode(message, &request, call.get())) return;
      call->wait_id =
          elections_.Campaign(call->client, std::move(request), Replier<CampaignResponse>(call));
      return;
    }
    case Method::kLock: {
      LockRequest request;
      if (!Decode(message, &request, call.get())) return;
      call->wait_id =
          elections_.Lock(call->client, std::move(request), Replier<LockResponse>(call));
      return;
    }
    case Method::kProclaim: {
      ProclaimRequest request;
      if (!Decode(message, &request, call.get())) return;
      return elections_.Proclaim(call->client, std::move(request), Replier<ProclaimResponse>(call));
    }
    case Method::kResign: {
      ResignRequest request;
      if (!Decode(message, &request, call.get())) return;
      return elections_.Resign(call->client, std::move(request), Replier<ResignResponse>(call));
    }
    case Method::kLeader: {
      NameRequest request;
      if (!Decode(message, &request, call.get())) return;
      return elections_.Leader(call->client, std::move(request), Replier<LeaderResponse>(call));
    }
    case Method::kUnlock: {
      UnlockRequest request;
      if (!Decode(message, &request, call.get())) return;
      return elections_.Unlock(call->client, std::move(request), Replier<UnlockResponse>(call));
    }
    case Method::kStatus: {
      Empty request;
      if (!Decode(message, &request, call.get())) return;
      return Replier<StatusResponse>(call)({{}, StatusOf(server_, cluster_id_)});
    }
    case Method::kMemberList: {
      Empty request;
      if (!Decode(message, &request, call.get())) return;
      return Replier<MemberListResponse>(call)({{}, MembersOf(server_, cluster_id_, client_url_)});
    }
    case Method::kAuthenticate: {
      // tenure's tokens are the credentials (decision 0048 section 6).
      AuthenticateRequest request;
      if (!Decode(message, &request, call.get())) return;
      Answer<AuthenticateResponse> answer;
      answer.error = LogIn(server_, request, &answer.response.body.token);
      answer.response.header = HeaderAt(server_, cluster_id_, server_.store().applied_index());
      return Replier<AuthenticateResponse>(call)(std::move(answer));
    }
    default:
      return call->Finish(etcd_texts::Error(
          GrpcCode::kUnimplemented,
          "tenure: " + std::string(call->info->grpc_path.substr(1)) + " is not served yet"));
  }
}

}  // namespace tenure::etcd
