// Waiters: parked blocking queries (?index=N&wait=D), woken when what they
// watch changes past N or when their wait runs out.
//
// Soft state on every server (not only the leader). Loop thread only.
// Waiters are indexed by what they watch (an exact key, a key prefix, or the
// sessions table) so a write wakes only the waiters it could concern: 1,000
// watchers of one key cost nothing to writes elsewhere. Their deadlines sit
// in one ordered set behind a single timer, so parking and waking cost no
// timer operations of their own; each waiter is linked into that set by a
// hook in its own node, not held in a set node of its own.
#pragma once

#include <boost/intrusive/set.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/histogram.h"
#include "common/types.h"
#include "state/store.h"

namespace boost::asio {
class io_context;
}

namespace tenure::server {

// kAcl watches the ACL tokens (key "tokens") or policies (key "policies").
// kQueue watches a key's fair-acquire queue (Store::QueueIndex).
enum class WatchKind : std::uint8_t { kKey, kPrefix, kSessions, kAcl, kQueue };

struct Watch {
  WatchKind kind = WatchKind::kKey;
  std::string key;  // the key, the prefix, or which ACL table
};

class Waiters {
 public:
  // Runs the query again and sends its answer. Called exactly once per
  // parked query: on a change past its index, on timeout, or on Flush.
  using Respond = std::function<void()>;
  // The index a watch currently reports (Store::KeyIndex, PrefixIndex, ...).
  using IndexOf = std::function<LogIndex(const Watch&)>;

  Waiters(boost::asio::io_context& io, const Clock& clock, IndexOf index_of);
  ~Waiters();

  // Parks a query until the watch's index exceeds min_index or wait_ms
  // passes. Returns an id for Cancel, or 0 if the waiter limit is reached
  // (the caller should then answer at once).
  std::uint64_t Park(Watch watch, LogIndex min_index, DurationMs wait_ms, Respond respond);
  // Forgets a parked query without answering (its client went away).
  void Cancel(std::uint64_t id);
  // Wakes the waiters whose watch the changes touch and whose index moved.
  void Notify(const state::Changes& changes);
  // Answers every parked query now (shutdown, loss of leadership).
  void Flush();
  std::size_t size() const { return waiters_.size(); }
  // Metrics (docs/metrics.md): each query woken by a change observes the
  // time from the start of that Notify to its answer. Null: not measured.
  void set_wake_histogram(Histogram* histogram) { wake_histogram_ = histogram; }

 private:
  // Held in waiters_'s node itself: one allocation per parked query, not two
  // (three with its deadline's set node; decision 0034, addendum).
  struct Waiter {
    Watch watch;
    LogIndex min_index;
    MonoMs deadline_ms;
    Respond respond;
    std::uint64_t id = 0;
    boost::intrusive::set_member_hook<> by_deadline;  // linked into deadlines_ while parked
  };
  struct EarlierDeadline {
    bool operator()(const Waiter& a, const Waiter& b) const {
      return a.deadline_ms != b.deadline_ms ? a.deadline_ms < b.deadline_ms : a.id < b.id;
    }
  };
  using Deadlines =
      boost::intrusive::set<Waiter,
                            boost::intrusive::member_hook<
                                Waiter, boost::intrusive::set_member_hook<>, &Waiter::by_deadline>,
                            boost::intrusive::compare<EarlierDeadline>>;
  void Wake(std::uint64_t id);
  void Unindex(std::uint64_t id, const Watch& watch);
  void ScheduleTimer();
  void OnTimer();
  void LogFanOut(std::size_t woken, std::chrono::steady_clock::time_point start);
  void CheckList(std::vector<std::uint64_t>& ids, std::vector<std::uint64_t>* ready);

  const Clock& clock_;
  Histogram* wake_histogram_ = nullptr;
  IndexOf index_of_;
  struct TimerState;
  std::unique_ptr<TimerState> timer_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Waiter> waiters_;
  // Every parked waiter, by (deadline, id); declared after waiters_, whose
  // nodes it links, so it is unlinked first.
  Deadlines deadlines_;
  std::unordered_map<std::string, std::vector<std::uint64_t>> by_key_;
  std::unordered_map<std::string, std::vector<std::uint64_t>> by_queue_;
  std::vector<std::uint64_t> prefix_waiters_;
  std::vector<std::uint64_t> session_waiters_;
  std::vector<std::uint64_t> acl_waiters_;
};

}  // namespace tenure::server
