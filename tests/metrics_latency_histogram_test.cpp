// fio/schbench log-linear histogram: bucket mapping worked by hand from schbench.c's
// plat_val_to_idx / plat_idx_to_val, and the percentile walk of calc_percentiles.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "metrics/latency_histogram.h"

namespace schedtwin::metrics {
namespace {

TEST(LatencyHistogram, ExactBelow512) {
  for (unsigned v = 0; v < 512; ++v) {
    EXPECT_EQ(plat_val_to_idx(v), v);
    EXPECT_EQ(plat_idx_to_val(v), v);
  }
}

TEST(LatencyHistogram, BucketsAboveAreMidpoints) {
  // 512: msb 9, error_bits 1, base (1+1)<<8 = 512, offset 255 & 256 = 0 -> idx 512, which
  // covers [512, 514) and reports 512 + 0.5*2 = 513. 513 shares it.
  EXPECT_EQ(plat_val_to_idx(512), 512u);
  EXPECT_EQ(plat_val_to_idx(513), 512u);
  EXPECT_EQ(plat_idx_to_val(512), 513u);
  // 1000: msb 9, error_bits 1, offset 255 & (1000 >> 1 = 500) = 244 -> idx 756;
  // back: error_bits (756 >> 8) - 1 = 1, base 512, k = 244: 512 + 244.5*2 = 1001.
  EXPECT_EQ(plat_val_to_idx(1000), 756u);
  EXPECT_EQ(plat_idx_to_val(756), 1001u);
  // 1023 is the last bucket of the 512 group: idx 767 -> 512 + 255.5*2 = 1023.
  EXPECT_EQ(plat_val_to_idx(1023), 767u);
  EXPECT_EQ(plat_idx_to_val(767), 1023u);
  // 1024 opens the next group: error_bits 2, base 3<<8 = 768, idx 768 -> 1024 + 0.5*4.
  EXPECT_EQ(plat_val_to_idx(1024), 768u);
  EXPECT_EQ(plat_idx_to_val(768), 1026u);
  // Values seen in posted schbench tables are such midpoints:
  // 12272 = 8192 + 127*32 + 16, 95872 = 65536 + 118*256 + 128, 135424 = 131072 + 8*512 + 256.
  EXPECT_EQ(plat_idx_to_val(plat_val_to_idx(12260)), 12272u);
  EXPECT_EQ(plat_idx_to_val(plat_val_to_idx(95800)), 95872u);
  EXPECT_EQ(plat_idx_to_val(plat_val_to_idx(135200)), 135424u);
}

TEST(LatencyHistogram, ClampsAtTheLastBucket) {
  // [2^25, 2^26) is the last group (idx 4608 .. 4863); 2^26 and above clamp to 4863, which
  // reports 2^25 + 255*2^17 + 2^16 = 67043328.
  EXPECT_EQ(plat_val_to_idx(1u << 25), 4608u);
  EXPECT_EQ(plat_val_to_idx((1u << 26) - 1), PLAT_NR - 1);
  EXPECT_EQ(plat_val_to_idx(1u << 26), PLAT_NR - 1);
  EXPECT_EQ(plat_val_to_idx(UINT64_MAX), PLAT_NR - 1);
  EXPECT_EQ(plat_idx_to_val(PLAT_NR - 1), 67043328u);
  EXPECT_THROW(plat_idx_to_val(PLAT_NR), std::out_of_range);
}

TEST(LatencyHistogram, MinMaxAreExact) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  h.add(1000);  // reported as 1001 by percentiles, but max stays 1000
  h.add(700);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.min(), 700u);
  EXPECT_EQ(h.max(), 1000u);
  EXPECT_EQ(h.bucket(756), 1u);
  const auto p = h.percentiles({100});
  EXPECT_EQ(p[0].value_us, 1001u);
}

TEST(LatencyHistogram, PercentileWalkOneToHundred) {
  // 1..100 once each, all exact. p/100*100 thresholds: 50 -> 50, 75 -> 75, ...,
  // 99.5 -> first sum >= 99.5 is at 100, 99.9 -> 100 as well (same bucket, 0 more samples).
  LatencyHistogram h;
  for (unsigned v = 1; v <= 100; ++v) h.add(v);
  const auto p = h.percentiles({50, 75, 90, 95, 99, 99.5, 99.9});
  ASSERT_EQ(p.size(), 7u);
  const std::uint64_t vals[] = {50, 75, 90, 95, 99, 100, 100};
  const std::uint64_t incs[] = {50, 25, 15, 5, 4, 1, 0};
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(p[i].value_us, vals[i]) << i;
    EXPECT_EQ(p[i].samples_increment, incs[i]) << i;
  }
  EXPECT_EQ(p[5].p, 99.5);
}

TEST(LatencyHistogram, OneBucketSatisfiesSeveralPercentiles) {
  // 1000 samples of 7 and one of 2000 (msb 10, error_bits 2, offset 255 & 500 = 244,
  // idx 768 + 244 = 1012, reported 1024 + 244*4 + 2 = 2002). N = 1001: p99.9 needs
  // 999.999 samples, reached at 7; p100 needs 1001, reached at 2000's bucket.
  LatencyHistogram h;
  for (int i = 0; i < 1000; ++i) h.add(7);
  h.add(2000);
  const auto p = h.percentiles({50, 99, 99.9, 100});
  EXPECT_EQ(p[0].value_us, 7u);
  EXPECT_EQ(p[0].samples_increment, 1000u);
  EXPECT_EQ(p[1].value_us, 7u);
  EXPECT_EQ(p[1].samples_increment, 0u);
  EXPECT_EQ(p[2].value_us, 7u);
  EXPECT_EQ(p[3].value_us, 2002u);
  EXPECT_EQ(p[3].samples_increment, 1u);
}

TEST(LatencyHistogram, EmptyHistogramReportsBucketZero) {
  // schbench: with N = 0 every threshold is 0, met at bucket 0.
  LatencyHistogram h;
  const auto p = h.percentiles({50, 99});
  EXPECT_EQ(p[0].value_us, 0u);
  EXPECT_EQ(p[1].value_us, 0u);
  EXPECT_EQ(p[0].samples_increment, 0u);
  EXPECT_EQ(p[1].samples_increment, 0u);
  EXPECT_TRUE(h.percentiles({}).empty());
  EXPECT_THROW(h.percentiles({101}), std::invalid_argument);
  EXPECT_THROW(h.percentiles({-1}), std::invalid_argument);
}

TEST(LatencyHistogram, MergeEqualsAddingEverythingToOne) {
  LatencyHistogram a, b, all, empty;
  for (std::uint64_t v : {5u, 700u, 700u}) {
    a.add(v);
    all.add(v);
  }
  for (std::uint64_t v : {3u, 100000u}) {
    b.add(v);
    all.add(v);
  }
  a.merge(b);
  a.merge(empty);  // an empty worker leaves min/max alone
  EXPECT_EQ(a.count(), 5u);
  EXPECT_EQ(a.min(), 3u);
  EXPECT_EQ(a.max(), 100000u);
  for (unsigned i = 0; i < PLAT_NR; ++i) ASSERT_EQ(a.bucket(i), all.bucket(i)) << i;
  const std::vector<double> ps = {50, 75, 90, 95, 99, 99.5, 99.9};
  const auto pa = a.percentiles(ps), pall = all.percentiles(ps);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(pa[i].value_us, pall[i].value_us);
    EXPECT_EQ(pa[i].samples_increment, pall[i].samples_increment);
  }
  // Sorted: 3 5 700 700 100000. 700 is in [700, 702) (msb 9, error_bits 1, offset
  // 255 & 350 = 94, idx 606) and reports 701. p50 needs 2.5 samples: reached at that bucket
  // with both 700s (cumulative 4); p75 (3.75) too, with 0 more; p90 (4.5) needs 100000,
  // whose bucket (msb 16, error_bits 8, offset 255 & 390 = 134) reports
  // 65536 + 134*256 + 128 = 99968, 1 more sample.
  EXPECT_EQ(pa[0].value_us, 701u);
  EXPECT_EQ(pa[0].samples_increment, 4u);
  EXPECT_EQ(pa[1].value_us, 701u);
  EXPECT_EQ(pa[1].samples_increment, 0u);
  EXPECT_EQ(pa[2].value_us, 99968u);
  EXPECT_EQ(pa[2].samples_increment, 1u);
  empty.merge(a);
  EXPECT_EQ(empty.min(), 3u);
  a.reset();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.min(), 0u);
}

}  // namespace
}  // namespace schedtwin::metrics
