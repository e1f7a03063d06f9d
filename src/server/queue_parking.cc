#include "server/queue_parking.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <utility>
#include <vector>

namespace tenure::server {

struct QueueParking::Parked {
  explicit Parked(boost::asio::io_context& io) : timer(io) {}
  std::string key;
  state::SessionId session;
  Done done;
  StillAllowed allowed;
  boost::asio::steady_timer timer;
};

struct QueueParking::Grace {
  explicit Grace(boost::asio::io_context& io) : timer(io) {}
  boost::asio::steady_timer timer;
};

QueueParking::QueueParking(boost::asio::io_context& io, const state::Store& store, Leave leave,
                           DurationMs grace_ms)
    : io_(io), store_(store), leave_(std::move(leave)), grace_ms_(grace_ms) {}

QueueParking::~QueueParking() {
  for (auto& [id, parked] : parked_) parked->timer.cancel();
  for (auto& [waiter, grace] : unattended_) grace->timer.cancel();
}

void QueueParking::StartGrace(const std::string& key, const state::SessionId& session) {
  auto waiter = std::make_pair(key, session);
  if (unattended_.count(waiter) != 0) return;  // already counting
  auto grace = std::make_unique<Grace>(io_);
  grace->timer.expires_after(std::chrono::milliseconds(grace_ms_));
  grace->timer.async_wait([this, waiter](const boost::system::error_code& ec) {
    if (ec) return;  // attended again, flushed, or this object is going away
    unattended_.erase(waiter);
    const auto& [waiter_key, waiter_session] = waiter;
    // Granted or gone meanwhile, or attended by a request parked since:
    // nothing to do.
    if (Check(store_, waiter_key, waiter_session) || CountParked(waiter_key, waiter_session) != 0) {
      return;
    }
    if (leave_) leave_(waiter_key, waiter_session);
  });
  unattended_.emplace(std::move(waiter), std::move(grace));
}

void QueueParking::EndGrace(const std::string& key, const state::SessionId& session) {
  auto it = unattended_.find({key, session});
  if (it == unattended_.end()) return;
  it->second->timer.cancel();
  unattended_.erase(it);
}

void QueueParking::StartGraceForAll(const state::Store& store) {
  for (const auto& [key, waiters] : store.queues()) {
    for (const state::QueueWaiter& w : waiters) {
      if (CountParked(key, w.session) == 0) StartGrace(key, w.session);
    }
  }
}

std::optional<QueueParking::Answer> QueueParking::Check(const state::Store& store,
                                                        std::string_view key,
                                                        const state::SessionId& session) {
  const state::KvEntry* entry = store.FindKv(key);
  if (entry != nullptr && !session.empty() && entry->session == session) {
    return Answer{Outcome::kGranted, entry->fence};
  }
  if (const auto* queue = store.FindQueue(key); queue != nullptr) {
    for (const state::QueueWaiter& w : *queue) {
      if (w.session == session) return std::nullopt;
    }
  }
  return Answer{Outcome::kLeft, LogIndex()};
}

std::uint64_t QueueParking::Park(std::string key, state::SessionId session, DurationMs wait_ms,
                                 Done done, StillAllowed allowed) {
  const std::uint64_t id = next_id_++;
  auto parked = std::make_unique<Parked>(io_);
  parked->key = std::move(key);
  parked->session = std::move(session);
  parked->done = std::move(done);
  parked->allowed = std::move(allowed);
  parked->timer.expires_after(std::chrono::milliseconds(std::max<DurationMs>(wait_ms, 0)));
  parked->timer.async_wait([this, id](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: answered, forgotten, or this object is going away
    auto it = parked_.find(id);
    if (it == parked_.end()) return;
    const std::string parked_key = it->second->key;
    const state::SessionId parked_session = it->second->session;
    const Answer answer = TimedOut(*it->second);
    Finish(id, answer);
    if (answer.outcome == Outcome::kTimedOut && CountParked(parked_key, parked_session) == 0) {
      StartGrace(parked_key, parked_session);
    }
  });
  EndGrace(parked->key, parked->session);
  by_key_[parked->key].push_back(id);
  parked_.emplace(id, std::move(parked));
  return id;
}

bool QueueParking::Cancel(std::uint64_t id) {
  auto it = parked_.find(id);
  if (it == parked_.end()) return false;
  std::unique_ptr<Parked> parked = std::move(it->second);
  parked_.erase(it);
  parked->timer.cancel();
  auto ids = by_key_.find(parked->key);
  if (ids != by_key_.end()) {
    std::erase(ids->second, id);
    if (ids->second.empty()) by_key_.erase(ids);
  }
  return true;
}

std::size_t QueueParking::CountParked(std::string_view key, const state::SessionId& session) const {
  auto ids = by_key_.find(std::string(key));
  if (ids == by_key_.end()) return 0;
  return static_cast<std::size_t>(
      std::count_if(ids->second.begin(), ids->second.end(),
                    [&](std::uint64_t id) { return parked_.at(id)->session == session; }));
}

QueueParking::Answer QueueParking::TimedOut(const Parked& parked) const {
  // Granted or gone in an apply not yet notified: that is the answer.
  if (std::optional<Answer> decided = Check(store_, parked.key, parked.session)) return *decided;
  return Answer{Outcome::kTimedOut, LogIndex(), store_.QueuePosition(parked.key, parked.session)};
}

void QueueParking::Finish(std::uint64_t id, Answer answer) {
  auto it = parked_.find(id);
  if (it == parked_.end()) return;
  Done done = std::move(it->second->done);
  Cancel(id);
  done(answer);
}

void QueueParking::Notify(const state::Store& store, const state::Changes& changes) {
  if (parked_.empty()) return;
  std::vector<std::pair<std::uint64_t, Answer>> ready;
  auto check_key = [&](const std::string& key) {
    auto ids = by_key_.find(key);
    if (ids == by_key_.end()) return;
    for (std::uint64_t id : ids->second) {
      const Parked& parked = *parked_.at(id);
      if (std::optional<Answer> answer = Check(store, parked.key, parked.session)) {
        ready.emplace_back(id, *answer);
      }
    }
  };
  if (changes.everything || changes.acl) {
    // A token revoked or a policy cut: the Store refuses such a grant, and
    // the client learns it now rather than at the end of its wait.
    for (const auto& [id, parked] : parked_) {
      if (parked->allowed && !parked->allowed()) ready.emplace_back(id, Answer{Outcome::kDenied});
    }
  }
  if (changes.everything) {
    for (const auto& [key, ids] : by_key_) check_key(key);
  } else {
    std::vector<std::string> keys = changes.queues;
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const std::string& key : keys) check_key(key);
  }
  for (const auto& [id, answer] : ready) Finish(id, answer);
}

void QueueParking::Flush() {
  for (auto& [waiter, grace] : unattended_) grace->timer.cancel();
  unattended_.clear();
  std::vector<std::uint64_t> ids;
  ids.reserve(parked_.size());
  for (const auto& [id, parked] : parked_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (std::uint64_t id : ids) {
    Answer answer{Outcome::kFlushed, LogIndex(),
                  store_.QueuePosition(parked_.at(id)->key, parked_.at(id)->session)};
    Finish(id, answer);
  }
}

}  // namespace tenure::server
