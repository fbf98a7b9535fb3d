// The HTML report of `schedtwin reproduce --report FILE.html`: one self-contained page with
// the simulated figures of each series beside the published ones, as Vega-Lite charts and
// tables. Vega, Vega-Lite and vega-embed are inlined (report/assets.h), so the page opens
// offline; nothing is loaded from the network.
//
// The page reports its own rendering: once every chart has rendered without a script error
// its title becomes "schedtwin reproduce: charts-ok N" (N charts) and the element #status
// says so; on an error or a Vega warning the title ends in "charts-error MESSAGE" instead.
// Headless Chromium's --dump-dom shows either (tests/cli_report_test.cpp).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace schedtwin::report {

// What the page shows. `figures` is the document `reproduce --json` writes: one key per
// series run ("sched-idle-fallback", "latency-nice", "runnable-avg",
// "sched-idle-balancing"), each holding what that series function returned
// (cli/reproduce.h); a series that is absent or null gets no section.
struct ReproduceReport {
  std::string command;                      // the command line, shown in the header
  int runs = 0;                             // seeds 1..runs
  int capped_runs = 0;  // > 0: latency-nice and sched-idle balancing ran seeds 1..capped_runs
  bool full = false;                        // --full (else --quick scale)
  nlohmann::json figures;                   // series name -> figures
  std::map<std::string, std::string> text;  // series name -> the text printed for it
  nlohmann::json occupancy;                 // metrics::occupancy_json of one run, or null
};

// InputError naming `option`, one line, when this binary was built without the chart
// libraries (report/node_modules was missing at configure time).
void require_report_assets(std::string_view option = "--report");

// The page, byte-identical for identical input. Throws as require_report_assets.
std::string render_reproduce_report(const ReproduceReport& r);

// The Vega-Lite specs the page embeds, keyed by chart id (what render_reproduce_report
// draws; its title reports their number once rendered).
nlohmann::json reproduce_report_specs(const ReproduceReport& r);

}  // namespace schedtwin::report
