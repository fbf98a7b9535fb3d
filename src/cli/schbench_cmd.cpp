// `schedtwin schbench`: see schbench_cmd.h.
#include "cli/schbench_cmd.h"

#include <fmt/core.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "cli/run_common.h"
#include "engine/error.h"
#include "kernel/kernel.h"

namespace schedtwin::cli {

namespace {

// JSON names of kSchbenchPercentiles' rows.
constexpr const char* kRowKeys[] = {"p50", "p75", "p90", "p95", "p99", "p99_5", "p99_9"};
static_assert(std::size(kRowKeys) == workload::kSchbenchPercentiles.size());

nlohmann::json latency_json(const workload::SchbenchTable& t) {
  nlohmann::json j;
  for (std::size_t i = 0; i < t.rows.size(); ++i) j[kRowKeys[i]] = t.rows[i].value_us;
  j["min"] = t.min_us;
  j["max"] = t.max_us;
  return j;
}

double seconds(Time t) { return static_cast<double>(t) / 1e9; }

}  // namespace

nlohmann::json schbench_latency_json(const workload::SchbenchTable& t) { return latency_json(t); }

std::string schbench_table_text(const workload::SchbenchTable& t) {
  std::string out = fmt::format("Latency percentiles (usec) runtime {} (s) ({} total samples)\n",
                                t.runtime_s, t.samples);
  for (std::size_t i = 0; i < t.rows.size(); ++i)
    out += fmt::format("\t{}{:2.1f}th: {:<10} ({} samples)\n",
                       static_cast<int>(i) == workload::kSchbenchP99Row ? "* " : "  ", t.rows[i].p,
                       t.rows[i].value_us, t.rows[i].samples_increment);
  out += fmt::format("\t  min={}, max={}\n", t.min_us, t.max_us);
  return out;
}

std::string schbench_text(const workload::SchbenchResult& r) {
  std::string out;
  for (const workload::SchbenchOutputItem& item : r.output)
    out += item.warmup_done ? "warmup done, zeroing stats\n" : schbench_table_text(item.table);
  out += schbench_table_text(r.final_table);
  return out;
}

void add_schbench_options(CLI::App& sub, SchbenchArgs& a) {
  using workload::kSchbenchMaxRuntimeS;
  using workload::kSchbenchMaxTimeUs;
  const int max_threads = static_cast<int>(workload::kSchbenchMaxTasks);
  sub.add_option("-m,--message-threads", a.p.message_threads, "Number of message threads")
      ->capture_default_str()
      ->check(range(1, max_threads));
  sub.add_option("-t,--threads", a.p.worker_threads, "Worker threads per message thread")
      ->capture_default_str()
      ->check(range(1, max_threads));
  sub.add_option("-r,--runtime", a.p.runtime_s,
                 "How long to run before exiting (seconds; schbench's 0 = forever is refused)")
      ->capture_default_str()
      ->check(range(1, kSchbenchMaxRuntimeS));
  sub.add_option("-s,--sleeptime", a.p.sleeptime_us,
                 "Message thread latency: its usleep per cycle, plus up to a quarter of it (usec)")
      ->capture_default_str()
      ->check(range(std::int64_t{0}, kSchbenchMaxTimeUs));
  sub.add_option("-c,--cputime", a.p.cputime_us,
                 "How long each worker spins per request (usec, wall clock)")
      ->capture_default_str()
      ->check(range(std::int64_t{0}, kSchbenchMaxTimeUs));
  sub.add_option("-C,--message_cputime", a.message_cputime,
                 "Accepted and ignored, as by that schbench (a bug): the message thread always "
                 "spins 30000 usec per cycle")
      ->check(range(0, static_cast<int>(kSchbenchMaxTimeUs)));
  sub.add_option("-w,--warmuptime", a.p.warmuptime_s,
                 "How long to warm up before resetting the statistics (seconds; 0: never)")
      ->capture_default_str()
      ->check(range(0, kSchbenchMaxRuntimeS));
  sub.add_option("-i,--intervaltime", a.p.intervaltime_s,
                 "Interval for printing latencies (seconds)")
      ->capture_default_str()
      ->check(range(0, kSchbenchMaxRuntimeS));
  sub.add_option("-z,--zerotime", a.p.zerotime_s,
                 "Interval for zeroing latencies (seconds; 0: never)")
      ->capture_default_str()
      ->check(range(0, kSchbenchMaxRuntimeS));
  add_common_options(sub, a.common);
}

workload::SchbenchParams schbench_params(const SchbenchArgs& a) {
  workload::SchbenchParams p = a.p;
  const std::int64_t tasks =
      static_cast<std::int64_t>(p.message_threads) * (p.worker_threads + 1) + 1;
  if (tasks > workload::kSchbenchMaxTasks)
    throw UsageError(fmt::format(
        "-m {} x -t {}: {} threads (message threads x (workers + 1) + main) exceed the limit of {}",
        p.message_threads, p.worker_threads, tasks, workload::kSchbenchMaxTasks));
  p.seed = a.common.seed;
  return p;
}

SchbenchOutcome run_schbench_command(const CommonOptions& o, const workload::SchbenchParams& p) {
  Scenario s = make_scenario(o);
  workload::SchbenchParams q = p;
  q.seed = o.seed;
  kernel::Kernel k(s.machine, s.config);
  TraceOutputs traces = open_traces(o, k);
  const auto t0 = std::chrono::steady_clock::now();
  SchbenchOutcome out;
  out.result = workload::run_schbench(k, q);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  traces.finish();
  const workload::SchbenchResult& r = out.result;
  out.text = schbench_text(r);
  nlohmann::json& j = out.json;
  j = common_json("schbench", s, k, wall);
  j["sim_time_s"] = seconds(r.end);  // when main has joined every thread
  j["wakeup_latency_us"] = latency_json(r.final_table);
  j["samples"] = r.final_table.samples;
  j["message_threads"] = q.message_threads;
  j["worker_threads"] = q.worker_threads;
  j["runtime_s"] = q.runtime_s;
  j["sleeptime_us"] = q.sleeptime_us;
  j["cputime_us"] = q.cputime_us;
  j["message_cputime_us"] = q.message_cputime_us;
  j["warmuptime_s"] = q.warmuptime_s;
  j["intervaltime_s"] = q.intervaltime_s;
  j["zerotime_s"] = q.zerotime_s;
  j["loops"] = r.loops;
  j["start_time_s"] = seconds(r.start);
  j["stop_time_s"] = seconds(r.stop);
  j["warmup_done_s"] = r.warmup_at >= 0 ? nlohmann::json(seconds(r.warmup_at)) : nlohmann::json();
  nlohmann::json intervals = nlohmann::json::array();
  for (const workload::SchbenchOutputItem& item : r.output) {
    if (item.warmup_done) continue;
    intervals.push_back({{"at_s", seconds(item.table.at)},
                         {"runtime_s", item.table.runtime_s},
                         {"samples", item.table.samples},
                         {"wakeup_latency_us", latency_json(item.table)}});
  }
  j["interval_tables"] = std::move(intervals);
  add_kernel_reports(o, k, out.text, j);
  return out;
}

void register_schbench_command(CLI::App& app) {
  auto a = std::make_shared<SchbenchArgs>();
  CLI::App* sub = app.add_subcommand(
      "schbench",
      "schbench as of December 2021: -m message threads each waking its -t workers in batches\n"
      "with one timestamp; a worker spins -c usec, posts its message thread and sleeps; the\n"
      "wakeup latency ((run after the spin - wake timestamp) - cputime) goes into schbench's\n"
      "log-linear histogram, reset after the -w warmup. Prints schbench's percentile tables\n"
      "(every -i seconds and at the end) on stdout.");
  add_schbench_options(*sub, *a);
  sub->callback([a] {
    const workload::SchbenchParams p = schbench_params(*a);
    if (a->message_cputime >= 0)
      fmt::print(stderr,
                 "schedtwin: note: -C {} is ignored, as by schbench of December 2021: the "
                 "message thread spins {} usec\n",
                 a->message_cputime, p.message_cputime_us);
    const SchbenchOutcome out = run_schbench_command(a->common, p);
    emit_report(out.text, out.json, a->common.json_out);
  });
}

}  // namespace schedtwin::cli
