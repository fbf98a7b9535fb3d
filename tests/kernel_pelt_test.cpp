// PELT arithmetic (kernel/sched/pelt.c v5.7) against values worked out by hand or from the
// closed form of the geometric series.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "kernel/pelt.h"

namespace schedtwin::kernel {
namespace {

constexpr std::uint64_t kPeriodNs = 1024 * 1024;  // one PELT period = 1024 x 1024 ns

// y with y^32 = 1/2, in double: the definition the kernel's table generator uses.
const double kY = std::pow(0.5, 1.0 / 32.0);

TEST(Pelt, TableIsTruncatedFixedPointPowersOfY) {
  // Documentation/scheduler/sched-pelt.c: x = ((1UL << 32) - 1) * pow(y, i), truncated.
  // (Each product's fraction is >= 0.004 away from an integer, far beyond double error.)
  for (std::uint32_t i = 0; i < LOAD_AVG_PERIOD; ++i) {
    auto expected = static_cast<std::uint32_t>(4294967295.0 * std::pow(kY, i));
    EXPECT_EQ(runnable_avg_yN_inv[i], expected) << "i=" << i;
  }
}

TEST(Pelt, LoadAvgMaxIsTheConvergedIntegerSeries) {
  // calc_converged_max() of sched-pelt.c: max = 1024; max = (max*y_inv >> 32) + 1024
  // until it stops changing, with y_inv = (long)((2^32 - 1) * y).
  const auto y_inv = static_cast<long>(4294967295.0 * kY);
  EXPECT_EQ(y_inv, static_cast<long>(runnable_avg_yN_inv[1]));
  long max = 1024, last = 0;
  int n = 0;
  while (last != max) {
    last = max;
    max = ((max * y_inv) >> 32) + 1024;
    ++n;
  }
  EXPECT_EQ(max, static_cast<long>(LOAD_AVG_MAX));
  EXPECT_EQ(max, 47742);
  // The analytic limit 1024/(1-y) ~ 47788 is larger: each step floors.
  EXPECT_NEAR(1024.0 / (1.0 - kY), 47788.0, 1.0);
}

TEST(Pelt, DecayLoadHandValues) {
  // n = 32: 1024 >> 1 = 512, then * 0xffffffff >> 32 = 512 - 512/2^32 -> 511.
  EXPECT_EQ(decay_load(1024, 32), 511u);
  // n = 64 (a quarter): 1024 >> 2 = 256 -> 255; 2^20 >> 2 = 2^18 -> 2^18 - 1.
  EXPECT_EQ(decay_load(1024, 64), 255u);
  EXPECT_EQ(decay_load(1u << 20, 64), (1u << 18) - 1);
  // n = 1: 1024 * 0xfa83b2da / 2^32 = 4202935002 / 4194304 = 1002.06 -> 1002, the kernel's
  // old runnable_avg_yN_sum[1].
  EXPECT_EQ(decay_load(1024, 1), 1002u);
  // 47742 * 4202935002 / 2^32 = 46718.4 -> 46718 (= LOAD_AVG_MAX*y, the PELT_MIN_DIVIDER).
  EXPECT_EQ(decay_load(LOAD_AVG_MAX, 1), 46718u);
  // n = 0 is a multiplication by 0xffffffff/2^32: loses one unit of anything >= 1.
  EXPECT_EQ(decay_load(1000, 0), 999u);
  // Past 32*63 periods everything is gone; at 2016 a 64-bit value is shifted by 63.
  EXPECT_EQ(decay_load(UINT64_MAX, 2017), 0u);
  EXPECT_EQ(decay_load(std::uint64_t{1} << 63, 2016), 0u);  // (1) * 0xffffffff >> 32
  // Values above 2^32 use the high half of the 32x32 split: 2^40 * y^32 = 2^39 - 2^7.
  EXPECT_EQ(decay_load(std::uint64_t{1} << 40, 32), (std::uint64_t{1} << 39) - 128);
}

TEST(Pelt, AccumulateSegmentsHandValues) {
  // One full period from a boundary: c1 = decay_load(1024,1) = 1002,
  // c2 = 47742 - 46718 - 1024 = 0, c3 = 0.
  EXPECT_EQ(__accumulate_pelt_segments(1, 1024, 0), 1002u);
  // Half a period left over on both sides: 512*y = 512*4202935002>>32 = 501, + 0 + 512.
  EXPECT_EQ(__accumulate_pelt_segments(1, 512, 512), 501u + 512u);
  // Very long interval: c1 -> 0, c2 -> LOAD_AVG_MAX - 1024.
  EXPECT_EQ(__accumulate_pelt_segments(3000, 1024, 0), LOAD_AVG_MAX - 1024);
}

TEST(Pelt, SubMicrosecondUpdatesAccountNothing) {
  sched_avg sa;
  EXPECT_FALSE(update_pelt(1023, sa, 1024, 1, 1, true));
  EXPECT_EQ(sa.last_update_time, 0u);
  EXPECT_EQ(sa.util_sum, 0u);
  // 1500 ns -> one 1024-ns unit; the remaining 476 ns wait for the next update.
  EXPECT_FALSE(update_pelt(1500, sa, 1024, 1, 1, true));
  EXPECT_EQ(sa.last_update_time, 1024u);
  EXPECT_EQ(sa.period_contrib, 1u);
  EXPECT_EQ(sa.util_sum, 1u << 10);
  EXPECT_EQ(sa.load_sum, 1u);
  EXPECT_EQ(sa.runnable_sum, 1u << 10);
  EXPECT_EQ(sa.util_avg, 0u);  // no boundary crossed: averages untouched
}

TEST(Pelt, TimeGoingBackwardsResynchronises) {
  sched_avg sa;
  sa.last_update_time = 10 * kPeriodNs;
  EXPECT_FALSE(update_pelt(5 * kPeriodNs, sa, 1024, 1, 1, true));
  EXPECT_EQ(sa.last_update_time, 5 * kPeriodNs);
  EXPECT_EQ(sa.util_sum, 0u);
}

TEST(Pelt, OnePeriodOfRunningFromZero) {
  sched_avg sa;
  EXPECT_TRUE(update_pelt(kPeriodNs, sa, 1024, 1, 1, true));
  EXPECT_EQ(sa.period_contrib, 0u);
  EXPECT_EQ(sa.load_sum, 1002u);
  EXPECT_EQ(sa.util_sum, 1002u << 10);
  EXPECT_EQ(sa.runnable_sum, 1002u << 10);
  // divider = 47742 - 1024 + 0 = 46718; 1002*1024/46718 = 21.96 -> 21.
  EXPECT_EQ(sa.util_avg, 21u);
  EXPECT_EQ(sa.runnable_avg, 21u);
  EXPECT_EQ(sa.load_avg, 21u);
}

TEST(Pelt, BlockedEntityForcesRunnableAndRunningToZero) {
  sched_avg sa;
  // load == 0 but runnable/running passed as set: the kernel ignores them.
  update_pelt(kPeriodNs, sa, 1024, 0, 1, true);
  EXPECT_EQ(sa.util_sum, 0u);
  EXPECT_EQ(sa.runnable_sum, 0u);
  EXPECT_EQ(sa.load_sum, 0u);
}

// Expected util_avg of an entity running since t=0 and updated at every period boundary,
// after p periods. Each update adds 1024*y (the period just completed, decayed once) to
// util_sum/1024, so util_sum/1024 = 1024*y*(1 - y^p)/(1 - y), and the divider at a boundary
// is LOAD_AVG_MAX - 1024 = 46718.
double running_util_closed_form(int p) {
  return 1024.0 * (1024.0 * kY * (1.0 - std::pow(kY, p)) / (1.0 - kY)) / 46718.0;
}

TEST(Pelt, AlwaysRunningRisesAsTheGeometricSeries) {
  sched_avg sa;
  // Tolerance 2: the integer result differs from the closed form by the final floor (< 1),
  // by the per-period contribution 1002 instead of 1024*y = 1002.06 (relative 6e-5, < 0.07
  // of util) and by the floors inside decay_load (< 1 unit of util_sum, i.e. < 1/46718 of
  // util, per step).
  for (int p = 1; p <= 345; ++p) {
    update_pelt(p * kPeriodNs, sa, 1024, 1, 1, true);
    if (p == 32) {
      EXPECT_NEAR(static_cast<double>(sa.util_avg), running_util_closed_form(32), 2.0);
      EXPECT_NEAR(static_cast<double>(sa.util_avg), 512.0, 2.0);  // half-life
    }
  }
  EXPECT_NEAR(static_cast<double>(sa.util_avg), running_util_closed_form(345), 2.0);
  EXPECT_GE(sa.util_avg, 1002u);
  EXPECT_LE(sa.util_avg, 1024u);
  // load_avg = weight * load_sum / divider, the same fraction times 1024 here.
  EXPECT_NEAR(static_cast<double>(sa.load_avg), static_cast<double>(sa.util_avg), 1.0);
  EXPECT_EQ(sa.runnable_avg, sa.util_avg);  // runnable_sum carries the same << 10 scale
}

TEST(Pelt, DividerKeepsSaturatedSignalStableMidPeriod) {
  sched_avg sa;
  // Update every 0.25 period for 400 periods; every result after saturation stays in
  // [1002, 1024] whatever the position in the period.
  for (std::uint64_t t = kPeriodNs / 4; t <= 400 * kPeriodNs; t += kPeriodNs / 4) {
    update_pelt(t, sa, 1024, 1, 1, true);
    if (t >= 345 * kPeriodNs) {
      EXPECT_GE(sa.util_avg, 1002u) << t;
      EXPECT_LE(sa.util_avg, 1024u) << t;
    }
  }
}

TEST(Pelt, QuarterDutyCycleAveragesToAQuarter) {
  // Run one period, sleep three, aligned with period boundaries, updated at each boundary
  // with the inputs of the period that just ended (the kernel updates before it changes
  // the entity's state). In steady state the boundary values are S, Sy, Sy^2, Sy^3 with
  // S = 1024*1024*y/(1 - y^4) / 46718, whose mean is 256 * (1024*y/(1-y)) / 46718 = 256.25.
  const double peak = 1024.0 * 1024.0 * kY / (1.0 - std::pow(kY, 4)) / 46718.0;
  const double mean = 256.0 * (1024.0 * kY / (1.0 - kY)) / 46718.0;
  ASSERT_NEAR(mean, 256.25, 0.01);
  sched_avg sa;
  double sum = 0;
  for (int p = 1; p <= 800; ++p) {
    const bool ran = (p - 1) % 4 == 0;  // period p-1 .. p was a running one
    update_pelt(p * kPeriodNs, sa, 1024, ran, ran, ran);
    if (p > 400) {
      sum += static_cast<double>(sa.util_avg);
      if (ran) {
        EXPECT_NEAR(static_cast<double>(sa.util_avg), peak, 2.0) << p;
      }
      // A sleeping task has a runnable fraction equal to its running fraction.
      EXPECT_EQ(sa.runnable_avg, sa.util_avg);
    }
  }
  // Tolerance 1.5: each sample is within 1.1 of the closed form (see above); the floors
  // all go one way, so the measured mean is 255.5.
  EXPECT_NEAR(sum / 400.0, mean, 1.5);
}

TEST(Pelt, BlockedEntityDecaysToZero) {
  sched_avg sa;
  for (int p = 1; p <= 400; ++p) update_pelt(p * kPeriodNs, sa, 1024, 1, 1, true);
  ASSERT_GT(sa.util_avg, 1000u);
  // 32 periods blocked: half (the sums halve and lose a unit to the 0xffffffff factor).
  sched_avg half = sa;
  update_pelt(432 * kPeriodNs, half, 1024, 0, 0, false);
  EXPECT_NEAR(static_cast<double>(half.util_avg), sa.util_avg / 2.0, 1.0);
  // One update 32*63 = 2016 periods later: util_sum < 2^26 is shifted right by 63 -> 0.
  sched_avg once = sa;
  EXPECT_TRUE(update_pelt((400 + 2016) * kPeriodNs, once, 1024, 0, 0, false));
  EXPECT_EQ(once.util_sum, 0u);
  EXPECT_EQ(once.load_sum, 0u);
  EXPECT_EQ(once.runnable_sum, 0u);
  EXPECT_EQ(once.util_avg, 0u);
  EXPECT_EQ(once.load_avg, 0u);
  EXPECT_EQ(once.runnable_avg, 0u);
  // Beyond 2016 periods decay_load returns 0 outright.
  sched_avg later = sa;
  update_pelt((400 + 2017) * kPeriodNs, later, 1024, 0, 0, false);
  EXPECT_EQ(later.util_sum, 0u);
  // Decaying period by period reaches 0 too (each step floors).
  sched_avg step = sa;
  for (int p = 401; p <= 400 + 2016; ++p) update_pelt(p * kPeriodNs, step, 1024, 0, 0, false);
  EXPECT_EQ(step.util_sum, 0u);
  EXPECT_EQ(step.util_avg, 0u);
}

TEST(Pelt, CfsRqLoadIsWeightedInTheSum) {
  // A cfs_rq passes weight 1 for load_avg and its queued weight as the load input.
  sched_avg rq;
  for (int p = 1; p <= 400; ++p) update_pelt(p * kPeriodNs, rq, 1, 2048, 2, true);
  // load_avg ~ 2048 * util fraction; runnable_avg ~ 2 x 1024 (two runnable tasks).
  EXPECT_NEAR(static_cast<double>(rq.load_avg), 2.0 * rq.util_avg, 2.0);
  EXPECT_NEAR(static_cast<double>(rq.runnable_avg), 2.0 * rq.util_avg, 2.0);
  EXPECT_GE(rq.util_avg, 1002u);
}

}  // namespace
}  // namespace schedtwin::kernel
