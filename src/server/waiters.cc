#include "server/waiters.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "common/limits.h"
#include "common/log.h"
#include "common/strings.h"

namespace tenure::server {

struct Waiters::TimerState {
  explicit TimerState(boost::asio::io_context& io) : timer(io) {}
  boost::asio::steady_timer timer;
  MonoMs armed_for_ms = MonoMs(-1);  // -1: idle
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
};

Waiters::Waiters(boost::asio::io_context& io, const Clock& clock, IndexOf index_of)
    : clock_(clock), index_of_(std::move(index_of)), timer_(std::make_unique<TimerState>(io)) {}

Waiters::~Waiters() {
  deadlines_.clear();  // unlinks the waiters before their nodes go
  *timer_->alive = false;
  timer_->timer.cancel();
}

// Keeps the timer at the earliest deadline. Later deadlines only make the
// timer fire early, and OnTimer re-arms it.
void Waiters::ScheduleTimer() {
  if (deadlines_.empty()) return;
  MonoMs earliest = deadlines_.begin()->deadline_ms;
  if (timer_->armed_for_ms != MonoMs(-1) && timer_->armed_for_ms <= earliest) return;
  timer_->armed_for_ms = earliest;
  timer_->timer.expires_after(std::chrono::milliseconds(earliest - clock_.NowMonoMs()));
  std::weak_ptr<bool> alive = timer_->alive;
  timer_->timer.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !*alive.lock()) return;
    timer_->armed_for_ms = MonoMs(-1);
    OnTimer();
  });
}

void Waiters::OnTimer() {
  MonoMs now = clock_.NowMonoMs();
  while (!deadlines_.empty() && deadlines_.begin()->deadline_ms <= now) {
    Wake(deadlines_.begin()->id);  // erases the deadline
  }
  ScheduleTimer();
}

std::uint64_t Waiters::Park(Watch watch, LogIndex min_index, DurationMs wait_ms, Respond respond) {
  if (waiters_.size() >= limits::kBlockingWaitersMax) return 0;
  std::uint64_t id = next_id_++;
  MonoMs deadline_ms = clock_.NowMonoMs() + wait_ms;
  Waiter& waiter =
      waiters_.emplace(id, Waiter{std::move(watch), min_index, deadline_ms, std::move(respond)})
          .first->second;
  waiter.id = id;
  switch (waiter.watch.kind) {
    case WatchKind::kKey:
      by_key_[waiter.watch.key].push_back(id);
      break;
    case WatchKind::kPrefix:
      prefix_waiters_.push_back(id);
      break;
    case WatchKind::kSessions:
      session_waiters_.push_back(id);
      break;
    case WatchKind::kAcl:
      acl_waiters_.push_back(id);
      break;
    case WatchKind::kQueue:
      by_queue_[waiter.watch.key].push_back(id);
      break;
  }
  deadlines_.insert(waiter);
  ScheduleTimer();
  return id;
}

namespace {

void EraseId(std::vector<std::uint64_t>& ids, std::uint64_t id) {
  auto it = std::find(ids.begin(), ids.end(), id);
  if (it == ids.end()) return;
  *it = ids.back();
  ids.pop_back();
}

}  // namespace

// Drops the id from the index lists, so waiters that time out again and
// again (clients re-parking on a quiet key) never pile up there.
void Waiters::Unindex(std::uint64_t id, const Watch& watch) {
  switch (watch.kind) {
    case WatchKind::kKey: {
      auto it = by_key_.find(watch.key);
      if (it == by_key_.end()) return;
      EraseId(it->second, id);
      if (it->second.empty()) by_key_.erase(it);
      return;
    }
    case WatchKind::kPrefix:
      EraseId(prefix_waiters_, id);
      return;
    case WatchKind::kSessions:
      EraseId(session_waiters_, id);
      return;
    case WatchKind::kAcl:
      EraseId(acl_waiters_, id);
      return;
    case WatchKind::kQueue: {
      auto it = by_queue_.find(watch.key);
      if (it == by_queue_.end()) return;
      EraseId(it->second, id);
      if (it->second.empty()) by_queue_.erase(it);
      return;
    }
  }
}

void Waiters::Cancel(std::uint64_t id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  deadlines_.erase(deadlines_.iterator_to(it->second));
  Unindex(id, it->second.watch);
  waiters_.erase(it);
}

// Removes the waiter and answers it. Notify has already dropped ready ids
// from the lists it scanned; Unindex covers timeouts and Flush.
void Waiters::Wake(std::uint64_t id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  deadlines_.erase(deadlines_.iterator_to(it->second));  // before its node goes
  Waiter waiter = std::move(it->second);
  waiters_.erase(it);
  Unindex(id, waiter.watch);
  Respond respond = std::move(waiter.respond);
  respond();
}

void Waiters::CheckList(std::vector<std::uint64_t>& ids, std::vector<std::uint64_t>* ready) {
  std::size_t kept = 0;
  for (std::uint64_t id : ids) {
    auto it = waiters_.find(id);
    if (it == waiters_.end()) continue;  // answered or cancelled earlier: prune
    if (index_of_(it->second.watch) > it->second.min_index) {
      ready->push_back(id);
    } else {
      ids[kept++] = id;
    }
  }
  ids.resize(kept);
}

void Waiters::Notify(const state::Changes& changes) {
  if (waiters_.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> ready;
  if (changes.everything) {
    // A snapshot replaced the state: re-check every waiter against it.
    for (const auto& [id, waiter] : waiters_) {
      if (index_of_(waiter.watch) > waiter.min_index) ready.push_back(id);
    }
    for (std::uint64_t id : ready) {
      Wake(id);
      if (wake_histogram_ != nullptr) wake_histogram_->ObserveSince(start);
    }
    LogFanOut(ready.size(), start);
    return;
  }
  for (const std::string& key : changes.keys) {
    auto it = by_key_.find(key);
    if (it == by_key_.end()) continue;
    CheckList(it->second, &ready);
    if (it->second.empty()) by_key_.erase(it);
  }
  if (!changes.keys.empty() && !prefix_waiters_.empty()) {
    // A prefix waiter wakes only if some changed key is under its prefix.
    std::size_t kept = 0;
    for (std::uint64_t id : prefix_waiters_) {
      auto it = waiters_.find(id);
      if (it == waiters_.end()) continue;
      const Waiter& w = it->second;
      bool touched = std::any_of(changes.keys.begin(), changes.keys.end(),
                                 [&](const std::string& k) { return StartsWith(k, w.watch.key); });
      if (touched && index_of_(w.watch) > w.min_index) {
        ready.push_back(id);
      } else {
        prefix_waiters_[kept++] = id;
      }
    }
    prefix_waiters_.resize(kept);
  }
  for (const std::string& key : changes.queues) {
    auto it = by_queue_.find(key);
    if (it == by_queue_.end()) continue;
    CheckList(it->second, &ready);
    if (it->second.empty()) by_queue_.erase(it);
  }
  if (changes.sessions) CheckList(session_waiters_, &ready);
  if (changes.acl) CheckList(acl_waiters_, &ready);
  if (wake_histogram_ == nullptr) {
    for (std::uint64_t id : ready) Wake(id);
  } else {
    for (std::uint64_t id : ready) {
      Wake(id);
      wake_histogram_->ObserveSince(start);
    }
  }
  LogFanOut(ready.size(), start);
}

// A large fan-out's time on the loop thread, from the start of Notify (right
// after the write applied) to the last answer handed to the kernel: at
// -log-level debug, for comparing with when clients receive them
// (bench/fanout_wake_split.py).
void Waiters::LogFanOut(std::size_t woken, std::chrono::steady_clock::time_point start) {
  constexpr std::size_t kFanOutLogMin = 1000;
  if (woken < kFanOutLogMin || !log::Enabled(log::Level::kDebug)) return;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  log::Write(
      log::Level::kDebug, "server",
      fmt::format("woke {} blocking queries in {} us (apply to last answer sent)", woken, us),
      {log::Num("count", woken), log::Num("us", us)});
}

void Waiters::Flush() {
  std::vector<std::uint64_t> ids;
  ids.reserve(waiters_.size());
  for (const auto& [id, waiter] : waiters_) ids.push_back(id);
  for (std::uint64_t id : ids) Wake(id);
  by_key_.clear();
  by_queue_.clear();
  prefix_waiters_.clear();
  session_waiters_.clear();
  acl_waiters_.clear();
}

}  // namespace tenure::server
