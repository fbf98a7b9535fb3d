// st (nferraz/st) default statistics — see st.h.
#include "metrics/st.h"

#include <fmt/format.h>
#include <fmt/printf.h>

#include <cmath>

namespace schedtwin::metrics {

StStats st_stats(const std::vector<double>& values) {
  StStats s;
  double m2 = 0;
  for (double x : values) {
    ++s.n;
    s.sum += x;
    if (s.n == 1 || x < s.min) s.min = x;
    if (s.n == 1 || x > s.max) s.max = x;
    const double delta = x - s.mean;
    s.mean += delta / static_cast<double>(s.n);
    m2 += delta * (x - s.mean);
  }
  s.stddev = s.n > 1 ? std::sqrt(m2 / static_cast<double>(s.n - 1)) : 0.0;
  return s;
}

std::string st_format(const StStats& s) {
  if (s.n == 0) return {};
  // fmt::sprintf follows C printf's %g exactly (6 significant digits, trailing zeros cut).
  return fmt::sprintf("N\tmin\tmax\tsum\tmean\tstddev\n%g\t%g\t%g\t%g\t%g\t%g\n",
                      static_cast<double>(s.n), s.min, s.max, s.sum, s.mean, s.stddev);
}

}  // namespace schedtwin::metrics
