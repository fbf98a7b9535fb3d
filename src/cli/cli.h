// The schedtwin command line (DESIGN.md §4).
#pragma once
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/time.h"

namespace schedtwin::cli {

// --features' help, on every subcommand that takes it.
inline constexpr const char* kFeaturesHelp =
    "Feature list in the kernel's syntax, applied left to right on the profile (NO_ prefix "
    "turns a flag off; series names stand for their flags; commas or spaces between them, so "
    "a machine's sched/features line can be given as it is)";

int main(int argc, char** argv);

// The run did what was asked and wrote its outputs, and a check the user asked for failed
// (reproduce --fail-on-miss): exit status 4, the message as one line on stderr.
class CheckFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Options every simulating subcommand takes.
struct CommonOptions {
  std::string machine = "hikey";  // preset name or machine file
  std::string kernel = "v5.4";    // profile
  std::string features;           // kernel-syntax feature list
  bool feature_warnings = true;   // off where the caller says them once (compare, rt-app)
  // Notes on the input (keys ignored, values that give way): compare says them for one run;
  // those that depend on the kernel profile too, for each configuration's first run.
  bool input_notes = true, profile_notes = true;
  // Where those notes go: stderr when null; compare collects each run's and prints them in
  // run order once the runs (on several threads) are done.
  std::string* notes = nullptr;
  std::uint64_t seed = 1;
  int hz = 0;              // 0: the machine's build
  // --cost NAME=NS, each given: a machine cost figure replaced (machine_file.h cost_names()).
  std::vector<std::string> costs;
  std::string json_out;    // --json FILE
  double duration_s = 0;   // subcommands with a --duration option; 0: the workload's own
  bool lb_stats = false;   // --lb-stats: group classification table
  bool schedstat = false;  // --schedstat: /proc/schedstat at the end of the run
  std::string explain;     // --explain[=FILE]: "" off, "-" stderr
  std::string explain_format = "text";   // text | jsonl
  std::uint64_t explain_limit = 100000;  // records at most
  bool check = false;                    // --check: kernel-model invariants after every event
  std::string trace_out;                 // --trace FILE: Perfetto protobuf trace of the run
  std::string ftrace_out;                // --ftrace FILE: the same events as ftrace text
  // --trace-time START,STOP (seconds of simulated time, either may be empty), as ns.
  Time trace_from = 0, trace_to = kTimeNever;
  std::vector<std::string> trace_comms;   // --trace-comm LIST
  std::uint64_t trace_limit = 1'000'000;  // --trace-limit N: events per trace file
  // Not a command-line option: > 0 records per-CPU occupancy in bins of this many ns
  // (metrics/occupancy.h) for `reproduce --report`; see TraceOutputs::take_occupancy.
  std::int64_t occupancy_bin_ns = 0;
};
void add_common_options(CLI::App& sub, CommonOptions& o);
// --trace-time's value "START,STOP" (seconds, >= 0, at most 1e9; START empty = 0, STOP empty
// = the end) into [from, to) in ns. Returns "" or the error (then from/to are unchanged).
std::string parse_trace_time(const std::string& v, Time& from, Time& to);
// One --cost value "NAME=NS" (NAME a machine cost, NS an integer 0..1e9): "" and the parts, or
// the error (then name and ns are unchanged).
std::string parse_cost_override(const std::string& v, std::string& name, Time& ns);
// For options that take a path (--json, --out, --logdir, ...): refuses "" (exit 2), which
// would otherwise read as "option not given" and be ignored without a word.
CLI::Validator file_name();

// CLI::Range with an error a user can act on: "expected an integer in [1, 10000], got 'abc'"
// (CLI::Range says "Value abc not in range 1 to 10000", also for text that is no number).
// The help shows "INT:[1 - 10000]" (CLI::Range's "INT:INT in [1 - 10000]" names the type twice),
// in the shape CLI::IsMember gives a choice: "TEXT:{text,jsonl}".
template <typename T>
CLI::Validator range(T lo, T hi) {
  constexpr bool integral = std::is_integral_v<T>;
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        T x{};
        // x >= lo && x <= hi refuses NaN too; strtod's hexadecimal ("0x10") is no number a
        // user means.
        const bool hex = v.find_first_of("xX") != std::string::npos;
        if (!hex && CLI::detail::lexical_cast(v, x) && x >= lo && x <= hi) return {};
        return fmt::format("expected {} in [{}, {}], got '{}'",
                           integral ? "an integer" : "a number", lo, hi, v);
      },
      fmt::format("[{} - {}]", lo, hi));
}
// The long names add_common_options defines ("--machine", "--kernel", ...), in its order.
std::vector<std::string> common_option_names();
// Why the subcommand `sub` of the tool named `tool` ("schbench") left the arguments `rest`
// (CLI11's remaining(), in command-line order) unparsed, without a "tool:" prefix: an option
// of the real tool that the model does not have, an unknown option with its nearest
// spelling, or arguments not expected.
std::string extra_arguments_text(const CLI::App& sub, const std::string& tool,
                                 const std::vector<std::string>& rest);

// Each subcommand lives in its own file and registers itself here.
void register_machine_commands(CLI::App& app);
void register_rtapp_command(CLI::App& app);
void register_domains_command(CLI::App& app);  // after register_machine_commands
void register_messaging_commands(CLI::App& app);
void register_pingpong_command(CLI::App& app);
void register_run_command(CLI::App& app);
void register_schbench_command(CLI::App& app);
void register_reproduce_command(CLI::App& app);
void register_compare_command(CLI::App& app);
void register_calibrate_command(CLI::App& app);  // calibrate_cmd.cpp
void register_validate_command(CLI::App& app);   // validate_cmd.cpp
void register_features_command(CLI::App& app);   // features_cmd.cpp

}  // namespace schedtwin::cli
