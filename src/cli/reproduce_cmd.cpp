// `schedtwin reproduce`: the series' published experiments, simulated beside the
// published figures (seed-series.md). The series live in reproduce_*.cpp.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <map>

#include "cli/parallel_runs.h"
#include "cli/reproduce.h"
#include "cli/rtapp_cmd.h"
#include "cli/run_common.h"
#include "engine/error.h"
#include "engine/spelling.h"
#include "kernel/features.h"
#include "metrics/st.h"
#include "report/html_report.h"

namespace schedtwin::cli {

namespace {

// Viresh Kumar's task set, attached to "Re: [RFC V2 0/2] sched/fair: Fallback to sched-idle
// CPU for better performance", LKML, 2019-05-15 (examples/rt-app/lkml/sched-idle.json);
// embedded so that the binary reproduces the experiment on its own.
constexpr const char* kSchedIdleJson = R"({
        "tasks" : {
                "cfs_thread" : {
                        "instance" : 8,
                        "run" :   5333,
                        "timer" : { "ref" : "unique", "period" : 7777 },
                        "policy" : "SCHED_OTHER"
                },
                "idle_thread" : {
                        "instance" : 5,
                        "run" :   3000,
                        "policy" : "SCHED_IDLE"
                }
        },
        "global" : {
                "duration" : 5,
                "calibration" : "CPU0",
                "default_policy" : "SCHED_OTHER",
                "pi_enabled" : false,
                "lock_pages" : false,
                "logdir" : "./",
                "logsize" : 4,
                "log_basename" : "rt-app",
                "gnuplot" : false
        }
}
)";

// wu_lat histogram as the posts' textogram (-a 0 -z 1000 -n 10): ten 100 us bins, 1000 itself
// in the last one, then "> 1000".
constexpr int kHistBins = 11;
constexpr double kHistWidthUs = 100;

struct CaseResult {
  double n = 0, min = 0, max = 0, mean = 0, stddev = 0, over1ms_pct = 0;  // means per run
  std::array<double, kHistBins> hist{};                                   // mean count per run
};

struct Published {
  const char* label;
  double n, max, mean, over1ms_pct;
  std::array<double, kHistBins> hist;  // counts the post gives; -1 where it gives none
};

// Occupancy bins of the seed-1 run of the with-change case (5 s: 100 bins).
constexpr Time kOccupancyBin = 50 * kNsPerMs;

CaseResult run_case(const std::string& kernel, const std::string& added, bool with_idle, int runs,
                    std::vector<int>* idle_cpus, nlohmann::json* occupancy = nullptr) {
  CaseResult r;
  // Counts are summed as integers and divided once, so that a mean count carries no float noise.
  std::int64_t n_sum = 0;
  std::array<std::int64_t, kHistBins> hist_sum{};
  for (int seed = 1; seed <= runs; ++seed) {
    CommonOptions o;
    o.feature_warnings = false;  // said once, up front (reproduce --features)
    o.machine = "hikey";
    o.kernel = kernel;
    o.features = added;
    o.seed = static_cast<std::uint64_t>(seed);
    if (seed == 1 && occupancy) o.occupancy_bin_ns = kOccupancyBin;
    workload::rtapp::Config cfg = workload::rtapp::parse(
        workload::parse_relaxed_json(kSchedIdleJson, "sched-idle.json"), "sched-idle.json", 8);
    if (!with_idle) {
      std::erase_if(cfg.tasks, [](const auto& t) { return t.name == "idle_thread"; });
      cfg.nr_threads = 8;
    }
    RtAppOutcome out = run_rtapp_config(o, cfg, "", false);
    const auto& v = out.wu_lat_us["cfs_thread"];
    metrics::StStats st = metrics::st_stats(v);
    n_sum += static_cast<std::int64_t>(st.n);
    r.min += st.min / runs;
    r.max += st.max / runs;
    r.mean += st.mean / runs;
    r.stddev += st.stddev / runs;
    for (double x : v) {
      const int bin =
          x > 1000 ? kHistBins - 1 : std::min(static_cast<int>(x / kHistWidthUs), kHistBins - 2);
      hist_sum[static_cast<size_t>(bin)]++;
    }
    r.over1ms_pct +=
        out.json.at("tasks").at("cfs_thread").at("wu_lat_us").at("over_1ms_pct").get<double>() /
        runs;
    if (seed == 1 && idle_cpus && with_idle) *idle_cpus = out.fork_cpus["idle_thread"];
    if (seed == 1 && occupancy && out.occupancy) {
      *occupancy = metrics::occupancy_json(*out.occupancy);
      (*occupancy)["run"] =
          fmt::format("rt-app sched-idle.json on hikey, kernel {}, seed 1", kernel);
    }
  }
  r.n = static_cast<double>(n_sum) / runs;
  for (int b = 0; b < kHistBins; ++b)
    r.hist[static_cast<size_t>(b)] = static_cast<double>(hist_sum[static_cast<size_t>(b)]) / runs;
  return r;
}

// reproduce --features: each published direction whose verdict or simulated figure differs
// between the run with the added flags (`with`) and without them (`without`), both as
// reproduce's JSON (series -> {"directions": [...]}, in the same order on both sides).
// Returns the text section; adds "without_features" and "changed_directions" to `with`.
std::string changed_directions(nlohmann::json& with, const nlohmann::json& without,
                               const std::string& features) {
  std::string flipped, moved;
  int same = 0, matched_without = 0, total = 0;
  nlohmann::json changed = nlohmann::json::array();
  for (const auto& [series, fig] : with.items()) {
    if (!fig.is_object() || !fig.contains("directions") || !without.contains(series)) continue;
    const nlohmann::json& a = without[series]["directions"];
    const nlohmann::json& b = fig["directions"];
    for (std::size_t i = 0; i < b.size() && i < a.size(); ++i) {
      ++total;
      if (a[i]["verdict"] == "match") ++matched_without;
      const std::string va = a[i]["verdict"], vb = b[i]["verdict"];
      const std::string sa = a[i]["simulated"], sb = b[i]["simulated"];
      if (va == vb && sa == sb) {
        ++same;
        continue;
      }
      const std::string line =
          fmt::format("  {}: {}: {} -> {}\n      without: {}\n      with:    {}\n", series,
                      b[i]["claim"].get<std::string>(), va, vb, sa, sb);
      (va != vb ? flipped : moved) += line;
      changed.push_back({{"series", series},
                         {"claim", b[i]["claim"]},
                         {"verdict_without", va},
                         {"verdict_with", vb},
                         {"simulated_without", sa},
                         {"simulated_with", sb}});
    }
  }
  with["without_features"] = {{"directions_matched", matched_without},
                              {"directions_missed", total - matched_without}};
  with["changed_directions"] = std::move(changed);
  // Only the direction lines are compared: a figure of the tables that no direction quotes
  // (a latency-nice row, a histogram bin) can move without showing here, so say so.
  std::string out = fmt::format(
      "\nwhat --features {} changed in the direction checks (the same runs without it: {} of {} "
      "directions match):\n",
      features, matched_without, total);
  if (!flipped.empty()) out += "verdict changed:\n" + flipped;
  if (!moved.empty()) out += "figures moved, verdict the same:\n" + moved;
  out += fmt::format(
      "directions unchanged in verdict and figures: {} of {} (only the direction lines are "
      "compared; the tables' other figures may have moved)\n",
      same, total);
  return out;
}

}  // namespace

nlohmann::json reproduce_sched_idle_fallback(int runs, const std::string& added, std::string& text,
                                             nlohmann::json* occupancy) {
  std::vector<int> idle_cpus;
  CaseResult no_idle = run_case(kSchedIdleFallbackWith, added, false, runs, nullptr);
  CaseResult base = run_case(kSchedIdleFallbackBase, added, true, runs, &idle_cpus);
  CaseResult with = run_case(kSchedIdleFallbackWith, added, true, runs, nullptr, occupancy);
  // seed-series.md §1: the posted table and the textogram counts it quotes.
  constexpr double u = -1;
  const Published pub[3] = {{"8 CFS, no SCHED_IDLE tasks (v5.4)",
                             5136,
                             2452,
                             104.358,
                             0.3,
                             {3688, 1253, 149, 22, u, u, u, u, u, u, 17}},
                            {"8 CFS + 5 SCHED_IDLE, without change (v5.3)",
                             4710,
                             67664,
                             1116.68,
                             25.9,
                             {3102, 148, 41, u, u, u, u, u, u, u, 1218}},
                            {"8 CFS + 5 SCHED_IDLE, with change (v5.4)",
                             5095,
                             7773,
                             102.683,
                             0.8,
                             {5042, 8, u, u, u, u, u, u, u, u, 40}}};
  const CaseResult* sim[3] = {&no_idle, &base, &with};
  text += fmt::format(
      "sched-idle fallback (Viresh Kumar, 2019; merged in v5.4): rt-app sched-idle.json on hikey, "
      "5 s,\n"
      "wu_lat of the 8 cfs_thread instances; each column is the mean over {} of one run's\n"
      "figure (max: the mean of the runs' maxima; the post's are one run).\n\n",
      seeds_text(runs));
  text += fmt::format("{:<46} {:>7} {:>9} {:>9} {:>8}   {:>7} {:>9} {:>9} {:>8}\n", "case", "N",
                      "max us", "mean us", ">1ms %", "pub N", "pub max", "pub mean", "pub >1ms");
  for (int i = 0; i < 3; ++i)
    text += fmt::format(
        "{:<46} {:>7.0f} {:>9.0f} {:>9.1f} {:>8.1f}   {:>7.0f} {:>9.0f} {:>9.1f} {:>8.1f}\n",
        pub[i].label, sim[i]->n, sim[i]->max, sim[i]->mean, sim[i]->over1ms_pct, pub[i].n,
        pub[i].max, pub[i].mean, pub[i].over1ms_pct);
  double ratio = with.mean > 0 ? base.mean / with.mean : 0;
  nlohmann::json j;
  text += "\ndirections (published in brackets):\n";
  add_direction(text, j, "mean wu_lat falls with the change", fmt::format("{:.1f}x lower", ratio),
                "10.9x", ratio > 1.0);
  add_direction(text, j, "wakeups over 1 ms fall",
                fmt::format("{:.1f} % -> {:.1f} %", base.over1ms_pct, with.over1ms_pct),
                "25.9 % -> 0.8 %", base.over1ms_pct > with.over1ms_pct);
  add_direction(text, j, "without SCHED_IDLE tasks the mean is within 2x of the with-change case",
                fmt::format("{:.1f} vs {:.1f} us, {:.1f}x", no_idle.mean, with.mean,
                            with.mean > 0 ? no_idle.mean / with.mean : 0),
                "104.4 vs 102.7, 1.0x",
                no_idle.mean < 2 * with.mean && with.mean < 2 * no_idle.mean);
  add_direction(text, j, "rows per thread with the change within 5 % of 643",
                fmt::format("{:.0f}", with.n / 8), "637 of ~643",
                std::abs(with.n / 8 - 643) <= 643 * 0.05);
  std::string cpus;
  for (int c : idle_cpus) cpus += (cpus.empty() ? "" : " ") + std::to_string(c);
  text += fmt::format(
      "\nnote: SCHED_IDLE threads placed at fork on CPUs {} (seed 1); load balancing moves them "
      "later\n",
      cpus);
  const char* keys[3] = {"no_sched_idle", "without_change", "with_change"};
  for (int i = 0; i < 3; ++i) {
    j[keys[i]] = {{"n", sim[i]->n},
                  {"min_us", sim[i]->min},
                  {"max_us", sim[i]->max},
                  {"mean_us", sim[i]->mean},
                  {"stddev_us", sim[i]->stddev},
                  {"over_1ms_pct", sim[i]->over1ms_pct},
                  {"published_mean_us", pub[i].mean},
                  {"published_over_1ms_pct", pub[i].over1ms_pct}};
    j[keys[i]]["label"] = pub[i].label;
    j[keys[i]]["published_n"] = pub[i].n;
    j[keys[i]]["published_max_us"] = pub[i].max;
    // wu_lat in 100 us bins, mean count per run, beside the counts the post quotes (null: not
    // quoted).
    auto& h = j[keys[i]]["wu_lat_histogram"];
    h = nlohmann::json::array();
    for (int b = 0; b < kHistBins; ++b)
      h.push_back({{"bin", b == kHistBins - 1 ? std::string(">1000")
                                              : fmt::format("{}-{}", b * 100, (b + 1) * 100)},
                   {"count", sim[i]->hist[static_cast<size_t>(b)]},
                   {"published", pub[i].hist[static_cast<size_t>(b)] < 0
                                     ? nlohmann::json(nullptr)
                                     : nlohmann::json(pub[i].hist[static_cast<size_t>(b)])}});
  }
  j["mean_ratio"] = ratio;
  return j;
}

void register_reproduce_command(CLI::App& app) {
  struct Opts {
    std::string series = "all";
    int runs = 5;
    bool quick = false, full = false;
    std::string json_out;
    std::string report_out;
    bool fail_on_miss = false;
    std::string features;
    bool skip_plain = false;
    int jobs = default_jobs();
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "reproduce",
      "Reproduce the published experiments of the four series (the main job) and print the\n"
      "simulated table beside the published one, with the direction of each row marked.");
  sub->add_option("series", o->series,
                  "sched-idle-fallback | latency-nice | runnable-avg | sched-idle-balancing | all")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            const std::vector<std::string_view> known = {"sched-idle-fallback", "latency-nice",
                                                         "runnable-avg", "sched-idle-balancing",
                                                         "all"};
            if (std::find(known.begin(), known.end(), v) != known.end()) return "";
            return fmt::format("unknown series '{}'; {}expected one of {}", v,
                               engine::did_you_mean(v, known, '\''), fmt::join(known, ", "));
          },
          "SERIES"))
      ->capture_default_str();
  sub->add_option("--runs", o->runs,
                  "Seeds 1..N per configuration (at quick scale latency-nice and "
                  "sched-idle-balancing use at most 3)")
      ->check(range(1, 100))
      ->capture_default_str();
  sub->add_flag("--quick", o->quick, "Scaled-down runs (default)");
  sub->add_flag("--full", o->full, "The posted parameters");
  sub->add_option("--json", o->json_out,
                  "Write the figures as JSON to FILE (\"-\": to stdout, and the tables to stderr)")
      ->check(file_name());
  sub->add_option(
         "--report", o->report_out,
         "Write one self-contained HTML page (Vega-Lite charts, inlined; opens offline): the\n"
         "simulated figures beside the published ones, and per-CPU occupancy of one run")
      ->check(file_name());
  sub->add_option("--features", o->features,
                  "Flags added after every configuration's own (kernel syntax, series names\n"
                  "allowed), e.g. your idea's flag: do the published directions still hold with "
                  "it?\n(also runs without them and ends with the directions they changed)");
  sub->add_flag("--skip-plain", o->skip_plain,
                "With --features: do not also run the experiments without the added flags (half\n"
                "the time; no list of the directions the flags changed)");
  sub->add_option("-j,--jobs", o->jobs,
                  "Simulations run at once (threads; default: this machine's hardware threads); "
                  "the figures do not depend on it")
      ->capture_default_str()
      ->check(range(1, 1024));
  sub->add_flag("--fail-on-miss", o->fail_on_miss,
                "Exit with status 4 (after writing every output) when a published direction is "
                "MISS, e.g. to gate a model change in CI");
  sub->callback([o, sub] {
    if (o->quick && o->full) throw UsageError("--quick and --full exclude each other");
    if (!o->json_out.empty()) check_json_output(o->json_out);
    if (!o->features.empty()) {
      // One clear error, and each warning once, before the minutes of running: on each
      // profile the chosen series run.
      for (const char* name : series_profiles(o->series)) {
        kernel::Profile p = kernel::make_profile(name);
        kernel::apply_features(p.features, o->features, "--features", &p.unmodelled);
        print_feature_warnings(p, "--features");
      }
    }
    check_distinct_outputs({{"--json", &o->json_out}, {"--report", &o->report_out}});
    if (!o->report_out.empty()) {
      report::require_report_assets("--report");
      check_output_file(o->report_out, "--report");
    }
    // Said before the minutes of running, not only in the table's header afterwards.
    const bool capped_series =
        o->series == "all" || o->series == "latency-nice" || o->series == "sched-idle-balancing";
    if (sub->get_option("--runs")->count() > 0 && o->runs > 3 && !o->full && capped_series)
      fmt::print(stderr,
                 "schedtwin: note: --runs {}: at quick scale latency-nice and "
                 "sched-idle-balancing run seeds 1-3 (--full runs all {})\n",
                 o->runs, o->runs);
    if (o->skip_plain && o->features.empty())
      throw UsageError("--skip-plain: skips the runs without --features; give --features too");
    if (!o->skip_plain && !o->features.empty())
      fmt::print(stderr,
                 "schedtwin: note: --features: each experiment also runs without the added "
                 "flags, to list the directions they change (--skip-plain: half the time)\n");
    nlohmann::json j;
    std::string text;
    std::map<std::string, std::string> series_text;
    nlohmann::json occupancy;
    nlohmann::json* occ = o->report_out.empty() ? nullptr : &occupancy;
    auto run_series = [&](const std::string& s, const std::string& features, std::string& out,
                          nlohmann::json* occupancy_out) {
      if (s == "sched-idle-fallback")
        return reproduce_sched_idle_fallback(o->runs, features, out, occupancy_out);
      if (s == "latency-nice")
        return reproduce_latency_nice(o->runs, o->full, features, out, o->jobs);
      if (s == "sched-idle-balancing")
        return reproduce_sched_idle_balancing(o->runs, o->full, features, out, o->jobs);
      return reproduce_runnable_avg(o->runs, o->full, features, out, o->jobs);
    };
    // With --features: the same experiments without the added flags, for their directions.
    const bool plain = !o->features.empty() && !o->skip_plain;
    nlohmann::json without;
    for (const char* s :
         {"sched-idle-fallback", "latency-nice", "runnable-avg", "sched-idle-balancing"}) {
      if (o->series != "all" && o->series != s) continue;
      const std::size_t from = text.size();
      j[s] = run_series(s, o->features, text, occ);
      series_text[s] = text.substr(from);
      if (plain) {
        std::string discarded;
        without[s] = run_series(s, "", discarded, nullptr);
      }
    }
    // Every verdict in one place: a MISS inside a series' table is easy to read past.
    int matched = 0;
    std::vector<std::string> missed;
    for (const auto& [series, fig] : j.items()) {
      if (!fig.is_object() || !fig.contains("directions")) continue;
      for (const auto& d : fig["directions"]) {
        if (d["verdict"] == "match")
          ++matched;
        else
          missed.push_back(fmt::format("{}: {}", series, d["claim"].get<std::string>()));
      }
    }
    text += fmt::format("\nsummary: {} of {} published directions match{}\n", matched,
                        matched + static_cast<int>(missed.size()), missed.empty() ? "" : "; MISS:");
    for (const std::string& m : missed) text += "  " + m + "\n";
    if (plain) text += changed_directions(j, without, o->features);
    j["directions_matched"] = matched;
    j["directions_missed"] = missed.size();
    // Beside the series' figures, what made them (the other commands' documents say so too).
    j["schema_version"] = 1;
    j["command"] = "reproduce";
    j["series"] = o->series;
    j["scale"] = o->full ? "full" : "quick";
    j["runs"] = o->runs;
    if (!o->features.empty()) {
      j["features_added"] = o->features;
      text = fmt::format(
                 "every configuration below runs with --features {} after its own flags; the "
                 "published figures are without it\n",
                 o->features) +
             text;
    }
    // Each series opens with a blank line that separates it from the one before.
    if (!text.empty() && text.front() == '\n') text.erase(0, 1);
    emit_report(text, j, o->json_out);
    if (!o->report_out.empty()) {
      report::ReproduceReport r;
      const bool runs_given = sub->get_option("--runs")->count() > 0;
      r.command = fmt::format("schedtwin reproduce {}{}{}{}", o->series,
                              runs_given ? fmt::format(" --runs {}", o->runs) : "",
                              o->full ? " --full" : "",
                              o->features.empty() ? "" : " --features " + o->features);
      r.runs = o->runs;
      r.capped_runs = !o->full && capped_series && o->runs > 3 ? 3 : 0;
      r.full = o->full;
      r.figures = j;
      r.text = std::move(series_text);
      r.occupancy = std::move(occupancy);
      write_file_atomically(o->report_out, report::render_reproduce_report(r), "--report");
    }
    if (o->fail_on_miss && !missed.empty())
      throw CheckFailed(fmt::format("--fail-on-miss: {} of {} published directions MISS",
                                    missed.size(), matched + static_cast<int>(missed.size())));
  });
}

}  // namespace schedtwin::cli
