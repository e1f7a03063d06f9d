#include "raft/log_memory.h"

#include <algorithm>

#include "common/assert.h"

namespace tenure::raft {

LogMemory::LogMemory(std::uint64_t log_bytes_max, std::uint64_t trailing_bytes_max,
                     unsigned threshold, unsigned trailing, std::uint64_t spacing_ms)
    : log_bytes_max_(log_bytes_max),
      trailing_bytes_max_(trailing_bytes_max),
      threshold_(threshold),
      trailing_(trailing),
      spacing_ms_(spacing_ms) {}

void LogMemory::Trim(std::uint64_t first, std::uint64_t last) {
  if (cumulative_.empty()) return;
  while (!cumulative_.empty() && last_index() > last) cumulative_.pop_back();
  while (!cumulative_.empty() && first_ < first) {
    base_ = cumulative_.front();
    cumulative_.pop_front();
    ++first_;
  }
  if (cumulative_.empty()) base_ = 0;
}

void LogMemory::Append(std::uint64_t index, std::uint64_t bytes) {
  if (cumulative_.empty()) {
    first_ = index;
    base_ = 0;
  }
  TENURE_ASSERT(index == first_ + cumulative_.size());
  cumulative_.push_back((cumulative_.empty() ? base_ : cumulative_.back()) + bytes);
}

std::uint64_t LogMemory::last_index() const {
  return cumulative_.empty() ? 0 : first_ + cumulative_.size() - 1;
}

std::uint64_t LogMemory::bytes() const {
  return cumulative_.empty() ? 0 : cumulative_.back() - base_;
}

std::uint64_t LogMemory::CumulativeAt(std::uint64_t index) const {
  if (cumulative_.empty() || index < first_) return base_;
  std::uint64_t last = last_index();
  return cumulative_[static_cast<std::size_t>(std::min(index, last) - first_)];
}

LogMemory::Policy LogMemory::Decide(std::uint64_t last_applied, std::uint64_t snapshot_index,
                                    std::uint64_t ms_since_snapshot) const {
  // Twice the count at most: the entries held (threshold plus trailing plus
  // those applied while a snapshot is written) stay within what one
  // AppendEntries may carry to a lagging follower (raft/node.h).
  unsigned threshold = ms_since_snapshot < spacing_ms_ ? 2 * threshold_ : threshold_;
  Policy policy{threshold, trailing_};
  if (cumulative_.empty() || last_applied <= snapshot_index) return policy;
  // Trailing entries kept at the next snapshot (taken at last_applied): as
  // many of the latest as fit in the budget, at most the configured count.
  std::uint64_t end = CumulativeAt(last_applied);
  std::uint64_t low =
      std::max<std::uint64_t>(first_, last_applied > trailing_ ? last_applied - trailing_ : 0);
  std::uint64_t high = last_applied;  // the answer is in [low, high]: first index kept + 1
  // Smallest index i in [low, last_applied] with end - CumulativeAt(i) <= budget.
  while (low < high) {
    std::uint64_t mid = low + (high - low) / 2;
    if (end - CumulativeAt(mid) <= trailing_bytes_max_) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  policy.trailing = static_cast<unsigned>(last_applied - low);
  // Early snapshot: the entries applied since the last one are over budget.
  if (end - CumulativeAt(snapshot_index) >= log_bytes_max_) {
    policy.threshold = static_cast<unsigned>(std::max<std::uint64_t>(
        1, std::min<std::uint64_t>(last_applied - snapshot_index, threshold)));
  }
  return policy;
}

}  // namespace tenure::raft
