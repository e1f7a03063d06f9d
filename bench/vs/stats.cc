// Small shared helpers of tenure_vs: percentiles, RSS, clocks.
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "driver.h"

namespace tenure::vs {

double PercentileMs(std::vector<std::int64_t>& sorted_ns, double q) {
  if (sorted_ns.empty()) return 0;
  double rank = std::ceil(q * static_cast<double>(sorted_ns.size()));
  std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return static_cast<double>(sorted_ns[std::min(i, sorted_ns.size() - 1)]) / 1e6;
}

void AddPhase(Result* r, Phase& phase) {
  std::sort(phase.latency_ns.begin(), phase.latency_ns.end());
  r->Add("ops_per_s", phase.seconds > 0 ? static_cast<double>(phase.ok) / phase.seconds : 0);
  r->Add("p50_ms", PercentileMs(phase.latency_ns, 0.50));
  r->Add("p99_ms", PercentileMs(phase.latency_ns, 0.99));
  r->Add("max_ms", PercentileMs(phase.latency_ns, 1.0));
  r->Add("ops", static_cast<double>(phase.ok));
  r->Add("phase_s", phase.seconds);
  if (phase.errors > 0) {
    r->error = fmt::format("{} errors; first: {}", phase.errors, phase.first_error);
  } else if (phase.ok == 0) {
    r->error = "zero throughput";
  }
}

void HandoffClock::Released() {
  released_ = true;
  release_sent_ = Clock::now();
}

void HandoffClock::Acquired() {
  if (!released_) return;
  released_ = false;
  ns_.push_back(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - release_sent_).count());
}

void HandoffClock::AddTo(Result* r) {
  if (ns_.empty()) return;
  std::sort(ns_.begin(), ns_.end());
  r->Add("handoff_p50_ms", PercentileMs(ns_, 0.50));
  r->Add("handoff_p99_ms", PercentileMs(ns_, 0.99));
  r->Add("handoffs", static_cast<double>(ns_.size()));
}

long RssKiB(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

std::int64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace tenure::vs
