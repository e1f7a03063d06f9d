#include "server/metrics.h"

#include <algorithm>
#include <string>
#include <type_traits>

namespace tenure::server {

OutcomeCounter::OutcomeCounter(const state::CommandBody& body) {
  std::visit(
      [this](const auto& c) {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, state::KvAcquire>) {
          kind_ = Kind::kAcquire;
        } else if constexpr (std::is_same_v<T, state::SessionCreate>) {
          kind_ = Kind::kSessionCreate;
        } else if constexpr (std::is_same_v<T, state::SessionDestroy>) {
          kind_ = Kind::kSessionDestroy;
          expired_ = c.reason == state::DestroyReason::kExpired;
        } else if constexpr (std::is_same_v<T, state::Txn>) {
          for (std::size_t i = 0; i < c.ops.size(); ++i) {
            if (c.ops[i].verb == state::TxnVerb::kLock) lock_ops_.push_back(i);
            if (c.ops[i].verb == state::TxnVerb::kCheckFence) fence_ops_.push_back(i);
          }
          if (!lock_ops_.empty() || !fence_ops_.empty()) kind_ = Kind::kTxn;
        }
      },
      body);
}

void OutcomeCounter::Count(const Result<state::ApplyResult>& result, bool proposed,
                           ServerMetrics* m) const {
  if (proposed) {
    if (result.ok()) {
      ++m->proposals_committed;
    } else {
      ++m->proposals_failed;
    }
  }
  if (!result.ok() || !result->status.ok()) return;
  const state::ApplyResult& r = *result;
  switch (kind_) {
    case Kind::kOther:
      return;
    case Kind::kAcquire:
      if (r.ok) {
        ++m->lock_grants;
      } else if (r.lock_delayed) {
        ++m->lock_refused_lock_delay;
      } else {
        ++m->lock_refused_held;
      }
      return;
    case Kind::kSessionCreate:
      if (!r.session_created.empty()) ++m->sessions_created;
      return;
    case Kind::kSessionDestroy:
      ++(expired_ ? m->sessions_expired : m->sessions_destroyed);
      return;
    case Kind::kTxn:
      if (r.txn.ok()) {
        m->lock_grants += lock_ops_.size();
        return;
      }
      for (const state::TxnError& error : r.txn.errors) {
        auto has = [&](const std::vector<std::size_t>& ops) {
          return std::find(ops.begin(), ops.end(), error.op_index) != ops.end();
        };
        if (has(fence_ops_)) ++m->fence_check_failures;
        if (has(lock_ops_)) {
          if (error.what.find("due to lock delay") != std::string::npos) {
            ++m->lock_refused_lock_delay;
          } else if (error.what.find("lock is already held") != std::string::npos) {
            ++m->lock_refused_held;
          }
        }
      }
      return;
  }
}

}  // namespace tenure::server
