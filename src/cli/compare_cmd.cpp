#include "cli/compare_cmd.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "cli/parallel_runs.h"
#include "cli/pingpong_cmd.h"
#include "cli/run_cmd.h"
#include "cli/run_common.h"
#include "cli/schbench_cmd.h"
#include "engine/error.h"
#include "kernel/features.h"
#include "metrics/compare_stats.h"
#include "workload/json_relaxed.h"

namespace schedtwin::cli {

std::string fixed_point(double x, int d, bool plus) {
  std::string s = plus ? fmt::format("{:+.{}f}", x, d) : fmt::format("{:.{}f}", x, d);
  if (s.find_first_not_of("+-0.") == std::string::npos)
    s = (plus ? (x < 0 ? "-" : "+") : "") + s.substr(s[0] == '-' || s[0] == '+');
  return s;
}

namespace {

// One rt-app task's metrics from its JSON ("tasks".NAME), named PREFIX + NAME + "." + key:
// wu_lat and slack for a task with timers, then its log rows and scheduler accounting.
void append_rtapp_task(RunFigures& f, const std::string& prefix, const std::string& name,
                       const nlohmann::json& t, bool timer) {
  const std::string pre = prefix + name + ".";
  if (timer) {
    const nlohmann::json& w = t.at("wu_lat_us");
    for (const char* k : {"mean", "p50", "p90", "p99", "over_1ms_pct"})
      f.metrics.emplace_back(pre + "wu_lat_us." + k, w.at(k).get<double>());
    f.metrics.emplace_back(pre + "slack_us.mean", t.at("slack_us").at("mean").get<double>());
  }
  f.metrics.emplace_back(pre + "loops", t.at("wu_lat_us").at("n").get<double>());
  for (const char* k : {"runtime_ms", "run_delay_ms", "switches", "migrations", "wakeups"})
    f.metrics.emplace_back(pre + k, t.at(k).get<double>());
}

// ---- the subcommands compare can run -------------------------------------------------------

// What a subcommand's entry gives compare once it has put its options on a parser.
struct Prepared {
  CommonOptions* common = nullptr;  // the parsed common options (machine, hz, duration)
  // After parsing, before any run: cross-option checks and reading the input, so that bad input
  // fails once, up front (UsageError / InputError). Gets the base scenario (machine loaded).
  std::function<void(const Scenario&)> prepare;
  // One simulation with the given options; logdir empty: no logs. Called from several threads at
  // once: it may only read the state captured at definition time.
  std::function<RunFigures(const CommonOptions&, const std::string& logdir)> run;
};

struct SubcommandEntry {
  const char* name;
  bool writes_logs;  // accepts compare's --logdir
  // Defines the subcommand's own options (the functions its `schedtwin SUBCOMMAND` uses) on `sub`.
  Prepared (*define)(CLI::App& sub);
};

RunFigures common_figures(const nlohmann::json& j) {
  RunFigures f;
  f.sim_time_s = j.value("sim_time_s", 0.0);
  f.wall_time_s = j.value("wall_time_s", 0.0);
  f.events = j.value("events", std::uint64_t{0});
  f.dispatched_events = j.value("dispatched_events", f.events);
  f.context_switches = j.value("context_switches", 0.0);
  f.migrations = j.value("migrations", 0.0);
  f.lb_migrations = j.value("lb_migrations", 0.0);
  return f;
}

// The figures schbench's final table and pingpong's Total line give, by their JSON keys.
constexpr std::array<const char*, 9> kSchbenchPercentiles{"min", "p50",   "p75",   "p90", "p95",
                                                          "p99", "p99_5", "p99_9", "max"};
constexpr std::array<const char*, 2> kPingpongTotals{"throughput_gbps", "ops_per_s"};

// Appends prefix + key for each of `keys` in the JSON object `obj`.
template <std::size_t N>
void append_metrics(RunFigures& f, const nlohmann::json& obj, const std::string& prefix,
                    const std::array<const char*, N>& keys) {
  for (const char* k : keys) f.metrics.emplace_back(prefix + k, obj.at(k).get<double>());
}

Prepared define_rtapp(CLI::App& sub) {
  auto a = std::make_shared<RtAppArgs>();
  add_rtapp_options(sub, *a);
  Prepared p;
  p.common = &a->common;
  p.prepare = [a](const Scenario& s) {
    workload::rtapp::parse_file(a->taskset, s.machine.nr_cpus());
  };
  // create_logdir: DIR/<config>/seed-N/ is compare's own, made once the input is valid. The
  // file's logdir is never used (without --logdir no logs are written at all). The figures
  // come from the run's JSON document, so the samples need not be kept.
  p.run = [a](const CommonOptions& o, const std::string& logdir) {
    return rtapp_figures(run_rtapp(o, a->taskset, logdir, true, /*keep_samples=*/false));
  };
  return p;
}

Prepared define_messaging_like(CLI::App& sub, bool hackbench) {
  auto a = std::make_shared<MessagingArgs>();
  auto params = std::make_shared<workload::MessagingParams>();
  if (hackbench)
    add_hackbench_options(sub, *a);
  else
    add_messaging_options(sub, *a);
  Prepared p;
  p.common = &a->common;
  p.prepare = [a, params, hackbench](const Scenario&) {
    *params = hackbench ? hackbench_params(*a) : messaging_params(*a);
  };
  p.run = [params, hackbench](const CommonOptions& o, const std::string&) {
    return messaging_figures(
        run_messaging_command(o, *params, hackbench ? "hackbench" : "messaging"));
  };
  return p;
}

Prepared define_messaging(CLI::App& sub) { return define_messaging_like(sub, false); }
Prepared define_hackbench(CLI::App& sub) { return define_messaging_like(sub, true); }

RunFigures schbench_figures(const SchbenchOutcome& out);  // below

Prepared define_schbench(CLI::App& sub) {
  auto a = std::make_shared<SchbenchArgs>();
  auto params = std::make_shared<workload::SchbenchParams>();
  add_schbench_options(sub, *a);
  Prepared p;
  p.common = &a->common;
  p.prepare = [a, params](const Scenario&) { *params = schbench_params(*a); };
  p.run = [params](const CommonOptions& o, const std::string&) {
    return schbench_figures(run_schbench_command(o, *params));
  };
  return p;
}

// pingpong: the Total line's throughput_gbps (Gb/s) and ops_per_s.
Prepared define_pingpong(CLI::App& sub) {
  auto a = std::make_shared<PingpongArgs>();
  auto params = std::make_shared<workload::PingpongParams>();
  add_pingpong_options(sub, *a);
  Prepared p;
  p.common = &a->common;
  p.prepare = [a, params](const Scenario&) { *params = pingpong_params(*a); };
  p.run = [params](const CommonOptions& o, const std::string&) {
    const PingpongOutcome out = run_pingpong_command(o, *params);
    RunFigures f = common_figures(out.json);
    append_metrics(f, out.json, "", kPingpongTotals);
    return f;
  };
  return p;
}

// run: a scenario file. Its "machine" (unless ARGS give --machine) stands; its "kernel" and
// "features" are the base that --base and --with change (a profile they name replaces both);
// its "seed" gives way to compare's. Metrics
// per workload i of the file: w<i>.schbench.wakeup_latency_us.p50 ... p99_9 (µs),
// w<i>.messaging.total_time_s (s, runs that finished) and .messages, w<i>.pingpong.
// throughput_gbps and .ops_per_s.
Prepared define_run(CLI::App& sub) {
  struct RunArgs {
    CommonOptions common;
    std::string scenario;
    workload::JNode root;
  };
  auto a = std::make_shared<RunArgs>();
  sub.add_option("scenario", a->scenario, "Scenario file (JSON)")->required();
  add_common_options(sub, a->common);
  // Read as soon as ARGS are parsed: compare loads the machine right after.
  CLI::Option* machine_opt = sub.get_option("--machine");
  sub.parse_complete_callback([a, machine_opt] {
    a->root = workload::read_relaxed_json_file(a->scenario);
    if (a->root.kind != workload::JNode::Kind::Object) return;  // run_scenario names the error
    for (const auto& [k, v] : a->root.members) {
      if (v.kind != workload::JNode::Kind::String) continue;
      if (k == "machine" && machine_opt->count() == 0) a->common.machine = v.s;
      if (k == "kernel") a->common.kernel = v.s;
      if (k == "features") a->common.features = v.s;
    }
  });
  Prepared p;
  p.common = &a->common;
  p.prepare = [](const Scenario&) {};
  p.run = [a](const CommonOptions& o, const std::string&) {
    const ScenarioOutcome out = run_scenario(a->root, a->scenario, o, {true, true, true, true});
    RunFigures f = common_figures(out.json);
    const nlohmann::json& ws = out.json.at("workloads");
    for (std::size_t i = 0; i < ws.size(); ++i) {
      const nlohmann::json& w = ws[i];
      const std::string pre = fmt::format("w{}.{}.", i, w.at("kind").get<std::string>());
      if (w.contains("wakeup_latency_us")) {
        append_metrics(f, w.at("wakeup_latency_us"), pre + "wakeup_latency_us.",
                       kSchbenchPercentiles);
        f.metrics.emplace_back(pre + "samples", w.at("samples").get<double>());
      } else if (w.contains("tasks")) {  // rt-app: as rtapp_figures names them
        const nlohmann::json& timers = w.at("timer_tasks");
        for (const auto& [name, t] : w.at("tasks").items())
          append_rtapp_task(f, pre, name, t,
                            std::find(timers.begin(), timers.end(), name) != timers.end());
      } else if (w.contains("messages")) {
        if (w.contains("total_time_s"))
          f.metrics.emplace_back(pre + "total_time_s", w.at("total_time_s").get<double>());
        f.metrics.emplace_back(pre + "messages", w.at("messages").get<double>());
      } else {
        append_metrics(f, w, pre, kPingpongTotals);
      }
    }
    return f;
  };
  return p;
}

constexpr SubcommandEntry kSubcommands[] = {
    {"rt-app", true, define_rtapp},         {"messaging", false, define_messaging},
    {"hackbench", false, define_hackbench}, {"schbench", false, define_schbench},
    {"pingpong", false, define_pingpong},   {"run", false, define_run},
};

// ---- parsing ARGS ------------------------------------------------------------------------------

std::string supported_list() {
  std::string s;
  for (const auto& e : kSubcommands) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

// Options compare owns (or that would make every run write the same file) may not appear in ARGS.
// Of the common set only --machine, --hz and --cost are allowed: they are the same for both
// configurations. Any option added to the common set later is refused until compare handles it.
void reject_owned_options(const CLI::App& sub, const std::string& name) {
  std::vector<std::string> owned;
  for (const std::string& n : common_option_names())
    if (n != "--machine" && n != "--hz" && n != "--cost") owned.push_back(n);
  owned.push_back("--logdir");
  for (const std::string& n : owned) {
    const CLI::Option* given = sub.get_option_no_throw(n);
    if (!given || given->count() == 0) continue;
    std::string why;
    if (n == "--seed")
      why = "compare runs seeds 1..N itself (--runs N)";
    else if (n == "--kernel" || n == "--features")
      why = "give the two configurations as --base SPEC and --with SPEC";
    else if (n == "--json")
      why = "give --json FILE before \"--\" (one document for the comparison)";
    else if (n == "--logdir")
      why = "give --logdir DIR before \"--\" (logs go to DIR/<base|with>/seed-N/)";
    else
      why = "not supported by compare";
    throw UsageError(fmt::format("compare: {} in the {} ARGS: {}", n, name, why));
  }
}

// The full flag list of `f` ("NO_X,Y,..."): applied by make_scenario on the profile of the same
// name it gives exactly `f`, whatever that profile's defaults are.
std::string explicit_features(const kernel::FeatureSet& f) {
  std::string s;
  for (int i = 0; i < kernel::kNumFeatures; ++i) {
    const auto x = static_cast<kernel::Feature>(i);
    s +=
        fmt::format("{}{}{}", s.empty() ? "" : ",", f.has(x) ? "" : "NO_", kernel::feature_name(x));
  }
  return s;
}

CommonOptions run_options(const CommonOptions& parsed, const kernel::Profile& prof,
                          std::uint64_t seed) {
  CommonOptions o = parsed;
  o.kernel = prof.name;
  o.features = explicit_features(prof.features);
  o.feature_warnings = false;
  o.seed = seed;
  o.json_out.clear();
  return o;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                          "-_./=,:+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// ---- the table ---------------------------------------------------------------------------------

// Decimals for a row: about four significant digits below 100, two decimals above, at most six.
int decimals_for(double magnitude) {
  if (!(magnitude > 0) || !std::isfinite(magnitude)) return 2;
  const int d = 2 - static_cast<int>(std::floor(std::log10(magnitude)));
  return std::clamp(d, 2, 6);
}

std::string mean_sd(const metrics::SampleStats& s, int d) {
  if (s.n == 0) return "n/a";
  return fixed_point(s.mean, d) + " ± " +
         (std::isnan(s.sd) ? std::string("n/a") : fixed_point(s.sd, d));
}

// Display width of UTF-8 text ("±" is two bytes, one column).
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The first `nleft` columns (the swept value, the metric name) left-aligned, the numbers
// right-aligned; in "mean ± sd" cells the means and the sds each line up on their last digit, so
// that the decimal points of a column align. Every row has the header's number of cells.
std::string render_table(const std::vector<std::vector<std::string>>& rows, std::size_t nleft) {
  constexpr std::string_view kPm = " ± ";
  const std::size_t n = rows.at(0).size();
  std::vector<std::size_t> w(n), w_mean(n), w_sd(n);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < n; ++c)
      if (const std::size_t at = r[c].find(kPm); at != std::string::npos) {
        w_mean[c] = std::max(w_mean[c], columns(r[c].substr(0, at)));
        w_sd[c] = std::max(w_sd[c], columns(r[c].substr(at + kPm.size())));
      }
  for (std::size_t c = 0; c < n; ++c) w[c] = w_mean[c] + (w_sd[c] ? 3 + w_sd[c] : 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < n; ++c) w[c] = std::max(w[c], columns(r[c]));
  auto pad = [](std::size_t k) { return std::string(k, ' '); };
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < n; ++c) {
      std::string cell = r[c];
      if (const std::size_t at = r[c].find(kPm); at != std::string::npos) {
        const std::string m = r[c].substr(0, at), sd = r[c].substr(at + kPm.size());
        cell = pad(w_mean[c] - columns(m)) + m + " ± " + pad(w_sd[c] - columns(sd)) + sd;
      }
      if (c > 0) line += pad(c < nleft ? 2 : 3);
      line += c < nleft ? cell + pad(w[c] - columns(cell)) : pad(w[c] - columns(cell)) + cell;
    }
    out += line + "\n";
  }
  return out;
}

// --sweep NAME=V1,V2,...: the subcommand option NAME ("-g" for one letter, else "--NAME") is
// appended to ARGS with each value in turn.
struct Sweep {
  std::string spec;                 // as given
  std::string name, option;         // "g", "-g"
  std::vector<std::string> values;  // in the order given
};
constexpr std::size_t kMaxSweepValues = 100;

Sweep parse_sweep(const std::string& spec) {
  Sweep s;
  s.spec = spec;
  const std::size_t eq = spec.find('=');
  auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("--sweep {}: {} (expected NAME=V1,V2,..., e.g. g=1,4,8,16)",
                                  shell_quote(spec), why));
  };
  if (eq == std::string::npos) throw bad("no '='");
  s.name = spec.substr(0, eq);
  while (!s.name.empty() && s.name[0] == '-') s.name.erase(0, 1);  // "-g=..." is "g=..." too
  const bool ok_name = !s.name.empty() && std::isalpha(static_cast<unsigned char>(s.name[0])) &&
                       std::all_of(s.name.begin(), s.name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
                       });
  if (!ok_name) throw bad("NAME is not an option name");
  s.option = (s.name.size() == 1 ? "-" : "--") + s.name;
  for (std::string_view rest = std::string_view(spec).substr(eq + 1);;) {
    const std::size_t comma = rest.find(',');
    const std::string v(rest.substr(0, comma));
    if (v.empty()) throw bad("an empty value");
    if (std::find(s.values.begin(), s.values.end(), v) != s.values.end())
      throw bad(fmt::format("value {} given twice", v));
    s.values.push_back(v);
    if (s.values.size() > kMaxSweepValues)
      throw bad(fmt::format("more than {} values", kMaxSweepValues));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return s;
}

// A SPEC as the header shows it: quoted as given, or, for a long list such as a machine's
// whole features line, its first items and the count (the resolved flags follow anyway).
std::string spec_label(const std::string& spec) {
  const std::vector<std::string_view> items = kernel::feature_list_items(spec);
  constexpr std::size_t kShown = 3;
  if (items.size() <= 2 * kShown) return shell_quote(spec);
  return fmt::format("'{} ...' ({} items)", fmt::join(items.begin(), items.begin() + kShown, " "),
                     items.size());
}

}  // namespace

// The flags that are on, in three groups: those of the release's kernel/sched/features.h
// (what its debugfs features file would list); after "series flags" those of the four series
// (kernel::series_flags()), which a reader of an LKML post would not find in the kernel as flags;
// after "model flags" any other: a flag added to the model (your own idea) or a mainline flag of
// another release (SIS_UTIL on v5.4).
std::string describe_profile(const kernel::Profile& p) {
  std::vector<std::string> mainline, series, model;
  const std::vector<kernel::MainlineFlag> in_kernel = kernel::mainline_features(p.version);
  const std::vector<kernel::Feature>& of_series_list = kernel::series_flags();
  for (int i = 0; i < kernel::kNumFeatures; ++i) {
    const auto f = static_cast<kernel::Feature>(i);
    if (!p.features.has(f)) continue;
    const std::string name = kernel::feature_name(f);
    const bool listed = std::any_of(in_kernel.begin(), in_kernel.end(),
                                    [&](const kernel::MainlineFlag& m) { return name == m.name; });
    const bool of_series =
        std::find(of_series_list.begin(), of_series_list.end(), f) != of_series_list.end();
    (listed ? mainline : of_series ? series : model).push_back(name);
  }
  std::string out = fmt::format("kernel {}, features {}", p.name, fmt::join(mainline, ","));
  if (!series.empty()) out += fmt::format("; series flags {}", fmt::join(series, ","));
  if (!model.empty()) out += fmt::format("; model flags {}", fmt::join(model, ","));
  return out;
}

namespace {

// Whether the two configurations simulate alike: the same profile and the same value of
// every flag that profile reads (kernel::profile_reads); a flag it does not read, or an
// unmodelled one, changes nothing.
bool same_model(const kernel::Profile& base, const kernel::Profile& with) {
  if (base.name != with.name || base.busy_factor != with.busy_factor ||
      base.default_imbalance_pct != with.default_imbalance_pct)
    return false;
  for (int i = 0; i < kernel::kNumFeatures; ++i) {
    const auto x = static_cast<kernel::Feature>(i);
    if (kernel::profile_reads(with, x) && base.features.has(x) != with.features.has(x))
      return false;
  }
  return true;
}

// Whether two runs gave the same figures: every metric (by name, in order), the run-wide
// counters and the event count.
bool same_figures(const RunFigures& a, const RunFigures& b) {
  auto eq = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  if (a.metrics.size() != b.metrics.size() || a.events != b.events ||
      !eq(a.sim_time_s, b.sim_time_s) || !eq(a.context_switches, b.context_switches) ||
      !eq(a.migrations, b.migrations) || !eq(a.lb_migrations, b.lb_migrations))
    return false;
  for (std::size_t i = 0; i < a.metrics.size(); ++i)
    if (a.metrics[i].first != b.metrics[i].first || !eq(a.metrics[i].second, b.metrics[i].second))
      return false;
  return true;
}

// The line after the table when with's runs equal base's, seed for seed (`where`: "" without a
// sweep, else " at " the points). A flag that made no difference is most often one the profile or
// the machine never reaches: `no_smt_machine` names a machine without SMT (no idle-core or
// SMT-sibling search to change), `v513` says select_idle_sibling_v513 is in play (v5.17+
// profiles without LATENCY_NICE_SIS or SIS_SMT_FIRST). The caller passes them only when the
// change touches those searches (smt_search_changed).
std::string identical_note(const std::string& where, bool model_unchanged,
                           const std::string& no_smt_machine, bool v513) {
  std::string out = fmt::format(
      "note: --with made no difference on any seed{}: every run's figures equal base's", where);
  if (model_unchanged) return out + " (it leaves the model as base has it)\n";
  std::vector<std::string> why;
  if (!no_smt_machine.empty())
    why.push_back(
        fmt::format("{} has no SMT: no idle-core or SMT-sibling search to change", no_smt_machine));
  if (v513)
    why.push_back(
        "v5.17+ profiles take v5.13's select_idle_sibling, which never calls select_idle_core or "
        "select_idle_smt");
  out += "; check with --explain that the change is read on this kernel profile and machine";
  if (!why.empty()) out += fmt::format(" ({})", fmt::join(why, "; "));
  return out + "\n";
}

// Whether `with` changes a flag of the idle-core or SMT-sibling search (SIS_CORE, SIS_SMT_FIRST,
// LATENCY_NICE_SIS's SMT floor), which a machine without SMT or v5.13's select_idle_sibling
// never reaches.
bool smt_search_changed(const kernel::Profile& base, const kernel::Profile& with) {
  using kernel::Feature;
  for (Feature x : {Feature::SIS_CORE, Feature::SIS_SMT_FIRST, Feature::LATENCY_NICE_SIS})
    if (base.features.has(x) != with.features.has(x)) return true;
  return false;
}

// "+X -Y" of `with` against `base` (and the profile if it changed).
std::string change(const kernel::Profile& base, const kernel::Profile& with) {
  // Groups joined by "; ": the kernel (a profile is more than its flags: each release's code
  // paths come with it, as README's Known divergences lists), the flags, sd_init's tunables.
  std::vector<std::string> groups;
  if (base.name != with.name)
    groups.push_back(fmt::format("kernel {} -> {} (its code paths as well)", base.name, with.name));
  std::vector<std::string> flags;
  for (int i = 0; i < kernel::kNumFeatures; ++i) {
    const auto x = static_cast<kernel::Feature>(i);
    if (base.features.has(x) != with.features.has(x))
      flags.push_back(
          fmt::format("{}{}", with.features.has(x) ? "+" : "-", kernel::feature_name(x)));
  }
  if (!flags.empty()) groups.push_back(fmt::format("{}", fmt::join(flags, " ")));
  if (base.busy_factor != with.busy_factor ||
      base.default_imbalance_pct != with.default_imbalance_pct)
    groups.push_back(fmt::format(
        "sd_init defaults busy_factor {} -> {}, imbalance_pct {} -> {} (`machine domains "
        "--tunables` gives each level)",
        base.busy_factor, with.busy_factor, base.default_imbalance_pct,
        with.default_imbalance_pct));
  return groups.empty() ? "same as base" : fmt::format("{}", fmt::join(groups, "; "));
}

nlohmann::json profile_json(const std::string& spec, const kernel::Profile& p) {
  return {{"spec", spec}, {"kernel", p.name}, {"features", p.features.names()}};
}

// mean, sd, n and the runs' own figures by seed (`values`; null where a run did not report
// the metric), so that a wide sd can be looked into without re-running.
nlohmann::json stats_json(const metrics::SampleStats& s,
                          const std::vector<std::optional<double>>& by_seed) {
  nlohmann::json j;
  j["n"] = s.n;
  j["mean"] = s.n ? nlohmann::json(s.mean) : nlohmann::json(nullptr);
  j["sd"] = std::isnan(s.sd) ? nlohmann::json(nullptr) : nlohmann::json(s.sd);
  j["values"] = nlohmann::json::array();
  for (const std::optional<double>& v : by_seed)
    j["values"].push_back(v ? nlohmann::json(*v) : nlohmann::json(nullptr));
  return j;
}

// schbench: the final table's wakeup_latency_us.min, p50 ... p99_9, max (µs) and its sample
// count.
RunFigures schbench_figures(const SchbenchOutcome& out) {
  RunFigures f = common_figures(out.json);
  append_metrics(f, out.json.at("wakeup_latency_us"), "wakeup_latency_us.", kSchbenchPercentiles);
  f.metrics.emplace_back("samples", out.json.at("samples").get<double>());
  return f;
}

}  // namespace

RunFigures rtapp_figures(const RtAppOutcome& out) {
  RunFigures f = common_figures(out.json);
  for (const std::string& name : out.task_order)
    append_rtapp_task(
        f, "", name, out.json.at("tasks").at(name),
        std::find(out.timer_tasks.begin(), out.timer_tasks.end(), name) != out.timer_tasks.end());
  return f;
}

RunFigures messaging_figures(const MessagingOutcome& out) {
  RunFigures f = common_figures(out.json);
  f.metrics.emplace_back("total_time_s", out.json.at("total_time_s").get<double>());
  return f;
}

std::vector<std::string> compare_subcommands() {
  std::vector<std::string> v;
  for (const auto& e : kSubcommands) v.emplace_back(e.name);
  return v;
}

CompareOutcome run_compare(const CompareRequest& r) {
  const auto t0 = std::chrono::steady_clock::now();
  if (r.runs < 1) throw UsageError(fmt::format("--runs {}: expected at least 1", r.runs));
  if (r.jobs < 1) throw UsageError(fmt::format("--jobs {}: expected at least 1", r.jobs));
  if (r.args.empty())
    throw UsageError(fmt::format(
        "compare: expected \"-- SUBCOMMAND ARGS...\" after compare's options (SUBCOMMAND: {})",
        supported_list()));

  // The subcommand and its ARGS, parsed by its own option definitions.
  const SubcommandEntry* entry = nullptr;
  for (const auto& e : kSubcommands)
    if (r.args[0] == e.name) entry = &e;
  if (!entry)
    throw UsageError(
        fmt::format("compare: unknown subcommand '{}' after \"--\" (expected one of: {})",
                    r.args[0], supported_list()));
  const std::string name = entry->name;
  if (!r.logdir.empty() && !entry->writes_logs)
    throw UsageError(fmt::format("--logdir {}: {} writes no logs", r.logdir, name));
  // Several --sweep options are zipped: point k sets each option to its k-th value.
  std::vector<Sweep> sweeps;
  for (const std::string& spec : r.sweeps) {
    sweeps.push_back(parse_sweep(spec));
    const Sweep& s = sweeps.back();
    if (s.values.size() != sweeps[0].values.size())
      throw UsageError(fmt::format(
          "--sweep {}: {} value{}, but --sweep {} has {}; several --sweep options are taken "
          "value by value and need as many values each",
          s.spec, s.values.size(), s.values.size() == 1 ? "" : "s", sweeps[0].spec,
          sweeps[0].values.size()));
  }
  const bool swept = !sweeps.empty();
  std::vector<std::string> options;  // "-g", "-l"
  for (const Sweep& s : sweeps) options.push_back(s.option);
  const std::string sweep_label = fmt::format("{}", fmt::join(options, "/"));
  auto parse_args = [&](CLI::App& parser, std::vector<std::string> args, const std::string& what) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them reversed
    try {
      parser.parse(args);
    } catch (const CLI::Success&) {  // --help, --help-all
      throw UsageError(
          fmt::format("compare: --help in the {} ARGS: see `schedtwin {} --help`", name, name));
    } catch (const CLI::ExtrasError&) {
      throw UsageError(fmt::format("compare: {}: {}", what,
                                   extra_arguments_text(parser, name, parser.remaining(true))));
    } catch (const CLI::ParseError& e) {
      throw UsageError(fmt::format("compare: {}: {}", what, e.what()));
    }
  };
  if (swept) {
    // A swept option must be one of the subcommand's that takes a value, and not in ARGS.
    CLI::App probe{"", name};
    const Prepared probe_prep = entry->define(probe);  // owns what the options write to
    std::vector<const CLI::Option*> seen;              // "-g" and "--groups" are one option
    for (const Sweep& s : sweeps) {
      const CLI::Option* opt = probe.get_option_no_throw(s.option);
      if (!opt || opt->get_expected_max() == 0)
        throw UsageError(fmt::format("--sweep {}: {} has no option {} that takes a value", s.spec,
                                     name, s.option));
      if (std::find(seen.begin(), seen.end(), opt) != seen.end())
        throw UsageError(fmt::format("--sweep {}: {} is swept twice", s.spec, opt->get_name()));
      seen.push_back(opt);
    }
    parse_args(probe, {r.args.begin() + 1, r.args.end()}, name + " ARGS");
    for (const Sweep& s : sweeps)
      if (probe.get_option(s.option)->count() > 0)
        throw UsageError(fmt::format("--sweep {}: {} is also in the {} ARGS; give it once", s.spec,
                                     s.option, name));
  }

  // One point per swept value (one point without --sweep), each with the ARGS parsed by the
  // subcommand's own options and its input read: everything is validated before anything runs.
  struct Point {
    std::unique_ptr<CLI::App> parser;
    Prepared prep;
    std::string value;               // the swept values joined by "/"; empty without --sweep
    std::vector<std::string> swept;  // what the sweep adds to ARGS: "-g", "4", "-l", "640"
    std::string dir;                 // its logs' subdirectory of --logdir: "g=4,l=640"
  };
  std::vector<Point> points(swept ? sweeps[0].values.size() : 1);
  for (std::size_t k = 0; k < points.size(); ++k) {
    Point& pt = points[k];
    pt.parser = std::make_unique<CLI::App>("", name);
    pt.prep = entry->define(*pt.parser);
    std::vector<std::string> args(r.args.begin() + 1, r.args.end());
    std::vector<std::string> values, dirs;
    for (const Sweep& s : sweeps) {
      pt.swept.insert(pt.swept.end(), {s.option, s.values[k]});
      values.push_back(s.values[k]);
      dirs.push_back(s.name + "=" + s.values[k]);
    }
    pt.value = fmt::format("{}", fmt::join(values, "/"));
    pt.dir = fmt::format("{}", fmt::join(dirs, ","));
    std::replace(pt.dir.begin(), pt.dir.end(), '/', '_');
    args.insert(args.end(), pt.swept.begin(), pt.swept.end());
    parse_args(*pt.parser, std::move(args),
               swept ? fmt::format("--sweep {}", fmt::join(pt.swept, " ")) : name + " ARGS");
    reject_owned_options(*pt.parser, name);
  }

  // The two configurations. --with without a profile name changes the resolved base, and
  // --base without one changes the default: the profile, with a scenario file's features.
  const CommonOptions& given = *points[0].prep.common;
  const kernel::Profile default_profile = kernel::parse_spec(
      given.features, kernel::make_profile(given.kernel), "the scenario file's \"features\"");
  const kernel::Profile base = kernel::parse_spec(r.base_spec, default_profile, "--base");
  const kernel::Profile with = kernel::parse_spec(r.with_spec, base, "--with");
  const std::array<const kernel::Profile*, 2> profiles = {&base, &with};
  const std::array<const char*, 2> config_names = {"base", "with"};
  for (std::size_t c = 0; c < 2; ++c)
    print_feature_warnings(*profiles[c], fmt::format("--{}", config_names[c]));

  std::vector<std::string> machines;  // per point
  std::vector<char> smt;              // per point: whether its machine has SMT siblings
  for (Point& pt : points) {
    try {
      const Scenario sc =
          make_scenario(run_options(*pt.prep.common, base, 1));  // InputError: machine
      machines.push_back(sc.machine.name);
      smt.push_back(sc.machine.smt_width() > 1);
      for (const kernel::Profile* p : profiles) {
        const Scenario s = make_scenario(run_options(*pt.prep.common, *p, 1));
        if (!(s.config.profile.features == p->features) || s.config.profile.name != p->name)
          throw std::logic_error("compare: the run options do not reproduce the resolved profile");
      }
      pt.prep.prepare(sc);
    } catch (const InputError& e) {
      // A swept value (a machine file, say) can be what is wrong: name the point.
      if (!swept) throw;
      throw InputError(fmt::format("compare: --sweep {}: {}", fmt::join(pt.swept, " "), e.what()));
    }
  }
  if (!r.logdir.empty()) check_logdir_parent(r.logdir);

  // points·2·runs independent simulations: index i is point i / (2·runs), configuration
  // (i / runs) % 2, seed i % runs + 1; the first error reported is the same whatever the
  // number of jobs (parallel_runs).
  const std::size_t runs = static_cast<std::size_t>(r.runs);
  const std::size_t total = points.size() * 2 * runs;
  std::vector<std::string> notes(total);  // said in run order, whatever thread ran each
  std::vector<RunFigures> results = parallel_runs(total, r.jobs, [&](std::size_t i) {
    const Point& pt = points[i / (2 * runs)];
    const std::size_t config = (i / runs) % 2;
    const std::uint64_t seed = i % runs + 1;
    std::string logdir;
    if (!r.logdir.empty()) {
      std::filesystem::path d(r.logdir);
      if (swept) d /= pt.dir;
      logdir = (d / config_names[config] / fmt::format("seed-{}", seed)).string();
    }
    try {
      CommonOptions o = run_options(*pt.prep.common, *profiles[config], seed);
      o.input_notes = i == 0;  // the same input for every run: its notes once
      o.profile_notes = seed == 1;
      o.notes = &notes[i];
      return pt.prep.run(o, logdir);
    } catch (const std::filesystem::filesystem_error& e) {
      throw InputError(fmt::format("--logdir {}: {}", r.logdir, e.code().message()));
    }
  });
  for (const std::string& n : notes) fmt::print(stderr, "{}", n);

  // Same seeds and the same model: the columns are byte-identical runs. Said once the runs
  // succeeded, so that a bad input stays a one-line error.
  const bool model_unchanged = same_model(base, with);
  if (model_unchanged)
    fmt::print(stderr,
               "schedtwin: warning: --with '{}' leaves the model as --base has it: both columns "
               "are the same runs, every diff is 0\n",
               r.with_spec);

  CompareOutcome out;
  std::vector<std::string> quoted;
  for (const auto& a : r.args) quoted.push_back(shell_quote(a));
  std::string& txt = out.text;
  txt += fmt::format("compare: {}\n", fmt::join(quoted, " "));
  for (std::size_t i = 0; i < sweeps.size(); ++i)
    txt += fmt::format("{}{} {}\n", i == 0 ? "sweep:   " : "         ", sweeps[i].option,
                       fmt::join(sweeps[i].values, ", "));
  const bool one_machine = std::all_of(machines.begin(), machines.end(),
                                       [&](const std::string& m) { return m == machines[0]; });
  if (one_machine)
    txt += fmt::format("machine: {}\n", machines[0]);
  else
    txt += fmt::format("machine: {} (one per {} value)\n", fmt::join(machines, ", "), sweep_label);
  txt += fmt::format("base:    {} = {}\n",
                     !r.base_spec.empty() ? spec_label(r.base_spec)
                     : name == "run"      ? "(the scenario file's)"
                                          : "(default)",
                     describe_profile(base));
  txt += fmt::format("with:    {} = {}\n", spec_label(r.with_spec), describe_profile(with));
  txt += fmt::format("change:  {}\n", change(base, with));
  txt += fmt::format(
      "runs:    {} per configuration, seeds 1..{}; mean ± sd over runs; diff and 95% CI "
      "(paired by seed) of with vs base, in % of the base mean\n\n",
      r.runs, r.runs);

  nlohmann::json& j = out.json;
  j["schema_version"] = 1;
  j["command"] = "compare";
  j["machine"] = machines[0];  // with a sweep of --machine, the first; each point has its own
  j["machines"] = machines;    // per point, in sweep order (one without --sweep)
  j["kernel"] = base.name;
  j["features"] = base.features.names();
  j["seed"] = 1;  // the first of seeds 1..runs
  j["runs"] = r.runs;
  j["subcommand"] = name;
  j["args"] = r.args;
  j["base"] = profile_json(r.base_spec, base);
  j["with"] = profile_json(r.with_spec, with);
  double sim_time_s = 0;
  std::uint64_t events = 0, dispatched = 0;
  for (const RunFigures& f : results) {
    sim_time_s += f.sim_time_s;
    events += f.events;
    dispatched += f.dispatched_events;
  }
  j["sim_time_s"] = sim_time_s;  // summed over all runs
  j["events"] = events;
  j["dispatched_events"] = dispatched;
  if (swept) {
    j["sweep"] = nlohmann::json::array();
    for (const Sweep& s : sweeps)
      j["sweep"].push_back({{"option", s.option}, {"values", s.values}});
    j["points"] = nlohmann::json::array();
  }

  std::vector<std::string> header = {"metric", "base", "with", "diff", "95% CI"};
  if (swept) header.insert(header.begin(), sweep_label);
  std::vector<std::vector<std::string>> rows = {header};
  bool partial = false;
  std::vector<std::size_t> identical;  // the points where every run of with equals base's
  for (std::size_t k = 0; k < points.size(); ++k) {
    bool same = true;
    for (std::size_t s = 0; s < runs && same; ++s)
      same = same_figures(results[k * 2 * runs + s], results[k * 2 * runs + runs + s]);
    if (same) identical.push_back(k);
    // Metrics in the order the subcommand reports them (base seed 1 first), values in seed
    // order, indexed by seed - 1; a run that did not report a metric leaves its place empty, so
    // that the pairs stay aligned by seed.
    // The run-wide counters come last even when a workload's metric first appears in a later
    // run (a workload that had not finished in seed 1).
    std::vector<std::string> order;
    std::map<std::string, std::array<std::vector<std::optional<double>>, 2>> values;
    auto add = [&](const std::string& metric, double v, std::size_t i) {
      auto [it, inserted] = values.try_emplace(metric);
      if (inserted) {
        order.push_back(metric);
        for (auto& config : it->second) config.resize(runs);
      }
      it->second[(i / runs) % 2][i % runs] = v;
    };
    for (std::size_t i = k * 2 * runs; i < (k + 1) * 2 * runs; ++i)
      for (const auto& [metric, v] : results[i].metrics) add(metric, v, i);
    for (std::size_t i = k * 2 * runs; i < (k + 1) * 2 * runs; ++i) {
      add("context_switches", results[i].context_switches, i);
      add("migrations", results[i].migrations, i);
      add("lb_migrations", results[i].lb_migrations, i);
    }
    nlohmann::json point;
    point["metric_order"] = order;
    point["metrics"] = nlohmann::json::object();
    for (const std::string& metric : order) {
      const auto& v = values.at(metric);
      const metrics::Comparison c = metrics::compare_samples(v[0], v[1]);
      const int d = decimals_for(std::max(std::fabs(c.base.mean), std::fabs(c.with.mean)));
      const bool has_ci = c.ci95_lo_pct.has_value();
      const char* star = c.pairs < runs ? "*" : "";
      std::vector<std::string> row = {
          metric, mean_sd(c.base, d), mean_sd(c.with, d),
          c.diff_pct ? fixed_point(*c.diff_pct, 2, true) + "%" + star : "n/a",
          // As many decimals as the diff, so that the interval visibly holds it.
          has_ci ? fmt::format("[{}%, {}%]{}", fixed_point(*c.ci95_lo_pct, 2, true),
                               fixed_point(*c.ci95_hi_pct, 2, true), star)
                 : "n/a"};
      if (swept) row.insert(row.begin(), points[k].value);
      rows.push_back(std::move(row));
      if (c.diff_pct && c.pairs < runs) partial = true;
      nlohmann::json m;
      m["base"] = stats_json(c.base, v[0]);
      m["with"] = stats_json(c.with, v[1]);
      m["diff_pct"] = c.diff_pct ? nlohmann::json(*c.diff_pct) : nlohmann::json(nullptr);
      m["ci95_pct"] = has_ci ? nlohmann::json::array({*c.ci95_lo_pct, *c.ci95_hi_pct})
                             : nlohmann::json(nullptr);
      m["pairs"] = c.pairs;
      point["metrics"][metric] = std::move(m);
    }
    point["identical_runs"] = same;
    if (!swept) {
      j["metric_order"] = std::move(point["metric_order"]);
      j["metrics"] = std::move(point["metrics"]);
      j["identical_runs"] = same;
    } else {
      point["value"] = points[k].value;
      point["args"] = points[k].swept;
      point["machine"] = machines[k];
      j["points"].push_back(std::move(point));
    }
  }
  txt += render_table(rows, swept ? 2 : 1);
  if (partial)
    txt += "* over the seeds where both configurations reported the metric (see pairs in --json)\n";
  if (!identical.empty()) {
    std::vector<std::string> at;
    std::string no_smt;  // the first of those points' machines without SMT
    for (std::size_t k : identical) {
      at.push_back(points[k].value);
      if (!smt[k] && no_smt.empty()) no_smt = machines[k];
    }
    const bool smt_change = smt_search_changed(base, with);
    txt += identical_note(!swept ? std::string()
                          : identical.size() == points.size()
                              ? fmt::format(" at every {} value", sweep_label)
                              : fmt::format(" at {} {}", sweep_label, fmt::join(at, ", ")),
                          model_unchanged, smt_change ? no_smt : "",
                          smt_change && (kernel::takes_select_idle_sibling_v513(base) ||
                                         kernel::takes_select_idle_sibling_v513(with)));
  }
  // Wall time is the one figure that differs between identical invocations.
  j["wall_time_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void register_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareRequest>();
  auto json_out = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "A/B comparison: run SUBCOMMAND ARGS... with seeds 1..N for a base and a changed kernel\n"
      "configuration and print one table (LKML style) of every metric the subcommand reports: "
      "base\n"
      "mean ± sd, with mean ± sd, the difference in % of the base mean and its 95% confidence "
      "interval\n"
      "(a paired t interval: run N of each configuration shares seed N). SPEC is "
      "[PROFILE][,FEATURE...], e.g. --base v5.3 --with "
      "v5.3,SIS_SCHED_IDLE_FALLBACK;\n"
      "--with without a profile changes the base. Usage:\n"
      "  schedtwin compare [--runs N] [--base SPEC] --with SPEC [--jobs J] [--sweep NAME=V,...]\n"
      "                   -- SUBCOMMAND ARGS...\n"
      "SUBCOMMAND: rt-app, messaging, hackbench, schbench, pingpong, run. ARGS take the "
      "subcommand's own\n"
      "options except --seed, --kernel, --features, --json and --logdir, which are compare's,\n"
      "and the per-run outputs (--lb-stats, --explain*, --check, --schedstat, --trace*, "
      "--ftrace),\nwhich it refuses: run one configuration alone for those.\n"
      "run SCENARIO.json: the file's machine stands (--machine in ARGS overrides it); its kernel\n"
      "and features are the base that --base and --with change (a profile they name replaces\n"
      "both); its seed gives way to compare's; metrics are named w<i>.<workload>.<figure>, i the\n"
      "workload's index.\n"
      "After the subcommand's metrics, every table has the runs' context_switches, migrations\n"
      "(tasks moved to another CPU by any path, as perf stat's cpu-migrations) and\n"
      "lb_migrations (those the load balancer moved).\n"
      "When with's runs give base's figures seed for seed, a note after the table says so:\n"
      "check with --explain that the change is read on this profile and machine.");
  sub->add_option("--runs", o->runs, "Seeds 1..N for each configuration")
      ->capture_default_str()
      ->check(range(1, 1000));
  sub->add_option(
      "--base", o->base_spec,
      "Base configuration SPEC: an optional kernel profile then features (default: the "
      "subcommand's default profile; for run, the scenario file's kernel and features)");
  sub->add_option(
         "--with", o->with_spec,
         "Changed configuration SPEC; without a leading profile its features apply on the base")
      ->required();
  sub->add_option("-j,--jobs", o->jobs,
                  "Runs in parallel (threads; default: this machine's hardware threads); the "
                  "results do not depend on it")
      ->capture_default_str()
      ->check(range(1, 1024));
  sub->add_option(
         "--json", *json_out,
         "Write the comparison as one JSON document: metrics.<name>.{base,with}.{mean,sd,n}, "
         "diff_pct, ci95_pct, pairs, identical_runs (true when every run of with gave base's "
         "figures; per point under --sweep) and the common keys (\"-\": to stdout, and the "
         "table to stderr)")
      ->check(file_name());
  sub->add_option(
         "--logdir", o->logdir,
         "rt-app: write each run's logs to DIR/base/seed-N/ and DIR/with/seed-N/ (without it, "
         "no logs at all)")
      ->check(file_name());
  sub->add_option(
         "--sweep", o->sweeps,
         "NAME=V1,V2,...: run the comparison once per value, with the subcommand option "
         "NAME\n(-g for one letter, else --NAME) set to it, and print one table with a row "
         "per value\nand metric, e.g. --sweep g=1,4,8,16 -- hackbench -l 1000; logs go "
         "to DIR/NAME=V/.\nGiven again, the sweeps go value by value together: --sweep "
         "g=1,4 --sweep l=2560,640")
      ->allow_extra_args(false);  // one value per --sweep, so "--sweep g=1,2 -- ..." stops there
  // Not ->required(): run_compare's message says what is missing better than "args is required".
  sub->add_option("args", o->args, "-- SUBCOMMAND ARGS...");
  sub->callback([o, json_out] {
    if (!json_out->empty()) check_json_output(*json_out);
    CompareOutcome out = run_compare(*o);
    emit_report(out.text, out.json, *json_out);
  });
}

}  // namespace schedtwin::cli
