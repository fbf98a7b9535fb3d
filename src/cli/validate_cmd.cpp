// `schedtwin validate` (issue 9): the fixed list of small workloads, run for real on this
// host and simulated on its calibrated machine, and the scorecard (cli/validate.h).
//
// Real side: the Debian programs rt-app (1.0), perf bench sched messaging (linux-perf) and
// hackbench (rt-tests), run with fork/exec and their output parsed (cli/host_exec.h,
// cli/host_parse.h). Simulated side: the same rt-app task set through run_rtapp_config and
// the same messaging parameters through run_messaging_command, with seeds 1..repeats.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/host_exec.h"
#include "cli/host_measure.h"
#include "cli/host_parse.h"
#include "cli/messaging_cmd.h"
#include "cli/rtapp_cmd.h"
#include "cli/run_common.h"
#include "cli/validate.h"
#include "engine/error.h"
#include "machine/capture.h"
#include "machine/machine_file.h"
#include "metrics/summary.h"
#include "workload/json_relaxed.h"
#include "workload/rtapp.h"

namespace schedtwin::cli {

namespace {

namespace fs = std::filesystem;
using validate::Row;
using validate::spread_of;

struct Opts {
  std::string machine;  // "" : calibrate first
  std::string kernel;   // "": the profile of the host's kernel (profile_for_kernel_release)
  int repeats = 3;
  int duration_s = 4;         // each rt-app run
  std::int64_t loops = 2000;  // perf bench sched messaging -l
  std::int64_t hackbench_loops = 1000;
  bool tiny = false;
  std::string out, json_out, save_machine, workdir;
};

// The programs the real side runs and the Debian package of each.
struct Tool {
  const char* program;
  const char* package;
};
constexpr Tool kTools[] = {{"rt-app", "rt-app"},
                           {"perf", "linux-perf"},
                           {"hackbench", "rt-tests"},
                           {"chrt", "util-linux"}};

constexpr int kMessagingGroups[] = {1, 2, 4};
constexpr int kHackbenchGroups = 2;
constexpr int kIdleLoops = 2;  // SCHED_IDLE busy loops beside rt-app in the second case
constexpr double kToolTimeoutS = 300;
// The busy loop beside rt-app: Debian's rt-app 1.0 refuses "policy": "SCHED_IDLE".
const std::vector<std::string> kIdleLoop = {"chrt", "--idle", "0",
                                            "sh",   "-c",     "while :; do :; done"};

void require_tools() {
  std::string missing, packages;
  for (const Tool& t : kTools) {
    if (!host::find_in_path(t.program).empty()) continue;
    missing += fmt::format("{}{} (package {})", missing.empty() ? "" : ", ", t.program, t.package);
    packages += std::string(" ") + t.package;
  }
  if (!missing.empty())
    throw InputError(fmt::format("validate: {} not found in PATH; install with: apt-get install{}",
                                 missing, packages));
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  const std::size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

host::ExecResult run_tool(const std::vector<std::string>& argv, const char* package,
                          double timeout_s = kToolTimeoutS, const std::string& cwd = "") {
  host::ExecResult r = host::run_program(argv, timeout_s, cwd);
  if (r.timed_out)
    throw InputError(fmt::format("validate: `{}` did not finish within {:.0f} s",
                                 command_text(argv), timeout_s));
  if (r.exit_status != 0)
    throw InputError(fmt::format("validate: `{}` failed (exit status {}): {} (package {})",
                                 command_text(argv), r.exit_status, last_line(r.output), package));
  return r;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw InputError(fmt::format("validate: cannot write {}", path));
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- rt-app ----

struct RtAppFigures {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, missed_pct = 0;
};

// wu_lat percentiles over every log row (rows of missed periods hold 0, as st and textogram
// see them); missed = rows whose slack is negative (the timer had already expired).
RtAppFigures rtapp_figures(std::vector<double> wu, const std::vector<double>& slack) {
  RtAppFigures f;
  if (wu.empty()) return f;
  const metrics::Summary s = metrics::summarize(wu);
  f.p50 = s.p50;
  f.p90 = s.p90;
  f.p99 = s.p99;
  f.mean = s.mean;
  const auto missed = std::count_if(slack.begin(), slack.end(), [](double x) { return x < 0; });
  f.missed_pct =
      slack.empty() ? 0 : 100.0 * static_cast<double>(missed) / static_cast<double>(slack.size());
  return f;
}

// rt-app's ns per loop on this host, as the experiment will see it: a probe with a guessed
// calibration runs `instances` threads (one per CPU, as the experiment does) of 10 x 20 ms of
// work each; the median iteration scales the guess. (The fastest iteration, used until
// December 2026, made most periods overrun on a host whose speed varies: a period's
// 5333 us of work then took over 7777 us, and its wu_lat was 0.)
int probe_pload(const std::string& dir, int instances) {
  constexpr int kGuessNs = 40, kRunUs = 20000;
  fs::create_directories(dir);
  const std::string json = fmt::format(
      R"({{ "tasks": {{ "probe": {{ "instance": {}, "loop": 1, "phases": {{ "p": {{ "loop": 10, "run": {} }} }} }} }},
  "global": {{ "calibration": {}, "logdir": {}, "log_basename": "probe", "lock_pages": false }} }}
)",
      instances, kRunUs, kGuessNs, nlohmann::json(dir).dump());
  write_text(dir + "/probe.json", json);
  run_tool({"rt-app", dir + "/probe.json"}, "rt-app", 60, dir);
  std::vector<double> runs;
  for (int i = 0; i < instances; ++i) {
    const std::string log = fmt::format("{}/probe-probe-{}.log", dir, i);
    if (!fs::exists(log)) throw InputError(fmt::format("validate: rt-app wrote no log {}", log));
    for (const auto& r : host::parse_rtapp_log(read_all(log), log))
      runs.push_back(static_cast<double>(r.run));
  }
  if (runs.empty()) throw InputError(fmt::format("validate: {}: rt-app wrote no rows", dir));
  const double median = host::make_figure(runs, "probe").median;
  return std::max(1, static_cast<int>(std::lround(kGuessNs * median / kRunUs)));
}

RtAppFigures real_rtapp(const std::string& dir, int instances, int idle_loops, int duration_s,
                        int pload) {
  fs::create_directories(dir);
  const std::string json_path = dir + "/periodic.json";
  write_text(json_path, validate::rtapp_periodic_json(instances, 0, duration_s, pload, dir));
  std::vector<host::BackgroundProcess> loops;
  for (int i = 0; i < idle_loops; ++i) loops.emplace_back(kIdleLoop);
  if (idle_loops > 0) {
    usleep(50'000);
    for (host::BackgroundProcess& p : loops)
      if (!p.running())
        throw InputError(fmt::format("validate: `{}` exited at once (package util-linux)",
                                     command_text(kIdleLoop)));
  }
  run_tool({"rt-app", json_path}, "rt-app", duration_s + 60.0, dir);
  loops.clear();  // kills the busy loops
  std::vector<double> wu, slack;
  for (int idx = 0; idx < instances; ++idx) {
    const std::string log = fmt::format("{}/rt-app-cfs_thread-{}.log", dir, idx);
    if (!fs::exists(log)) throw InputError(fmt::format("validate: rt-app wrote no log {}", log));
    for (const auto& r : host::parse_rtapp_log(read_all(log), log)) {
      wu.push_back(static_cast<double>(r.wu_lat));
      slack.push_back(static_cast<double>(r.slack));
    }
  }
  return rtapp_figures(wu, slack);
}

RtAppFigures sim_rtapp(const CommonOptions& o, int nr_cpus, int instances, int idle_loops,
                       int duration_s, int pload) {
  const std::string json =
      validate::rtapp_periodic_json(instances, idle_loops, duration_s, pload, "./");
  const workload::rtapp::Config cfg =
      workload::rtapp::parse(workload::parse_relaxed_json(json, "validate-periodic.json"),
                             "validate-periodic.json", nr_cpus);
  RtAppOutcome out = run_rtapp_config(o, cfg, "", false);
  return rtapp_figures(out.wu_lat_us["cfs_thread"], out.slack_us["cfs_thread"]);
}

// ---- messaging ----

std::vector<std::string> perf_argv(int groups, std::int64_t loops) {
  return {"perf",  "bench",
          "sched", "messaging",
          "-g",    std::to_string(groups),
          "-l",    std::to_string(loops)};
}
std::vector<std::string> hackbench_argv(int groups, std::int64_t loops) {
  return {"hackbench", "-p", "-g", std::to_string(groups), "-l", std::to_string(loops)};
}

// Runs a messaging benchmark for real and reads its time in seconds with `parse`, which
// looks for the line named `line`.
double real_seconds(const std::vector<std::string>& argv, const char* package,
                    std::optional<double> (*parse)(std::string_view), const char* line) {
  const host::ExecResult r = run_tool(argv, package);
  const auto t = parse(r.output);
  if (!t)
    throw InputError(fmt::format("validate: `{}` printed no \"{}\" line: {}", command_text(argv),
                                 line, last_line(r.output)));
  return *t;
}

double real_perf(int groups, std::int64_t loops) {
  return real_seconds(perf_argv(groups, loops), "linux-perf", host::parse_perf_total_time,
                      "Total time");
}

double real_hackbench(int groups, std::int64_t loops) {
  return real_seconds(hackbench_argv(groups, loops), "rt-tests", host::parse_hackbench_time,
                      "Time:");
}

double sim_messaging(const CommonOptions& o, int groups, std::int64_t loops, bool hackbench) {
  MessagingArgs a;
  a.common = o;
  a.p.groups = groups;
  a.p.loops = loops;
  a.pipe = hackbench;
  const workload::MessagingParams p = hackbench ? hackbench_params(a) : messaging_params(a);
  const MessagingOutcome out = run_messaging_command(o, p, hackbench ? "hackbench" : "messaging");
  return static_cast<double>(out.result.total_time()) / 1e9;
}

std::string idle_exits(const machine::Machine& m) {
  std::string s;
  for (const machine::IdleState& st : m.idle_states)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", st.name, st.real_exit_ns);
  return s.empty() ? "none" : s;
}

std::string read_loadavg() {
  std::string s = read_all("/proc/loadavg");
  const std::size_t sp = s.find(' ');
  return sp == std::string::npos ? "?" : s.substr(0, sp);
}

int host_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

void run_validate(const Opts& opts) {
  Opts o = opts;
  if (o.kernel.empty()) o.kernel = validate::profile_for_kernel_release(host::kernel_release());
  if (!o.out.empty()) check_output_file(o.out, "--out");
  if (!o.json_out.empty()) check_json_output(o.json_out);
  if (!o.save_machine.empty()) check_output_file(o.save_machine, "--save-machine");
  if (!o.workdir.empty() && !fs::is_directory(o.workdir))
    throw InputError(fmt::format("--workdir {}: not a directory", o.workdir));
  if (!o.machine.empty()) machine::load_machine(o.machine, "--machine");  // fail before running
  require_tools();

  std::unique_ptr<host::TempDir> tmp;
  std::string work = o.workdir;
  if (work.empty()) {
    tmp = std::make_unique<host::TempDir>("schedtwin-validate-");
    work = tmp->path();
  }
  const auto progress = [](const std::string& what) {
    host::throw_if_interrupted();  // a signal during a simulation stops at the next stage
    fmt::print(stderr, "validate: {}\n", what);
  };

  // The machine to simulate.
  std::string machine_path = o.machine, machine_note;
  if (machine_path.empty()) {
    progress("calibrating this host (schedtwin calibrate)");
    const host::HostCalibration c =
        host::measure_host(o.tiny ? host::quick_calibrate_params() : host::CalibrateParams{});
    const machine::Machine m = host::calibrated_machine(c, machine::capture_sysfs(""));
    machine_path = work + "/host.json";
    write_text(machine_path, machine::dump_machine_file(m));
    if (!o.save_machine.empty())
      write_file_atomically(o.save_machine, machine::dump_machine_file(m), "--save-machine");
    machine_note = fmt::format("host, calibrated by this run ({}{})", c.date,
                               o.save_machine.empty() ? "" : "; saved as " + o.save_machine);
  } else {
    machine_note = fmt::format("{} (--machine)", o.machine);
  }
  const machine::Machine sim_machine = machine::load_machine(machine_path, "--machine");
  if (!o.machine.empty()) {
    // A `machine capture` file keeps the default costs: a scorecard against them measures
    // the defaults, not this host.
    const std::vector<std::string_view> names = machine::cost_names();
    int defaults = 0;
    for (std::string_view name : names)
      defaults +=
          machine::find_cost(sim_machine.costs, name)->source.starts_with(machine::kUncalibrated);
    if (defaults > 0) {
      machine_note += fmt::format(
          "; {} of its {} costs are uncalibrated defaults (machine capture): run schedtwin "
          "calibrate for this host's",
          defaults, names.size());
      progress(fmt::format("note: {}: {} of its {} costs are uncalibrated defaults", o.machine,
                           defaults, names.size()));
    }
  }
  const int instances = host_cpus();
  const std::string load_before = read_loadavg();

  progress("probing rt-app's ns per loop");
  const int pload = probe_pload(work + "/pload", instances);

  // Real runs: repeats interleaved so that a change of the host's load spreads over all.
  std::vector<RtAppFigures> real_rt[2];
  std::vector<double> real_msg[3], real_hb;
  for (int r = 0; r < o.repeats; ++r) {
    for (int c = 0; c < 2; ++c) {
      const int idle = c == 0 ? 0 : kIdleLoops;
      progress(fmt::format("repeat {}/{}: rt-app periodic, {} SCHED_IDLE loops, {} s", r + 1,
                           o.repeats, idle, o.duration_s));
      real_rt[c].push_back(real_rtapp(fmt::format("{}/rtapp-{}idle-r{}", work, idle, r + 1),
                                      instances, idle, o.duration_s, pload));
    }
    for (int g = 0; g < 3; ++g) {
      progress(fmt::format("repeat {}/{}: {}", r + 1, o.repeats,
                           command_text(perf_argv(kMessagingGroups[g], o.loops))));
      real_msg[g].push_back(real_perf(kMessagingGroups[g], o.loops));
    }
    progress(fmt::format("repeat {}/{}: {}", r + 1, o.repeats,
                         command_text(hackbench_argv(kHackbenchGroups, o.hackbench_loops))));
    real_hb.push_back(real_hackbench(kHackbenchGroups, o.hackbench_loops));
  }

  // Simulations: seeds 1..repeats.
  // The work directory's host.json is gone when validate ends: name what stays.
  progress(fmt::format("simulating on {} with kernel profile {}",
                       !o.machine.empty()        ? o.machine
                       : !o.save_machine.empty() ? o.save_machine
                                                 : std::string("this host's calibrated machine"),
                       o.kernel));
  std::vector<RtAppFigures> sim_rt[2];
  std::vector<double> sim_msg[3], sim_hb;
  for (int seed = 1; seed <= o.repeats; ++seed) {
    CommonOptions co;
    co.machine = machine_path;
    co.kernel = o.kernel;
    co.seed = static_cast<std::uint64_t>(seed);
    for (int c = 0; c < 2; ++c)
      sim_rt[c].push_back(sim_rtapp(co, sim_machine.nr_cpus(), instances, c == 0 ? 0 : kIdleLoops,
                                    o.duration_s, pload));
    for (int g = 0; g < 3; ++g)
      sim_msg[g].push_back(sim_messaging(co, kMessagingGroups[g], o.loops, false));
    sim_hb.push_back(sim_messaging(co, kHackbenchGroups, o.hackbench_loops, true));
  }

  // The scorecard.
  std::vector<Row> rows;
  for (int c = 0; c < 2; ++c) {
    const std::string wl = fmt::format("rt-app {} x run 5333/period 7777 us, {} SCHED_IDLE loops",
                                       instances, c == 0 ? 0 : kIdleLoops);
    auto pick = [](const std::vector<RtAppFigures>& v, double RtAppFigures::*f) {
      std::vector<double> x;
      for (const RtAppFigures& r : v) x.push_back(r.*f);
      return spread_of(x);
    };
    const std::pair<const char*, double RtAppFigures::*> metrics[] = {
        {"wu_lat p50 (us)", &RtAppFigures::p50},
        {"wu_lat p90 (us)", &RtAppFigures::p90},
        {"wu_lat p99 (us)", &RtAppFigures::p99},
        {"wu_lat mean (us)", &RtAppFigures::mean},
        {"missed periods (%)", &RtAppFigures::missed_pct}};
    for (int k = 0; k < 5; ++k) {
      Row row{wl, metrics[k].first, pick(real_rt[c], metrics[k].second),
              pick(sim_rt[c], metrics[k].second), std::nullopt};
      if (k < 2) row.tolerance = validate::kWakeupLatencyTolerance;
      rows.push_back(row);
    }
  }
  for (int g = 0; g < 3; ++g)
    rows.push_back({command_text(perf_argv(kMessagingGroups[g], o.loops)), "total time (s)",
                    spread_of(real_msg[g]), spread_of(sim_msg[g]), validate::kMessagingTolerance});
  std::vector<double> real_growth, sim_growth;
  for (int r = 0; r < o.repeats; ++r) {
    real_growth.push_back(real_msg[0][static_cast<size_t>(r)] > 0
                              ? real_msg[2][static_cast<size_t>(r)] /
                                    real_msg[0][static_cast<size_t>(r)]
                              : 0);
    sim_growth.push_back(sim_msg[0][static_cast<size_t>(r)] > 0
                             ? sim_msg[2][static_cast<size_t>(r)] /
                                   sim_msg[0][static_cast<size_t>(r)]
                             : 0);
  }
  rows.push_back({fmt::format("perf bench sched messaging -l {}", o.loops),
                  "time growth 1 -> 4 groups (x)", spread_of(real_growth), spread_of(sim_growth),
                  validate::kMessagingTolerance});
  rows.push_back({command_text(hackbench_argv(kHackbenchGroups, o.hackbench_loops)), "time (s)",
                  spread_of(real_hb), spread_of(sim_hb), validate::kMessagingTolerance});

  char hostname[256] = {};
  gethostname(hostname, sizeof hostname - 1);
  std::vector<std::string> header = {
      "schedtwin validate: small workloads run for real on this host beside their simulation",
      fmt::format("host:       '{}', {} CPUs, load average {} before the real runs", hostname,
                  instances, load_before),
      fmt::format("machine:    {}", machine_note),
      fmt::format("  costs ns: context_switch {}, wakeup {}, ipi {}, pipe w/r {}/{}, socket w/r "
                  "{}/{}, cache_cold {}, timer_irq {}; idle exit {}",
                  sim_machine.costs.context_switch.ns, sim_machine.costs.wakeup.ns,
                  sim_machine.costs.ipi.ns, sim_machine.costs.pipe_write.ns,
                  sim_machine.costs.pipe_read.ns, sim_machine.costs.socket_write.ns,
                  sim_machine.costs.socket_read.ns, sim_machine.costs.cache_cold.ns,
                  sim_machine.costs.timer_irq.ns, idle_exits(sim_machine)),
      o.repeats == 1
          ? fmt::format("simulation: kernel profile {}, seed 1; real: 1 run", o.kernel)
          : fmt::format(
                "simulation: kernel profile {}, seeds 1-{}; real: {} repeats (median [min-max])",
                o.kernel, o.repeats, o.repeats),
      fmt::format("rt-app:     {} s per run, calibration {} ns per loop (probed); SCHED_IDLE loops "
                  "started with `{}`",
                  o.duration_s, pload, "chrt --idle 0 sh -c 'while :; do :; done'"),
      fmt::format("tolerances: fixed in src/cli/validate.h before any result: wu_lat p50/p90 "
                  "sim/real {}, messaging times and growth {}",
                  validate::kWakeupLatencyTolerance.text, validate::kMessagingTolerance.text)};
  if (o.tiny)
    header.push_back(
        "scale:      --tiny: the runs are too short for PASS / MISS to say anything about the "
        "model (the real ones are mostly process start-up); they show that every step runs");
  const std::string card = validate::format_scorecard(header, rows);
  if (!o.out.empty()) write_file_atomically(o.out, card, "--out");
  nlohmann::json j;
  if (!o.json_out.empty()) {
    j = validate::scorecard_json(rows);
    j["schema_version"] = 1;
    j["command"] = "validate";
    j["machine"] = o.machine.empty() ? std::string("host (calibrated)") : o.machine;
    j["kernel"] = o.kernel;
    j["repeats"] = o.repeats;
    j["rtapp_duration_s"] = o.duration_s;
    j["rtapp_pload_ns"] = pload;
    j["messaging_loops"] = o.loops;
    j["hackbench_loops"] = o.hackbench_loops;
    j["instances"] = instances;
    j["load_average_before"] = load_before;
  }
  emit_report(card, j, o.json_out);
}

}  // namespace

void register_validate_command(CLI::App& app) {
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "validate",
      "Run a fixed list of small workloads for real on this host (rt-app periodic tasks with 0\n"
      "and 2 SCHED_IDLE busy loops beside them, perf bench sched messaging with 1, 2 and 4\n"
      "groups, hackbench -p) and simulated on the host's calibrated machine, and print a\n"
      "scorecard: real (median and range over repeats), simulated, ratio, and PASS or MISS\n"
      "against tolerances fixed in the repository. Needs rt-app, perf (linux-perf), hackbench\n"
      "(rt-tests) and chrt. Runs `calibrate` first unless given --machine. About a minute at\n"
      "the default scale on a 2-CPU host; --tiny takes a few seconds and only proves the\n"
      "plumbing. Ctrl-C stops the host programs and removes the work directory.");
  sub->add_option("--machine", o->machine,
                  "Simulate this machine (a file written by `schedtwin calibrate`) instead of "
                  "calibrating first");
  sub->add_option("--kernel", o->kernel,
                  "Kernel profile of the simulation (default: v6.6 on a host running 6.6 or "
                  "later, else the nearest CFS profile to the host's release: 5.15 -> v5.17, "
                  "6.1 -> v6.0, 5.10 -> v5.7)");
  sub->add_option("--repeats", o->repeats, "Real runs of each workload (and simulated seeds)")
      ->check(range(1, 50))
      ->capture_default_str();
  sub->add_option("--duration", o->duration_s, "Seconds of each rt-app run")
      ->check(range(1, 600))
      ->capture_default_str();
  sub->add_option("--loops", o->loops, "perf bench sched messaging -l")
      ->check(range(std::int64_t{1}, std::int64_t{1000000}))
      ->capture_default_str();
  sub->add_option("--hackbench-loops", o->hackbench_loops, "hackbench -l")
      ->check(range(std::int64_t{1}, std::int64_t{1000000}))
      ->capture_default_str();
  sub->add_flag("--tiny", o->tiny,
                "Smallest scale, for tests: 1 repeat, 1 s rt-app runs, -l 20, quick calibration "
                "(options given explicitly still apply)");
  sub->add_option("--out", o->out, "Also write the scorecard to FILE")->check(file_name());
  sub->add_option("--json", o->json_out,
                  "Write the scorecard's figures as JSON to FILE (\"-\": to stdout, and the "
                  "scorecard to stderr)")
      ->check(file_name());
  sub->add_option("--save-machine", o->save_machine,
                  "Keep the machine file calibrated by this run as FILE")
      ->check(file_name());
  sub->add_option("--workdir", o->workdir,
                  "Keep the real runs' files (rt-app configurations and logs) in this existing "
                  "directory instead of a temporary one");
  sub->callback([o, sub] {
    Opts opts = *o;
    if (opts.tiny) {
      if (!sub->count("--repeats")) opts.repeats = 1;
      if (!sub->count("--duration")) opts.duration_s = 1;
      if (!sub->count("--loops")) opts.loops = 20;
      if (!sub->count("--hackbench-loops")) opts.hackbench_loops = 20;
    }
    if (!opts.machine.empty() && !opts.save_machine.empty())
      throw UsageError(
          "--save-machine keeps a machine calibrated by this run; with --machine "
          "nothing is calibrated");
    // Ctrl-C or a kill: stop the busy loops and remove the work directory (Interrupted).
    const host::InterruptGuard guard;
    run_validate(opts);
  });
}

}  // namespace schedtwin::cli
