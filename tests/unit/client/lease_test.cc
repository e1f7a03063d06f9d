#include "client/lease.h"

#include <gtest/gtest.h>

namespace tenure::client {
namespace {

TEST(LeaseTest, ProvenDurationMatchesTheDocumentedArithmetic) {
  // docs/leadership.md: T = 15 s, rho = 1% -> 15 * 0.99 / 1.01 = 14.70 s.
  Lease lease(LeaseOptions{});
  EXPECT_EQ(lease.ProvenMs(), 14'702);
  LeaseOptions exact;
  exact.clock_rate_bound = 0;
  EXPECT_EQ(Lease(exact).ProvenMs(), 15'000);
}

TEST(LeaseTest, LeaseRunsFromWhenTheRenewalWasSentNotAnswered) {
  Lease lease(LeaseOptions{});
  EXPECT_FALSE(lease.Guaranteed(MonoMs(0), 0));  // nothing proven yet
  lease.Renewed(MonoMs(1'000));                  // sent at 1 s (its answer may come much later)
  EXPECT_EQ(lease.EndMs(), MonoMs(15'702));
  EXPECT_TRUE(lease.Guaranteed(MonoMs(10'702), 5'000));   // exactly G left
  EXPECT_FALSE(lease.Guaranteed(MonoMs(10'703), 5'000));  // 1 ms short of G
  EXPECT_TRUE(lease.Guaranteed(MonoMs(15'702), 0));
  EXPECT_FALSE(lease.Guaranteed(MonoMs(15'703), 0));
}

TEST(LeaseTest, SteadyRenewalsKeepTheGuaranteeWithMargin) {
  LeaseOptions options;
  Lease lease(options);
  MonoMs sent;
  lease.Renewed(sent);
  for (int i = 0; i < 100; ++i) {
    MonoMs next = lease.NextRenewalMs(sent, 0.999);  // the latest allowed renewal
    // Just before the next renewal is sent, G must still be guaranteed.
    EXPECT_TRUE(lease.Guaranteed(next - 1, options.guarantee_ms)) << i;
    sent = next;
    lease.Renewed(sent);
  }
}

TEST(LeaseTest, ATransientFailureShorterThanTheMarginDoesNotFlap) {
  // Renewals every 5 s; one fails and is retried every 1 s; after 4 s of
  // failures the retry succeeds: is_leader(5 s) never turned false.
  LeaseOptions options;
  Lease lease(options);
  lease.Renewed(MonoMs(0));
  MonoMs failed_at = MonoMs(5'000);
  for (MonoMs t = failed_at; t <= failed_at + 4'000; t += 1'000) {
    EXPECT_TRUE(lease.Guaranteed(t, options.guarantee_ms)) << t;
  }
  lease.Renewed(failed_at + 4'000);
  EXPECT_TRUE(lease.Guaranteed(failed_at + 4'001, options.guarantee_ms));
}

TEST(LeaseTest, KillTimelineEndsBeforeTheEarliestExpiry) {
  LeaseOptions options;
  Lease lease(options);
  lease.Renewed(MonoMs(0));
  EXPECT_EQ(lease.TerminateAtMs(), MonoMs(14'702 - 5'000));
  EXPECT_EQ(lease.KillAtMs(), MonoMs(14'702 - 2'500));
  EXPECT_LT(lease.KillAtMs(), lease.EndMs());
  // When SIGTERM is due, the guarantee has just run out.
  EXPECT_TRUE(lease.Guaranteed(lease.TerminateAtMs(), options.guarantee_ms));
  EXPECT_FALSE(lease.Guaranteed(lease.TerminateAtMs() + 1, options.guarantee_ms));
}

TEST(LeaseTest, OutOfOrderAcknowledgementsKeepTheLatestSend) {
  Lease lease(LeaseOptions{});
  lease.Renewed(MonoMs(10'000));
  lease.Renewed(MonoMs(5'000));  // an older renewal's late answer
  EXPECT_EQ(lease.EndMs(), MonoMs(10'000 + 14'702));
}

TEST(LeaseTest, ClearedLeaseGuaranteesNothing) {
  Lease lease(LeaseOptions{});
  lease.Renewed(MonoMs(0));
  lease.Clear();
  EXPECT_FALSE(lease.Guaranteed(MonoMs(0), 0));
  lease.Renewed(MonoMs(1));  // a new session starts a new lease
  EXPECT_TRUE(lease.Guaranteed(MonoMs(1), 0));
}

TEST(LeaseTest, JitterOnlyMakesRenewalsEarlier) {
  Lease lease(LeaseOptions{});
  EXPECT_EQ(lease.NextRenewalMs(MonoMs(0), 0.0), MonoMs(5'000));
  EXPECT_EQ(lease.NextRenewalMs(MonoMs(0), 0.5), MonoMs(4'750));
  EXPECT_GE(lease.NextRenewalMs(MonoMs(0), 0.99), MonoMs(4'500));
  EXPECT_EQ(lease.NextRenewalMs(MonoMs(0), 7.0), MonoMs(4'500));  // clamped
}

TEST(LeaseOptionsTest, DefaultsAndTtlDerivedOptionsAreValid) {
  EXPECT_TRUE(ValidateLeaseOptions(LeaseOptions{}).ok());
  for (DurationMs ttl :
       {DurationMs{10'000}, DurationMs{15'000}, DurationMs{60'000}, DurationMs{86'400'000}}) {
    LeaseOptions options = LeaseOptions::ForTtl(ttl);
    EXPECT_TRUE(ValidateLeaseOptions(options).ok()) << ttl;
    EXPECT_EQ(options.renew_interval_ms, ttl / 3);
    EXPECT_EQ(options.kill_grace_ms, ttl / 6);
  }
}

TEST(LeaseOptionsTest, RejectsOptionsThatCannotKeepTheirPromise) {
  LeaseOptions too_slow;
  too_slow.renew_interval_ms = 10'000;  // 10 s + G 5 s > 14.7 s proven
  Status s = ValidateLeaseOptions(too_slow);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("leadership would lapse"), std::string_view::npos) << s.ToString();

  LeaseOptions late_kill;
  late_kill.kill_grace_ms = 5'000;  // SIGKILL at the end of the lease, not before
  EXPECT_FALSE(ValidateLeaseOptions(late_kill).ok());

  LeaseOptions bad_rho;
  bad_rho.clock_rate_bound = 0.7;
  EXPECT_FALSE(ValidateLeaseOptions(bad_rho).ok());

  LeaseOptions zero_ttl;
  zero_ttl.ttl_ms = 0;
  EXPECT_FALSE(ValidateLeaseOptions(zero_ttl).ok());
}

}  // namespace
}  // namespace tenure::client
