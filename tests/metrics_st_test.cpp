// st (nferraz/st) default output: tab-separated, every value with printf "%g".
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "metrics/st.h"

namespace schedtwin::metrics {
namespace {

TEST(St, PublishedLineFormatting) {
  // Viresh Kumar's test 1 summary: "5136 0 2452 535985 104.358 104.585" (tabs in st's
  // output; spaces in the mail). mean = 535985/5136 = 104.3584...
  StStats s;
  s.n = 5136;
  s.min = 0;
  s.max = 2452;
  s.sum = 535985;
  s.mean = 535985.0 / 5136.0;
  s.stddev = 104.5852;
  EXPECT_EQ(st_format(s),
            "N\tmin\tmax\tsum\tmean\tstddev\n"
            "5136\t0\t2452\t535985\t104.358\t104.585\n");
}

TEST(St, HandComputedSmallSet) {
  // {1,2,3,4}: sum 10, mean 2.5, M2 = 2.25+0.25+0.25+2.25 = 5, sample var 5/3,
  // stddev 1.2909944 -> "1.29099".
  const StStats s = st_stats({1, 2, 3, 4});
  EXPECT_EQ(s.n, 4u);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 4);
  EXPECT_EQ(s.sum, 10);
  EXPECT_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(5.0 / 3.0));
  EXPECT_EQ(st_format(s), "N\tmin\tmax\tsum\tmean\tstddev\n4\t1\t4\t10\t2.5\t1.29099\n");
}

TEST(St, TextbookSet) {
  // {2,4,4,4,5,5,7,9}: mean 5, squared deviations sum to 32, sample var 32/7 = 4.5714,
  // stddev 2.13809 (the population stddev would be 2).
  const StStats s = st_stats({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(s.mean, 5);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(32.0 / 7.0));
  EXPECT_EQ(st_format(s), "N\tmin\tmax\tsum\tmean\tstddev\n8\t2\t9\t40\t5\t2.13809\n");
}

TEST(St, SingleValuePrintsZeroStddev) {
  // st: variance undefined for N = 1, and sprintf("%g", undef) prints 0.
  const StStats s = st_stats({7});
  EXPECT_EQ(s.stddev, 0);
  EXPECT_EQ(st_format(s), "N\tmin\tmax\tsum\tmean\tstddev\n1\t7\t7\t7\t7\t0\n");
}

TEST(St, LargeValuesSwitchToExponent) {
  // %g keeps 6 significant digits: a sum of 5259560 prints as 5.25956e+06.
  const StStats s = st_stats({2629780, 2629780});
  EXPECT_EQ(st_format(s),
            "N\tmin\tmax\tsum\tmean\tstddev\n2\t2.62978e+06\t2.62978e+06\t5.25956e+06\t"
            "2.62978e+06\t0\n");
}

TEST(St, NegativeAndFractionalValues) {
  // {-1.5, 0.5}: sum -1, mean -0.5, M2 = 1 + 1 = 2, stddev sqrt(2) = 1.41421.
  const StStats s = st_stats({-1.5, 0.5});
  EXPECT_EQ(st_format(s), "N\tmin\tmax\tsum\tmean\tstddev\n2\t-1.5\t0.5\t-1\t-0.5\t1.41421\n");
}

TEST(St, EmptyPrintsNothing) {
  const StStats s = st_stats({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(st_format(s), "");
}

}  // namespace
}  // namespace schedtwin::metrics
