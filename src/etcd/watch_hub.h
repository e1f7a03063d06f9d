// etcd's Watch service over the Server's history (decision 0048 section 1),
// transport-free: a WatchStream is one Watch call (a gRPC stream or a
// gateway request), fed its requests and answering through a WatchSink.
//
// A watcher is either live or behind. A live one is in the hub's index (by
// key, or in the list of ranges) and gets each apply batch's events as the
// Server applies them (Server::AddHistoryListener), so it works with any
// window, even one of 0 bytes. A watcher created at a past revision starts
// behind: it replays from the history window (state::EventLog::EventsFrom)
// in answers of whole revisions and goes live once it has looked at every
// revision applied. A live watcher whose stream has more than
// limits::kEtcdWatchUnsentBytes waiting unsent falls behind at its next
// event, and replays once the stream drains; where the window no longer
// holds what it missed it gets etcd's answer for a compacted revision
// (compact_revision set, canceled) and is gone, as etcd's slow watchers.
//
// Every server serves watches from its own state, so a stream lives through
// a change of raft leader. A state replaced whole (a restore, an installed
// snapshot) cancels, with a compacted answer, every watcher that had not
// seen everything before the replacement; a raft restart's replay skips what
// each watcher already got (events below its next revision).
//
// Loop thread only.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/types.h"
#include "etcd/access.h"
#include "etcd/messages_services.h"
#include "server/server.h"

namespace tenure::etcd {

// Where a WatchStream's answers go: the transport's encoder and stream.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // Queues the answer; never calls back into the stream or the hub (the
  // transports write on a later turn of the loop, so no client message is
  // handled under a send: WatchHub::OnBatch holds raw watcher pointers).
  virtual void Send(const WatchResponse& response) = 0;
  // Answers queued and not yet written to the socket.
  virtual std::size_t unsent_bytes() const = 0;
  // Calls `callback` (posted) each time unsent_bytes() falls to 0, as
  // listen::Stream and listen::Responder do; null: no longer.
  virtual void OnDrained(std::function<void()> callback) = 0;
  // Whether SendEncoded may be used: a sink that writes protobuf (gRPC's;
  // the gateway writes JSON from Send's message).
  virtual bool takes_protobuf() const { return false; }
  // The answer Send would send, as its protobuf encoding in order: the
  // header's field, the watch id's (empty for id 0, which proto3 omits),
  // the events' (WatchHub encodes the first and the last once for all the
  // watchers an apply batch's same events go to). Queued as Send's. By
  // default decoded and given to Send: a sink that takes protobuf writes
  // the bytes instead.
  virtual void SendEncoded(std::string_view header, std::string_view watch_id,
                           std::string_view events);
};

struct WatchHubOptions {
  // How often a watcher that asked for progress notifications and was sent
  // no events since the last one hears the current revision (etcd's
  // default, 10 minutes; etcd's flag
  // --experimental-watch-progress-notify-interval).
  DurationMs progress_interval_ms = 10 * 60 * 1000;
};

class WatchHub;
class SharedEncodings;

class WatchStream {
 public:
  // The stream's answers go to `sink`, which must outlive it. Each watcher
  // needs `client`'s token to read its whole range (etcd/access.h), when it
  // is created and again whenever the ACL tables change: one that lost it
  // is cancelled with etcd's "permission denied".
  WatchStream(WatchHub& hub, WatchSink& sink, Client client);
  ~WatchStream();
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  // One request of the stream: create, cancel or progress.
  void Handle(const WatchRequest& request);
  std::size_t watchers() const { return watchers_.size(); }

  struct Watcher;

 private:
  friend class WatchHub;
  void Create(const WatchCreateRequest& request);
  void Cancel(std::int64_t watch_id);
  // Sends `events` (already filtered) for `watcher`: answers of whole
  // revisions, fragments where it asked for them.
  void SendEvents(Watcher& watcher, const std::vector<const state::KvEvent*>& events);
  // SendEvents for a live watcher's apply batch through the sink's
  // SendEncoded, with the bytes `shared` encoded for every watcher that
  // gets the same events; false (nothing sent) where it does not apply: a
  // sink that takes no protobuf, a watcher that asked for fragments, more
  // events than one answer holds.
  bool SendShared(Watcher& watcher, const std::vector<const state::KvEvent*>& events,
                  SharedEncodings& shared);
  void SendCompacted(Watcher& watcher);
  // Ends `watcher` with a cancel answer giving `reason`.
  void SendCanceled(Watcher& watcher, std::string reason);
  // The ACL tables changed: resolves the token again and cancels the
  // watchers it may no longer read.
  void Reauthorize();
  void Remove(Watcher& watcher);
  // Moves a live watcher behind at `next` and schedules the replay.
  void FallBehind(Watcher& watcher, LogIndex next);
  // Replays for the watchers behind while the sink has room; reschedules.
  void CatchUp();
  void ScheduleCatchUp();
  bool Congested() const;
  ResponseHeader Header() const;

  WatchHub& hub_;
  WatchSink& sink_;
  Client client_;
  std::map<std::int64_t, std::unique_ptr<Watcher>> watchers_;
  std::int64_t next_id_ = 0;
  std::vector<std::int64_t> behind_;  // ids replaying, oldest first
  bool catch_up_scheduled_ = false;
  bool waiting_for_drain_ = false;  // the catch-up resumes when the sink drains
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

class WatchHub {
 public:
  WatchHub(server::Server& server, boost::asio::io_context& io, WatchHubOptions options = {});
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  std::size_t watchers() const { return watchers_; }
  std::size_t live_watchers() const;

 private:
  friend class WatchStream;
  void OnBatch(const server::Server::HistoryBatch& batch);
  void Index(WatchStream::Watcher& watcher);
  void Unindex(WatchStream::Watcher& watcher);
  void ScheduleProgress();
  void SendProgress();

  server::Server& server_;
  boost::asio::io_context& io_;
  const WatchHubOptions options_;
  const std::uint64_t cluster_id_;
  LogIndex last_applied_;  // after the last batch
  // The ACL tables' indexes at the last batch: a change re-checks every
  // stream's token.
  LogIndex acl_policies_index_;
  LogIndex acl_tokens_index_;
  std::uint64_t listener_id_ = 0;
  std::size_t watchers_ = 0;
  std::unordered_set<WatchStream*> streams_;
  // Live watchers: of one key by the key, of a range in one list.
  std::unordered_map<std::string, std::unordered_set<WatchStream::Watcher*>> by_key_;
  std::unordered_set<WatchStream::Watcher*> by_range_;
  boost::asio::steady_timer progress_timer_;
};

}  // namespace tenure::etcd
