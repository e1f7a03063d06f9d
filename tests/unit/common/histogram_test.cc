#include "common/histogram.h"

#include <gtest/gtest.h>

namespace tenure {
namespace {

TEST(HistogramTest, EmptyCountsNothing) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.sum(), 0.0);
  for (std::size_t i = 0; i <= Histogram::kBounds.size(); ++i) EXPECT_EQ(h.bucket(i), 0u);
}

TEST(HistogramTest, BoundsAreInclusiveAsPrometheusLe) {
  Histogram h;
  h.Observe(0.001);  // exactly a bound: counts in that bucket (le="0.001")
  h.Observe(0.0011);
  h.Observe(0.0);
  h.Observe(100.0);  // above every bound: +Inf only
  EXPECT_EQ(h.count(), 4u);
  EXPECT_DOUBLE_EQ(h.sum(), 0.001 + 0.0011 + 100.0);
  EXPECT_EQ(h.bucket(0), 1u);  // 0.0 <= 0.0001
  EXPECT_EQ(h.bucket(3), 1u);  // 0.001 <= 0.001
  EXPECT_EQ(h.bucket(4), 1u);  // 0.0011 <= 0.0025
  EXPECT_EQ(h.bucket(Histogram::kBounds.size()), 1u);
  EXPECT_EQ(h.cumulative(2), 1u);
  EXPECT_EQ(h.cumulative(3), 2u);
  EXPECT_EQ(h.cumulative(Histogram::kBounds.size() - 1), 3u);
  EXPECT_EQ(h.cumulative(Histogram::kBounds.size()), 4u);
}

TEST(HistogramTest, BoundsAscend) {
  for (std::size_t i = 1; i < Histogram::kBounds.size(); ++i) {
    EXPECT_LT(Histogram::kBounds[i - 1], Histogram::kBounds[i]);
  }
}

}  // namespace
}  // namespace tenure
