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
                            std::string_view hint, const json::TtlRemaining& ttl_remaining) {
  std::optional<std::string> body =
      json::Sessions(sessions, limits::kHttpResponseBytesMax, ttl_remaining);
  if (body) return HttpResponse::Json(std::move(*body));
  return ErrorResponse(Status::TooLarge(
      "Response too large (more than " + std::to_string(limits::kHttpResponseBytesMax) +
      " bytes); " + std::to_string(sessions.size()) + " sessions" + std::string(hint)));
}

// TTLRemaining (docs/consul-compat.md), which only the leader knows: a
// follower answering ?stale leaves it out.
json::TtlRemaining TtlRemainingOf(const server::Server& server) {
  return [&server](const state::Session& s) -> std::optional<std::int64_t> {
    std::optional<DurationMs> ms = server.SessionTtlRemainingMs(s.id);
    if (!ms) return std::nullopt;
    return *ms * 1'000'000;
  };
}

// Leaves out the sessions the caller may not read (session:read on their
// node); how many it left out.
std::size_t Unreadable(const Call& call, std::vector<const state::Session*>& sessions) {
  if (call.caller.unrestricted) return 0;
  return acl::EraseUnreadableSessions(call.caller.can(), sessions,
                                      [](const state::Session* s) { return s->node; });
}

// Destroy and renew: Consul asks session:write on the node of the session
// as it exists (an unknown session is left to the command's own answer).
bool DeniedSessionWrite(Call& call, const state::Store& store, const state::SessionId& id) {
  const state::Session* existing = store.FindSession(id);
  return existing != nullptr &&
         call.Deny(call.caller.can().SessionWrite(existing->node), existing->node);
}

}  // namespace

// The Node a session gets when the body names none: the server the client
// talks to, as with Consul, where the local agent fills it in. A forwarded
// create names its follower in X-Tenure-Forwarded-By.
std::string Api::AgentNodeName(const Call& call) const {
  if (auto by = call.request->Header(kForwardedByHeader)) {
    auto id = ParseUint64(*by);
    const state::Member* member = id.ok() ? server_.store().FindMember(*id) : nullptr;
    if (member != nullptr) return member->name;
  }
  return server_.options().node_name;
}

void Api::SessionCreate(const CallPtr& call) {
  auto session = ParseSessionCreate(call->request->body, AgentNodeName(*call));
  if (call->Failed(session)) return;
  if (call->Deny(call->caller.can().SessionWrite(session->node), session->node)) return;
  session->id = server_.NewSessionId();
  state::SessionId id = session->id;
  ProposeThen(call, state::SessionCreate{std::move(*session)},
              [call, id](const state::ApplyResult& result) {
                if (!result.status.ok()) {
                  call->ReplyError(result.status);
                  return;
                }
                std::string body = "{\"ID\":";
                json::AppendString(&body, id.view());
                body += '}';
                call->Reply(HttpResponse::Json(std::move(body)));
              });
}

void Api::SessionDestroy(const CallPtr& call) {
  Result<state::SessionId> id = ParseSessionId(call->arg);
  if (call->Failed(id)) return;
  if (DeniedSessionWrite(*call, server_.store(), *id)) return;
  ProposeThen(call, state::SessionDestroy{std::move(*id), state::DestroyReason::kDestroyed},
              [call](const state::ApplyResult& result) {
                if (!result.status.ok()) {
                  call->ReplyError(result.status);
                  return;
                }
                call->Reply(HttpResponse::Json("true"));
              });
}

void Api::SessionRenew(const CallPtr& call) {
  Result<state::SessionId> id = ParseSessionId(call->arg);
  if (call->Failed(id)) return;
  if (DeniedSessionWrite(*call, server_.store(), *id)) return;
  server_.Renew(*id, [call](Result<const state::Session*> session) {
    if (call->Failed(session)) return;
    call->Reply(HttpResponse::Json(json::Sessions({*session})));
  });
}

void Api::SessionInfo(const CallPtr& call) {
  Result<state::SessionId> id = ParseSessionId(call->arg);
  if (call->Failed(id)) return;
  BlockingRead(call, {server::WatchKind::kSessions, ""}, [this, call, id = std::move(*id)] {
    const state::Store& store = server_.store();
    std::vector<const state::Session*> found;
    if (const state::Session* session = store.FindSession(id)) found.push_back(session);
    const std::size_t removed = Unreadable(*call, found);
    HttpResponse response = SessionsAnswer(found, "", TtlRemainingOf(server_));
    SetMeta(&response, store.sessions_index());
    MarkFiltered(*call, removed, &response);
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
    std::vector<const state::Session*> sessions = store.NodeSessions(call->arg);
    const std::size_t removed = Unreadable(*call, sessions);
    HttpResponse response = SessionsAnswer(sessions, "", TtlRemainingOf(server_));
    SetMeta(&response, store.sessions_index());
    MarkFiltered(*call, removed, &response);
    return response;
  });
}

void Api::SessionList(const CallPtr& call) {
  BlockingRead(call, {server::WatchKind::kSessions, ""}, [this, call] {
    const state::Store& store = server_.store();
    std::vector<const state::Session*> sessions = store.ListSessions();
    const std::size_t removed = Unreadable(*call, sessions);
    HttpResponse response = SessionsAnswer(
        sessions, ": list one node's with /v1/session/node/<node>", TtlRemainingOf(server_));
    SetMeta(&response, store.sessions_index());
    MarkFiltered(*call, removed, &response);
    return response;
  });
}

}  // namespace tenure::http
