// GET /v1/kv/<prefix>?recurse and ?keys with a large answer: the entries are
// copied out of the Store a slice per loop turn (http/prefix_copy.h,
// decision 0051) and the JSON is built on a builder thread (decision 0046).
// What the client reads is what the one-turn path in kv.cc would answer at
// the index the answer carries.
#include <algorithm>
#include <functional>
#include <memory>
#include <string_view>

#include "common/consul_texts.h"
#include "common/limits.h"
#include "http/api.h"
#include "http/json.h"
#include "http/prefix_copy.h"

namespace tenure::http {
namespace {

bool Unreadable(const Call& call, std::string_view key) {
  return !call.caller.unrestricted && !call.caller.can().KeyRead(key).allowed();
}

// What a whole copy answers, as the one-turn path would: 404 when `empty`,
// the answer-size limit's error past it, else the body `build` makes.
void Finish(HttpResponse* answer, bool empty, std::size_t size, std::string_view hint,
            std::function<std::string()> build) {
  if (empty) {
    *answer = HttpResponse::Text(404, "");
  } else if (size > limits::kHttpResponseBytesMax) {
    *answer = ErrorResponse(
        consul::ResponseTooLarge(limits::kHttpResponseBytesMax, "; " + std::string(hint)));
  } else {
    answer->build_body = std::move(build);
    answer->build_bytes = std::max<std::size_t>(size, 2);
  }
}

}  // namespace

HttpResponse Api::SlicedRecurse(const CallPtr& call, std::size_t size) {
  struct Copied {
    std::vector<state::KvEntry> entries;
    std::size_t size = 1;  // "[" and "]", less the first entry's comma
    std::size_t removed = 0;
  };
  auto copied = std::make_shared<Copied>();
  auto copy = std::make_shared<PrefixCopy>(
      call->arg,
      [copied, call](const state::KvEntry& entry) -> std::size_t {
        if (Unreadable(*call, entry.key)) {
          ++copied->removed;
          return 0;
        }
        copied->entries.push_back(entry);
        copied->size += json::KvEntrySize(entry) + 1;
        return entry.key.size() + entry.value.size();
      },
      [copied] { *copied = Copied(); });
  HttpResponse response = HttpResponse::Json("");
  response.build_bytes = size;
  response.gather = [this, call, copied, copy](HttpResponse* answer) {
    if (!copy->Step(server_.store())) return false;
    Finish(answer, copied->entries.empty(), copied->size,
           "read a narrower prefix, or list it with ?keys",
           [copied] { return json::KvEntries(copied->entries); });
    SetMeta(answer, copy->index());
    MarkFiltered(*call, copied->removed, answer);
    return true;
  };
  return response;
}

HttpResponse Api::SlicedKeyList(const CallPtr& call, std::string separator, std::size_t size) {
  struct Listed {
    std::vector<std::string> keys;
    std::string last_cut;  // keys sharing a cut are adjacent in key order
    bool have_cut = false;
    std::size_t size = 1;  // as above
    std::size_t removed = 0;
  };
  auto listed = std::make_shared<Listed>();
  const std::size_t prefix_size = call->arg.size();
  auto copy = std::make_shared<PrefixCopy>(
      call->arg,
      [listed, call, separator, prefix_size](const state::KvEntry& entry) -> std::size_t {
        std::string_view key = entry.key;
        if (!separator.empty()) {
          // As Store::ListKeys: cut just after the first separator past the
          // prefix, and one key per cut.
          const std::size_t at = key.find(separator, prefix_size);
          if (at != std::string_view::npos) {
            key = key.substr(0, at + separator.size());
            if (listed->have_cut && key == listed->last_cut) return 0;
            listed->last_cut.assign(key);
            listed->have_cut = true;
          }
        }
        if (Unreadable(*call, key)) {
          ++listed->removed;
          return 0;
        }
        listed->keys.emplace_back(key);
        listed->size += json::StringSize(key) + 1;
        return key.size();
      },
      [listed] { *listed = Listed(); });
  HttpResponse response = HttpResponse::Json("");
  response.build_bytes = size;
  response.gather = [this, call, listed, copy](HttpResponse* answer) {
    if (!copy->Step(server_.store())) return false;
    Finish(answer, listed->keys.empty() && !call->arg.empty(), listed->size,
           "list a narrower prefix or use ?separator",
           [listed] { return json::Strings(listed->keys); });
    SetMeta(answer, copy->index());
    MarkFiltered(*call, listed->removed, answer);
    return true;
  };
  return response;
}

}  // namespace tenure::http
