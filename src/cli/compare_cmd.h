// `schedtwin compare [--runs N] [--base SPEC] --with SPEC [--jobs J] [--json FILE]
//                    [--logdir DIR] [--sweep NAME=V1,V2,...] -- SUBCOMMAND ARGS...`
// Runs SUBCOMMAND with seeds 1..N for a base and a changed kernel configuration and prints one
// LKML-style table: per metric, base mean ± sd, with mean ± sd, the difference in % of the base
// mean and its 95 % confidence interval paired by seed (DESIGN.md §4).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/messaging_cmd.h"
#include "cli/parallel_runs.h"
#include "cli/rtapp_cmd.h"
#include "kernel/features.h"

namespace schedtwin::cli {

// The figures compare takes from one run, in the order the subcommand reports them.
struct RunFigures {
  std::vector<std::pair<std::string, double>> metrics;  // stable names, e.g. "total_time_s"
  double sim_time_s = 0;                                // the run document's common keys
  double wall_time_s = 0;
  std::uint64_t events = 0;
  std::uint64_t dispatched_events = 0;  // of events, those taken off the event queue
  // Run-wide counters, compared after the subcommand's own metrics as context_switches and
  // migrations (every move of a task to another CPU: perf stat's cpu-migrations).
  double context_switches = 0, migrations = 0, lb_migrations = 0;
};

// rt-app, per task in file order, from the run's JSON document: for tasks with timers
// TASK.wu_lat_us.{mean,p50,p90,p99} (µs), TASK.wu_lat_us.over_1ms_pct (% of log rows with
// wu_lat > 1000 µs) and TASK.slack_us.mean (µs); for every task TASK.loops (log rows of all its
// instances, i.e. loops completed: the work it got done).
RunFigures rtapp_figures(const RtAppOutcome& out);
// messaging / hackbench: total_time_s (s).
RunFigures messaging_figures(const MessagingOutcome& out);

struct CompareRequest {
  int runs = 5;                   // seeds 1..runs per configuration (>= 1)
  int jobs = default_jobs();      // threads (>= 1); the results do not depend on it
  std::string base_spec;          // empty: the subcommand's default profile
  std::string with_spec;          // applied on the resolved base when it names no profile
  std::string logdir;             // empty: no logs at all; else DIR/<base|with>/seed-N/
  std::vector<std::string> args;  // SUBCOMMAND ARGS... (what follows "--")
  // NAME=V1,V2,... each: one comparison per value, with "-NAME V" ("--NAME V" for longer
  // names) after ARGS; several are zipped (the k-th value of each together) and need as many
  // values each; logs under DIR/NAME=V[,NAME2=V2...]/. Empty: one comparison.
  std::vector<std::string> sweeps;
};

struct CompareOutcome {
  std::string text;     // the header lines and the table, as printed
  nlohmann::json json;  // the --json document
};

// Parses ARGS with the subcommand's own option definitions (--seed, --kernel, --features,
// --json, --logdir and any other output option of the common set are compare's, so a UsageError
// inside ARGS), validates everything (InputError: bad feature, machine or input file; UsageError:
// misuse), then runs the 2·runs simulations on `jobs` threads, each with its own kernel and
// workload. Nothing is run or written before the whole command line has been validated.
CompareOutcome run_compare(const CompareRequest& r);

// The header's description of a configuration: "kernel v5.4, features A,B; series flags C;
// model flags D" (the groups that are empty left out).
std::string describe_profile(const kernel::Profile& p);

// A table cell: x with `d` decimals. Without `plus` never "-0.00". With it (a change or a bound
// of its interval, signed) the sign is x's even when the digits round to zero: an interval of
// [-0.04, -0.03] % prints as [-0.0%, -0.0%], not as one that seems to hold 0.
std::string fixed_point(double x, int d, bool plus = false);

// Names of the subcommands compare can run, in table order.
std::vector<std::string> compare_subcommands();

}  // namespace schedtwin::cli
