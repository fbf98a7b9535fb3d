// What every simulating subcommand shares: building the scenario from the common
// options, the JSON document's common keys, and writing output files atomically.
#pragma once
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cli/cli.h"
#include "kernel/kernel.h"
#include "machine/machine.h"
#include "metrics/occupancy.h"

namespace schedtwin::cli {

struct Scenario {
  machine::Machine machine;
  kernel::Config config;
  // --cost overrides applied to machine, in the order given: {name, ns}.
  std::vector<std::pair<std::string, Time>> cost_overrides;
};

// What an error in the machine, kernel or feature names is attributed to: the options by
// default, a scenario file's place ("run.json:3:14: \"kernel\"") for values from a file.
struct InputLabels {
  std::string machine = "--machine", kernel = "--kernel", features = "--features";
};

// Loads the machine and resolves the profile and feature list (InputError on bad names,
// naming `where`); checks first that o.json_out, if set, can be written (check_output_file)
// and that no two output options name one file (check_distinct_outputs).
Scenario make_scenario(const CommonOptions& o, const InputLabels& where = {});

// machine::load_machine, and for `host` this host's kernel build (HZ, preemption, NO_HZ
// idle) read from its kernel configuration where one is readable (host_kernel_build), as
// calibrate writes it; the captured machine alone has uncalibrated defaults there.
machine::Machine load_cli_machine(const std::string& name_or_path, std::string_view option = {});

// A note or warning a run says (one or more whole lines): to stderr, or appended to o.notes
// when the caller collects them (compare, which prints its runs' in run order).
void say_note(const CommonOptions& o, const std::string& line);

// machine::machine_notes of `m` on stderr, one "schedtwin: note: LABEL: ..." line each.
void print_machine_notes(const machine::Machine& m, std::string_view label);

// kernel::feature_warnings of `p` on stderr, one "schedtwin: warning: LABEL: ..." line each;
// LABEL names where the features came from (--features, --with, a scenario file's place).
void print_feature_warnings(const kernel::Profile& p, std::string_view label);

// schema_version, command, machine, kernel, features, seed, sim_time_s, wall_time_s, events.
nlohmann::json common_json(const std::string& command, const Scenario& s, const kernel::Kernel& k,
                           double wall_time_s);

// --lb-stats / --schedstat: appends their text to `text` and the lb_stats keys to `j`.
void add_kernel_reports(const CommonOptions& o, const kernel::Kernel& k, std::string& text,
                        nlohmann::json& j);
// The classification table of the runnable_avg series: state, nr_running, count (all
// balance types summed), then the count per balance type.
std::string lb_stats_text(const kernel::LbStats& s);

// Where output for `path` goes. A device (/dev/null), a FIFO (a shell's >(...)) or a socket is
// written in place, as a shell's `>` writes it; anything else is written to file + ".tmp" and
// renamed onto `file`, the end of the chain of symbolic links from `path`, so that a link stays
// a link and nothing else is ever replaced.
struct OutputTarget {
  std::string file;
  bool in_place = false;
};
OutputTarget output_target(const std::string& path);

// UsageError when two of the run's output files (--json, --trace, --ftrace, --explain=FILE)
// are one file: one would silently overwrite the other. Devices such as /dev/null may repeat.
void check_distinct_outputs(const CommonOptions& o);
// The same for any list of (option, path); "" and "-" are skipped.
void check_distinct_outputs(
    std::initializer_list<std::pair<const char*, const std::string*>> outputs);

// UsageError for the path "-"; InputError naming `option` unless a file can be created at
// `path`: it is not a directory, its directory exists, and a file can be created there
// (probed with path + ".tmp", removed again). Subcommands call it before simulating, so that
// a bad path costs no work and leaves nothing behind. Returns where the output will go.
OutputTarget check_output_file(const std::string& path, std::string_view option);

// --json's path "-": the JSON document goes to standard output and the text report to
// standard error, so that `schedtwin ... --json - | jq` reads one document.
inline constexpr std::string_view kJsonToStdout = "-";

// check_output_file for a --json path; "-" (kJsonToStdout) is always valid.
void check_json_output(const std::string& path, std::string_view option = "--json");

// The end of every command: prints its text report on stdout and writes its JSON document to
// json_path (nothing without a path), or with json_path "-" the document on stdout and the
// text on stderr. Errors name `option`.
void emit_report(const std::string& text, const nlohmann::json& doc, const std::string& json_path,
                 std::string_view option = "--json");

// Writes text to path through a temporary file and a rename (nothing half-written); errors
// name the option that gave the path ("--json", "--out").
void write_file_atomically(const std::string& path, const std::string& text,
                           std::string_view option = "--json");

// --trace / --ftrace of one run: the writers (metrics/trace_perfetto.h, metrics/trace_ftrace.h)
// installed as the Kernel's trace sink. Create it right after the Kernel, before any task
// exists (open_traces), and call finish() after the run. The Kernel must outlive it.
class TraceOutputs {
 public:
  TraceOutputs();
  TraceOutputs(TraceOutputs&&) noexcept;
  TraceOutputs& operator=(TraceOutputs&&) noexcept;
  ~TraceOutputs();  // removes the sink from the Kernel

  // Writes the files atomically (write_file_atomically, errors naming --trace / --ftrace)
  // and removes the sink. A writer that hit its event limit leaves a marker in its file and
  // a warning line on stderr. Does nothing without --trace and --ftrace.
  void finish();

  // The per-CPU occupancy of the run (CommonOptions::occupancy_bin_ns > 0), up to the
  // Kernel's time at finish(); empty before finish() or without the option.
  std::optional<metrics::Occupancy> take_occupancy();

 private:
  friend TraceOutputs open_traces(const CommonOptions& o, kernel::Kernel& k);
  void warn_empty_selection(const kernel::Kernel& k) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Checks the --trace / --ftrace paths (check_output_file; UsageError when both name one
// file) and installs their writers on `k`, with the occupancy recorder when
// o.occupancy_bin_ns > 0. Without any of them the Kernel gets no sink.
TraceOutputs open_traces(const CommonOptions& o, kernel::Kernel& k);

}  // namespace schedtwin::cli
