// Statistics of an A/B comparison over seeds (`schedtwin compare`, DESIGN.md §4): sample mean
// and standard deviation of each configuration, the difference of the means in % of the base
// mean and its Welch 95 % confidence interval. Unit-free: values keep the unit of the metric
// they summarise (µs, s, %), percentages are percent.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

namespace schedtwin::metrics {

struct SampleStats {
  std::size_t n = 0;
  double mean = 0;  // arithmetic mean, summed in input order; 0 for n == 0
  double sd = 0;    // sample standard deviation (divisor n - 1); NaN for n < 2 (undefined)
};

// Mean and sample sd of `x` (two passes, input order: deterministic for a given order).
// Throws std::invalid_argument on NaN or infinite values.
SampleStats sample_stats(const std::vector<double>& x);

// Quantile (inverse CDF) of Student's t distribution with `df` degrees of freedom, which need
// not be an integer (Welch–Satterthwaite gives real df). Requires 0 < p < 1 and df > 0 (throws
// std::invalid_argument otherwise). Computed by Boost.Math's students_t quantile (header-only):
// G. W. Hill's Algorithm 396 (CACM 13(10), 1970) as the estimate, refined by a Halley step on the
// CDF written as the regularized incomplete beta function I_x(df/2, 1/2); for non-integer df < 2,
// the inverse incomplete beta directly. Accurate to a few ulps at double precision; no table, no
// cut-off in df. E.g. t(0.975, 4) = 2.7764, t(0.975, 10) = 2.2281.
double student_t_quantile(double p, double df);

// Welch's two-sample interval for mean(with) - mean(base), not assuming equal variances:
//   se = sqrt(sd_b²/n_b + sd_w²/n_w)
//   df = se⁴ / ((sd_b²/n_b)²/(n_b - 1) + (sd_w²/n_w)²/(n_w - 1))     (Welch–Satterthwaite)
//   diff ± t(1 - (1 - level)/2, df) · se
struct WelchInterval {
  double diff = 0;        // mean_with - mean_base
  double se = 0;          // standard error of diff
  double df = 0;          // Welch–Satterthwaite degrees of freedom; 0 when se == 0
  double t = 0;           // the t quantile used; 0 when se == 0
  double lo = 0, hi = 0;  // the interval, in the metric's unit
};

// Empty when either sample has n < 2 (no sd). When both samples have no spread (se == 0) the
// difference is known exactly and the interval is [diff, diff] (df and t are then 0).
// Requires 0 < level < 1.
std::optional<WelchInterval> welch_interval(const SampleStats& base, const SampleStats& with,
                                            double level = 0.95);

// One metric of a comparison, as `compare` prints and writes it.
struct Comparison {
  SampleStats base, with;
  // 100 · (mean_with - mean_base) / |mean_base|; empty when mean_base == 0. Dividing by the
  // magnitude keeps the sign of the change for metrics whose base mean is negative (slack).
  std::optional<double> diff_pct;
  // The Welch 95 % interval of the difference in % of |mean_base| (the base mean taken as
  // exact, as LKML tables do); empty when diff_pct or the interval is.
  std::optional<double> ci95_lo_pct, ci95_hi_pct;
};

Comparison compare_samples(const std::vector<double>& base, const std::vector<double>& with);

}  // namespace schedtwin::metrics
