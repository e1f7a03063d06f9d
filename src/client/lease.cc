#include "client/lease.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tenure::client {

LeaseOptions LeaseOptions::ForTtl(DurationMs ttl_ms) {
  LeaseOptions options;
  options.ttl_ms = ttl_ms;
  options.guarantee_ms = ttl_ms / 3;
  options.renew_interval_ms = ttl_ms / 3;
  options.kill_grace_ms = options.guarantee_ms / 2;
  return options;
}

namespace {

DurationMs Proven(const LeaseOptions& o) {
  double rho = o.clock_rate_bound;
  // Floor: a lease may only be proven shorter than it is, never longer.
  return static_cast<DurationMs>(
      std::floor(static_cast<double>(o.ttl_ms) * (1.0 - rho) / (1.0 + rho)));
}

}  // namespace

Status ValidateLeaseOptions(const LeaseOptions& o) {
  auto invalid = [](std::string why) { return Status::InvalidArgument("lease: " + why); };
  if (o.ttl_ms <= 0) return invalid("the TTL must be positive");
  if (!(o.clock_rate_bound >= 0.0 && o.clock_rate_bound < 0.5)) {
    return invalid("the clock-rate bound must be in [0, 0.5)");
  }
  if (o.guarantee_ms < 0 || o.kill_grace_ms < 0 || o.retry_interval_ms <= 0) {
    return invalid("durations must not be negative");
  }
  if (o.renew_interval_ms <= 0) return invalid("the renewal interval must be positive");
  if (!(o.renew_jitter >= 0.0 && o.renew_jitter < 1.0)) {
    return invalid("the renewal jitter must be in [0, 1)");
  }
  if (o.kill_grace_ms >= o.guarantee_ms && o.guarantee_ms > 0) {
    return invalid("the kill grace (" + std::to_string(o.kill_grace_ms) +
                   " ms) must be shorter than the guarantee window (" +
                   std::to_string(o.guarantee_ms) + " ms), so the child is dead before expiry");
  }
  DurationMs proven = Proven(o);
  if (o.renew_interval_ms + o.guarantee_ms > proven) {
    return invalid("one renewal proves " + std::to_string(proven) +
                   " ms, less than the renewal "
                   "interval plus the guarantee window (" +
                   std::to_string(o.renew_interval_ms + o.guarantee_ms) +
                   " ms): leadership would lapse between successful renewals");
  }
  return Status();
}

Lease::Lease(const LeaseOptions& options) : options_(options), proven_ms_(Proven(options)) {}

void Lease::Renewed(MonoMs sent_ms) {
  if (!has_lease_ || sent_ms > last_sent_ms_) last_sent_ms_ = sent_ms;
  has_lease_ = true;
}

void Lease::Clear() { has_lease_ = false; }

bool Lease::Guaranteed(MonoMs now_ms, DurationMs window_ms) const {
  return has_lease_ && now_ms + window_ms <= EndMs();
}

MonoMs Lease::NextRenewalMs(MonoMs sent_ms, double unit) const {
  unit = std::clamp(unit, 0.0, 1.0);
  auto early = static_cast<DurationMs>(static_cast<double>(options_.renew_interval_ms) *
                                       options_.renew_jitter * unit);
  return sent_ms + options_.renew_interval_ms - early;
}

}  // namespace tenure::client
