// The closest known name to a mistyped one, for "did you mean" in error messages.
#pragma once
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace schedtwin::engine {

// Edit distance ignoring case, with an adjacent swap counting as one edit (optimal string
// alignment): "SIS_PORP" is one edit from "SIS_PROP", "sis_prop" none.
inline int spelling_distance(std::string_view a, std::string_view b) {
  const auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  const std::size_t n = a.size(), m = b.size();
  std::vector<int> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= m; ++j) {
      const bool same = lower(a[i - 1]) == lower(b[j - 1]);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[m];
}

// The one candidate within two edits (and within a third of the name's length, so short
// names do not match everything) that is strictly closer than every other; empty if none.
inline std::string closest_spelling(std::string_view name,
                                    const std::vector<std::string_view>& known) {
  const int limit = std::min<int>(2, std::max<int>(1, static_cast<int>(name.size()) / 3));
  int best = limit + 1;
  std::string_view pick;
  bool tie = false;
  for (std::string_view k : known) {
    const int d = spelling_distance(name, k);
    if (d < best) {
      best = d;
      pick = k;
      tie = false;
    } else if (d == best) {
      tie = true;
    }
  }
  return best <= limit && !tie ? std::string(pick) : std::string();
}

// "did you mean 'x'? " for the closest spelling of `name` among `known` (x between `quote`s),
// or "" when none is close: the clause an error puts before its list of known names.
inline std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& known,
                                char quote) {
  const std::string near = closest_spelling(name, known);
  if (near.empty()) return std::string();
  return "did you mean " + std::string(1, quote) + near + std::string(1, quote) + "? ";
}

}  // namespace schedtwin::engine
