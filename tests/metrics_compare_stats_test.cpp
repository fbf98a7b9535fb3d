// compare's statistics: sample mean/sd, Student t quantiles against published values, paired
// intervals worked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
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
  // Real df and no cut-off: large df tends to the normal 1.959964.
  EXPECT_NEAR(student_t_quantile(0.975, 1.5), 6.0166631, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.95, 7.5), 1.8757475, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.9599664, 1e-6);
  // Symmetric.
  EXPECT_NEAR(student_t_quantile(0.025, 4), -2.7764451, 1e-6);
  EXPECT_THROW(student_t_quantile(1.0, 4), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(0.975, 0), std::invalid_argument);
}

TEST(CompareStats, PairedIntervalWorkedExample) {
  // base {10, 12, 11, 13}, with {12, 15, 12, 16}: d = {2, 3, 1, 3}, mean 2.25,
  // squared deviations 0.0625 + 0.5625 + 1.5625 + 0.5625 = 2.75, sd² = 2.75/3,
  // se = sqrt(2.75/3)/2 = 0.478714; df 3, t(0.975, 3) = 3.182446; 2.25 ± 1.523480.
  auto p = paired_interval({10, 12, 11, 13}, {12, 15, 12, 16});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->n, 4u);
  EXPECT_DOUBLE_EQ(p->diff, 2.25);
  EXPECT_DOUBLE_EQ(p->sd, std::sqrt(2.75 / 3));
  EXPECT_NEAR(p->se, 0.4787136, 1e-6);
  EXPECT_DOUBLE_EQ(p->df, 3);
  EXPECT_NEAR(p->t, 3.1824463, 1e-6);
  EXPECT_NEAR(p->lo, 0.7265198, 1e-6);
  EXPECT_NEAR(p->hi, 3.7734802, 1e-6);
  // In % of the base mean 11.5: diff +19.565 %, interval [6.3176 %, 32.8129 %].
  Comparison c = compare_samples({10, 12, 11, 13}, {12, 15, 12, 16});
  ASSERT_TRUE(c.diff_pct && c.ci95_lo_pct && c.ci95_hi_pct);
  EXPECT_EQ(c.pairs, 4u);
  EXPECT_NEAR(*c.diff_pct, 19.5652174, 1e-6);
  EXPECT_NEAR(*c.ci95_lo_pct, 6.3175636, 1e-6);
  EXPECT_NEAR(*c.ci95_hi_pct, 32.8128711, 1e-6);
}

TEST(CompareStats, PairingRemovesTheSpreadTheSeedsShare) {
  // The seeds spread both columns alike (sd 10 each): unpaired, the change of 1 would be
  // lost in that spread; paired, every seed moved by exactly 1, so the interval is [1, 1].
  Comparison c = compare_samples({100, 110, 120}, {101, 111, 121});
  EXPECT_NEAR(c.base.sd, 10, 1e-12);
  EXPECT_NEAR(*c.ci95_lo_pct, 1 / 1.1, 1e-9);
  EXPECT_NEAR(*c.ci95_hi_pct, 1 / 1.1, 1e-9);
  // The same configuration twice: every difference 0, interval [0, 0].
  Comparison same = compare_samples({3, 9, 4}, {3, 9, 4});
  EXPECT_DOUBLE_EQ(*same.ci95_lo_pct, 0);
  EXPECT_DOUBLE_EQ(*same.ci95_hi_pct, 0);
}

TEST(CompareStats, RunsWithoutTheMetricLeaveTheirSeedUnpaired) {
  // Seed 2 of with and seed 4 of base did not report: the columns' means over what each
  // reported, the difference and its interval over seeds 1 and 3 only, in % of their base
  // mean 10 (d = {1, 3}: 2 ± t(0.975, 1) · 1 = 2 ± 12.706205). Over all runs the means would
  // give (74/3 - 40/3) / (40/3) = +85 %, a comparison of different runs.
  Comparison c = compare_samples({10, 20, 10, std::nullopt}, {11, std::nullopt, 13, 50});
  EXPECT_EQ(c.base.n, 3u);
  EXPECT_EQ(c.with.n, 3u);
  EXPECT_EQ(c.pairs, 2u);
  EXPECT_NEAR(c.base.mean, 40.0 / 3, 1e-12);
  EXPECT_NEAR(*c.diff_pct, 20, 1e-12);
  EXPECT_NEAR(*c.ci95_lo_pct, (2 - 12.7062047) * 10, 1e-5);
  EXPECT_NEAR(*c.ci95_hi_pct, (2 + 12.7062047) * 10, 1e-5);
}

TEST(CompareStats, OnePairGivesItsOwnDifferenceAndNoPairNone) {
  // Trial 6: base ran to the end in seeds 1 and 3, with in seeds 1 and 2; the one pair
  // (seed 1) got 0.65 % faster, though with's mean over its two runs is above base's.
  Comparison c = compare_samples({1.0, std::nullopt, 0.9}, {0.9935, 1.2, std::nullopt});
  EXPECT_EQ(c.pairs, 1u);
  EXPECT_NEAR(*c.diff_pct, -0.65, 1e-9);
  EXPECT_FALSE(c.ci95_lo_pct);
  Comparison none = compare_samples({1.0, std::nullopt}, {std::nullopt, 2.0});
  EXPECT_EQ(none.pairs, 0u);
  EXPECT_FALSE(none.diff_pct);
}

TEST(CompareStats, PercentOfANegativeBaseKeepsTheSignOfTheChange) {
  // Slack can be negative: base mean -10, with mean -5 is an increase of 5, +50 % of |-10|.
  Comparison c = compare_samples({-10, -10}, {-5, -5});
  EXPECT_DOUBLE_EQ(*c.diff_pct, 50);
  EXPECT_DOUBLE_EQ(*c.ci95_lo_pct, 50);
}

TEST(CompareStats, MissingPiecesAreEmpty) {
  Comparison one = compare_samples({4}, {5});  // one run each: a difference, no interval
  EXPECT_DOUBLE_EQ(*one.diff_pct, 25);
  EXPECT_FALSE(one.ci95_lo_pct);
  Comparison zero = compare_samples({0, 0}, {1, 2});  // no % of a zero base
  EXPECT_FALSE(zero.diff_pct);
  EXPECT_FALSE(zero.ci95_hi_pct);
  // Two runs each but only one seed where both reported: no interval.
  Comparison lone = compare_samples({1, std::nullopt}, {std::nullopt, 2});
  EXPECT_EQ(lone.pairs, 0u);
  EXPECT_FALSE(lone.ci95_lo_pct);
  EXPECT_FALSE(paired_interval({1}, {2}));
  EXPECT_THROW(paired_interval({1, 2}, {1, 2, 3}), std::invalid_argument);
}
