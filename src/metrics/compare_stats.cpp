#include "metrics/compare_stats.h"

#include <algorithm>
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

std::optional<PairedInterval> paired_interval(const std::vector<double>& base,
                                              const std::vector<double>& with, double level) {
  if (!(level > 0 && level < 1))
    throw std::invalid_argument("paired_interval: level must be in (0, 1)");
  if (base.size() != with.size())
    throw std::invalid_argument("paired_interval: base and with differ in size");
  if (base.size() < 2) return std::nullopt;
  std::vector<double> d(base.size());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = with[i] - base[i];
  const SampleStats s = sample_stats(d);
  PairedInterval p;
  p.n = s.n;
  p.diff = s.mean;
  p.sd = s.sd;
  p.se = s.sd / std::sqrt(static_cast<double>(s.n));
  p.df = static_cast<double>(s.n - 1);
  p.lo = p.hi = p.diff;
  if (p.se == 0) return p;
  p.t = student_t_quantile(1 - (1 - level) / 2, p.df);
  p.lo = p.diff - p.t * p.se;
  p.hi = p.diff + p.t * p.se;
  return p;
}

Comparison compare_samples(const std::vector<std::optional<double>>& base,
                           const std::vector<std::optional<double>>& with) {
  std::vector<double> b, w, pb, pw;
  for (std::size_t i = 0; i < std::max(base.size(), with.size()); ++i) {
    const bool hb = i < base.size() && base[i], hw = i < with.size() && with[i];
    if (hb) b.push_back(*base[i]);
    if (hw) w.push_back(*with[i]);
    if (hb && hw) {
      pb.push_back(*base[i]);
      pw.push_back(*with[i]);
    }
  }
  Comparison c;
  c.base = sample_stats(b);
  c.with = sample_stats(w);
  c.pairs = pb.size();
  // The difference is over the seeds where both configurations have the metric, as its
  // interval is: when some runs lack it, means over different seeds would compare different
  // runs (and could even give the pairs' difference the wrong sign). With every seed paired
  // these are the columns' own means.
  const double base_mean = sample_stats(pb).mean;
  if (c.pairs == 0 || base_mean == 0) return c;
  const double scale = 100 / std::fabs(base_mean);
  c.diff_pct = (sample_stats(pw).mean - base_mean) * scale;
  if (auto p = paired_interval(pb, pw, 0.95)) {
    c.ci95_lo_pct = p->lo * scale;
    c.ci95_hi_pct = p->hi * scale;
  }
  return c;
}

}  // namespace schedtwin::metrics
