// `schedtwin rt-app`: run an rt-app task set; also used by `reproduce`.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "metrics/occupancy.h"
#include "workload/rtapp.h"

namespace schedtwin::cli {

struct RtAppOutcome {
  std::vector<workload::rtapp::ThreadResult> threads;
  std::map<std::string, std::vector<double>> wu_lat_us;  // per task name, every log row
  std::map<std::string, std::vector<double>> slack_us;
  std::map<std::string, std::vector<int>> fork_cpus;
  std::vector<std::string> task_order;
  std::vector<std::string> timer_tasks;  // task names with timer events
  std::string summary;                   // the text printed on stdout
  nlohmann::json json;
  std::optional<metrics::Occupancy> occupancy;  // with CommonOptions::occupancy_bin_ns > 0
};

// The command line of `schedtwin rt-app`; compare parses its ARGS with the same definitions.
struct RtAppArgs {
  CommonOptions common;
  std::string taskset;
  std::string logdir;
};
// Defines the task-set positional, the common options, --duration and --logdir on `sub`.
void add_rtapp_options(CLI::App& sub, RtAppArgs& a);

// Parses, simulates and summarises. Logs are written to `logdir` when it is not empty.
// Throws InputError on bad input (before anything is written).
RtAppOutcome run_rtapp(const CommonOptions& o, const std::string& taskset, const std::string& logdir,
                       bool create_logdir);
// The same for a task set already parsed (e.g. a variant built in memory).
RtAppOutcome run_rtapp_config(const CommonOptions& o, const workload::rtapp::Config& cfg,
                              const std::string& logdir, bool create_logdir);

}  // namespace schedtwin::cli
