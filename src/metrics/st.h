// Summary statistics in the format of nferraz/st (App::St, default output; checked against
// the script whose default format is "%g" and default columns N min max sum mean stddev).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace schedtwin::metrics {

struct StStats {
  std::size_t n = 0;
  double min = 0, max = 0, sum = 0;
  double mean = 0;    // running (Welford) mean, as App::St::process computes it
  double stddev = 0;  // sample standard deviation (N - 1); st leaves it undefined for N < 2,
                      // here 0 (which is also what st prints: sprintf("%g", undef) == "0")
};

// Sum accumulated in input order; mean/M2 by App::St's Welford update:
// delta = x - mean; mean += delta / N; M2 += delta * (x - mean).
StStats st_stats(const std::vector<double>& values);

// st's default output: "N\tmin\tmax\tsum\tmean\tstddev\n" then the six values, each with
// printf "%g", tab-separated, '\n'-terminated. For n == 0 st prints nothing: "".
std::string st_format(const StStats& s);

}  // namespace schedtwin::metrics
