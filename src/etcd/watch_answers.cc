#include "etcd/watch_answers.h"

#include <cstdint>
#include <utility>

#include "etcd/proto_codec.h"
#include "state/etcd_range.h"

namespace tenure::etcd {

Event ToEvent(const state::KvEvent& event, bool with_prev_kv) {
  Event out;
  if (event.is_delete()) {
    out.type = EventType::kDelete;
    out.kv.key = event.key();
    out.kv.mod_revision = static_cast<std::int64_t>(event.revision.value());
  } else {
    out.type = EventType::kPut;
    out.kv = state::ToEtcdKeyValue(*event.after);
  }
  if (const state::KvEntry* prev = event.prev(); with_prev_kv && prev != nullptr) {
    out.has_prev_kv = true;
    out.prev_kv = state::ToEtcdKeyValue(*prev);
  }
  return out;
}

SharedEncodings::SharedEncodings(const ResponseHeader& header) {
  ProtoEncoder(&header_).Message(1, "header", header);
}

std::string_view SharedEncodings::EventsOf(const std::vector<const state::KvEvent*>& events,
                                           bool prev_kv) {
  // Watchers of one key ask for the same list one after another: the last
  // one answers without a lookup.
  if (last_ != nullptr && last_->first.second == prev_kv && last_->first.first == events) {
    return last_->second;
  }
  auto entry = events_.find(KeyView{events, prev_kv});
  if (entry == events_.end()) {
    std::string encoded;
    ProtoEncoder encoder(&encoded);
    for (const state::KvEvent* event : events) {
      encoder.Message(11, "events", ToEvent(*event, prev_kv));
    }
    entry = events_.emplace(Key{events, prev_kv}, std::move(encoded)).first;
  }
  last_ = &*entry;
  return entry->second;
}

}  // namespace tenure::etcd
