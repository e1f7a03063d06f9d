// What both etcd clients of tenure_vs send and count: etcd_side.cc (gRPC's
// C++ library) and etcd_h2.cc (the light client on nghttp2, decision 0063).
// The requests are built, the answers read and the closed loop run here
// once, so that the two clients measure the same work and differ only in
// how the bytes travel.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "driver.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"

namespace tenure::vs::etcd_workload {

namespace pb = etcdserverpb;

// The end of a prefix range: the prefix with its last byte incremented.
std::string PrefixEnd(std::string prefix);

// kv_put's requests: o.keys keys "bench/kNNNN", each with the same
// o.value_bytes value.
std::vector<pb::PutRequest> PutRequests(const Options& o);
// A client's next put among `count`, from its xorshift state.
std::size_t NextPut(std::uint64_t* rng, std::size_t count);

// concurrency.Mutex.Lock's transaction: create `key` (the prefix and the
// lease in hex) with the lease unless it exists, and read the oldest key
// under the prefix.
pb::TxnRequest MutexLockTxn(const std::string& prefix, const std::string& key, std::int64_t lease);
// What its answer says: the revision that created our key, and whether
// ours is the oldest key (the lock is held) or waitDeletes must wait.
struct LockTxnAnswer {
  std::string error;  // empty: the answer had the shape Lock expects
  std::int64_t my_rev = 0;
  bool held = false;
};
LockTxnAnswer ReadMutexLockTxn(const pb::TxnResponse& answer);
// waitDeletes' Range: the newest key under the prefix created before ours.
pb::RangeRequest OlderKeyRange(const std::string& prefix, std::int64_t my_rev);

// A waitDelete on a client's Watch stream: the watch it asked for, and
// what runs at its key's DELETE (waitDeletes looks again).
class DeleteWait {
 public:
  // The request that watches `key` from `revision`; `then` runs at the
  // DELETE.
  pb::WatchRequest Create(const std::string& key, std::int64_t revision,
                          std::function<void()> then);
  // One answer of the stream. At our key's DELETE: *cancel gets the
  // request that cancels the watch (to send first), and the continuation
  // is returned; otherwise nullptr.
  std::function<void()> OnAnswer(const pb::WatchResponse& answer, pb::WatchRequest* cancel);
  bool waiting() const { return static_cast<bool>(then_); }
  // The stream failed: drops the continuation; true if one was waiting.
  bool Abandon();

 private:
  std::int64_t watch_id_ = -1;
  bool creating_ = false;  // its create request is in flight
  std::function<void()> then_;
};

// The watch workload's count: rounds of one put that wakes every watcher.
class FanOut {
 public:
  explicit FanOut(std::size_t watchers) : watchers_(watchers) {}
  // A watcher's answer: its watch created, or events.
  void OnAnswer(int watcher, const pb::WatchResponse& answer);
  void Fail(std::string why);
  void StartRound();  // the round's put goes out now
  void EndRound();
  bool all_created() const { return created_ == watchers_; }
  bool all_woken() const { return woken_ >= watchers_; }
  bool failed() const { return errors_ > 0; }
  std::size_t created() const { return created_; }
  std::size_t woken() const { return woken_; }
  const std::string& first_error() const { return first_error_; }
  // wake_p50_ms, wake_p99_ms, last_median_ms, last_max_ms, wakeups, conns
  // and the server's RSS per watcher; the error if any answer was wrong.
  void AddTo(Result* r, std::size_t conns, long rss_before, long rss_parked) const;

 private:
  std::size_t watchers_;
  std::size_t created_ = 0, woken_ = 0, errors_ = 0;
  std::string first_error_;
  bool fired_ = false;
  Clock::time_point fire_time_;
  std::int64_t round_last_ = 0;
  std::vector<std::int64_t> wake_ns_, last_ns_;
};

// Each client one operation in flight, the next started when the last
// finishes, until the phase's time or operation count is reached; then
// those in flight finish, for at most 30 s more. `C` is the client's own
// state, with at least `index`, `rng` and `op_start`.
template <class C>
class ClosedLoop {
 public:
  explicit ClosedLoop(int clients) : clients_(static_cast<std::size_t>(clients)) {
    for (int i = 0; i < clients; ++i) {
      C& c = clients_[static_cast<std::size_t>(i)];
      c.index = i;
      c.rng = 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(i + 1);
    }
  }
  virtual ~ClosedLoop() = default;
  ClosedLoop(const ClosedLoop&) = delete;
  ClosedLoop& operator=(const ClosedLoop&) = delete;

  Phase Run(Clock::duration duration, std::uint64_t max_ops) {
    phase_ = Phase();
    phase_.latency_ns.reserve(
        static_cast<std::size_t>(std::min<std::uint64_t>(max_ops, 1'000'000)));
    started_ = 0;
    max_ops_ = max_ops;
    active_ = 0;
    start_ = last_ = Clock::now();
    deadline_ = start_ + duration;
    for (C& c : clients_) {
      if (started_ >= max_ops_) break;
      ++active_;
      StartNext(c);
    }
    std::string why;
    if (!Drive([this] { return active_ == 0; }, duration + std::chrono::seconds(30), &why)) {
      ++phase_.errors;
      if (phase_.first_error.empty()) {
        phase_.first_error =
            why.empty() ? fmt::format("{} operations still in flight 30 s after the phase", active_)
                        : why;
      }
      last_ = Clock::now();
    }
    phase_.seconds = std::chrono::duration<double>(last_ - start_).count();
    return std::move(phase_);
  }
  std::vector<C>& clients() { return clients_; }

 protected:
  // Starts one operation on `c`; it ends with exactly one FinishOp(c, ...).
  virtual void StartOp(C& c) = 0;
  // Runs the client's event loop until done() holds (true) or `limit`
  // passes or the loop fails (false, with *why when it knows).
  virtual bool Drive(const std::function<bool()>& done, Clock::duration limit,
                     std::string* why) = 0;
  // `error` empty: success. A failed client stops.
  void FinishOp(C& c, const std::string& error) {
    Clock::time_point now = Clock::now();
    last_ = now;
    if (error.empty()) {
      ++phase_.ok;
      phase_.latency_ns.push_back(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.op_start).count());
      if (now < deadline_ && started_ < max_ops_) return StartNext(c);
    } else if (phase_.errors++ == 0) {
      phase_.first_error = fmt::format("client {}: {}", c.index, error);
    }
    --active_;
  }

 private:
  void StartNext(C& c) {
    ++started_;
    c.op_start = Clock::now();
    StartOp(c);
  }
  std::vector<C> clients_;
  Phase phase_;
  Clock::time_point start_, deadline_, last_;
  std::uint64_t started_ = 0, max_ops_ = 0;
  int active_ = 0;
};

}  // namespace tenure::vs::etcd_workload
