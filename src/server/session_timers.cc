#include "server/session_timers.h"

#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/assert.h"

namespace tenure::server {

struct SessionTimers::TimerState {
  explicit TimerState(boost::asio::io_context& io) : timer(io) {}
  boost::asio::steady_timer timer;
  MonoMs armed_for_ms = -1;  // deadline the asio timer is set to, -1 = idle
  // Outlives a callback that runs after ~SessionTimers cancelled it.
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
};

SessionTimers::SessionTimers(boost::asio::io_context& io, const Clock& clock, int ttl_multiplier,
                             ExpireFn on_expire)
    : clock_(clock),
      ttl_multiplier_(ttl_multiplier),
      on_expire_(std::move(on_expire)),
      timer_(std::make_unique<TimerState>(io)) {
  TENURE_ASSERT(ttl_multiplier_ >= 1);
}

SessionTimers::~SessionTimers() {
  *timer_->alive = false;
  timer_->timer.cancel();
}

void SessionTimers::Arm(const std::string& session_id, DurationNs ttl_ns) {
  if (ttl_ns <= 0) return;
  // Round up: a deadline may be late, never early.
  MonoMs ttl_ms = (ttl_ns + kNsPerMs - 1) / kNsPerMs;
  MonoMs at_ms = clock_.NowMonoMs() + ttl_ms * ttl_multiplier_;
  auto it = deadlines_.find(session_id);
  if (it != deadlines_.end()) {
    if (it->second.at_ms == at_ms) return;  // renewed within the same millisecond
    queue_.erase({it->second.at_ms, &it->first});
    it->second = {at_ms, ttl_ns};
  } else {
    it = deadlines_.emplace(session_id, Deadline{at_ms, ttl_ns}).first;
  }
  queue_.insert({at_ms, &it->first});
  Schedule();
}

void SessionTimers::Disarm(std::string_view session_id) {
  auto it = deadlines_.find(std::string(session_id));
  if (it == deadlines_.end()) return;
  queue_.erase({it->second.at_ms, &it->first});
  deadlines_.erase(it);
}

void SessionTimers::Clear() {
  queue_.clear();
  deadlines_.clear();
  timer_->timer.cancel();
  timer_->armed_for_ms = -1;
}

bool SessionTimers::armed(std::string_view session_id) const {
  return deadlines_.find(std::string(session_id)) != deadlines_.end();
}

MonoMs SessionTimers::RemainingMs(std::string_view session_id) const {
  auto it = deadlines_.find(std::string(session_id));
  if (it == deadlines_.end()) return -1;
  return it->second.at_ms - clock_.NowMonoMs();
}

// Keeps the asio timer set to the earliest deadline. Renewals push deadlines
// later, so the timer usually stays as it is and simply fires early; Fire()
// then re-arms for the new earliest deadline.
void SessionTimers::Schedule() {
  if (queue_.empty()) return;
  MonoMs earliest = queue_.begin()->first;
  if (timer_->armed_for_ms != -1 && timer_->armed_for_ms <= earliest) return;
  timer_->armed_for_ms = earliest;
  timer_->timer.expires_after(std::chrono::milliseconds(earliest - clock_.NowMonoMs()));
  std::weak_ptr<bool> alive = timer_->alive;
  timer_->timer.async_wait([this, alive](const boost::system::error_code& ec) {
    if (alive.expired() || !*alive.lock()) return;
    if (ec) return;  // cancelled: Clear() or a re-arm
    timer_->armed_for_ms = -1;
    Fire();
  });
}

void SessionTimers::Fire() {
  MonoMs now = clock_.NowMonoMs();
  while (!queue_.empty() && queue_.begin()->first <= now) {
    std::string id(*queue_.begin()->second);
    queue_.erase(queue_.begin());
    deadlines_.erase(id);
    on_expire_(id);  // may call Arm/Disarm
  }
  Schedule();
}

}  // namespace tenure::server
