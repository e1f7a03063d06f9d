// Api: the Consul-compatible HTTP API. Routes (routes.cc, one line per
// endpoint) map paths and methods to handlers (handlers/*.cc), which parse
// and validate requests, read the Store or propose commands through the
// Server, and write Consul's responses and error texts.
// Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "http/acl_bodies.h"
#include "http/listen_types.h"
#include "http/metrics.h"
#include "http/query_options.h"
#include "server/health.h"
#include "server/server.h"
#include "server/waiters.h"

namespace boost::asio {
class io_context;
}

namespace tenure::http {

class AnswerBuilder;  // answer_builder.h

// One request being served. Shared so that asynchronous completions (raft
// commits, blocking queries) can hold it.
struct Call {
  // The request as received. A blocking query gives it back while it is
  // parked (GiveBackRequest): then it is null, and only the method and the
  // token are kept of it (decision 0034). Handlers read it before they park.
  std::unique_ptr<HttpRequest> request;
  std::shared_ptr<Responder> responder;
  std::string arg;  // the path after the route's prefix, e.g. the KV key
  QueryOptions options;
  // Who asks (routes resolve it before the handler; everything allowed
  // with ACLs off) and the X-Consul-Default-Acl-Policy every answer carries.
  server::Caller caller;
  // Where the answer is counted (docs/metrics.md); null with -disable-metrics.
  HttpMetrics* metrics = nullptr;
  // Where a large answer's body is built (HttpResponse::build_body); null:
  // on the loop.
  AnswerBuilder* builder = nullptr;
  Endpoint endpoint = Endpoint::kOther;
  // The ACL default policy is deny (X-Consul-Default-Acl-Policy: deny).
  // A flag next to `endpoint`, not a string_view: 16 bytes less per Call.
  bool default_deny = false;
  std::string_view default_acl_policy() const { return default_deny ? "deny" : "allow"; }

  // Consul's 403 when `decision` denies, naming `name`: replies and returns
  // true. Handlers write `if (call->Deny(call->caller.can().KeyRead(key), key)) return;`
  bool Deny(const acl::Decision& decision, std::string_view name);
  // Replies with the error and returns true unless `result` is ok:
  // `if (call->Failed(parsed)) return;`
  template <typename T>
  bool Failed(const Result<T>& result) {
    if (result.ok()) return false;
    ReplyError(result.status());
    return true;
  }

  void Reply(HttpResponse response);
  void ReplyError(const Status& status);  // Consul's status and plain-text body

  // For a blocking query that parks: frees the request (its ~260 bytes and
  // its path, query and header strings), keeping the method (metrics) and
  // the ACL token (read again on wake-up, Api::ResolveAgain).
  void GiveBackRequest();
  std::string_view method() const {
    return request != nullptr ? request->method : std::string_view(kept_).substr(0, method_size_);
  }
  // The request's ACL token (RequestToken), also once the request is given back.
  std::string_view token() const;

 private:
  // The kept method and token in one string (one, not two, in every parked
  // query): method_size_ bytes of method, then the token. Next to
  // `endpoint`, in what would be padding.
  std::uint8_t method_size_ = 0;
  std::string kept_;
};
using CallPtr = std::shared_ptr<Call>;

class Forwarder;
struct CheckedSnapshot;  // handlers/snapshot.cc
class SnapshotChecker;

class Api {
 public:
  Api(boost::asio::io_context& io, server::Server& server);
  ~Api();
  // Serves the request here or, on a follower, forwards what Consul's
  // leader answers (decision 0008; http/forwarder.h).
  void Handle(HttpRequest request, std::shared_ptr<Responder> responder);
  // Whether `request` may send a body up to limits::kSnapshotBytesMax: a
  // PUT /v1/snapshot whose token may restore a snapshot (acl:write with
  // ACLs on, the operator token with them off). The listeners' large-body
  // gate (listen/request_reader.h), asked once its header is in.
  bool MaySendLargeBody(const HttpRequest& request);
  // Whether a parked request is a read, which its client's EOF ends: GET,
  // HEAD and a fair acquire (PUT ?acquire&queue, decision 0027), whose
  // client half-closing has gone and gives up its place in the queue. The
  // listeners' parked-read rule (listen/server.h).
  static bool IsParkedRead(const HttpRequest& request);
  void Start();
  // Fails forwarded requests still in flight.
  void Shutdown();
  // The TLS files changed (SIGHUP): forwarding reads them again.
  void ReloadTls();

  // Handlers (handlers/*.cc).
  void KvGet(const CallPtr& call);
  void KvPut(const CallPtr& call);
  void KvDelete(const CallPtr& call);
  // handlers/history.cc (docs/history.md)
  void LockHistory(const CallPtr& call);
  // GET /v1/tenure/queue/<key>: the key's fair-acquire queue (decision 0027)
  void QueueWaiters(const CallPtr& call);
  void Txn(const CallPtr& call);
  void SessionCreate(const CallPtr& call);
  void SessionDestroy(const CallPtr& call);
  void SessionRenew(const CallPtr& call);
  void SessionInfo(const CallPtr& call);
  void SessionNode(const CallPtr& call);
  void SessionList(const CallPtr& call);
  void StatusLeader(const CallPtr& call);
  void StatusPeers(const CallPtr& call);
  void TransferLeader(const CallPtr& call);
  void RaftConfiguration(const CallPtr& call);
  void RaftPeerRemove(const CallPtr& call);
  void AgentSelf(const CallPtr& call);
  // handlers/metrics.cc: /v1/agent/metrics (Consul's JSON, or
  // ?format=prometheus) and /metrics (Prometheus' text).
  void AgentMetrics(const CallPtr& call);
  // handlers/health.cc (docs/operations.md, "Health")
  void AutopilotHealth(const CallPtr& call);
  void HealthLive(const CallPtr& call);
  void HealthReady(const CallPtr& call);
  // handlers/acl.cc
  void AclBootstrap(const CallPtr& call);
  void AclTokenCreate(const CallPtr& call);
  void AclTokenRead(const CallPtr& call);
  void AclTokenUpdate(const CallPtr& call);
  void AclTokenDelete(const CallPtr& call);
  void AclTokenList(const CallPtr& call);
  void AclPolicyCreate(const CallPtr& call);
  void AclPolicyRead(const CallPtr& call);
  void AclPolicyUpdate(const CallPtr& call);
  void AclPolicyDelete(const CallPtr& call);
  void AclPolicyList(const CallPtr& call);
  // handlers/ui.cc: the dashboard's files under /ui/ (docs/dashboard.md)
  void Ui(const CallPtr& call);
  // handlers/snapshot.cc
  void SnapshotSave(const CallPtr& call);
  void SnapshotRestore(const CallPtr& call);
  void ProposeRestore(const CallPtr& call, CheckedSnapshot checked);
  void ProposeRestoreChunk(const CallPtr& call, std::shared_ptr<const std::string> state,
                           std::uint64_t id, std::size_t offset,
                           std::function<void(const state::ApplyResult&)> restored);

 private:
  // Serves a read that supports blocking queries: answers at once, or parks
  // until the watched index passes ?index or ?wait (+ jitter) runs out, then
  // answers with `read` evaluated at that time. ?consistent first waits for
  // a raft barrier.
  using ReadFn = std::function<HttpResponse()>;
  void BlockingRead(const CallPtr& call, server::Watch watch, ReadFn read);
  // The same for a read that is given its call: one that captures no
  // CallPtr (the KV key's: `this` and a flag) is held without an allocation
  // of its own while parked (decision 0034).
  using CallReadFn = std::function<HttpResponse(const Call&)>;
  void BlockingRead(const CallPtr& call, server::Watch watch, CallReadFn read);
  // Replies with what a read answered; one with a gather (a large prefix
  // copied in slices) first reserves its room, then gathers over loop turns.
  void Answer(const CallPtr& call, HttpResponse response);
  // handlers/kv_sliced.cc: a GET ?recurse or ?keys whose answer is `size`
  // bytes, larger than AnswerBuilder::kOffLoopBytes, copied a slice per loop
  // turn (decision 0051) and encoded off the loop.
  HttpResponse SlicedRecurse(const CallPtr& call, std::size_t size);
  HttpResponse SlicedKeyList(const CallPtr& call, std::string separator, std::size_t size);
  std::string AgentNodeName(const Call& call) const;
  // Made at the first large answer.
  AnswerBuilder* Builder();
  // handlers/acl.cc: what a token or policy write would store, checked
  // against the leader's Store and clock (existing: the one updated).
  Result<state::AclToken> AclTokenToWrite(const TokenRequest& request,
                                          const state::AclToken* existing) const;
  Result<state::AclPolicy> AclPolicyToWrite(const PolicyRequest& request,
                                            const state::AclPolicy* existing) const;
  void WriteAclToken(const CallPtr& call, state::AclToken token);
  void WriteAclPolicy(const CallPtr& call, state::AclPolicy policy);
  // routes.cc: nullopt if the request carries the operator token, else the
  // 403 to answer (decision 0012).
  std::optional<HttpResponse> CheckOperatorToken(const HttpRequest& request) const;

  // A parked blocking query's caller, resolved again when it wakes: a token
  // deleted, expired or changed meanwhile decides the answer. An error
  // answer when the token no longer resolves.
  std::optional<HttpResponse> ResolveAgain(Call& call);
  // Adds X-Consul-Index (never 0), X-Consul-KnownLeader, X-Consul-LastContact.
  void SetMeta(HttpResponse* response, LogIndex index) const;
  // Proposes and answers 500 on a raft failure; `done` sees only applied results.
  void ProposeThen(const CallPtr& call, state::CommandBody body,
                   std::function<void(const state::ApplyResult&)> done);
  // handlers/kv.cc: parks a fair acquire (?acquire&queue) whose session
  // waits in the key's queue, and answers it (decision 0027).
  void ParkInQueue(const CallPtr& call, std::string key, state::SessionId session);
  bool QueuedCallerStillAllowed(Call& call, const std::string& key);

  // The whole answer to a GET of one key's entry (JSON, not ?raw) for a
  // caller allowed to read it, headers included: the same for every such
  // caller while the entry's version, the key's index, the leader state and
  // the ACL default policy stay, so the watchers one write wakes share one
  // (decision 0034).
  std::shared_ptr<const SharedAnswer> EntryAnswer(const state::KvEntry& entry, LogIndex key_index,
                                                  std::string_view default_acl_policy);

  boost::asio::io_context& io_;
  server::Server& server_;
  // PUT /v1/snapshot's file checked off the loop, one at a time (decision
  // 0046); made at the first restore. shared_ptr: the type is the handler's.
  std::shared_ptr<SnapshotChecker> snapshot_checker_;
  std::unique_ptr<AnswerBuilder> answer_builder_;
  // Before forwarder_: forwarded requests' responders count into it.
  HttpMetrics metrics_;
  std::unique_ptr<Forwarder> forwarder_;
  std::mt19937_64 random_;
  server::HealthHistory health_history_;  // autopilot's StableSince
  struct {
    std::string key;
    LogIndex modify_index;
    LogIndex key_index;
    bool known_leader = false;
    DurationMs last_contact_ms = 0;
    std::string default_acl_policy;
    std::shared_ptr<const SharedAnswer> answer;
  } entry_answer_;
};

// Maps a Status to Consul's HTTP status and plain-text body.
HttpResponse ErrorResponse(const Status& status);

// Consul's X-Consul-Results-Filtered-By-ACLs: sent when a listing left out
// what the caller may not read, and only to callers that sent a token.
void MarkFiltered(const Call& call, std::size_t removed, HttpResponse* response);

// The ACL token a request carries, in Consul's order: ?token=, then
// X-Consul-Token, then Authorization: Bearer. Empty when none.
std::string_view RequestToken(const HttpRequest& request);

// Whether the path is the dashboard's (/ui or under /ui/): handlers/ui.cc.
bool IsUiPath(std::string_view path);

}  // namespace tenure::http
