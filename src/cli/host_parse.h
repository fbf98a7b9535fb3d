// Reading what the real tools write, for `schedtwin validate` / `calibrate` (issue 9): rt-app's
// per-thread logs, perf bench's "Total time" line, hackbench's "Time:" line, and the kernel
// build configuration (/proc/config.gz text).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "machine/machine.h"
#include "workload/rtapp.h"

namespace schedtwin::cli::host {

// Rows of an rt-app log (reference/workloads.md §4.8): lines starting with '#' (the header and
// rt-app 1.0's "# Policy : ..." line) and blank lines are skipped; every other line must hold
// the 11 integer columns idx perf run period start end rel_st slack c_duration c_period wu_lat
// (all µs; slack signed). Throws InputError "<origin>:<line>: expected ..." otherwise.
std::vector<workload::rtapp::LogRow> parse_rtapp_log(std::string_view text,
                                                     std::string_view origin);

// perf bench sched messaging: the seconds of the "Total time: X.XXX [sec]" line, or the lone
// number of `perf bench -f simple`. nullopt when neither is found.
std::optional<double> parse_perf_total_time(std::string_view output);

// rt-tests hackbench: the seconds of the "Time: X.XXX" line; nullopt when absent.
std::optional<double> parse_hackbench_time(std::string_view output);

// The kernel build from a kernel .config text (e.g. `gzip -dc /proc/config.gz`): CONFIG_HZ,
// the preemption model (CONFIG_PREEMPT_NONE / _VOLUNTARY / CONFIG_PREEMPT / _LAZY / _RT; with
// CONFIG_PREEMPT_DYNAMIC the boot default, which a preempt= on `cmdline` overrides), and
// NO_HZ_IDLE (CONFIG_NO_HZ_IDLE or CONFIG_NO_HZ_FULL). `source` names where the text came from.
// PREEMPT_LAZY is taken as None: fair tasks are then preempted only at the tick, which is
// what the model's None does (PREEMPT_RT as Full). nullopt if CONFIG_HZ is missing.
std::optional<machine::KernelBuild> parse_kernel_config(std::string_view config,
                                                        std::string_view cmdline,
                                                        std::string_view source);

}  // namespace schedtwin::cli::host
