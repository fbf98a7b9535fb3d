// `schedtwin reproduce`: one function per series, each printing the published table
// beside the simulated one (seed-series.md) and returning its figures as JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace schedtwin::cli {

// "seeds 1-N", or "seed 1" for one run.
inline std::string seeds_text(int runs) {
  return runs == 1 ? std::string("seed 1") : "seeds 1-" + std::to_string(runs);
}

// One published direction checked against the simulation: `claim` says what must hold (the
// post's direction, or the bound on it), `simulated` and `published` the figures
// compared. Appends "  claim: simulated [published]  match|MISS" to `text` unless `print` is
// false (a row of a table that carries its own verdict), and
// {claim, simulated, published, verdict} to series_json["directions"] in either case, so
// that --json and the report show every verdict, not only the table's.
inline void add_direction(std::string& text, nlohmann::json& series_json, const std::string& claim,
                          const std::string& simulated, const std::string& published, bool match,
                          bool print = true) {
  const char* verdict = match ? "match" : "MISS";
  if (print) text += "  " + claim + ": " + simulated + " [" + published + "]  " + verdict + "\n";
  series_json["directions"].push_back(
      {{"claim", claim}, {"simulated", simulated}, {"published", published}, {"verdict", verdict}});
}

// A configuration's own flags followed by reproduce --features `added`: applied left to
// right, so `added` wins where both name a flag.
inline std::string plus_features(const std::string& own, const std::string& added) {
  if (added.empty()) return own;
  return own.empty() ? added : own + "," + added;
}

// The kernel profiles each series runs its configurations on: the series' functions below
// take them from here, and reproduce --features checks the added flags against each of them.
inline constexpr const char* kSchedIdleFallbackBase = "v5.3";  // without the change
inline constexpr const char* kSchedIdleFallbackWith = "v5.4";  // with it (merged in v5.4)
inline constexpr const char* kLatencyNiceKernel = "v5.3";      // the RFC's base
inline constexpr const char* kRunnableAvgBase = "v5.6";
inline constexpr const char* kRunnableAvgWith = "v5.7";            // merged in v5.7
inline constexpr const char* kSchedIdleBalancingKernel = "v5.17";  // the RFC's base

// The distinct profiles `series` ("all" or a series name) runs on, in the order above.
inline std::vector<const char*> series_profiles(const std::string& series) {
  auto uses = [&](const char* s) { return series == "all" || series == s; };
  std::vector<const char*> out;
  auto add = [&](const char* p) {
    for (const char* q : out)
      if (std::string(q) == p) return;
    out.push_back(p);
  };
  if (uses("sched-idle-fallback")) {
    add(kSchedIdleFallbackBase);
    add(kSchedIdleFallbackWith);
  }
  if (uses("latency-nice")) add(kLatencyNiceKernel);
  if (uses("runnable-avg")) {
    add(kRunnableAvgBase);
    add(kRunnableAvgWith);
  }
  if (uses("sched-idle-balancing")) add(kSchedIdleBalancingKernel);
  return out;
}

// runs: seeds 1..runs per configuration; full: the posted parameters where --quick
// scales them down. Text is appended to `text`. The JSON carries what the HTML report
// (report/html_report.h) draws: simulated figures beside the published ones.
//
// added: reproduce --features, put after every configuration's own flags (plus_features);
// empty for the experiments as posted.
//
// jobs: simulations run at once (parallel_runs); the figures do not depend on it.
//
// occupancy: when not null, receives metrics::occupancy_json of the seed-1 run of the
// with-change case (50 ms bins); recording it changes no figure.
nlohmann::json reproduce_sched_idle_fallback(int runs, const std::string& added, std::string& text,
                                             nlohmann::json* occupancy = nullptr);
nlohmann::json reproduce_runnable_avg(int runs, bool full, const std::string& added,
                                      std::string& text, int jobs);
nlohmann::json reproduce_latency_nice(int runs, bool full, const std::string& added,
                                      std::string& text, int jobs);
nlohmann::json reproduce_sched_idle_balancing(int runs, bool full, const std::string& added,
                                              std::string& text, int jobs);

}  // namespace schedtwin::cli
