// Histogram: a fixed-bucket histogram of durations for metrics (docs/
// metrics.md). No dependencies, no allocation, no locks: each layer owns its
// own and observes into it on the loop thread; the metrics endpoint copies the
// counts out at scrape time (decision 0023).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace tenure {

class Histogram {
 public:
  // Upper bounds in seconds (Prometheus' `le`), 100 us to 10 s; +Inf is
  // implied. One set for every duration tenure measures.
  static constexpr std::array<double, 14> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 10.0};

  void Observe(double seconds) {
    std::size_t i = 0;
    while (i < kBounds.size() && seconds > kBounds[i]) ++i;
    ++buckets_[i];
    ++count_;
    sum_ += seconds;
  }
  void ObserveSince(std::chrono::steady_clock::time_point start) {
    Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  // Observations in bucket i alone (not cumulative); i == kBounds.size()
  // is the bucket above the last bound.
  std::uint64_t bucket(std::size_t i) const { return buckets_[i]; }
  // Observations at or below kBounds[i] (Prometheus' cumulative bucket).
  std::uint64_t cumulative(std::size_t i) const {
    std::uint64_t total = 0;
    for (std::size_t j = 0; j <= i && j < buckets_.size(); ++j) total += buckets_[j];
    return total;
  }
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::array<std::uint64_t, kBounds.size() + 1> buckets_{};
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace tenure
