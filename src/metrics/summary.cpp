// Sample summary for the JSON results — see summary.h.
#include "metrics/summary.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "metrics/st.h"

namespace schedtwin::metrics {

double percentile_nearest_rank(const std::vector<double>& sorted, double p) {
  if (!(p >= 0.0 && p <= 100.0)) throw std::invalid_argument("percentile outside [0, 100]");
  if (sorted.empty()) return 0.0;
  const auto n = static_cast<double>(sorted.size());
  double rank = std::ceil(p * n / 100.0);
  rank = std::clamp(rank, 1.0, n);
  return sorted[static_cast<std::size_t>(rank) - 1];
}

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  // NaN would break the sort's ordering; the simulator never produces one.
  if (std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); }))
    throw std::invalid_argument("summarize: NaN in sample");
  const StStats st = st_stats(values);
  s.n = st.n;
  s.min = st.min;
  s.max = st.max;
  s.sum = st.sum;
  s.mean = st.mean;
  s.stddev = st.stddev;
  std::sort(values.begin(), values.end());
  s.p50 = percentile_nearest_rank(values, 50);
  s.p90 = percentile_nearest_rank(values, 90);
  s.p99 = percentile_nearest_rank(values, 99);
  return s;
}

}  // namespace schedtwin::metrics
