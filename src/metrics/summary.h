// Summary of a sample, as written to the JSON results (DESIGN.md §4:
// tasks.<name>.wu_lat_us.{n,min,max,sum,mean,stddev,p50,p90,p99}, slack_us likewise).
#pragma once
#include <cstddef>
#include <vector>

namespace schedtwin::metrics {

struct Summary {
  std::size_t n = 0;
  double min = 0, max = 0, sum = 0;
  double mean = 0, stddev = 0;       // Welford mean and sample (N - 1) stddev, as st computes
  double p50 = 0, p90 = 0, p99 = 0;  // nearest rank, see percentile_nearest_rank
};

// Nearest-rank percentile of ascending `sorted` data: the value at rank
// ceil(p / 100 * N) (1-based; p * N is formed first so that integral products stay exact),
// clamped to [1, N]; so p50 of {1,2,3,4} is 2, p90 of ten values is the 9th and p99 of
// fewer than 100 values is the maximum. Always an observed value, never interpolated.
// 0 for empty data; requires 0 <= p <= 100 (throws std::invalid_argument otherwise).
double percentile_nearest_rank(const std::vector<double>& sorted, double p);

// All fields 0 for an empty sample; throws std::invalid_argument on NaN. Deterministic: input order
// only affects the floating-point sum/mean the way it does in st.
// Sorts `values` for the percentiles: pass std::move(v) when v is not needed after, so that a
// column of millions of samples is not copied.
Summary summarize(std::vector<double> values);

}  // namespace schedtwin::metrics
