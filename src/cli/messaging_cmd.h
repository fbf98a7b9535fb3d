// `schedtwin messaging` (perf bench sched messaging) and `schedtwin hackbench` (rt-tests
// hackbench): the messaging workload with each tool's command line and output lines
// (reference/workloads.md §1.4). Also used by compare / reproduce.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli.h"
#include "engine/time.h"
#include "workload/messaging.h"

namespace schedtwin::cli {

// "S.mmm": whole seconds and the milliseconds truncated, not rounded (tv_usec / 1000), as
// both tools print the gettimeofday difference. ns >= 0.
std::string seconds_ms_truncated(Time ns);

// What `perf bench sched messaging` prints: in the default format
//   # Running 'sched/messaging' benchmark:
//   # 20 sender and receiver processes per group
//   # 10 groups == 400 processes run
//   (blank line)
//        Total time: 0.308 [sec]
// ("threads" with -t); with `perf bench -f simple` just "0.308".
std::string perf_messaging_text(int groups, int fds, bool threads, Time total, bool simple);
// Its lines before the result (the first three and the blank line), which perf prints at
// the start of the run.
std::string perf_messaging_header(int groups, int fds, bool threads);

// What rt-tests hackbench prints:
//   Running in process mode with 10 groups using 40 file descriptors each (== 400 tasks)
//   Each sender will pass 100 messages of 100 bytes
//   Time: 0.890
// ("threaded mode" with -T).
std::string hackbench_text(int groups, int fds, std::int64_t loops, int datasize, bool threads,
                           Time total);
// Its first two lines, printed at the start of the run.
std::string hackbench_header(int groups, int fds, std::int64_t loops, int datasize, bool threads);

// The command lines of `messaging` and `hackbench`; compare parses its ARGS with the same
// definitions. Options are defined on `sub` bound to `a`; *_params() turn what was parsed into the
// workload's parameters (UsageError on cross-option limits).
struct MessagingArgs {
  CommonOptions common;
  workload::MessagingParams p;
  bool pipe = false, threads = false, process = false;
  std::string format = "default";  // messaging only: default | simple
};
void add_messaging_options(CLI::App& sub, MessagingArgs& a);
workload::MessagingParams messaging_params(const MessagingArgs& a);
void add_hackbench_options(CLI::App& sub, MessagingArgs& a);
workload::MessagingParams hackbench_params(const MessagingArgs& a);

struct MessagingOutcome {
  workload::MessagingResult result;
  std::string text;     // the tool's stdout
  nlohmann::json json;  // the --json document (DESIGN.md §4)
};

// Simulates `p` on the scenario of `o` and formats the result as `command` ("messaging" or
// "hackbench") prints it. Throws InputError on bad machine / kernel / feature names.
MessagingOutcome run_messaging_command(const CommonOptions& o, const workload::MessagingParams& p,
                                       const std::string& command, bool simple_format = false);

}  // namespace schedtwin::cli
