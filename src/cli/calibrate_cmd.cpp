// `schedtwin calibrate [--out FILE.json] [--quick]` (issue 9): measures this host's costs with
// small real experiments (cli/host_measure.h) and writes the machine file of the host: the
// topology of `machine capture` with the measured cost model, each figure citing how it was
// measured. Without --out the file goes to stdout and the measurement table to stderr.
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/cli.h"
#include "cli/host_measure.h"
#include "cli/run_common.h"
#include "machine/capture.h"
#include "machine/machine_file.h"

namespace schedtwin::cli {

void register_calibrate_command(CLI::App& app) {
  struct Opts {
    std::string out;
    bool quick = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Measure this host's scheduling costs with small real experiments (pipe and socket system\n"
      "calls, a pinned pipe ping-pong, cross-CPU wakeups to a busy and to an idle CPU, a\n"
      "cache-line bounce) and write its machine file: the captured topology plus the measured\n"
      "cost model, each figure the median of repeated measurements with its spread and method.\n"
      "Takes under a second (--quick: a few hundred milliseconds). Real measurements: the\n"
      "output differs from run to run.");
  sub->add_option("--out", o->out, "Write the machine file to FILE (default: stdout)")
      ->check(file_name());
  sub->add_flag("--quick", o->quick, "Fewer repetitions (for tests; noisier figures)");
  sub->callback([o] {
    if (!o->out.empty()) check_output_file(o->out, "--out");
    const host::CalibrateParams p =
        o->quick ? host::quick_calibrate_params() : host::CalibrateParams{};
    const host::HostCalibration c = host::measure_host(p);
    const machine::Machine m = host::calibrated_machine(c, machine::capture_sysfs(""));
    const std::string report = host::calibration_report(c, m);
    if (o->out.empty()) {
      fmt::print(stderr, "{}", report);
      fmt::print("{}", machine::dump_machine_file(m));
    } else {
      write_file_atomically(o->out, machine::dump_machine_file(m), "--out");
      fmt::print("{}\nwrote {}\n", report, o->out);
    }
  });
}

}  // namespace schedtwin::cli
