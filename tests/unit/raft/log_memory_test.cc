// LogMemory: the snapshot policy bounds the bytes of entries libraft keeps
// (docs/limits.md; before it, 512 KiB overwrites of one key grew RSS 0.5 MiB
// per write).
#include "raft/log_memory.h"

#include <gtest/gtest.h>

namespace tenure::raft {
namespace {

// Budgets of 1000 bytes of log and 300 trailing; counts 100 and 50.
LogMemory Make() { return LogMemory(1000, 300, 100, 50); }

TEST(LogMemoryTest, SmallEntriesKeepTheConfiguredCounts) {
  LogMemory m = Make();
  for (std::uint64_t i = 1; i <= 60; ++i) m.Append(i, 1);
  EXPECT_EQ(m.bytes(), 60u);
  EXPECT_EQ(m.last_index(), 60u);
  LogMemory::Policy p = m.Decide(60, 0);
  EXPECT_EQ(p.threshold, 100u);
  EXPECT_EQ(p.trailing, 50u);
}

TEST(LogMemoryTest, LargeEntriesMakeASnapshotDueAndKeepFewerTrailing) {
  LogMemory m = Make();
  for (std::uint64_t i = 1; i <= 9; ++i) m.Append(i, 100);
  LogMemory::Policy p = m.Decide(9, 0);  // 900 bytes: under the log budget
  EXPECT_EQ(p.threshold, 100u);
  EXPECT_EQ(p.trailing, 3u);  // 3 x 100 bytes fit in 300
  m.Append(10, 100);
  p = m.Decide(10, 0);  // 1000 bytes since the last snapshot: one is due now
  EXPECT_LE(p.threshold, 10u);
  EXPECT_GE(p.threshold, 1u);
  EXPECT_EQ(p.trailing, 3u);
  // Nothing applied since the snapshot: the configured values.
  p = m.Decide(10, 10);
  EXPECT_EQ(p.threshold, 100u);
}

TEST(LogMemoryTest, ASnapshotWithinTheSpacingDoublesTheThreshold) {
  LogMemory m(1000, 300, 100, 50, /*spacing_ms=*/1000);
  for (std::uint64_t i = 1; i <= 60; ++i) m.Append(i, 1);
  EXPECT_EQ(m.Decide(60, 0, 999).threshold, 200u);  // the last one 999 ms ago
  EXPECT_EQ(m.Decide(60, 0, 1000).threshold, 100u);
  EXPECT_EQ(m.Decide(60, 0).threshold, 100u);  // none taken yet
  // The byte budget still makes one due at once, spacing or not.
  LogMemory big(1000, 300, 100, 50, /*spacing_ms=*/1000);
  for (std::uint64_t i = 1; i <= 10; ++i) big.Append(i, 100);
  EXPECT_LE(big.Decide(10, 0, 0).threshold, 10u);
  // No spacing configured: the count as given.
  EXPECT_EQ(Make().Decide(0, 0, 0).threshold, 100u);
}

TEST(LogMemoryTest, OneEntryOverTheTrailingBudgetKeepsNone) {
  LogMemory m = Make();
  m.Append(1, 5000);
  LogMemory::Policy p = m.Decide(1, 0);
  EXPECT_EQ(p.trailing, 0u);
  EXPECT_EQ(p.threshold, 1u);
}

TEST(LogMemoryTest, TrimForgetsSnapshottedAndTruncatedEntries) {
  LogMemory m = Make();
  for (std::uint64_t i = 5; i <= 14; ++i) m.Append(i, 10);
  EXPECT_EQ(m.bytes(), 100u);
  m.Trim(10, 14);  // a snapshot dropped 5..9
  EXPECT_EQ(m.bytes(), 50u);
  m.Trim(10, 12);  // a conflicting suffix 13..14 was truncated
  EXPECT_EQ(m.bytes(), 30u);
  EXPECT_EQ(m.last_index(), 12u);
  m.Append(13, 7);
  EXPECT_EQ(m.bytes(), 37u);
  m.Trim(100, 99);  // everything gone
  EXPECT_EQ(m.bytes(), 0u);
  EXPECT_EQ(m.last_index(), 0u);
  m.Append(200, 1);  // starts again anywhere
  EXPECT_EQ(m.last_index(), 200u);
}

}  // namespace
}  // namespace tenure::raft
