// `schedtwin schbench [-m M] [-t T] [-r S] [-s USEC] [-c USEC] [-w S] [-i S] [-z S] [common]`:
// schbench of December 2021 - March 2023 (workload/schbench.h) with its options, defaults and
// output text (reference/workloads.md §2.3). Also used by compare.
//
// Output: what that schbench writes, in order — "warmup done, zeroing stats", a table every -i
// seconds, the final table — byte for byte, but on stdout (schbench writes them to stderr;
// schedtwin keeps stderr for its own errors).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli.h"
#include "workload/schbench.h"

namespace schedtwin::cli {

// schbench's show_latencies() for one table:
//   Latency percentiles (usec) runtime 30 (s) (4562 total samples)
//   \t  50.0th: 95872      (2281 samples)      ("\t%s%2.1fth: %-10u (%lu samples)\n")
//   ...
//   \t* 99.0th: 135424     (25 samples)        (the star on the 99th percentile row)
//   ...
//   \t  min=26024, max=138760
std::string schbench_table_text(const workload::SchbenchTable& t);
// wakeup_latency_us of --json: p50 .. p99_9, min, max (µs).
nlohmann::json schbench_latency_json(const workload::SchbenchTable& t);

// Everything the run writes: the warmup line and interval tables in order, then the final table.
std::string schbench_text(const workload::SchbenchResult& r);

// The command line; compare parses its ARGS with the same definitions.
struct SchbenchArgs {
  CommonOptions common;
  workload::SchbenchParams p;
  int message_cputime = -1;  // -C: accepted and ignored, as by that schbench
};
void add_schbench_options(CLI::App& sub, SchbenchArgs& a);
// The workload's parameters; UsageError on cross-option limits (total threads).
workload::SchbenchParams schbench_params(const SchbenchArgs& a);

struct SchbenchOutcome {
  workload::SchbenchResult result;
  std::string text;     // what is printed on stdout
  nlohmann::json json;  // the --json document (DESIGN.md §4: wakeup_latency_us.*, samples)
};

// Simulates `p` (with o.seed) on the scenario of `o`. InputError on bad machine / kernel /
// feature names or CPU pins.
SchbenchOutcome run_schbench_command(const CommonOptions& o, const workload::SchbenchParams& p);

}  // namespace schedtwin::cli
