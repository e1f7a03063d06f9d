#include "listen/deadline_set.h"

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <set>
#include <utility>

#include "common/assert.h"
#include "listen/wire.h"

namespace tenure::listen {

namespace asio = boost::asio;

struct DeadlineSet::State {
  State(asio::io_context& io_context, OnDue callback) : io(io_context), on_due(callback) {}

  asio::io_context& io;
  OnDue on_due;
  std::set<std::pair<MonoMs, void*>> entries;
  std::unique_ptr<asio::steady_timer> timer;  // made when first needed
  MonoMs timer_at_ms = MonoMs(-1);            // -1: not waiting
};

namespace {

using State = DeadlineSet::State;

void Fire(const std::shared_ptr<State>& state);

void Arm(const std::shared_ptr<State>& state) {
  if (state->entries.empty()) return;
  const MonoMs earliest = state->entries.begin()->first;
  // Armed for a time no later: it fires early at worst, and re-arms.
  if (state->timer_at_ms != MonoMs(-1) && state->timer_at_ms <= earliest) return;
  if (state->timer == nullptr) state->timer = std::make_unique<asio::steady_timer>(state->io);
  state->timer_at_ms = earliest;
  // Cancels a later wait, whose handler then sees operation_aborted.
  state->timer->expires_at(
      std::chrono::steady_clock::time_point(std::chrono::milliseconds(earliest.ms())));
  state->timer->async_wait(
      [weak = std::weak_ptr<State>(state)](const boost::system::error_code& ec) {
        if (ec) return;
        if (const auto alive = weak.lock()) Fire(alive);
      });
}

void Fire(const std::shared_ptr<State>& state) {
  state->timer_at_ms = MonoMs(-1);
  const MonoMs now = wire::NowMonoMs();
  // An entry that fires is added again later than now, or not at all.
  while (!state->entries.empty() && state->entries.begin()->first <= now) {
    void* owner = state->entries.begin()->second;
    state->entries.erase(state->entries.begin());
    state->on_due(owner);
  }
  Arm(state);
}

}  // namespace

DeadlineSet::DeadlineSet(asio::io_context& io, OnDue on_due)
    : state_(std::make_shared<State>(io, on_due)) {}

DeadlineSet::~DeadlineSet() {
  if (state_->timer != nullptr) state_->timer->cancel();
}

void DeadlineSet::Add(MonoMs at_ms, void* owner) {
  state_->entries.emplace(at_ms, owner);
  Arm(state_);
}

void DeadlineSet::Remove(MonoMs at_ms, void* owner) {
  const std::size_t removed = state_->entries.erase({at_ms, owner});
  TENURE_ASSERT(removed == 1);  // an owner removes only what it added
  if (state_->entries.empty() && state_->timer != nullptr) {
    state_->timer->cancel();
    state_->timer_at_ms = MonoMs(-1);
  }
}

std::size_t DeadlineSet::size() const { return state_->entries.size(); }

}  // namespace tenure::listen
