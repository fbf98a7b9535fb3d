#include "cli/rtapp_cmd.h"

#include <fmt/core.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "cli/run_common.h"
#include "engine/error.h"
#include "metrics/st.h"
#include "metrics/summary.h"
#include "metrics/textogram.h"

namespace schedtwin::cli {

namespace {

// A task set without "duration" ends when every thread has exited, or at this bound
// (rt-app itself would run on until interrupted).
constexpr Time kMaxUnboundedRun = 60 * kNsPerSec;

nlohmann::json summary_json(std::vector<double> v) {
  metrics::Summary s = metrics::summarize(std::move(v));
  return {{"n", s.n},           {"min", s.min}, {"max", s.max}, {"sum", s.sum}, {"mean", s.mean},
          {"stddev", s.stddev}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}};
}

// The first directory of `dir` that does not exist yet (empty when dir exists); InputError
// when dir or one of its parents exists and is not a directory.
std::filesystem::path first_missing_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path missing;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty(); p = p.parent_path()) {
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec))
        throw InputError(p == fs::path(dir).lexically_normal()
                             ? fmt::format("--logdir {}: exists and is not a directory", dir)
                             : fmt::format("--logdir {}: {} is not a directory", dir, p.string()));
      break;
    }
    missing = p;
    if (p == p.parent_path()) break;
  }
  return missing;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : " ") + std::to_string(c);
  return s;
}

// A file without "duration" whose threads have not all ended by kMaxUnboundedRun: say so on
// stderr, naming the threads asleep on a lock, condition, barrier or suspend (the usual
// cause: a resume, signal or barrier member that never comes), rather than stop silently.
void warn_unfinished(const CommonOptions& o, const std::string& taskset,
                     const workload::rtapp::Runner& runner) {
  int alive = 0;
  std::string asleep;
  int nr_asleep = 0;
  for (int i = 0; i < runner.nr_threads(); ++i) {
    const std::string w = runner.thread_wait(i);
    if (w.empty()) continue;
    ++alive;
    if (w == "running") continue;
    if (++nr_asleep <= 8)
      asleep +=
          fmt::format("{}{}-{} ({})", asleep.empty() ? "" : ", ", runner.thread_task(i), i, w);
  }
  if (alive == 0) return;
  if (nr_asleep > 8) asleep += fmt::format(" and {} more", nr_asleep - 8);
  say_note(o, fmt::format("schedtwin: warning: {}: no \"duration\" (or -1), and {} of {} threads "
                          "had not ended after {} s, where the run stops (rt-app would run "
                          "on){}{}\n",
                          taskset, alive, runner.nr_threads(), kMaxUnboundedRun / kNsPerSec,
                          asleep.empty() ? "" : "; asleep at the end: ", asleep));
}

}  // namespace

RtAppKernelFigures read_kernel_figures(const workload::rtapp::Runner& runner) {
  RtAppKernelFigures f;
  for (int i = 0; i < runner.nr_threads(); ++i) {
    const std::string& task = runner.thread_task(i);
    const kernel::TaskStats& st = runner.thread_sched_stats(i);
    f.fork_cpus[task].push_back(st.fork_cpu);
    RtAppKernelFigures::SchedSums& sum = f.sched[task];
    sum.runtime += st.sum_exec_runtime;
    sum.run_delay += st.run_delay;
    sum.switches += st.nr_switches;
    sum.migrations += st.nr_migrations;
    sum.wakeups += st.nr_wakeups;
  }
  return f;
}

void rtapp_task_report(const workload::rtapp::Config& cfg, workload::rtapp::Runner& runner,
                       const RtAppKernelFigures& kf, bool keep_samples, bool release_rows,
                       RtAppOutcome& out, nlohmann::json& tasks) {
  for (const auto& d : cfg.tasks) {
    out.task_order.push_back(d.name);
    if (d.has_timer) out.timer_tasks.push_back(d.name);
  }
  out.fork_cpus = kf.fork_cpus;
  // A name given to two tasks is one task of the report (one sample, one row), in file order.
  std::vector<std::string> names;
  for (const std::string& name : out.task_order)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::map<std::string, std::vector<int>> threads_of;  // task name -> its threads, in idx order
  for (int i = 0; i < runner.nr_threads(); ++i) threads_of[runner.thread_task(i)].push_back(i);

  // Per task name, the samples of all its threads' rows in thread then row order: one column
  // of one task at a time, each vector reserved to size. The rows are freed as the last column
  // is read when release_rows.
  auto column = [&](const std::vector<int>& idxs, bool wu_lat, bool release) {
    std::size_t n = 0;
    for (int i : idxs) n += runner.nr_rows(i);
    std::vector<double> v;
    v.reserve(n);
    for (int i : idxs) {
      for (const workload::rtapp::RowFigures& f : runner.row_figures(i))
        v.push_back(wu_lat ? static_cast<double>(f.wu_lat) : static_cast<double>(f.slack));
      if (release) runner.release_rows(i);
    }
    return v;
  };
  // A column summarised in place (sorted), unless compare keeps the samples in row order.
  auto summarize = [keep_samples](std::vector<double> v,
                                  std::map<std::string, std::vector<double>>& kept,
                                  const std::string& name) {
    if (!keep_samples) return summary_json(std::move(v));
    nlohmann::json j = summary_json(v);
    kept[name] = std::move(v);
    return j;
  };
  struct TaskFigures {
    std::string wu_lat_text;  // st and textogram, for tasks with timers
    nlohmann::json wu_lat, slack;
  };
  std::map<std::string, TaskFigures> figures;
  for (const auto& name : names) {
    TaskFigures& f = figures[name];
    const std::vector<int>& idxs = threads_of[name];
    std::vector<double> wu = column(idxs, true, false);
    if (std::find(out.timer_tasks.begin(), out.timer_tasks.end(), name) != out.timer_tasks.end())
      f.wu_lat_text =
          metrics::st_format(metrics::st_stats(wu)) + metrics::textogram(wu, 0, 1000, 10);
    const auto over_1ms = std::count_if(wu.begin(), wu.end(), [](double x) { return x > 1000; });
    const double over_1ms_pct =
        wu.empty() ? 0.0 : 100.0 * static_cast<double>(over_1ms) / static_cast<double>(wu.size());
    f.wu_lat = summarize(std::move(wu), out.wu_lat_us, name);
    f.wu_lat["over_1ms_pct"] = over_1ms_pct;  // the posts' "> 1 ms" share
    f.slack = summarize(column(idxs, false, release_rows), out.slack_us, name);
  }

  std::string& txt = out.summary;
  txt += "placed at fork (wakeups and load balancing may move them later):\n";
  for (const auto& name : out.task_order)
    txt += fmt::format("  {:<16} CPUs {}\n", name, cpu_list(out.fork_cpus[name]));
  for (const auto& name : out.timer_tasks) {
    txt += fmt::format("\n{} wu_lat (us), {} threads:\n", name, out.fork_cpus[name].size());
    txt += figures.at(name).wu_lat_text;
  }
  auto ms = [](Time t) { return static_cast<double>(t) / 1e6; };
  auto sums_of = [&kf](const std::string& name) {  // a task of no threads has none
    const auto it = kf.sched.find(name);
    return it == kf.sched.end() ? RtAppKernelFigures::SchedSums{} : it->second;
  };
  txt +=
      "\nper task, over its threads: CPU time, run delay (runnable, waiting for a CPU), "
      "switches in\n";
  txt += fmt::format("  {:<16} {:>12} {:>13} {:>16} {:>9} {:>10} {:>8}\n", "task", "runtime ms",
                     "run delay ms", "delay/switch us", "switches", "migrations", "wakeups");
  for (const auto& name : names) {
    const RtAppKernelFigures::SchedSums sum = sums_of(name);
    txt += fmt::format(
        "  {:<16} {:>12.1f} {:>13.1f} {:>16.1f} {:>9} {:>10} {:>8}\n", name, ms(sum.runtime),
        ms(sum.run_delay),
        sum.switches ? static_cast<double>(sum.run_delay) / 1e3 / static_cast<double>(sum.switches)
                     : 0.0,
        sum.switches, sum.migrations, sum.wakeups);
  }

  for (const auto& name : names) {
    const RtAppKernelFigures::SchedSums sum = sums_of(name);
    nlohmann::json& t = tasks[name];
    t["wu_lat_us"] = figures.at(name).wu_lat;
    t["slack_us"] = figures.at(name).slack;
    t["fork_cpus"] = out.fork_cpus[name];
    t["runtime_ms"] = ms(sum.runtime);
    t["run_delay_ms"] = ms(sum.run_delay);
    t["switches"] = sum.switches;
    t["migrations"] = sum.migrations;
    t["wakeups"] = sum.wakeups;
  }
}

namespace {

// run_rtapp for a task set already read (the file, or standard input), named `label`.
RtAppOutcome run_rtapp_json(const CommonOptions& o, const workload::JNode& root,
                            const std::string& label, const std::string& logdir, bool create_logdir,
                            bool keep_samples) {
  // Only the machine is needed to read the task set (its cpus lists are checked against the
  // CPU count); run_rtapp_config makes the scenario again and says what it thinks of the
  // features, once.
  CommonOptions quiet = o;
  quiet.feature_warnings = false;
  machine::Machine m = make_scenario(quiet).machine;
  return run_rtapp_config(o, workload::rtapp::parse(root, label, m.nr_cpus()), logdir,
                          create_logdir, keep_samples);
}

}  // namespace

RtAppOutcome run_rtapp(const CommonOptions& o, const std::string& taskset,
                       const std::string& logdir, bool create_logdir, bool keep_samples) {
  return run_rtapp_json(o, workload::read_relaxed_json_file(taskset), taskset, logdir,
                        create_logdir, keep_samples);
}

RtAppOutcome run_rtapp_config(const CommonOptions& o, const workload::rtapp::Config& cfg,
                              const std::string& logdir, bool create_logdir, bool keep_samples) {
  Scenario sc = make_scenario(o);
  const std::string& taskset = cfg.path;
  std::error_code ec;
  if (!logdir.empty() && !create_logdir && cfg.logs && !std::filesystem::is_directory(logdir, ec))
    throw InputError(
        fmt::format("{}: logdir \"{}\" {} (rt-app needs an existing directory)", taskset, logdir,
                    std::filesystem::exists(logdir, ec) ? "is not a directory" : "does not exist"));
  // Before simulating: the directory to create must not sit under a file.
  const bool write_logs = !logdir.empty() && cfg.logs;
  const std::filesystem::path new_dir =
      write_logs ? first_missing_dir(logdir) : std::filesystem::path();
  if (write_logs && new_dir.empty() && ::access(logdir.c_str(), W_OK) != 0)
    throw InputError(fmt::format("{}: cannot write log files in \"{}\" ({})", taskset, logdir,
                                 std::strerror(errno)));

  auto t0 = std::chrono::steady_clock::now();
  // On the heap, so that it can be freed before the summary's samples are gathered.
  auto kernel = std::make_unique<kernel::Kernel>(sc.machine, sc.config);
  kernel::Kernel& k = *kernel;
  TraceOutputs traces = open_traces(o, k);
  // Without log files only wu_lat and slack of each row are needed (a few bytes a row).
  workload::rtapp::Runner runner(
      cfg, k,
      write_logs ? workload::rtapp::RowDetail::Full : workload::rtapp::RowDetail::SummaryOnly);
  Time end = runner.end_time();
  if (o.duration_s > 0) end = k.now() + static_cast<Time>(o.duration_s * 1e9);
  if (end != kTimeNever) {
    k.run_until(end);
  } else {
    // No duration: rt-app joins its threads and exits once they end. In steps of a
    // millisecond, so that the run (and what --schedstat and --lb-stats count) ends within
    // 1 ms of the last thread's exit; at most kMaxUnboundedRun.
    while (!runner.all_exited() && k.now() < kMaxUnboundedRun)
      k.run_until(std::min<Time>(kMaxUnboundedRun, k.now() + kNsPerMs));
    warn_unfinished(o, taskset, runner);
  }
  for (const std::string& d : runner.self_deadlocks())
    say_note(o, fmt::format("schedtwin: warning: {}: {}\n", taskset, d));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  traces.finish();

  RtAppOutcome out;
  out.occupancy = traces.take_occupancy();
  out.ignored = cfg.ignored;
  // Everything the output needs from the kernel, then the kernel goes (with 100 000 tasks it
  // holds half the memory): its text comes after the tasks' in the summary.
  const RtAppKernelFigures kf = read_kernel_figures(runner);
  const Time sim_end = k.now();
  nlohmann::json j = common_json("rt-app", sc, k, wall);
  std::string kernel_text;
  add_kernel_reports(o, k, kernel_text, j);
  kernel.reset();
#if defined(__GLIBC__)
  // Its tasks were small blocks amid the heap: hand their pages back, or they would stay
  // resident beside the samples (which get pages of their own).
  malloc_trim(0);
#endif
  out.summary = fmt::format("rt-app {} on {} ({} CPUs), kernel {}, seed {}: {:.3f} s simulated\n",
                            taskset, sc.machine.name, sc.machine.nr_cpus(), sc.config.profile.name,
                            sc.config.seed, static_cast<double>(sim_end) / 1e9);
  rtapp_task_report(cfg, runner, kf, keep_samples, !write_logs, out, j["tasks"]);
  out.summary += kernel_text;
  out.json = std::move(j);

  if (write_logs) {
    if (create_logdir && !std::filesystem::create_directories(logdir, ec) && ec)
      throw InputError(
          fmt::format("--logdir {}: cannot create directory ({})", logdir, ec.message()));
    try {
      runner.write_logs(logdir);
    } catch (const InputError&) {
      if (!new_dir.empty()) std::filesystem::remove_all(new_dir, ec);  // nothing half-written
      throw;
    }
  }
  return out;
}

void add_rtapp_options(CLI::App& sub, RtAppArgs& a) {
  sub.add_option("taskset", a.taskset, "rt-app JSON task set")->required();
  add_common_options(sub, a.common);
  sub.add_option("--duration", a.common.duration_s,
                 "Simulated seconds to run, overriding the file's duration (a file without one "
                 "stops when its threads end, at most after 60 s)")
      ->check(range(0.001, 3600.0));
  sub.add_option("--logdir", a.logdir,
                 "Write the logs here instead of the file's logdir (its last directory is "
                 "created once the run succeeded; its parent must exist)")
      ->check(file_name());
}

void check_logdir_parent(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p = fs::path(dir).lexically_normal();
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec))
      throw InputError(fmt::format("--logdir {}: exists and is not a directory", dir));
    return;
  }
  fs::path parent = p.has_filename() ? p.parent_path() : p.parent_path().parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec))
    throw InputError(fmt::format("--logdir {}: {} {} (only the last directory is created)", dir,
                                 parent.string(),
                                 fs::exists(parent, ec) ? "is not a directory" : "does not exist"));
}

void register_rtapp_command(CLI::App& app) {
  auto o = std::make_shared<RtAppArgs>();
  CLI::App* sub = app.add_subcommand(
      "rt-app",
      "Run an rt-app task set (JSON, rt-app's own grammar) and write rt-app's per-thread logs.\n"
      "Prints, per task with timers, the wu_lat summary (N min max sum mean stddev, as `st`) and "
      "a\n"
      "textogram of wu_lat over 0-1000 us in 10 bins. Logs go to --logdir, else the file's "
      "logdir.");
  add_rtapp_options(*sub, *o);
  sub->callback([o] {
    // Read once: "-" is the task set on standard input, as rt-app reads it.
    const bool from_stdin = o->taskset == "-";
    const std::string label = from_stdin ? "<stdin>" : o->taskset;
    const workload::JNode root = from_stdin ? workload::read_relaxed_json_stream(std::cin, label)
                                            : workload::read_relaxed_json_file(o->taskset);
    std::string logdir = o->logdir;
    bool create = true;
    if (logdir.empty()) {
      // As rt-app does: the file's logdir, which must exist.
      logdir = workload::rtapp::parse(root, label, 1 << 20).logdir;
      create = false;
    } else {
      check_logdir_parent(logdir);
    }
    // Only the summary and JSON are printed: no need to keep every sample.
    RtAppOutcome out = run_rtapp_json(o->common, root, label, logdir, create, false);
    for (const std::string& n : out.ignored) fmt::print(stderr, "schedtwin: note: {}\n", n);
    emit_report(out.summary, out.json, o->common.json_out);
  });
}

}  // namespace schedtwin::cli
