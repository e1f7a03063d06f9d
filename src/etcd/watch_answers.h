// What a watch answer carries, apart from the hub that decides who gets
// it: a Store event as etcd's Event, and the bytes one apply batch's
// answers share (etcd/watch_hub.h). Loop thread only.
#pragma once

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/messages_services.h"
#include "state/kv_event.h"

namespace tenure::etcd {

// `event` as etcd's Event: a put's whole entry, a delete's key and
// revision; the entry before it where `with_prev_kv` asks and there is one.
Event ToEvent(const state::KvEvent& event, bool with_prev_kv);

// The bytes of one apply batch's answers that are the same for every
// watcher: the header's field, and the fields of each distinct list of
// events (with or without previous values), each encoded once
// (WatchHub::OnBatch). With 1,000 watchers of one key, one write's events
// are encoded once, not 1,000 times. Lives for one OnBatch: the events it
// points at are the batch's.
class SharedEncodings {
 public:
  explicit SharedEncodings(const ResponseHeader& header);
  std::string_view header() const { return header_; }
  // The events' fields (field 11, each event in order).
  std::string_view EventsOf(const std::vector<const state::KvEvent*>& events, bool prev_kv);

 private:
  using Key = std::pair<std::vector<const state::KvEvent*>, bool>;
  // A list looked up as it is, without a copy made for a key.
  using KeyView = std::pair<std::span<const state::KvEvent* const>, bool>;
  struct KeyLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      if (a.second != b.second) return a.second < b.second;
      return std::lexicographical_compare(a.first.begin(), a.first.end(), b.first.begin(),
                                          b.first.end());
    }
  };
  std::string header_;
  std::map<Key, std::string, KeyLess> events_;
  const std::pair<const Key, std::string>* last_ = nullptr;
};

}  // namespace tenure::etcd
