// Text histogram in the format of adkein/textogram as of 2017-11-11 (commit b5a6a867), the
// version the 2019 LKML posts used (`textogram -a 0 -z 1000 -n 10` on rt-app's wu_lat).
//
// Rules (reference: workloads.md §5.1 of the project notes, checked against the posted
// output; that exact commit's source was not available to read, see the .cpp):
//  - edges = linspace(a, z, bins + 1), computed as numpy does (e_i = i*step + a, e_n = z);
//    bin i is [e_i, e_{i+1}) — half-open, so a value exactly equal to z lands in no bin
//    but still counts in the in-range total (the 2017 quirk);
//  - values < a form a "<a" row before the bins, values > z a ">z" row after them; each
//    tail row is printed only if non-empty;
//  - percentage = int(100 * count / n_in_range), truncated, where n_in_range counts the
//    values in [a, z] (tails excluded) — hence tail rows can show e.g. 34 % of the in-range
//    count; 0 when nothing is in range;
//  - bar = int(height * count / max_bin_count) '#' characters, padded with spaces to
//    `height`;
//  - bin label "{left:>w} - {right:<w}" with w = the widest formatted edge; edges have no
//    decimals when the bin width is >= 1, one decimal otherwise;
//  - bin line: label " : " bar, then, only for a non-empty bin, "  " "{:>3d}%" " (count)";
//    an empty bin's line therefore ends with the bar's padding spaces;
//  - tail line: "<a" or ">z" right-aligned to the label width, " : ", "{:d}%", " (count)";
//  - every line ends with '\n'. NaN values are ignored.
#pragma once
#include <string>
#include <vector>

namespace schedtwin::metrics {

// Throws std::invalid_argument if bins < 1, height < 0 or !(z > a).
std::string textogram(const std::vector<double>& values, double a, double z, int bins,
                      int height = 50);

}  // namespace schedtwin::metrics
