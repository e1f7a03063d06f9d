#include "http/api.h"

#include <algorithm>
#include <chrono>

#include "common/consul_texts.h"
#include "common/limits.h"
#include "http/answer_builder.h"
#include "http/forwarder.h"
#include "http/json.h"

namespace tenure::http {

HttpResponse ErrorResponse(const Status& status) {
  int code = 500;
  switch (status.code()) {
    case Code::kInvalidArgument:
      code = 400;
      break;
    case Code::kNotFound:
      code = 404;
      break;
    case Code::kConflict:
      code = 409;
      break;
    case Code::kTooLarge:
      code = 413;
      break;
    case Code::kPermissionDenied:
      code = 403;
      break;
    default:
      code = 500;
      break;  // Consul reports server-side failures as 500
  }
  return HttpResponse::Text(code, std::string(status.message()));
}

bool Call::Deny(const acl::Decision& decision, std::string_view name) {
  if (decision.allowed()) return false;
  ReplyError(caller.Denied(decision, name));
  return true;
}

namespace {

// ?pretty: the body re-indented; false when that would pass the answer
// limit, after sending Consul's too-large answer instead.
bool MadePretty(Responder& responder, HttpResponse* response) {
  std::optional<std::string> pretty = json::Pretty(response->body, limits::kHttpResponseBytesMax);
  if (!pretty) {
    responder.Send(ErrorResponse(consul::ResponseTooLarge(limits::kHttpResponseBytesMax,
                                                          " with ?pretty; ask without ?pretty")));
    return false;
  }
  response->body = std::move(*pretty);
  return true;
}

}  // namespace

void Call::Reply(HttpResponse response) {
  if (response.shared != nullptr) {
    // Complete as it is (Api::EntryAnswer); ?pretty gets a copy of its own.
    std::shared_ptr<const SharedAnswer> shared = std::move(response.shared);
    if (metrics != nullptr) metrics->CountAnswer(endpoint, method(), shared->response.status);
    if (!options.pretty) {
      responder->SendShared(std::move(shared));
      return;
    }
    response = shared->response;
    if (MadePretty(*responder, &response)) responder->Send(std::move(response));
    return;
  }
  if (response.build_body && builder != nullptr && !builder->Admit(response.build_bytes)) {
    // No room for one more large answer: what the unsent-output budget
    // answers, before the copy is rendered (decision 0046).
    response = HttpResponse::Text(429, std::string(AnswerBuilder::kBusyText));
  }
  if (metrics != nullptr) metrics->CountAnswer(endpoint, method(), response.status);
  response.headers.emplace_back("X-Consul-Default-Acl-Policy", std::string(default_acl_policy()));
  if (response.build_body) {
    const bool pretty = options.pretty && response.content_type == "application/json";
    std::function<std::string()> build = std::move(response.build_body);
    response.build_body = nullptr;
    const std::size_t bytes = response.build_bytes;
    if (builder == nullptr) {
      response.body = build();
    } else {
      // The builder thread also re-indents: a large ?pretty is as dear.
      builder->Build(
          [build = std::move(build), pretty] {
            std::string body = build();
            if (!pretty) return body;
            return json::Pretty(body, limits::kHttpResponseBytesMax).value_or(std::string());
          },
          [responder = responder, response = std::move(response),
           pretty](std::string body) mutable {
            if (pretty && body.empty()) {
              responder->Send(ErrorResponse(consul::ResponseTooLarge(
                  limits::kHttpResponseBytesMax, " with ?pretty; ask without ?pretty")));
              return;
            }
            response.body = std::move(body);
            responder->Send(std::move(response));
          },
          bytes);
      return;
    }
  }
  if (options.pretty && response.content_type == "application/json" &&
      !MadePretty(*responder, &response)) {
    return;
  }
  responder->Send(std::move(response));
}

void Call::ReplyError(const Status& status) { Reply(ErrorResponse(status)); }

void Call::GiveBackRequest() {
  // A method is a short token (GET); anything longer keeps its request.
  if (request == nullptr || request->method.size() > UINT8_MAX) return;
  const std::string_view token = RequestToken(*request);
  kept_.reserve(request->method.size() + token.size());
  kept_.assign(request->method);
  kept_.append(token);
  method_size_ = static_cast<std::uint8_t>(request->method.size());
  request.reset();
}

std::string_view Call::token() const {
  return request != nullptr ? RequestToken(*request) : std::string_view(kept_).substr(method_size_);
}

Api::Api(boost::asio::io_context& io, server::Server& server)
    : io_(io),
      server_(server),
      metrics_(server.options().metrics_enabled),
      forwarder_(std::make_unique<Forwarder>(io, server)),
      random_(std::random_device{}()) {}

Api::~Api() = default;

AnswerBuilder* Api::Builder() {
  if (answer_builder_ == nullptr) answer_builder_ = std::make_unique<AnswerBuilder>(io_);
  return answer_builder_.get();
}

void Api::Start() {}
void Api::Shutdown() { forwarder_->Shutdown(); }

void Api::ReloadTls() { forwarder_->ReloadTls(); }

void Api::SetMeta(HttpResponse* response, LogIndex index) const {
  // Clients treat 0 as "no index" and spin; Consul never sends it.
  response->headers.emplace_back("X-Consul-Index",
                                 std::to_string(std::max<std::uint64_t>(index.value(), 1)));
  response->headers.emplace_back("X-Consul-KnownLeader", server_.KnownLeader() ? "true" : "false");
  response->headers.emplace_back("X-Consul-LastContact", std::to_string(server_.LastContactMs()));
}

void Api::Answer(const CallPtr& call, HttpResponse response) {
  if (!response.gather) {
    call->Reply(std::move(response));
    return;
  }
  std::function<bool(HttpResponse*)> gather = std::move(response.gather);
  response.gather = nullptr;
  AnswerBuilder* builder = call->builder;
  if (builder == nullptr) {
    while (!gather(&response)) {
    }
    call->Reply(std::move(response));
    return;
  }
  // Room first, as Call::Reply does before a copy (decision 0046).
  const std::size_t reserved = response.build_bytes;
  if (!builder->Admit(reserved)) {
    call->Reply(HttpResponse::Text(429, std::string(AnswerBuilder::kBusyText)));
    return;
  }
  auto pending = std::make_shared<HttpResponse>(std::move(response));
  builder->Gather([pending, gather = std::move(gather)] { return gather(pending.get()); },
                  [call, pending, reserved] {
                    // Reply reserves the room again for the answer as copied.
                    call->builder->Release(reserved);
                    call->Reply(std::move(*pending));
                  });
}

void Api::BlockingRead(const CallPtr& call, server::Watch watch, ReadFn read) {
  BlockingRead(call, std::move(watch),
               CallReadFn([read = std::move(read)](const Call&) { return read(); }));
}

void Api::BlockingRead(const CallPtr& call, server::Watch watch, CallReadFn read) {
  auto serve = [this, call, watch = std::move(watch), read = std::move(read)]() mutable {
    const QueryOptions& options = call->options;
    if (options.index.is_none() || server_.IndexOf(watch) > options.index) {
      Answer(call, read(*call));
      return;
    }
    // Consul adds a random jitter in [0, wait/16) so parked clients do not
    // all return at once.
    DurationMs wait_ms = options.wait_ms;
    DurationMs jitter_range = wait_ms / limits::kBlockingJitterFraction;
    if (jitter_range > 0) {
      wait_ms += static_cast<DurationMs>(random_() % static_cast<std::uint64_t>(jitter_range));
    }
    // It may wait minutes, 10,000 of it on one key: keep only what the
    // answer reads (decision 0034).
    call->GiveBackRequest();
    std::uint64_t id =
        server_.waiters().Park(std::move(watch), options.index, wait_ms, [this, call, read] {
          if (std::optional<HttpResponse> refused = ResolveAgain(*call)) {
            call->Reply(std::move(*refused));
            return;
          }
          Answer(call, read(*call));
        });
    if (id == 0) {  // waiter limit reached: answer now rather than queue without bound
      Answer(call, read(*call));
      return;
    }
    call->responder->OnClose([this, id] { server_.waiters().Cancel(id); });
  };
  if (!call->options.consistent) {
    serve();
    return;
  }
  server_.Barrier([call, serve = std::move(serve)](Status status) mutable {
    if (!status.ok()) {
      call->ReplyError(status);
      return;
    }
    serve();
  });
}

std::optional<HttpResponse> Api::ResolveAgain(Call& call) {
  // 1,000 watchers of a key wake together: most find nothing changed.
  if (server_.CallerStillValid(call.caller)) return std::nullopt;
  Result<server::Caller> caller = server_.ResolveCaller(call.token());
  if (!caller.ok()) return ErrorResponse(caller.status());
  call.caller = std::move(*caller);
  return std::nullopt;
}

void MarkFiltered(const Call& call, std::size_t removed, HttpResponse* response) {
  if (removed > 0 && call.caller.sent_token) {
    response->headers.emplace_back("X-Consul-Results-Filtered-By-Acls", "true");
  }
}

std::shared_ptr<const SharedAnswer> Api::EntryAnswer(const state::KvEntry& entry,
                                                     LogIndex key_index,
                                                     std::string_view default_acl_policy) {
  auto& cached = entry_answer_;
  const bool known_leader = server_.KnownLeader();
  const DurationMs last_contact_ms = server_.LastContactMs();
  // (key, ModifyIndex) names one version of an entry: every change to an
  // entry, including its lock being released by an invalidated session,
  // moves its ModifyIndex, and no-op writes leave both content and index
  // alone. So the body is rendered once per version, also when only the
  // headers change (a follower's LastContact does, every millisecond).
  const bool same_version = cached.answer != nullptr && cached.modify_index == entry.modify_index &&
                            cached.key == entry.key;
  if (same_version && cached.key_index == key_index && cached.known_leader == known_leader &&
      cached.last_contact_ms == last_contact_ms &&
      cached.default_acl_policy == default_acl_policy) {
    return cached.answer;
  }
  auto answer = std::make_shared<SharedAnswer>();
  answer->response =
      HttpResponse::Json(same_version ? cached.answer->response.body : json::KvEntries({&entry}));
  SetMeta(&answer->response, key_index);
  answer->response.headers.emplace_back("X-Consul-Default-Acl-Policy",
                                        std::string(default_acl_policy));
  cached.key = entry.key;
  cached.modify_index = entry.modify_index;
  cached.key_index = key_index;
  cached.known_leader = known_leader;
  cached.last_contact_ms = last_contact_ms;
  cached.default_acl_policy = default_acl_policy;
  cached.answer = std::move(answer);
  return cached.answer;
}

void Api::ProposeThen(const CallPtr& call, state::CommandBody body,
                      std::function<void(const state::ApplyResult&)> done) {
  server_.Propose(std::move(body),
                  [call, done = std::move(done)](Result<state::ApplyResult> result) {
                    if (!result.ok()) {
                      call->ReplyError(result.status());
                      return;
                    }
                    done(*result);
                  });
}

}  // namespace tenure::http
