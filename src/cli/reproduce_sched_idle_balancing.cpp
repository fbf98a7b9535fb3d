// reproduce sched-idle-balancing (seed-series.md §4; Abel Wu, "sched/fair: introduce
// sched-idle balance", RFC, Feb 2022) on xeon-e5-2650v4, profile v5.17 with every SIB_*
// flag off (baseline) and on: schbench -m 2 -t 24 quiet and beside messaging -g 1 in an
// idle group (scenario files), and the messaging -g N sweep.
#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "cli/messaging_cmd.h"
#include "cli/parallel_runs.h"
#include "cli/reproduce.h"
#include "cli/run_cmd.h"
#include "metrics/compare_stats.h"

namespace schedtwin::cli {

namespace {

constexpr const char* kOff =
    "NO_SIB_OVERLOAD_MASK,NO_SIB_BALANCE,NO_SIB_LAST_NONIDLE,NO_SIB_SIS_FILTER,NO_SIB_IDLE_TASK_"
    "SPREAD";

// The quiet case has no "noise" group: an empty group would only draw a warning.
std::string scenario(bool noisy, double duration_s) {
  return fmt::format(
      R"({{ "machine": "xeon-e5-2650v4", "kernel": "{}", "duration_s": {},
    "groups": {{ "normal": {{}}{} }},
    "workloads": [ {{ "group": "normal", "schbench": ["-m", "2", "-t", "24", "-w", "{}"] }}{} ] }})",
      kSchedIdleBalancingKernel, duration_s, noisy ? R"(, "noise": { "cpu.idle": 1 })" : "",
      duration_s >= 10 ? 5 : 1,
      noisy ? R"(, { "group": "noise", "messaging": ["-g", "1", "-l", "4000000"] })" : "");
}

}  // namespace

nlohmann::json reproduce_sched_idle_balancing(int runs, bool full, const std::string& added,
                                              std::string& text, int jobs) {
  const double duration_s = full ? 60 : 10;
  if (!full) runs = std::min(runs, 3);
  text += fmt::format(
      "\nsched-idle balancing (Abel Wu, 2022; RFC): xeon-e5-2650v4, v5.17 with the SIB flags off "
      "against on,\n"
      "schbench -m 2 -t 24 for {} s, wakeup latency in us, mean over {}.\n\n",
      duration_s, seeds_text(runs));
  text += fmt::format("{:<7} {:>28} {:>28}\n", "case", "baseline p50 / p99 / p99.9",
                      "with p50 / p99 / p99.9");
  nlohmann::json j;
  double p99[2][2] = {}, p50[2][2] = {};
  // The noisy p99 of each seed, base and with: a mean over 3 seeds hides how far apart the
  // seeds' falls are, so the direction line gives their range too.
  std::vector<double> noisy_p99[2];
  // Run i: case i / (2 runs) (quiet, noisy), with (i / runs) % 2, seed i % runs + 1.
  const std::size_t n = static_cast<std::size_t>(runs);
  const std::vector<nlohmann::json> latency = parallel_runs(4 * n, jobs, [&](std::size_t i) {
    const bool noisy = i / (2 * n) == 1;
    CommonOptions c;
    c.feature_warnings = false;  // said once, up front (reproduce --features)
    c.features = plus_features(i / n % 2 ? "sched-idle-balancing" : kOff, added);
    c.seed = i % n + 1;
    ScenarioOverrides ov;
    ov.features = ov.seed = true;
    std::string name = noisy ? "sched-idle-balancing-noisy" : "sched-idle-balancing-quiet";
    auto out =
        run_scenario(workload::parse_relaxed_json(scenario(noisy, duration_s), name), name, c, ov);
    return out.json["workloads"][0]["wakeup_latency_us"];
  });
  for (int noisy = 0; noisy < 2; ++noisy) {
    double v[2][3] = {};
    // schbench's whole percentile list, mean over seeds (the report draws it).
    constexpr const char* kPcts[] = {"p50", "p75", "p90", "p95", "p99", "p99_5", "p99_9", "max"};
    double all[2][8] = {};
    for (int with = 0; with < 2; ++with)
      for (int seed = 1; seed <= runs; ++seed) {
        const auto& w = latency[static_cast<std::size_t>((noisy * 2 + with) * runs + seed - 1)];
        v[with][0] += w["p50"].get<double>() / runs;
        v[with][1] += w["p99"].get<double>() / runs;
        if (noisy) noisy_p99[with].push_back(w["p99"].get<double>());
        v[with][2] += w["p99_9"].get<double>() / runs;
        for (int i = 0; i < 8; ++i) all[with][i] += w.at(kPcts[i]).get<double>() / runs;
      }
    for (int with = 0; with < 2; ++with) {
      p50[noisy][with] = v[with][0];
      p99[noisy][with] = v[with][1];
    }
    const char* label = noisy ? "noisy" : "quiet";
    text += fmt::format("{:<7} {:>28} {:>28}\n", label,
                        fmt::format("{:.0f} / {:.0f} / {:.0f}", v[0][0], v[0][1], v[0][2]),
                        fmt::format("{:.0f} / {:.0f} / {:.0f}", v[1][0], v[1][1], v[1][2]));
    j[label] = {{"baseline", {{"p50", v[0][0]}, {"p99", v[0][1]}, {"p99_9", v[0][2]}}},
                {"with", {{"p50", v[1][0]}, {"p99", v[1][1]}, {"p99_9", v[1][2]}}}};
    for (int with = 0; with < 2; ++with)
      for (int i = 0; i < 8; ++i)
        j[label]["percentiles_us"][with ? "with" : "baseline"][kPcts[i]] = all[with][i];
  }
  auto within = [](double a, double b) { return a <= 1.2 * b && b <= 1.2 * a; };
  bool quiet_ok = within(p50[0][0], p50[0][1]) && within(p99[0][0], p99[0][1]);
  bool noisy_ok = p99[1][1] * 3 <= p99[1][0];
  text += "\ndirections:\n";
  add_direction(text, j, "quiet: p50 and p99 agree within 20 %",
                fmt::format("p50 {:.0f} -> {:.0f}, p99 {:.0f} -> {:.0f} us", p50[0][0], p50[0][1],
                            p99[0][0], p99[0][1]),
                "alike", quiet_ok);
  std::vector<double> falls;
  for (std::size_t i = 0; i < noisy_p99[0].size(); ++i)
    falls.push_back(noisy_p99[1][i] > 0 ? noisy_p99[0][i] / noisy_p99[1][i] : 0.0);
  std::string per_seed;
  if (falls.size() > 1) {
    const auto [lo, hi] = std::minmax_element(falls.begin(), falls.end());
    per_seed = fmt::format(" (seeds: {:.1f}x .. {:.1f}x)", *lo, *hi);
  }
  add_direction(text, j, "noisy: p99 falls at least 3x",
                fmt::format("{:.0f} -> {:.0f} us, {:.1f}x{}", p99[1][0], p99[1][1],
                            p99[1][1] > 0 ? p99[1][0] / p99[1][1] : 0.0, per_seed),
                "2364 -> 208 us, about 10x", noisy_ok);
  j["noisy_p99_fall_per_seed"] = falls;
  j["quiet_match"] = quiet_ok;
  j["noisy_match"] = noisy_ok;
  if (!full) text += "  (the messaging -g 1..20 sweep runs with --full)\n";
  if (full) {
    text +=
        "\nperf bench sched messaging -g N -l 4000, seconds (published: 2-6 % faster with the "
        "change)\n";
    constexpr int kGroups[] = {1, 3, 5, 10, 20};
    // Run i: -g kGroups[i / (2 runs)], with (i / runs) % 2, seed i % runs + 1.
    const std::vector<double> secs =
        parallel_runs(std::size(kGroups) * 2 * n, jobs, [&](std::size_t i) {
          CommonOptions c;
          c.feature_warnings = false;  // said once, up front (reproduce --features)
          c.machine = "xeon-e5-2650v4";
          c.kernel = kSchedIdleBalancingKernel;
          c.features = plus_features(i / n % 2 ? "sched-idle-balancing" : kOff, added);
          c.seed = i % n + 1;
          workload::MessagingParams p;
          p.groups = kGroups[i / (2 * n)];
          p.loops = 4000;
          return run_messaging_command(c, p, "messaging").json["total_time_s"].get<double>();
        });
    for (std::size_t row = 0; row < std::size(kGroups); ++row) {
      const int g = kGroups[row];
      double t[2] = {};
      for (std::size_t with = 0; with < 2; ++with)
        for (std::size_t seed = 0; seed < n; ++seed)
          t[with] += secs[(row * 2 + with) * n + seed] / runs;
      double imp = 100.0 * (t[0] - t[1]) / t[0];
      text += fmt::format("  -g {:>2}: {:.3f} -> {:.3f}  {:+.2f} %  {}\n", g, t[0], t[1], imp,
                          imp >= -1 ? "match" : "MISS");
      add_direction(text, j, fmt::format("messaging -g {}: lower or within 1 %", g),
                    fmt::format("{:.3f} -> {:.3f} s, {:.2f} % {}", t[0], t[1], std::fabs(imp),
                                imp >= 0 ? "faster" : "slower"),
                    "2-6 % faster", imp >= -1, false);
      j["messaging"][std::to_string(g)] = {
          {"baseline_s", t[0]}, {"with_s", t[1]}, {"improvement_pct", imp}};
    }
  }
  return j;
}

}  // namespace schedtwin::cli
