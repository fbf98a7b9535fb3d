// compare's statistics: sample mean/sd, Student t quantiles against published values, Welch
// intervals worked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "metrics/compare_stats.h"

using namespace schedtwin::metrics;

TEST(CompareStats, SampleMeanAndSampleSd) {
  // {1..5}: mean 3, squared deviations 4+1+0+1+4 = 10, sd = sqrt(10/4).
  SampleStats s = sample_stats({1, 2, 3, 4, 5});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.sd, std::sqrt(2.5));
  // Large values with a small spread: no cancellation (two-pass).
  SampleStats big = sample_stats({1e9 + 1, 1e9 + 3});
  EXPECT_DOUBLE_EQ(big.mean, 1e9 + 2);
  EXPECT_DOUBLE_EQ(big.sd, std::sqrt(2.0));
}

TEST(CompareStats, SdUndefinedBelowTwoValues) {
  SampleStats one = sample_stats({7});
  EXPECT_EQ(one.n, 1u);
  EXPECT_DOUBLE_EQ(one.mean, 7);
  EXPECT_TRUE(std::isnan(one.sd));
  SampleStats none = sample_stats({});
  EXPECT_EQ(none.n, 0u);
  EXPECT_DOUBLE_EQ(none.mean, 0);
  EXPECT_THROW(sample_stats({1, NAN}), std::invalid_argument);
}

TEST(CompareStats, StudentTQuantilesMatchTables) {
  // Two-sided 95 % critical values (any t table; digits from the incomplete beta, mpmath).
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062047, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3026527, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.7764451, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.2281389, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0422725, 1e-6);
  // Real df (Welch) and no cut-off: large df tends to the normal 1.959964.
  EXPECT_NEAR(student_t_quantile(0.975, 1.5), 6.0166631, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.95, 7.5), 1.8757475, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.9599664, 1e-6);
  // Symmetric.
  EXPECT_NEAR(student_t_quantile(0.025, 4), -2.7764451, 1e-6);
  EXPECT_THROW(student_t_quantile(1.0, 4), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.975, 0), std::invalid_argument);
}

TEST(CompareStats, WelchIntervalWorkedExample) {
  // base {1..5}: mean 3, sd² 2.5; with {2,4,..,10}: mean 6, sd² 10.
  // vb = 2.5/5 = 0.5, vw = 10/5 = 2; se = sqrt(2.5) = 1.5811;
  // df = 2.5² / (0.5²/4 + 2²/4) = 6.25 / 1.0625 = 5.8824; t(0.975, 5.8824) = 2.458824;
  // diff 3 ± 2.458824 · 1.581139 = 3 ± 3.887742.
  auto w = welch_interval(sample_stats({1, 2, 3, 4, 5}), sample_stats({2, 4, 6, 8, 10}));
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->diff, 3);
  EXPECT_DOUBLE_EQ(w->se, std::sqrt(2.5));
  EXPECT_NEAR(w->df, 5.8823529, 1e-6);
  EXPECT_NEAR(w->t, 2.4588237, 1e-6);
  EXPECT_NEAR(w->lo, -0.8877416, 1e-6);
  EXPECT_NEAR(w->hi, 6.8877416, 1e-6);
}

TEST(CompareStats, WelchUnequalSizes) {
  // base {10,12,14}: mean 12, sd² 4, vb = 4/3; with {15,17,19,21}: mean 18, sd² 20/3, vw = 5/3.
  // se = sqrt(3); df = 9 / ((4/3)²/2 + (5/3)²/3) = 4.959184; t = 2.576958; 6 ± 4.463423.
  auto w = welch_interval(sample_stats({10, 12, 14}), sample_stats({15, 17, 19, 21}));
  ASSERT_TRUE(w);
  EXPECT_NEAR(w->df, 4.9591837, 1e-6);
  EXPECT_NEAR(w->t, 2.5769584, 1e-6);
  EXPECT_NEAR(w->lo, 1.5365770, 1e-6);
  EXPECT_NEAR(w->hi, 10.4634230, 1e-6);
  // In % of the base mean 12: diff +50 %, interval [12.80 %, 87.20 %].
  Comparison c = compare_samples({10, 12, 14}, {15, 17, 19, 21});
  ASSERT_TRUE(c.diff_pct && c.ci95_lo_pct && c.ci95_hi_pct);
  EXPECT_DOUBLE_EQ(*c.diff_pct, 50);
  EXPECT_NEAR(*c.ci95_lo_pct, 12.8048086, 1e-6);
  EXPECT_NEAR(*c.ci95_hi_pct, 87.1951914, 1e-6);
}

TEST(CompareStats, OneSampleWithoutSpreadGivesDfOfTheOther) {
  // vb = 0: df = vw² / (vw²/(n_w - 1)) = n_w - 1 = 4; se = sqrt(10/5); 3 ± 2.776445 · 1.414214.
  auto w = welch_interval(sample_stats({3, 3, 3}), sample_stats({2, 4, 6, 8, 10}));
  ASSERT_TRUE(w);
  EXPECT_NEAR(w->df, 4, 1e-12);
  EXPECT_NEAR(w->lo, 3 - 2.7764451 * std::sqrt(2.0), 1e-6);
}

TEST(CompareStats, NoSpreadAtAllGivesTheExactDifference) {
  auto w = welch_interval(sample_stats({2, 2}), sample_stats({3, 3, 3}));
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->se, 0);
  EXPECT_DOUBLE_EQ(w->lo, 1);
  EXPECT_DOUBLE_EQ(w->hi, 1);
  Comparison c = compare_samples({2, 2}, {3, 3, 3});
  EXPECT_DOUBLE_EQ(*c.diff_pct, 50);
  EXPECT_DOUBLE_EQ(*c.ci95_lo_pct, 50);
  EXPECT_DOUBLE_EQ(*c.ci95_hi_pct, 50);
}

TEST(CompareStats, PercentOfANegativeBaseKeepsTheSignOfTheChange) {
  // Slack can be negative: base mean -10, with mean -5 is an increase of 5, +50 % of |-10|.
  Comparison c = compare_samples({-10, -10}, {-5, -5});
  EXPECT_DOUBLE_EQ(*c.diff_pct, 50);
}

TEST(CompareStats, MissingPiecesAreEmpty) {
  Comparison one = compare_samples({4}, {5});  // one run each: a difference, no interval
  EXPECT_DOUBLE_EQ(*one.diff_pct, 25);
  EXPECT_FALSE(one.ci95_lo_pct);
  Comparison zero = compare_samples({0, 0}, {1, 2});  // no % of a zero base
  EXPECT_FALSE(zero.diff_pct);
  EXPECT_FALSE(zero.ci95_hi_pct);
  EXPECT_FALSE(welch_interval(sample_stats({1}), sample_stats({1, 2})));
}
