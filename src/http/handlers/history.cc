// GET /v1/tenure/history/<key>: the lock history of one key
// (docs/history.md). A blocking query watching the KV key: every change of
// the history is a change of the key, so X-Consul-Index is the key's index
// (Store::KeyIndex), which a history change always moves.
//
// GET /v1/tenure/history/<name>?succession: the leaders of the etcd election
// or lock <name>, derived from the histories of its contenders' keys under
// "<name>/" (state/recipe_succession.h), in the same record format plus each
// record's Key; GrantedAt and GrantIndex say when it began to lead. A
// blocking query on the prefix; key:read on the whole prefix.
//
// GET /v1/tenure/queue/<key>: the waiters of one key's fair-acquire queue,
// head first (decision 0027), a blocking query on the queue
// (Store::QueueIndex). key:read on the key.
#include <cstdio>
#include <ctime>

#include "common/consul_texts.h"
#include "http/api.h"
#include "http/json.h"
#include "state/recipe_succession.h"

namespace tenure::http {
namespace {

// "2026-11-26T22:52:16.123Z": UTC, always three fraction digits.
std::string FormatTimeMs(UnixMs time) {
  const std::int64_t ms = time.ms();
  std::int64_t seconds = ms / 1000;
  std::int64_t fraction = ms % 1000;
  if (fraction < 0) {
    fraction += 1000;
    seconds -= 1;
  }
  const auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(fraction));
  return buf;
}

// One record: the grant `g`, granted at `granted_at` and `grant_index`
// (its own, or when it began to lead); `key` first when not empty.
void AppendRecord(std::string* out_ptr, const state::LockGrant& g, UnixMs granted_at,
                  LogIndex grant_index, std::string_view key = {}) {
  std::string& out = *out_ptr;
  out += '{';
  if (!key.empty()) {
    out += "\"Key\":";
    json::AppendString(&out, key);
    out += ',';
  }
  out += "\"Fence\":" + std::to_string(g.fence.value()) + ",\"Session\":";
  json::AppendString(&out, g.session.view());
  out += ",\"SessionName\":";
  json::AppendString(&out, g.session_name);
  out += ",\"Node\":";
  json::AppendString(&out, g.node);
  out += ",\"GrantedAt\":\"" + FormatTimeMs(granted_at) + "\"";
  out += ",\"GrantIndex\":" + std::to_string(grant_index.value());
  if (g.held()) {
    out += ",\"EndedAt\":null";
  } else {
    out += ",\"EndedAt\":\"" + FormatTimeMs(g.ended_at) + "\"";
  }
  out += ",\"EndIndex\":" + std::to_string(g.end_index.value());
  out += ",\"EndCause\":\"" + std::string(state::EndCauseName(g.end_cause)) + "\"}";
}

std::string RenderHistory(const state::LockHistory::KeyHistory& h) {
  std::string out = "[";
  for (const state::LockGrant& g : h.grants) {
    if (out.size() > 1) out += ',';
    AppendRecord(&out, g, g.granted_at, g.grant_index);
  }
  out += "]";
  return out;
}

std::string RenderSuccession(const std::vector<state::RecipeTenure>& tenures) {
  std::string out = "[";
  for (const state::RecipeTenure& t : tenures) {
    if (out.size() > 1) out += ',';
    AppendRecord(&out, t.grant, t.led_at, t.led_from, t.key);
  }
  out += "]";
  return out;
}

std::string RenderQueue(const state::Store& store, const std::deque<state::QueueWaiter>* queue) {
  std::string out = "[";
  if (queue != nullptr) {
    bool first = true;
    for (const state::QueueWaiter& w : *queue) {
      if (!first) out += ',';
      first = false;
      const state::Session* session = store.FindSession(w.session);
      out += "{\"Session\":";
      json::AppendString(&out, w.session.view());
      out += ",\"SessionName\":";
      json::AppendString(&out, session != nullptr ? session->name : std::string());
      out += ",\"Node\":";
      json::AppendString(&out, session != nullptr ? session->node : std::string());
      out += ",\"Since\":\"" + FormatTimeMs(w.since) + "\"";
      out += ",\"EnqueueIndex\":" + std::to_string(w.enqueue_index.value()) + "}";
    }
  }
  out += "]";
  return out;
}

}  // namespace

void Api::QueueWaiters(const CallPtr& call) {
  const std::string& key = call->arg;
  if (key.empty()) {
    call->ReplyError(consul::MissingKeyName());
    return;
  }
  // A key without waiters answers [] (not 404): a queue is empty, not missing.
  BlockingRead(call, {server::WatchKind::kQueue, key}, [this, call] {
    const state::Store& store = server_.store();
    if (acl::Decision d = call->caller.can().KeyRead(call->arg); !d.allowed()) {
      return ErrorResponse(call->caller.Denied(d, call->arg));
    }
    HttpResponse response = HttpResponse::Json(RenderQueue(store, store.FindQueue(call->arg)));
    SetMeta(&response, store.QueueIndex(call->arg));
    return response;
  });
}

void Api::LockHistory(const CallPtr& call) {
  const std::string& key = call->arg;
  if (key.empty()) {
    call->ReplyError(consul::MissingKeyName());
    return;
  }
  if (call->request->HasQuery("succession")) {
    // An etcd election or lock: its contenders' keys are "<name>/...".
    const std::string prefix = key + "/";
    BlockingRead(call, {server::WatchKind::kPrefix, prefix}, [this, call, prefix] {
      const state::Store& store = server_.store();
      if (acl::Decision d = call->caller.can().KeyReadPrefix(prefix); !d.allowed()) {
        return ErrorResponse(call->caller.Denied(d, prefix));
      }
      const std::vector<state::RecipeTenure> tenures =
          state::RecipeSuccession(store.history(), prefix);
      HttpResponse response = tenures.empty() ? HttpResponse::Text(404, "")
                                              : HttpResponse::Json(RenderSuccession(tenures));
      SetMeta(&response, store.PrefixIndex(prefix));
      return response;
    });
    return;
  }
  // A key longer than any key can be (limits::kKvKeyBytesMax) gets what a KV
  // GET gets: 404, as it never held a lock.
  BlockingRead(call, {server::WatchKind::kKey, key}, [this, call] {
    const state::Store& store = server_.store();
    if (acl::Decision d = call->caller.can().KeyRead(call->arg); !d.allowed()) {
      return ErrorResponse(call->caller.Denied(d, call->arg));
    }
    const state::LockHistory::KeyHistory* h = store.FindHistory(call->arg);
    HttpResponse response =
        h == nullptr ? HttpResponse::Text(404, "") : HttpResponse::Json(RenderHistory(*h));
    SetMeta(&response, store.KeyIndex(call->arg));
    return response;
  });
}

}  // namespace tenure::http
