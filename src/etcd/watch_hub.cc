#include "etcd/watch_hub.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <utility>

#include "common/etcd_texts.h"
#include "common/limits.h"
#include "etcd/kv_service.h"
#include "etcd/proto_codec.h"
#include "etcd/watch_answers.h"
#include "state/etcd_range.h"

namespace tenure::etcd {

using etcd_texts::EtcdError;

struct WatchStream::Watcher {
  WatchStream* stream = nullptr;
  std::int64_t id = 0;
  state::KeyRange range;
  // The oldest revision this watcher still needs: events below it were
  // sent or skipped (a start revision in the future sets it ahead).
  LogIndex next;
  bool live = false;
  bool no_put = false;
  bool no_delete = false;
  bool prev_kv = false;
  bool progress_notify = false;
  bool fragment = false;
  bool sent_since_progress = false;
  // The events one apply batch brought it (WatchHub::OnBatch).
  std::vector<const state::KvEvent*> batch;

  bool Wants(const state::KvEvent& event) const {
    if (event.revision < next) return false;
    return event.is_delete() ? !no_delete : !no_put;
  }
};

namespace {

std::size_t EncodedSize(const WatchResponse& response) {
  std::string bytes;
  EncodeProto(response, &bytes);
  return bytes.size();
}

}  // namespace

void WatchSink::SendEncoded(std::string_view header, std::string_view watch_id,
                            std::string_view events) {
  std::string bytes;
  bytes.reserve(header.size() + watch_id.size() + events.size());
  bytes.append(header).append(watch_id).append(events);
  WatchResponse response;
  // Our own encoding: it decodes (an error here would be a bug in the
  // encoder, which the watch tests would show).
  if (DecodeProto(bytes, &response).empty()) Send(response);
}

// --- WatchStream ------------------------------------------------------------------

WatchStream::WatchStream(WatchHub& hub, WatchSink& sink, Client client)
    : hub_(hub), sink_(sink), client_(std::move(client)) {
  hub_.streams_.insert(this);
  std::weak_ptr<bool> alive = alive_;
  sink_.OnDrained([this, alive] {
    if (alive.expired() || !waiting_for_drain_) return;
    waiting_for_drain_ = false;
    catch_up_scheduled_ = false;
    CatchUp();
  });
}

WatchStream::~WatchStream() {
  *alive_ = false;
  sink_.OnDrained(nullptr);
  for (auto& [id, watcher] : watchers_) {
    if (watcher->live) hub_.Unindex(*watcher);
  }
  hub_.watchers_ -= watchers_.size();
  hub_.server_.SetEtcdWatchers(hub_.watchers_);
  hub_.streams_.erase(this);
}

ResponseHeader WatchStream::Header() const {
  return HeaderAt(hub_.server_, hub_.cluster_id_, hub_.server_.store().applied_index());
}

bool WatchStream::Congested() const { return sink_.unsent_bytes() > limits::kEtcdWatchUnsentBytes; }

void WatchStream::Handle(const WatchRequest& request) {
  switch (request.kind) {
    case WatchRequest::Kind::kCreate:
      return Create(request.create);
    case WatchRequest::Kind::kCancel:
      return Cancel(request.cancel.watch_id);
    case WatchRequest::Kind::kProgress: {
      // Not tied to one watcher (watch id -1): every event up to the
      // header's revision was sent to the stream's live watchers.
      WatchResponse response;
      response.header = Header();
      response.body.watch_id = -1;
      return sink_.Send(response);
    }
    case WatchRequest::Kind::kNone:
      return;  // etcd ignores a request with no member set
  }
}

void WatchStream::Create(const WatchCreateRequest& request) {
  WatchResponse response;
  response.header = Header();
  response.body.created = true;
  auto refuse = [&](std::string reason) {
    response.body.watch_id = -1;
    response.body.canceled = true;
    response.body.cancel_reason = std::move(reason);
    sink_.Send(response);
  };
  if (request.range.empty()) return refuse(std::string(etcd_texts::kWatcherRangeEmpty));
  if (EtcdError denied = MayRead(client_.can(), request.range); !denied.ok()) {
    return refuse(std::move(denied.message));  // etcd's answer to a watch it may not make
  }
  std::int64_t id = request.watch_id;
  if (id == 0) {
    while (watchers_.contains(next_id_)) ++next_id_;
    id = next_id_++;
  } else if (watchers_.contains(id)) {
    return refuse(std::string(etcd_texts::kWatcherDuplicateId));
  }
  if (watchers_.size() >= limits::kEtcdWatchersPerStreamMax) {
    return refuse("tenure: this stream has " + std::to_string(watchers_.size()) +
                  " watchers, the most one stream may have");
  }
  if (hub_.watchers_ >= limits::kEtcdWatchersMax) {
    return refuse("tenure: this server has " + std::to_string(hub_.watchers_) +
                  " watchers, the most it serves");
  }
  auto watcher = std::make_unique<Watcher>();
  watcher->stream = this;
  watcher->id = id;
  watcher->range = request.range;
  for (WatchFilter filter : request.filters) {
    (filter == WatchFilter::kNoPut ? watcher->no_put : watcher->no_delete) = true;
  }
  watcher->prev_kv = request.prev_kv;
  watcher->progress_notify = request.progress_notify;
  watcher->fragment = request.fragment;
  const LogIndex applied = hub_.server_.store().applied_index();
  const bool past = request.start_revision > 0 &&
                    static_cast<std::uint64_t>(request.start_revision) <= applied.value();
  watcher->next = request.start_revision > 0
                      ? LogIndex(static_cast<std::uint64_t>(request.start_revision))
                      : applied.Next();
  Watcher& added = *watcher;
  watchers_.emplace(id, std::move(watcher));
  ++hub_.watchers_;
  hub_.server_.SetEtcdWatchers(hub_.watchers_);
  response.body.watch_id = id;
  sink_.Send(response);
  if (past) {
    // The replay answers a compacted start at once (etcd sends it right
    // after the created answer).
    behind_.push_back(id);
    ScheduleCatchUp();
  } else {
    added.live = true;
    hub_.Index(added);
  }
}

void WatchStream::Cancel(std::int64_t watch_id) {
  auto it = watchers_.find(watch_id);
  if (it == watchers_.end()) return;  // etcd answers nothing
  Remove(*it->second);
  WatchResponse response;
  response.header = Header();
  response.body.watch_id = watch_id;
  response.body.canceled = true;
  sink_.Send(response);
}

void WatchStream::Remove(Watcher& watcher) {
  if (watcher.live) hub_.Unindex(watcher);
  std::erase(behind_, watcher.id);
  --hub_.watchers_;
  hub_.server_.SetEtcdWatchers(hub_.watchers_);
  watchers_.erase(watcher.id);  // destroys `watcher`
}

void WatchStream::SendCompacted(Watcher& watcher) {
  WatchResponse response;
  response.header = Header();
  response.body.watch_id = watcher.id;
  response.body.canceled = true;
  const state::EventLog* history = hub_.server_.history();
  response.body.compact_revision =
      static_cast<std::int64_t>((history != nullptr ? history->compact_revision()
                                                    : hub_.server_.store().applied_index().Next())
                                    .value());
  Remove(watcher);
  sink_.Send(response);
}

void WatchStream::SendCanceled(Watcher& watcher, std::string reason) {
  WatchResponse response;
  response.header = Header();
  response.body.watch_id = watcher.id;
  response.body.canceled = true;
  response.body.cancel_reason = std::move(reason);
  Remove(watcher);
  sink_.Send(response);
}

void WatchStream::Reauthorize() {
  if (watchers_.empty() || hub_.server_.CallerStillValid(client_.caller)) return;
  Client again;
  const EtcdError unknown = ResolveClient(hub_.server_, client_.token, &again);
  std::vector<Watcher*> denied;
  for (auto& [id, watcher] : watchers_) {
    if (!unknown.ok() || !MayRead(again.can(), watcher->range).ok())
      denied.push_back(watcher.get());
  }
  for (Watcher* watcher : denied) {
    SendCanceled(*watcher, unknown.ok() ? PermissionDenied().message : unknown.message);
  }
  if (unknown.ok()) client_ = std::move(again);
}

void WatchStream::SendEvents(Watcher& watcher, const std::vector<const state::KvEvent*>& events) {
  if (events.empty()) return;
  watcher.sent_since_progress = true;
  WatchResponse response;
  response.header = Header();
  response.body.watch_id = watcher.id;
  auto flush = [&] {
    if (response.body.events.empty()) return;
    if (watcher.fragment && EncodedSize(response) > limits::kEtcdWatchFragmentBytes) {
      // etcd's sendFragments: pieces under the limit, each but the last
      // marked, at least one event each.
      std::vector<Event> all = std::move(response.body.events);
      response.body.events.clear();
      std::size_t bytes = 0;
      for (std::size_t i = 0; i < all.size(); ++i) {
        std::string one;
        EncodeProto(all[i], &one);
        if (!response.body.events.empty() && bytes + one.size() > limits::kEtcdWatchFragmentBytes) {
          response.body.fragment = true;
          sink_.Send(response);
          response.body.events.clear();
          bytes = 0;
        }
        bytes += one.size();
        response.body.events.push_back(std::move(all[i]));
      }
      response.body.fragment = false;
    }
    sink_.Send(response);
    response.body.events.clear();
  };
  LogIndex last;
  for (const state::KvEvent* event : events) {
    // Whole revisions per answer: cut only where the revision changes.
    if (response.body.events.size() >= limits::kEtcdWatchEventsPerAnswer &&
        event->revision != last) {
      flush();
    }
    response.body.events.push_back(ToEvent(*event, watcher.prev_kv));
    last = event->revision;
  }
  flush();
  watcher.next = last.Next();
}

bool WatchStream::SendShared(Watcher& watcher, const std::vector<const state::KvEvent*>& events,
                             SharedEncodings& shared) {
  if (!sink_.takes_protobuf() || watcher.fragment || events.empty() ||
      events.size() > limits::kEtcdWatchEventsPerAnswer) {
    return false;
  }
  watcher.sent_since_progress = true;
  std::string watch_id;
  if (watcher.id != 0) {  // proto3 leaves a zero out, as Send's encoding does
    ProtoWriter(&watch_id).VarintField(2, static_cast<std::uint64_t>(watcher.id));
  }
  sink_.SendEncoded(shared.header(), watch_id, shared.EventsOf(events, watcher.prev_kv));
  watcher.next = events.back()->revision.Next();
  return true;
}

void WatchStream::FallBehind(Watcher& watcher, LogIndex next) {
  if (watcher.live) hub_.Unindex(watcher);
  watcher.live = false;
  watcher.next = std::max(watcher.next, next);
  behind_.push_back(watcher.id);
  ScheduleCatchUp();
}

void WatchStream::ScheduleCatchUp() {
  if (catch_up_scheduled_) return;
  catch_up_scheduled_ = true;
  if (Congested()) {
    waiting_for_drain_ = true;  // the sink's drain callback resumes it
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  boost::asio::post(hub_.io_, [this, alive] {
    if (alive.expired()) return;
    catch_up_scheduled_ = false;
    CatchUp();
  });
}

void WatchStream::CatchUp() {
  // A few answers per turn of the loop, so one stream's replay never holds
  // the loop; the rest is posted (or waits for the sink to drain).
  constexpr int kAnswersPerTurn = 16;
  int answers = 0;
  while (!behind_.empty()) {
    if (Congested() || answers >= kAnswersPerTurn) return ScheduleCatchUp();
    const std::int64_t id = behind_.front();
    behind_.erase(behind_.begin());
    auto it = watchers_.find(id);
    if (it == watchers_.end()) continue;
    Watcher& watcher = *it->second;
    const state::EventLog* history = hub_.server_.history();
    if (history == nullptr) {
      SendCompacted(watcher);
      ++answers;
      continue;
    }
    state::EventLog::Replay replay =
        history->EventsFrom(watcher.range, watcher.next, limits::kEtcdWatchEventsPerAnswer);
    if (replay.refusal == state::EventLog::Refusal::kCompacted) {
      SendCompacted(watcher);
      ++answers;
      continue;
    }
    std::vector<const state::KvEvent*> wanted;
    for (const state::KvEvent* event : replay.events) {
      if (watcher.Wants(*event)) wanted.push_back(event);
    }
    if (!wanted.empty()) {
      SendEvents(watcher, wanted);
      ++answers;
    }
    watcher.next = std::max(watcher.next, replay.next);
    if (replay.caught_up) {
      // Every revision applied was looked at: later ones come live.
      watcher.live = true;
      hub_.Index(watcher);
    } else {
      behind_.push_back(id);  // after the others: each stream's watchers take turns
    }
  }
}

// --- WatchHub ---------------------------------------------------------------------

WatchHub::WatchHub(server::Server& server, boost::asio::io_context& io, WatchHubOptions options)
    : server_(server),
      io_(io),
      options_(options),
      cluster_id_(ClusterIdOf(server)),
      last_applied_(server.store().applied_index()),
      acl_policies_index_(server.store().acl().policies_index()),
      acl_tokens_index_(server.store().acl().tokens_index()),
      progress_timer_(io) {
  listener_id_ = server_.AddHistoryListener(
      [this](const server::Server::HistoryBatch& batch) { OnBatch(batch); });
  ScheduleProgress();
}

WatchHub::~WatchHub() {
  server_.RemoveHistoryListener(listener_id_);
  progress_timer_.cancel();
}

std::size_t WatchHub::live_watchers() const {
  std::size_t live = by_range_.size();
  for (const auto& [key, watchers] : by_key_) live += watchers.size();
  return live;
}

void WatchHub::Index(WatchStream::Watcher& watcher) {
  if (watcher.range.single()) {
    by_key_[watcher.range.key].insert(&watcher);
  } else {
    by_range_.insert(&watcher);
  }
}

void WatchHub::Unindex(WatchStream::Watcher& watcher) {
  if (!watcher.range.single()) {
    by_range_.erase(&watcher);
    return;
  }
  auto it = by_key_.find(watcher.range.key);
  if (it == by_key_.end()) return;
  it->second.erase(&watcher);
  if (it->second.empty()) by_key_.erase(it);
}

void WatchHub::OnBatch(const server::Server::HistoryBatch& batch) {
  const LogIndex applied = server_.store().applied_index();
  if (batch.replaced_at.has_value()) {
    // Watchers that had not seen everything before the replacement missed
    // changes no window holds; after a raft restart (the state went back,
    // to be replayed) every watcher would, so every one goes.
    const bool went_back = *batch.replaced_at < last_applied_;
    for (WatchStream* stream : std::vector<WatchStream*>(streams_.begin(), streams_.end())) {
      std::vector<WatchStream::Watcher*> gone;
      for (auto& [id, watcher] : stream->watchers_) {
        if (went_back || watcher->next <= *batch.replaced_at) gone.push_back(watcher.get());
      }
      for (WatchStream::Watcher* watcher : gone) stream->SendCompacted(*watcher);
    }
  }
  last_applied_ = applied;
  const state::AclTable& acl = server_.store().acl();
  if (acl.policies_index() != acl_policies_index_ || acl.tokens_index() != acl_tokens_index_) {
    acl_policies_index_ = acl.policies_index();
    acl_tokens_index_ = acl.tokens_index();
    for (WatchStream* stream : std::vector<WatchStream*>(streams_.begin(), streams_.end())) {
      stream->Reauthorize();
    }
  }
  std::vector<WatchStream::Watcher*> touched;
  auto offer = [&touched](WatchStream::Watcher* watcher, const state::KvEvent& event) {
    if (!watcher->Wants(event)) return;
    if (watcher->batch.empty()) touched.push_back(watcher);
    watcher->batch.push_back(&event);
  };
  for (const state::KvEvent& event : batch.events) {
    if (auto it = by_key_.find(event.key()); it != by_key_.end()) {
      for (WatchStream::Watcher* watcher : it->second) offer(watcher, event);
    }
    for (WatchStream::Watcher* watcher : by_range_) {
      if (watcher->range.Contains(event.key())) offer(watcher, event);
    }
  }
  if (touched.empty()) return;
  // Every answer of this batch has the same header: the applied index now.
  SharedEncodings shared(HeaderAt(server_, cluster_id_, server_.store().applied_index()));
  // Each watcher's list is swapped with this one (cleared after), so the
  // watchers keep their lists' room between batches instead of making a
  // list at every event; a large one (a batch of many events) is freed
  // rather than handed on, so no watcher holds it while idle.
  constexpr std::size_t kBatchRoomKept = 16;
  std::vector<const state::KvEvent*> events;
  for (WatchStream::Watcher* watcher : touched) {
    if (events.capacity() > kBatchRoomKept) {
      events = {};
    } else {
      events.clear();
    }
    events.swap(watcher->batch);
    WatchStream& stream = *watcher->stream;
    if (stream.Congested()) {
      stream.FallBehind(*watcher, events.front()->revision);
    } else if (!stream.SendShared(*watcher, events, shared)) {
      stream.SendEvents(*watcher, events);
    }
  }
}

void WatchHub::ScheduleProgress() {
  progress_timer_.expires_after(std::chrono::milliseconds(options_.progress_interval_ms));
  progress_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    SendProgress();
    ScheduleProgress();
  });
}

void WatchHub::SendProgress() {
  // etcd's rule: a watcher that asked hears the revision when nothing was
  // sent to it since the last tick, and only while it is live (every event
  // up to the revision was sent).
  for (WatchStream* stream : streams_) {
    for (auto& [id, watcher] : stream->watchers_) {
      if (!watcher->progress_notify) continue;
      if (watcher->live && !watcher->sent_since_progress && !stream->Congested()) {
        WatchResponse response;
        response.header = stream->Header();
        response.body.watch_id = id;
        stream->sink_.Send(response);
      }
      watcher->sent_since_progress = false;
    }
  }
}

}  // namespace tenure::etcd
