// /v1/session/*: create, destroy, renew, info, node, list
// (docs/consul-api.md section 1).

#include "common/consul_texts.h"
#include "common/duration.h"
#include "common/limits.h"
#include "common/strings.h"
#include "http/api.h"
#include "http/forwarder.h"
#include "http/json.h"
#include "http/request_bodies.h"

namespace tenure::http {
namespace {

// A session list within the answer-size limit (docs/limits.md), or 413.
HttpResponse SessionsAnswer(const std::vector<const state::Session*>& sessions,
                            std::string_view hint) {
  std::optional<std::string> body = json::Sessions(sessions, limits::kHttpResponseBytesMax);
  if (body) return HttpResponse::Json(std::move(*body));
  return ErrorResponse(Status::TooLarge(
      "Response too large (more than " + std::to_string(limits::kHttpResponseBytesMax) +
      " bytes); " + std::to_string(sessions.size()) + " sessions" + std::string(hint)));
}

}  // namespace

// The Node a session gets when the body names none: the server the client
// talks to, as with Consul, where the local agent fills it in. A forwarded
// create names its follower in X-Tenure-Forwarded-By.
std::string Api::AgentNodeName(const Call& call) const {
  if (auto by = call.request.Header(kForwardedByHeader)) {
    auto id = ParseUint64(*by);
    const state::Member* member = id.ok() ? server_.store().FindMember(*id) : nullptr;
    if (member != nullptr) return member->name;
  }
  return server_.options().node_name;
}

void Api::SessionCreate(const CallPtr& call) {
  auto session = ParseSessionCreate(call->request.body, AgentNodeName(*call));
  if (!session.ok()) {
    call->ReplyError(session.status());
    return;
  }
  session->id = server_.NewSessionId();
  std::string id = session->id;
  ProposeThen(call, state::SessionCreate{std::move(*session)},
              [call, id](const state::ApplyResult& result) {
                if (!result.status.ok()) {
                  call->ReplyError(result.status);
                  return;
                }
                std::string body = "{\"ID\":";
                json::AppendString(&body, id);
                body += '}';
                call->Reply(HttpResponse::Json(std::move(body)));
              });
}

void Api::SessionDestroy(const CallPtr& call) {
  const std::string& id = call->arg;
  if (Status status = CheckSessionId(id); !status.ok()) {
    call->ReplyError(status);
    return;
  }
  ProposeThen(call, state::SessionDestroy{id, state::DestroyReason::kDestroyed},
              [call](const state::ApplyResult& result) {
                if (!result.status.ok()) {
                  call->ReplyError(result.status);
                  return;
                }
                call->Reply(HttpResponse::Json("true"));
              });
}

void Api::SessionRenew(const CallPtr& call) {
  const std::string& id = call->arg;
  if (Status status = CheckSessionId(id); !status.ok()) {
    call->ReplyError(status);
    return;
  }
  server_.Renew(id, [call](Result<const state::Session*> session) {
    if (!session.ok()) {
      call->ReplyError(session.status());
      return;
    }
    call->Reply(HttpResponse::Json(json::Sessions({*session})));
  });
}

void Api::SessionInfo(const CallPtr& call) {
  const std::string& id = call->arg;
  if (Status status = CheckSessionId(id); !status.ok()) {
    call->ReplyError(status);
    return;
  }
  BlockingRead(call, {server::WatchKind::kSessions, ""}, [this, call] {
    const state::Store& store = server_.store();
    const state::Session* session = store.FindSession(call->arg);
    HttpResponse response =
        HttpResponse::Json(session ? json::Sessions({session}) : std::string("[]"));
    SetMeta(&response, store.sessions_index());
    return response;
  });
}

void Api::SessionNode(const CallPtr& call) {
  if (call->arg.empty()) {
    call->ReplyError(consul::MissingNodeName());
    return;
  }
  BlockingRead(call, {server::WatchKind::kSessions, ""}, [this, call] {
    const state::Store& store = server_.store();
    HttpResponse response = SessionsAnswer(store.NodeSessions(call->arg), "");
    SetMeta(&response, store.sessions_index());
    return response;
  });
}

void Api::SessionList(const CallPtr& call) {
  BlockingRead(call, {server::WatchKind::kSessions, ""}, [this] {
    const state::Store& store = server_.store();
    HttpResponse response =
        SessionsAnswer(store.ListSessions(), ": list one node's with /v1/session/node/<node>");
    SetMeta(&response, store.sessions_index());
    return response;
  });
}

}  // namespace tenure::http
