// /v1/kv/<key>: GET (single, recurse, keys, raw), PUT (set, cas, acquire,
// release, flags) and DELETE (single, recurse, cas), with Consul's semantics
// (docs/consul-api.md section 2) and error texts.
#include <algorithm>
#include <map>

#include "common/consul_texts.h"
#include "common/limits.h"
#include "common/strings.h"
#include "http/answer_builder.h"
#include "http/answer_size.h"
#include "http/api.h"
#include "http/json.h"

namespace tenure::http {
namespace {

// Go's url.Values.Encode(): keys sorted, values in order, escaped.
std::string EncodeQuery(const HttpRequest& request) {
  std::multimap<std::string, std::string> sorted(request.query.begin(), request.query.end());
  auto escape = [](std::string_view s) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.' || c == '~') {
        out += static_cast<char>(c);
      } else if (c == ' ') {
        out += '+';
      } else {
        out += '%';
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
    }
    return out;
  };
  std::string out;
  for (const auto& [k, v] : sorted) {
    if (!out.empty()) out += '&';
    out += escape(k) + "=" + escape(v);
  }
  return out;
}

Status ConflictingFlags(const HttpRequest& request) {
  return consul::ConflictingFlags(EncodeQuery(request));
}

// The answer-size limit (docs/limits.md), checked before the answer is built.
Status AnswerTooLarge(std::string_view hint) {
  return consul::ResponseTooLarge(limits::kHttpResponseBytesMax, "; " + std::string(hint));
}

Status KeyTooLong(std::string_view key) {
  return consul::KeyTooLong(key.size(), limits::kKvKeyBytesMax);
}

// The answer to an acquire: Consul's true/false, and with a grant the
// holder's fencing token (tenure's X-Tenure-Fence).
HttpResponse AcquireAnswer(bool ok, LogIndex fence) {
  HttpResponse response = HttpResponse::Json(ok ? "true" : "false");
  if (!fence.is_none()) {
    response.headers.emplace_back("X-Tenure-Fence", std::to_string(fence.value()));
  }
  return response;
}

// tenure: the answer to a fair acquire that leaves its session waiting in
// the key's queue carries its place (1 = next), so a client can tell a
// server that kept its place from Consul's plain false (decision 0027).
void AddQueuePosition(std::size_t position, HttpResponse* response) {
  if (position != 0) {
    response->headers.emplace_back("X-Tenure-Queue-Position", std::to_string(position));
  }
}

// A parked listing that wakes asks the list-policy question again: the
// caller's token may have changed while it waited.
bool ListDenied(const Call& call, HttpResponse* denied) {
  acl::Decision d = call.caller.can().KeyList(call.arg);
  if (d.allowed()) return false;
  *denied = ErrorResponse(call.caller.Denied(d, call.arg));
  return true;
}

}  // namespace

void Api::KvGet(const CallPtr& call) {
  const HttpRequest& request = *call->request;
  const std::string& key = call->arg;
  const bool keys = request.HasQuery("keys");
  const bool recurse = request.HasQuery("recurse");
  if (key.empty() && !keys && !recurse) {
    call->ReplyError(consul::MissingKeyName());
    return;
  }
  // With Consul's enable_key_list_policy, listing a prefix needs `list` on
  // it (ListDenied); either way, what the caller may not read is left out.
  if (keys) {
    std::string separator(
        request.Query("separator").value_or(request.Query("seperator").value_or("")));
    BlockingRead(call, {server::WatchKind::kPrefix, key}, [this, call, separator] {
      const state::Store& store = server_.store();
      const std::size_t size =
          KeysAnswerSize(store, call->arg, separator, limits::kHttpResponseBytesMax);
      if (size > limits::kHttpResponseBytesMax) {
        HttpResponse response =
            ErrorResponse(AnswerTooLarge("list a narrower prefix or use ?separator"));
        SetMeta(&response, store.PrefixIndex(call->arg));
        return response;
      }
      if (HttpResponse denied; ListDenied(*call, &denied)) return denied;
      if (size > AnswerBuilder::kOffLoopBytes) return SlicedKeyList(call, separator, size);
      std::vector<std::string> list = store.ListKeys(call->arg, separator);
      std::size_t removed = 0;
      if (!call->caller.unrestricted) {
        removed = acl::EraseUnreadableKeys(
            call->caller.can(), list, [](const std::string& k) -> const std::string& { return k; });
      }
      HttpResponse response;
      if (list.empty() && !call->arg.empty()) {
        response = HttpResponse::Text(404, "");
      } else {
        response = HttpResponse::Json(json::Strings(list));
      }
      SetMeta(&response, store.PrefixIndex(call->arg));
      MarkFiltered(*call, removed, &response);
      return response;
    });
    return;
  }
  if (recurse) {
    BlockingRead(call, {server::WatchKind::kPrefix, key}, [this, call] {
      const state::Store& store = server_.store();
      const std::size_t size = RecurseAnswerSize(store, call->arg, limits::kHttpResponseBytesMax);
      if (size > limits::kHttpResponseBytesMax) {
        HttpResponse response =
            ErrorResponse(AnswerTooLarge("read a narrower prefix, or list it with ?keys"));
        SetMeta(&response, store.PrefixIndex(call->arg));
        return response;
      }
      if (HttpResponse denied; ListDenied(*call, &denied)) return denied;
      if (size > AnswerBuilder::kOffLoopBytes) return SlicedRecurse(call, size);
      auto entries = store.ListKv(call->arg);
      std::size_t removed = 0;
      if (!call->caller.unrestricted) {
        removed = acl::EraseUnreadableKeys(call->caller.can(), entries,
                                           [](const state::KvEntry* e) { return e->key; });
      }
      HttpResponse response;
      if (entries.empty()) {
        response = HttpResponse::Text(404, "");
      } else {
        response = HttpResponse::Json(json::KvEntries(entries));
      }
      SetMeta(&response, store.PrefixIndex(call->arg));
      MarkFiltered(*call, removed, &response);
      return response;
    });
    return;
  }
  const bool raw = request.HasQuery("raw");
  // Takes its call as an argument: a closure of this and a flag needs no
  // allocation of its own while 10,000 of it are parked (decision 0034).
  BlockingRead(call, {server::WatchKind::kKey, key}, [this, raw](const Call& parked) {
    const state::Store& store = server_.store();
    if (acl::Decision d = parked.caller.can().KeyRead(parked.arg); !d.allowed()) {
      return ErrorResponse(parked.caller.Denied(d, parked.arg));
    }
    const state::KvEntry* entry = store.FindKv(parked.arg);
    HttpResponse response;
    if (entry == nullptr) {
      response = HttpResponse::Text(404, "");
    } else if (raw) {
      response = HttpResponse::Text(200, entry->value);
      response.content_type = "text/plain";
      response.headers.emplace_back("X-Content-Type-Options", "nosniff");
      response.headers.emplace_back("Content-Security-Policy", "sandbox");
    } else {
      // Every caller allowed to read the key gets the same answer: the
      // watchers one write wakes share it (decision 0034).
      response.shared =
          EntryAnswer(*entry, store.KeyIndex(parked.arg), parked.default_acl_policy());
      return response;
    }
    SetMeta(&response, store.KeyIndex(parked.arg));
    return response;
  });
}

void Api::KvPut(const CallPtr& call) {
  const HttpRequest& request = *call->request;
  const std::string& key = call->arg;
  if (key.empty()) {
    call->ReplyError(consul::MissingKeyName());
    return;
  }
  if (key.size() > limits::kKvKeyBytesMax) {
    call->ReplyError(KeyTooLong(key));
    return;
  }
  auto cas = request.Query("cas");
  auto acquire = request.Query("acquire");
  auto release = request.Query("release");
  if ((cas ? 1 : 0) + (acquire ? 1 : 0) + (release ? 1 : 0) > 1) {
    call->ReplyError(ConflictingFlags(request));
    return;
  }
  // tenure: ?queue makes ?acquire wait its turn (decision 0027); with
  // -fair-queue=false it is ignored, as Consul ignores it.
  const bool queue = request.HasQuery("queue") && server_.options().fair_queue;
  if (queue && !acquire) {
    call->ReplyError(Status::InvalidArgument(
        "?queue needs ?acquire=<session>: it parks a lock acquire in the key's queue"));
    return;
  }
  std::uint64_t flags = 0;
  if (auto text = request.Query("flags")) {
    auto parsed = ParseUint64(*text);
    if (call->Failed(parsed)) return;
    flags = *parsed;
  }
  if (request.body.size() > limits::kConsulValueBytesMax) {
    call->ReplyError(Status::TooLarge(
        "Request body(" + std::to_string(request.body.size()) +
        " bytes) too large, max size: " + std::to_string(limits::kConsulValueBytesMax) +
        " bytes. See https://developer.hashicorp.com/consul/docs/agent/config/"
        "config-files#kv_max_value_size."));
    return;
  }

  state::CommandBody body;
  if (cas) {
    auto index = ParseUint64(*cas);
    if (call->Failed(index)) return;
    body = state::KvCas{key, request.body, flags, LogIndex(*index)};
  } else if (acquire && queue) {
    state::KvEnqueue enqueue{key, request.body, flags, state::SessionId(std::string(*acquire))};
    // Its grant may come in a later entry: the token is asked again then
    // (decision 0038).
    if (!call->caller.unrestricted) {
      enqueue.authority = {true, call->caller.accessor_id(),
                           server_.acl_config().default_policy == acl::DefaultPolicy::kAllow};
    }
    body = std::move(enqueue);
  } else if (acquire) {
    body = state::KvAcquire{key, request.body, flags, state::SessionId(std::string(*acquire))};
  } else if (release) {
    body = state::KvRelease{key, request.body, flags, state::SessionId(std::string(*release))};
  } else {
    body = state::KvSet{key, request.body, flags};
  }
  if (call->Deny(call->caller.can().KeyWrite(key), key)) return;
  ProposeThen(call, std::move(body), [this, call, queue](const state::ApplyResult& result) {
    if (!result.status.ok()) {
      call->ReplyError(result.status);
      return;
    }
    if (queue && result.queued) {
      ParkInQueue(call, call->arg, state::SessionId(std::string(*call->request->Query("acquire"))));
      return;
    }
    // tenure: the holder learns its fencing token with the grant itself.
    call->Reply(AcquireAnswer(result.ok, result.fence));
  });
}

// The enqueue committed and the session waits in the key's queue: the
// request parks here (the leader) until an apply grants the key to the
// session or the session leaves the queue. A wait that runs out answers
// false with the session's place and proposes nothing: the session keeps
// its place for the client to ask again, until it is granted, releases,
// dies, or asks no more for QueueParking's grace (10 s). A client that hangs up
// leaves the queue (KvDequeue), unless another request of its session for
// the key is still parked here; the dequeue's outcome is nobody's answer.
void Api::ParkInQueue(const CallPtr& call, std::string key, state::SessionId session) {
  using Outcome = server::QueueParking::Outcome;
  auto answer = [this, call, key, session](server::QueueParking::Answer a) {
    switch (a.outcome) {
      case Outcome::kGranted:
        call->Reply(AcquireAnswer(true, a.fence));
        return;
      case Outcome::kLeft:
        // Left without the key: if its token no longer allows it (the
        // grant asked it again, decision 0038), the 403 a new request gets.
        if (!QueuedCallerStillAllowed(*call, key)) return;
        call->Reply(AcquireAnswer(false, LogIndex()));
        return;
      case Outcome::kDenied: {
        // Its token was revoked or cut while it waited: the 403, and the
        // session leaves the queue unless another request of it waits.
        if (QueuedCallerStillAllowed(*call, key)) {  // allowed again since: just false
          call->Reply(AcquireAnswer(false, LogIndex()));
        }
        server::QueueParking& parking = server_.queue_parking();
        if (parking.CountParked(key, session) == 0 && server_.IsLeader()) {
          server_.Propose(state::KvDequeue{key, session}, [](Result<state::ApplyResult>) {});
        }
        return;
      }
      case Outcome::kTimedOut: {
        HttpResponse response = AcquireAnswer(false, LogIndex());
        AddQueuePosition(a.position, &response);
        call->Reply(std::move(response));
        return;
      }
      case Outcome::kFlushed: {
        HttpResponse response = ErrorResponse(Status::Internal(
            "this server stopped leading while the request waited in the queue of key " +
            GoQuote(key) + "; send it again: the session keeps its place while it lives"));
        AddQueuePosition(a.position, &response);
        call->Reply(std::move(response));
        return;
      }
    }
  };
  if (std::optional<server::QueueParking::Answer> now =
          server::QueueParking::Check(server_.store(), key, session)) {
    answer(*now);  // an apply since the enqueue already decided
    return;
  }
  if (!server_.IsLeader()) {
    answer({Outcome::kFlushed, LogIndex(), server_.store().QueuePosition(key, session)});
    return;
  }
  call->request->TrimForParking();
  auto allowed = [this, call, key] {
    if (ResolveAgain(*call)) return false;
    return call->caller.can().KeyWrite(key).allowed();
  };
  std::uint64_t id =
      server_.queue_parking().Park(key, session, call->options.wait_ms, answer, allowed);
  call->responder->OnClose([this, id, key, session] {
    // Hung up: leave the queue, unless the request was answered already or
    // another request of the session for the key still waits here.
    server::QueueParking& parking = server_.queue_parking();
    if (!parking.Cancel(id) || parking.CountParked(key, session) != 0) return;
    server_.Propose(state::KvDequeue{key, session}, [](Result<state::ApplyResult>) {});
  });
}

// After a queued acquire left without the key: false if the caller's token
// still allows the acquire; otherwise replies the 403 (or `ACL not found`) a
// new request would get, and returns false.
bool Api::QueuedCallerStillAllowed(Call& call, const std::string& key) {
  if (std::optional<HttpResponse> refused = ResolveAgain(call)) {
    call.Reply(std::move(*refused));
    return false;
  }
  return !call.Deny(call.caller.can().KeyWrite(key), key);
}

void Api::KvDelete(const CallPtr& call) {
  const HttpRequest& request = *call->request;
  const std::string& key = call->arg;
  const bool recurse = request.HasQuery("recurse");
  auto cas = request.Query("cas");
  if (recurse && cas) {
    call->ReplyError(ConflictingFlags(request));
    return;
  }
  if (key.empty() && !recurse) {
    call->ReplyError(consul::MissingKeyName());
    return;
  }
  state::CommandBody body;
  if (recurse) {
    body = state::KvDeleteTree{key};
  } else if (cas) {
    auto index = ParseUint64(*cas);
    if (call->Failed(index)) return;
    body = state::KvDelete{key, true, LogIndex(*index)};
  } else {
    body = state::KvDelete{key, false, LogIndex()};
  }
  const acl::Authorizer& can = call->caller.can();
  if (call->Deny(recurse ? can.KeyWritePrefix(key) : can.KeyWrite(key), key)) return;
  ProposeThen(call, std::move(body), [call](const state::ApplyResult& result) {
    if (!result.status.ok()) {
      call->ReplyError(result.status);
      return;
    }
    call->Reply(HttpResponse::Json(result.ok ? "true" : "false"));
  });
}

}  // namespace tenure::http
