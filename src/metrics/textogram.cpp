// textogram (adkein/textogram, 2017 rules) — see textogram.h. The stored public copies of
// that repository hold only its 2016 versions (bins via matplotlib, counts printed as
// "(96.0)", tails as "<a: (n)"); the label and bar layout here follow those versions'
// structure, and the percentage column, tail rows and label widths follow the rules and
// output lines recorded from the 2019 posts.
#include "metrics/textogram.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace schedtwin::metrics {

std::string textogram(const std::vector<double>& values, double a, double z, int bins, int height) {
  if (bins < 1) throw std::invalid_argument("textogram: bins must be >= 1");
  if (height < 0) throw std::invalid_argument("textogram: height must be >= 0");
  if (!(z > a)) throw std::invalid_argument("textogram: needs a < z");

  // numpy.linspace(a, z, bins + 1): i*step + a, the last edge set to z exactly.
  const auto n = static_cast<std::size_t>(bins);
  const double step = (z - a) / static_cast<double>(bins);
  std::vector<double> edges(n + 1);
  for (std::size_t i = 0; i < n; ++i) edges[i] = static_cast<double>(i) * step + a;
  edges[n] = z;

  std::vector<std::uint64_t> counts(n, 0);
  std::uint64_t left_tail = 0, right_tail = 0, in_range = 0;
  for (double v : values) {
    if (std::isnan(v)) continue;
    if (v < a) {
      ++left_tail;
    } else if (v > z) {
      ++right_tail;
    } else {
      ++in_range;
      // Largest k with edges[k] <= v; k == n means v == z, which no half-open bin holds.
      const auto k = static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), v) -
                                              edges.begin() - 1);
      if (k < n) ++counts[k];
    }
  }
  const std::uint64_t max_count = *std::max_element(counts.begin(), counts.end());

  const int precision = step >= 1.0 ? 0 : 1;
  auto fmt_edge = [precision](double e) { return fmt::format("{:.{}f}", e, precision); };
  std::size_t w = 0;
  for (double e : edges) w = std::max(w, fmt_edge(e).size());
  const std::size_t label_width = 2 * w + 3;  // "{:>w} - {:<w}"
  auto pct = [in_range](std::uint64_t c) -> std::uint64_t {
    return in_range ? 100 * c / in_range : 0;
  };

  std::string out;
  auto tail_row = [&](const std::string& label, std::uint64_t c) {
    out += fmt::format("{:>{}} : {}% ({})\n", label, label_width, pct(c), c);
  };
  if (left_tail) tail_row("<" + fmt_edge(a), left_tail);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t c = counts[i];
    const auto bar = static_cast<std::size_t>(
        max_count ? static_cast<std::uint64_t>(height) * c / max_count : 0);
    out += fmt::format("{:>{}} - {:<{}} : ", fmt_edge(edges[i]), w, fmt_edge(edges[i + 1]), w);
    out.append(bar, '#');
    out.append(static_cast<std::size_t>(height) - bar, ' ');
    if (c) out += fmt::format("  {:>3d}% ({})", pct(c), c);
    out += '\n';
  }
  if (right_tail) tail_row(">" + fmt_edge(z), right_tail);
  return out;
}

}  // namespace schedtwin::metrics
