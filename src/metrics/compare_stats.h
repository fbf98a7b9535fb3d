// Statistics of an A/B comparison over seeds (`schedtwin compare`, DESIGN.md §4): sample mean
// and standard deviation of each configuration, the difference of the means in % of the base
// mean and its 95 % confidence interval paired by seed. Unit-free: values keep the unit of the
// metric they summarise (µs, s, %), percentages are percent.
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
// not be an integer. Requires 0 < p < 1 and df > 0 (throws
// std::invalid_argument otherwise). Computed by Boost.Math's students_t quantile (header-only):
// G. W. Hill's Algorithm 396 (CACM 13(10), 1970) as the estimate, refined by a Halley step on the
// CDF written as the regularized incomplete beta function I_x(df/2, 1/2); for non-integer df < 2,
// the inverse incomplete beta directly. Accurate to a few ulps at double precision; no table, no
// cut-off in df. E.g. t(0.975, 4) = 2.7764, t(0.975, 10) = 2.2281.
double student_t_quantile(double p, double df);

// The paired interval of mean(with - base): compare runs configuration A and B with the same
// seeds, and seed N fixes the only per-seed input (the tick phase), so run N of each is a pair.
// On the per-seed differences d_i = with_i - base_i (i = 1..n):
//   diff = mean(d), sd = sample sd of d, se = sd / sqrt(n), df = n - 1
//   diff ± t(1 - (1 - level)/2, df) · se
// Two identical configurations give d_i = 0 and the interval [0, 0]; a change that shifts
// every seed by the same amount gives a zero-width interval at that shift.
struct PairedInterval {
  std::size_t n = 0;      // pairs
  double diff = 0;        // mean of with_i - base_i
  double sd = 0;          // sample sd of the differences
  double se = 0;          // sd / sqrt(n)
  double df = 0;          // n - 1
  double t = 0;           // the t quantile used; 0 when se == 0
  double lo = 0, hi = 0;  // the interval, in the metric's unit
};

// `base` and `with` hold one value per pair, in the same order; empty when there are fewer than
// 2 pairs. Throws std::invalid_argument when the sizes differ, a value is not finite, or
// level is not in (0, 1).
std::optional<PairedInterval> paired_interval(const std::vector<double>& base,
                                              const std::vector<double>& with, double level = 0.95);

// One metric of a comparison, as `compare` prints and writes it. Inputs are indexed by seed
// (element i is seed i + 1); an empty element is a run that did not report the metric (a
// scenario's messaging workload that had not finished has no total_time_s).
struct Comparison {
  SampleStats base, with;  // over the runs that reported the metric
  std::size_t pairs = 0;   // seeds where both configurations reported it
  // 100 · (mean_with - mean_base) / |mean_base|; empty when mean_base == 0 or no seed has the
  // metric in both configurations. Dividing by the magnitude keeps the sign of the change
  // for metrics whose base mean is negative (slack). When some runs lack the metric, both
  // means are over the `pairs` seeds where both configurations have it (base and with above
  // stay over every run that has it).
  std::optional<double> diff_pct;
  // The paired 95 % interval over `pairs` seeds in % of |mean_base| (the same base mean as
  // diff_pct, taken as exact, as LKML tables do); empty when diff_pct is or there are fewer
  // than 2 pairs. Its centre is diff_pct.
  std::optional<double> ci95_lo_pct, ci95_hi_pct;
};

Comparison compare_samples(const std::vector<std::optional<double>>& base,
                           const std::vector<std::optional<double>>& with);

}  // namespace schedtwin::metrics
