#include "metrics/compare_stats.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace schedtwin::metrics {

SampleStats sample_stats(const std::vector<double>& x) {
  SampleStats s;
  s.n = x.size();
  s.sd = std::numeric_limits<double>::quiet_NaN();
  if (x.empty()) return s;
  double sum = 0;
  for (double v : x) {
    if (!std::isfinite(v)) throw std::invalid_argument("sample_stats: value is not finite");
    sum += v;
  }
  s.mean = sum / static_cast<double>(s.n);
  if (s.n < 2) return s;
  // Two passes (sum of squared deviations from the mean) rather than sum of squares: no
  // cancellation for large values with a small spread (wu_lat of 1000 µs ± 1).
  double ss = 0;
  for (double v : x) ss += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(ss / static_cast<double>(s.n - 1));
  return s;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("student_t_quantile: p must be in (0, 1)");
  if (!(df > 0)) throw std::invalid_argument("student_t_quantile: df must be > 0");
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), p);
}

std::optional<WelchInterval> welch_interval(const SampleStats& base, const SampleStats& with,
                                            double level) {
  if (!(level > 0 && level < 1))
    throw std::invalid_argument("welch_interval: level must be in (0, 1)");
  if (base.n < 2 || with.n < 2) return std::nullopt;
  WelchInterval w;
  w.diff = with.mean - base.mean;
  const double vb = base.sd * base.sd / static_cast<double>(base.n);
  const double vw = with.sd * with.sd / static_cast<double>(with.n);
  w.se = std::sqrt(vb + vw);
  if (w.se == 0) {
    w.lo = w.hi = w.diff;
    return w;
  }
  w.df = (vb + vw) * (vb + vw) /
         (vb * vb / static_cast<double>(base.n - 1) + vw * vw / static_cast<double>(with.n - 1));
  w.t = student_t_quantile(1 - (1 - level) / 2, w.df);
  w.lo = w.diff - w.t * w.se;
  w.hi = w.diff + w.t * w.se;
  return w;
}

Comparison compare_samples(const std::vector<double>& base, const std::vector<double>& with) {
  Comparison c;
  c.base = sample_stats(base);
  c.with = sample_stats(with);
  if (c.base.n == 0 || c.with.n == 0 || c.base.mean == 0) return c;
  const double scale = 100 / std::fabs(c.base.mean);
  c.diff_pct = (c.with.mean - c.base.mean) * scale;
  if (auto w = welch_interval(c.base, c.with, 0.95)) {
    c.ci95_lo_pct = w->lo * scale;
    c.ci95_hi_pct = w->hi * scale;
  }
  return c;
}

}  // namespace schedtwin::metrics
