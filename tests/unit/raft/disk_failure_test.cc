// The words a failed libraft disk write answers with (raft/disk_failure.h),
// from the messages libraft 0.15 really produces, and the log limiter.
#include "raft/disk_failure.h"

#include <gtest/gtest.h>

#include "raft/raft_c.h"

namespace tenure::raft {
namespace {

TEST(DiskFailureTest, ANegatedErrnoInTheMessageIsNamed) {
  EXPECT_EQ(DescribeDiskFailure(RAFT_IOERR, "write failed: -28", ""),
            "no space left on device (libraft: write failed: -28)");
  EXPECT_EQ(DescribeDiskFailure(RAFT_IOERR, "", "io: write failed: -5"),
            "input/output error (libraft: io: write failed: -5)");
}

TEST(DiskFailureTest, AFullDiskWhenPreparingASegmentIsNoSpace) {
  // "open-3" is a file name, not errno 3.
  EXPECT_EQ(DescribeDiskFailure(RAFT_NOSPACE,
                                "create segment open-3: not enough space to allocate 8388608 "
                                "bytes",
                                ""),
            "no space left on device (libraft: create segment open-3: not enough space to "
            "allocate 8388608 bytes)");
  EXPECT_EQ(DescribeDiskFailure(RAFT_NOSPACE, "", ""), "no space left on device");
}

TEST(DiskFailureTest, OtherwiseTheCodeAndTheMessage) {
  EXPECT_EQ(DescribeDiskFailure(RAFT_IOERR, "fsync: bad things", ""),
            std::string(raft_strerror(RAFT_IOERR)) + " (libraft: fsync: bad things)");
  EXPECT_TRUE(IsDiskFailure(RAFT_IOERR));
  EXPECT_TRUE(IsDiskFailure(RAFT_NOSPACE));
  EXPECT_FALSE(IsDiskFailure(RAFT_BUSY));
}

TEST(DiskFailureTest, TheLimiterAdmitsOneLineAnIntervalAndCountsTheRest) {
  FailureLogLimiter limiter(1000);
  std::uint64_t suppressed = 99;
  EXPECT_TRUE(limiter.Admit(5, &suppressed));
  EXPECT_EQ(suppressed, 0u);
  EXPECT_FALSE(limiter.Admit(6, &suppressed));
  EXPECT_FALSE(limiter.Admit(1004, &suppressed));
  EXPECT_TRUE(limiter.Admit(1005, &suppressed));
  EXPECT_EQ(suppressed, 2u);
}

}  // namespace
}  // namespace tenure::raft
