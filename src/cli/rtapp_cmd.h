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
  // Per task name, every log row's wu_lat / slack (µs) in thread then row order; empty when
  // run with keep_samples false.
  std::map<std::string, std::vector<double>> wu_lat_us;
  std::map<std::string, std::vector<double>> slack_us;
  std::map<std::string, std::vector<int>> fork_cpus;
  std::vector<std::string> task_order;
  std::vector<std::string> timer_tasks;  // task names with timer events
  std::string summary;                   // the text printed on stdout
  nlohmann::json json;
  std::optional<metrics::Occupancy> occupancy;  // with CommonOptions::occupancy_bin_ns > 0
  std::vector<std::string> ignored;  // workload::rtapp::Config::ignored: keys without effect
};

// What the kernel knows of an rt-app run's threads, per task name: read while it lives.
struct RtAppKernelFigures {
  struct SchedSums {  // sched_info and sum_exec_runtime, summed over the task's threads
    Time runtime = 0, run_delay = 0;
    std::int64_t switches = 0, migrations = 0, wakeups = 0;
  };
  std::map<std::string, std::vector<int>> fork_cpus;
  std::map<std::string, SchedSums> sched;
};
RtAppKernelFigures read_kernel_figures(const workload::rtapp::Runner& runner);

// The per-task part of an rt-app report, after the run (the kernel may be gone): appends to
// out.summary where each task was placed at fork, each timer task's st line and wu_lat
// textogram, and the table of run delay per task; fills out.task_order, timer_tasks,
// fork_cpus (and the samples when keep_samples) and `tasks`, the "tasks" object of the JSON.
// With release_rows the runner's rows are freed as they are read.
void rtapp_task_report(const workload::rtapp::Config& cfg, workload::rtapp::Runner& runner,
                       const RtAppKernelFigures& kf, bool keep_samples, bool release_rows,
                       RtAppOutcome& out, nlohmann::json& tasks);

// The command line of `schedtwin rt-app`; compare parses its ARGS with the same definitions.
struct RtAppArgs {
  CommonOptions common;
  std::string taskset;
  std::string logdir;
};
// Defines the task-set positional, the common options, --duration and --logdir on `sub`.
void add_rtapp_options(CLI::App& sub, RtAppArgs& a);

// A --logdir DIR the user gave: InputError unless DIR is a directory or its parent is one.
// Only the last directory is created, as mkdir without -p does: a mistyped path must not leave
// a tree of directories behind.
void check_logdir_parent(const std::string& dir);

// Parses, simulates and summarises. Logs are written to `logdir` when it is not empty.
// Throws InputError on bad input (before anything is written). With keep_samples false the
// outcome's wu_lat_us and slack_us stay empty, so that a large run's peak memory holds only
// one task's samples at a time (the summary and JSON are the same).
RtAppOutcome run_rtapp(const CommonOptions& o, const std::string& taskset,
                       const std::string& logdir, bool create_logdir, bool keep_samples = true);
// The same for a task set already parsed (e.g. a variant built in memory).
RtAppOutcome run_rtapp_config(const CommonOptions& o, const workload::rtapp::Config& cfg,
                              const std::string& logdir, bool create_logdir,
                              bool keep_samples = true);

}  // namespace schedtwin::cli
