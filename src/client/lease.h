// Lease: what a client can prove about its session's lease from its own
// monotonic clock, as docs/leadership.md derives it. Pure and deterministic:
// time is always an argument, so every rule is unit-tested at the speed of
// arithmetic.
//
// A renewal (or the session's create) SENT at client time s and acknowledged
// proves the server cannot expire the session before
//     s + T * (1 - rho) / (1 + rho)        (client time)
// for clocks whose rate is within rho of real time. The acknowledgement's
// arrival time never counts: answers can be delayed arbitrarily.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "common/types.h"

namespace tenure::client {

struct LeaseOptions {
  DurationMs ttl_ms = 15'000;            // T, the session TTL the server holds
  double clock_rate_bound = 0.01;        // rho: clocks run within 1% of real time
  DurationMs guarantee_ms = 5'000;       // G: is_leader(G) and tenure run's cut-off
  DurationMs kill_grace_ms = 2'500;      // K: SIGTERM-to-SIGKILL grace, < G
  DurationMs renew_interval_ms = 5'000;  // R: time between renewals
  DurationMs retry_interval_ms = 1'000;  // r: time between retries of a failed renewal
  double renew_jitter = 0.1;             // renewals come up to this fraction of R early

  // The defaults of docs/leadership.md for a TTL: G = R = T/3, K = G/2.
  static LeaseOptions ForTtl(DurationMs ttl_ms);
};

// Checks that the options can keep their promise: K < G, and the lease
// proven by one renewal outlasts the renewal interval by at least G (else
// is_leader(G) would turn false between two successful renewals).
Status ValidateLeaseOptions(const LeaseOptions& options);

class Lease {
 public:
  explicit Lease(const LeaseOptions& options);

  // How long one acknowledged renewal proves the lease, in client time:
  // floor(T * (1 - rho) / (1 + rho)).
  DurationMs ProvenMs() const { return proven_ms_; }

  // A renewal sent at `sent_ms` succeeded. Out-of-order acknowledgements
  // keep the latest send time.
  void Renewed(MonoMs sent_ms);
  // The session is gone (404 on renew, destroyed) or was never created.
  void Clear();

  bool held() const { return has_lease_; }
  // Last moment (client time) the server provably still holds the session;
  // meaningful only while held().
  MonoMs EndMs() const { return last_sent_ms_ + proven_ms_; }
  // True iff the lease is provably valid for the next window_ms from now_ms.
  bool Guaranteed(MonoMs now_ms, DurationMs window_ms) const;
  // tenure run's timeline: SIGTERM the child at EndMs() - G, SIGKILL at
  // EndMs() - G + K, both before any server could expire the session.
  MonoMs TerminateAtMs() const { return EndMs() - options_.guarantee_ms; }
  MonoMs KillAtMs() const { return TerminateAtMs() + options_.kill_grace_ms; }
  // When to send the next renewal after one sent at `sent_ms`; `unit` in
  // [0, 1) picks the jitter (early only, never late).
  MonoMs NextRenewalMs(MonoMs sent_ms, double unit) const;
  const LeaseOptions& options() const { return options_; }

 private:
  LeaseOptions options_;
  DurationMs proven_ms_ = 0;
  bool has_lease_ = false;
  MonoMs last_sent_ms_;
};

}  // namespace tenure::client
