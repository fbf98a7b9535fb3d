// `schedtwin pingpong [--threads N] [--size 8k] [-r SECONDS] [common]`: uperf's ping-pong
// profile (workload/pingpong.h) with uperf's output lines (reference/workloads.md §3.3). Also
// used by compare.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "cli/cli.h"
#include "engine/time.h"
#include "workload/pingpong.h"

namespace schedtwin::cli {

// uperf's string_to_int for sizes: decimal digits, then optionally one of b, k, m, g (either
// case; k = 2^10, m = 2^20, g = 2^30). Returns -1 on anything else or on overflow past 2^62.
std::int64_t parse_uperf_size(std::string_view text);

// uperf's print_decimal(value, width, is_bit) (src/numbers.c): the value scaled by 1024 (bytes:
// B, KB, MB, GB, ...) or 1000 (bits: b/s, Kb/s, Mb/s, Gb/s, ...) while it exceeds the divisor,
// two decimals, "0" for zero; cut to width - 1 characters (uperf passes the width as the
// snprintf buffer size, so "223.52GB" prints as "223.52G"), right-aligned in `width` columns,
// then one space.
std::string uperf_decimal(double value, int width, bool bits);

// uperf's print_summary line (src/print.c, 1.0.7+), e.g.
//   "Total     67.14GB /  32.34(s) =    17.84Gb/s      272158op/s \n"
// name cut to 8 columns; throughput = bytes * 8 / seconds; ops/s = ops / seconds. Empty when
// elapsed <= 0 (uperf prints nothing then).
std::string uperf_summary_line(std::string_view name, double bytes, double ops, Time elapsed);

// The text `schedtwin pingpong` prints: uperf's start line, the timed transaction's line (Txn2),
// uperf's rule (79 dashes: its width when stdout is not a terminal) and the Total line.
std::string pingpong_text(const workload::PingpongParams& p, const workload::PingpongResult& r);

// The command line of `pingpong`; compare parses its ARGS with the same definitions.
struct PingpongArgs {
  CommonOptions common;
  int threads = 1;          // --threads: connections (uperf's $t)
  std::string size = "8k";  // --size, uperf syntax
  double runtime_s = 30;    // -r: the timed transaction's duration (the profile's 30s)
};
void add_pingpong_options(CLI::App& sub, PingpongArgs& a);
// UsageError naming the option on a bad --size or -r.
workload::PingpongParams pingpong_params(const PingpongArgs& a);

struct PingpongOutcome {
  workload::PingpongResult result;
  std::string text;     // stdout
  nlohmann::json json;  // the --json document (DESIGN.md §4)
};

// Simulates `p` on the scenario of `o`. Throws InputError on bad machine / kernel / features.
PingpongOutcome run_pingpong_command(const CommonOptions& o, const workload::PingpongParams& p);

}  // namespace schedtwin::cli
