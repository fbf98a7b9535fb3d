// Summary for the JSON results: st's mean/stddev and nearest-rank percentiles.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "metrics/summary.h"

namespace schedtwin::metrics {
namespace {

std::vector<double> iota(int from, int to) {
  std::vector<double> v;
  for (int i = from; i <= to; ++i) v.push_back(i);
  return v;
}

TEST(Summary, SmallSetByHand) {
  // {4,1,3,2}: ranks ceil(0.5*4) = 2 -> 2, ceil(0.9*4) = 4 -> 4, ceil(0.99*4) = 4 -> 4.
  const Summary s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.n, 4u);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 4);
  EXPECT_EQ(s.sum, 10);
  EXPECT_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(5.0 / 3.0));
  EXPECT_EQ(s.p50, 2);
  EXPECT_EQ(s.p90, 4);
  EXPECT_EQ(s.p99, 4);
}

TEST(Summary, NearestRankOnRanges) {
  // 1..10: p50 rank 5, p90 rank 9 (90*10/100 = 9 exactly, no float rounding up to 10),
  // p99 rank ceil(9.9) = 10.
  Summary s = summarize(iota(1, 10));
  EXPECT_EQ(s.p50, 5);
  EXPECT_EQ(s.p90, 9);
  EXPECT_EQ(s.p99, 10);
  s = summarize(iota(1, 100));
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p90, 90);
  EXPECT_EQ(s.p99, 99);
  s = summarize(iota(1, 1000));
  EXPECT_EQ(s.p99, 990);
  EXPECT_EQ(s.mean, 500.5);
}

TEST(Summary, EdgesAndSingleValue) {
  const std::vector<double> sorted = {1, 2, 3};
  EXPECT_EQ(percentile_nearest_rank(sorted, 0), 1);  // rank clamps to 1
  EXPECT_EQ(percentile_nearest_rank(sorted, 100), 3);
  EXPECT_EQ(percentile_nearest_rank(sorted, 33.4), 2);  // ceil(1.002) = 2
  EXPECT_EQ(percentile_nearest_rank({}, 50), 0);
  EXPECT_THROW(percentile_nearest_rank(sorted, 100.5), std::invalid_argument);
  const Summary one = summarize({42});
  EXPECT_EQ(one.n, 1u);
  EXPECT_EQ(one.stddev, 0);
  EXPECT_EQ(one.p50, 42);
  EXPECT_EQ(one.p99, 42);
}

TEST(Summary, EmptyAndNaN) {
  const Summary s = summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(s.max, 0);
  EXPECT_EQ(s.p99, 0);
  EXPECT_THROW(summarize({1, std::numeric_limits<double>::quiet_NaN()}), std::invalid_argument);
}

}  // namespace
}  // namespace schedtwin::metrics
