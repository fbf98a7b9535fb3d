#include "cli/run_common.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>
#include <vector>

#include "cli/host_measure.h"
#include "cli/validate.h"
#include "engine/error.h"
#include "machine/machine_file.h"
#include "metrics/trace_ftrace.h"
#include "metrics/trace_perfetto.h"

namespace schedtwin::cli {

namespace {

// --trace-time, --trace-comm, --trace-limit and the --explain-* options only select what the
// logs record: given without one they would do nothing without a word.
void check_trace_selection(const CommonOptions& o) {
  const bool traces = !o.trace_out.empty() || !o.ftrace_out.empty();
  const bool logs = traces || !o.explain.empty();
  if (!logs && (o.trace_from != 0 || o.trace_to != kTimeNever))
    throw UsageError(
        "--trace-time: selects what --trace, --ftrace and --explain record; give one of them");
  if (!logs && !o.trace_comms.empty())
    throw UsageError(
        "--trace-comm: selects what --trace, --ftrace and --explain record; give one of them");
  for (const std::string& c : o.trace_comms)
    if (c.empty())
      throw UsageError(
          "--trace-comm: an empty comm; give comms as the trace shows them, "
          "separated by commas");
  if (!traces && o.trace_limit != CommonOptions{}.trace_limit)
    throw UsageError("--trace-limit: bounds --trace and --ftrace; give one of them");
  if (o.explain.empty() && o.explain_format != CommonOptions{}.explain_format)
    throw UsageError("--explain-format: the format of --explain; give --explain too");
  if (o.explain.empty() && o.explain_limit != CommonOptions{}.explain_limit)
    throw UsageError("--explain-limit: bounds --explain; give --explain too");
}

}  // namespace

machine::Machine load_cli_machine(const std::string& name_or_path, std::string_view option) {
  machine::Machine m = machine::load_machine(name_or_path, option);
  if (name_or_path != "host") return m;
  if (std::optional<machine::KernelBuild> b = host::host_kernel_build(host::kernel_release()))
    m.build = *b;
  return m;
}

Scenario make_scenario(const CommonOptions& o, const InputLabels& where) {
  // Before any simulation: a run must not end in "cannot write" after its work is done.
  if (!o.json_out.empty()) check_json_output(o.json_out);
  check_distinct_outputs(o);
  check_trace_selection(o);
  Scenario s;
  s.machine = load_cli_machine(o.machine, where.machine);
  for (const std::string& v : o.costs) {
    std::string name;
    Time ns = 0;
    if (std::string why = parse_cost_override(v, name, ns); !why.empty())
      throw UsageError("--cost: " + why);
    for (const auto& [done, _] : s.cost_overrides)
      if (done == name) throw UsageError(fmt::format("--cost: {} is given twice", name));
    machine::Cost& c = *machine::find_cost(s.machine.costs, name);
    c.source = fmt::format("--cost {}={} (the machine's figure: {} ns)", name, ns, c.ns);
    c.ns = ns;
    s.cost_overrides.emplace_back(name, ns);
  }
  s.config.profile = kernel::make_profile(o.kernel, where.kernel);
  kernel::apply_features(s.config.profile.features, o.features, where.features,
                         &s.config.profile.unmodelled);
  if (o.feature_warnings) {
    print_machine_notes(s.machine, o.machine);
    print_feature_warnings(s.config.profile, where.features);
    if (o.machine == "host") {
      // The machine is this host, the kernel a profile: say when they are far apart.
      const std::string release = host::kernel_release();
      const std::string nearest = validate::profile_for_kernel_release(release);
      if (nearest != s.config.profile.name)
        fmt::print(stderr,
                   "schedtwin: note: --machine host: this host runs Linux {}, whose nearest "
                   "profile is {} (--kernel {}); the run simulates {}\n",
                   release, nearest, nearest, s.config.profile.name);
    }
  }
  s.config.seed = o.seed;
  s.config.hz = o.hz;
  s.config.check = o.check;
  return s;
}

void say_note(const CommonOptions& o, const std::string& line) {
  if (o.notes)
    *o.notes += line;
  else
    fmt::print(stderr, "{}", line);
}

void print_machine_notes(const machine::Machine& m, std::string_view label) {
  for (const std::string& n : machine::machine_notes(m))
    fmt::print(stderr, "schedtwin: note: {}: {}\n", label, n);
}

void print_feature_warnings(const kernel::Profile& p, std::string_view label) {
  for (const std::string& w : kernel::feature_warnings(p))
    fmt::print(stderr, "schedtwin: warning: {}: {}\n", label, w);
}

nlohmann::json common_json(const std::string& command, const Scenario& s, const kernel::Kernel& k,
                           double wall_time_s) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["command"] = command;
  j["machine"] = s.machine.name;
  j["kernel"] = s.config.profile.name;
  j["features"] = s.config.profile.features.names();
  j["seed"] = s.config.seed;
  if (!s.cost_overrides.empty()) {
    nlohmann::json& c = j["costs_overridden"];  // ns, as --cost gave them
    for (const auto& [name, ns] : s.cost_overrides) c[name] = ns;
  }
  j["sim_time_s"] = static_cast<double>(k.now()) / 1e9;
  j["wall_time_s"] = wall_time_s;
  j["events"] = k.events();
  j["dispatched_events"] = k.events() - k.lazy_events();
  j["context_switches"] = k.context_switches();
  j["migrations"] = k.migrations();
  return j;
}

std::string lb_stats_text(const kernel::LbStats& s) {
  std::string out =
      "load balance group classification (groups classified by update_sd_lb_stats):\n"
      "state         nr_running      total       idle       busy newly_idle\n";
  std::uint64_t total[4] = {};
  for (int type = 0; type < 6; ++type)
    for (int nr = 0; nr < 5; ++nr) {
      std::uint64_t by[3], sum = 0;
      for (int it = 0; it < 3; ++it) sum += by[it] = s.classified[it][type][nr];
      if (!sum) continue;
      out +=
          fmt::format("{:<13} {:>10} {:>10} {:>10} {:>10} {:>10}\n", kernel::group_type_name(type),
                      nr == 4 ? "4+" : std::to_string(nr), sum, by[0], by[1], by[2]);
      total[0] += sum;
      for (int it = 0; it < 3; ++it) total[it + 1] += by[it];
    }
  out += fmt::format("{:<13} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "total", "", total[0], total[1],
                     total[2], total[3]);
  out += fmt::format("tasks moved by load balancing: {} ({} by active balance)\n", s.migrations,
                     s.active_migrations);
  out += fmt::format(
      "newly idle balance: {} entries; {} returned for a queued wakeup, {} skipped with avg_idle "
      "under the cost gate, {} skipped with no CPU overloaded; {} walked the domains\n",
      s.newidle_entries, s.newidle_wakeup_pending, s.newidle_avg_idle, s.newidle_no_overload,
      s.newidle_entries - s.newidle_wakeup_pending - s.newidle_avg_idle - s.newidle_no_overload);
  // Per domain: which level classifies, and which moves.
  out += fmt::format(
      "\ngroups classified and tasks moved, by sched domain:\n{:<9} {:<5} {:>10} {:>10} {:>10} "
      "{:>10} {:>10} {:>10}\n",
      "domain", "level", "has_spare", "fully_busy", "overloaded", "other", "moved", "by_active");
  for (std::size_t d = 0; d < s.by_domain.size(); ++d) {
    const kernel::LbDomainStats& b = s.by_domain[d];
    std::uint64_t by_type[6] = {};
    for (int type = 0; type < 6; ++type)
      for (int nr = 0; nr < 5; ++nr) by_type[type] += b.classified[type][nr];
    const std::uint64_t other = by_type[2] + by_type[3] + by_type[4];
    out += fmt::format("{:<9} {:<5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
                       fmt::format("domain-{}", d), b.level, by_type[0], by_type[1], by_type[5],
                       other, b.migrations, b.active_migrations);
  }
  return out;
}

void add_kernel_reports(const CommonOptions& o, const kernel::Kernel& k, std::string& text,
                        nlohmann::json& j) {
  const kernel::LbStats& s = k.lb_stats();
  j["lb_migrations"] = s.migrations;
  if (o.lb_stats) {
    text += "\n" + lb_stats_text(s);
    auto& js = j["lb_stats"];
    for (int type = 0; type < 6; ++type)
      for (int nr = 0; nr < 5; ++nr) {
        std::string key = nr == 4 ? "4+" : std::to_string(nr);
        std::uint64_t sum = 0;
        for (int it = 0; it < 3; ++it) {
          js["by_type"][kernel::balance_type_name(it)][kernel::group_type_name(type)][key] =
              s.classified[it][type][nr];
          sum += s.classified[it][type][nr];
        }
        js["group_classification"][kernel::group_type_name(type)][key] = sum;
      }
    js["migrations"] = s.migrations;
    js["active_migrations"] = s.active_migrations;
    js["newidle"] = {{"entries", s.newidle_entries},
                     {"wakeup_pending", s.newidle_wakeup_pending},
                     {"avg_idle_gate", s.newidle_avg_idle},
                     {"no_overload", s.newidle_no_overload}};
    for (std::size_t d = 0; d < s.by_domain.size(); ++d) {
      const kernel::LbDomainStats& b = s.by_domain[d];
      nlohmann::json& jd = js["by_domain"][fmt::format("domain{}", d)];
      jd["level"] = b.level;
      for (int type = 0; type < 6; ++type)
        for (int nr = 0; nr < 5; ++nr)
          jd["group_classification"][kernel::group_type_name(type)]
            [nr == 4 ? "4+" : std::to_string(nr)] = b.classified[type][nr];
      jd["migrations"] = b.migrations;
      jd["active_migrations"] = b.active_migrations;
    }
  }
  if (o.schedstat) text += "\n" + k.schedstat();
  if (o.check) {
    const kernel::CheckStats& c = k.check_stats();
    text += fmt::format(
        "\n--check: invariants held after {} events; {} wasted-core episodes (a CPU idle over "
        "10 ms while a task it may run waited in its LLC), {:.3f} ms in all",
        c.checks, c.wasted_episodes, static_cast<double>(c.wasted_ns) / 1e6);
    if (c.longest_wasted_cpu >= 0)
      text += fmt::format("; the longest: cpu{} from {:.6f} s for {:.3f} ms", c.longest_wasted_cpu,
                          static_cast<double>(c.longest_wasted_start) / 1e9,
                          static_cast<double>(c.longest_wasted_ns) / 1e6);
    text += "\n";
    j["check"] = {{"checks", c.checks},
                  {"wasted_episodes", c.wasted_episodes},
                  {"wasted_ms", static_cast<double>(c.wasted_ns) / 1e6}};
    if (c.longest_wasted_cpu >= 0)
      j["check"]["longest_wasted"] = {
          {"cpu", c.longest_wasted_cpu},
          {"start_s", static_cast<double>(c.longest_wasted_start) / 1e9},
          {"ms", static_cast<double>(c.longest_wasted_ns) / 1e6}};
  }
}

OutputTarget output_target(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows links, /dev/fd/N too
  if (fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st)) return {path, true};
  fs::path p = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) break;
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  return {p.string(), false};
}

void check_distinct_outputs(const CommonOptions& o) {
  check_distinct_outputs({{"--json", &o.json_out},
                          {"--trace", &o.trace_out},
                          {"--ftrace", &o.ftrace_out},
                          {"--explain", &o.explain}});
}

void check_distinct_outputs(
    std::initializer_list<std::pair<const char*, const std::string*>> outputs) {
  namespace fs = std::filesystem;
  std::vector<std::pair<fs::path, std::string>> seen;  // resolved file, "--option PATH"
  for (const auto& [option, path] : outputs) {
    if (path->empty() || *path == "-") continue;
    const OutputTarget t = output_target(*path);
    if (t.in_place) continue;
    std::error_code ec;
    fs::path file = fs::absolute(t.file, ec);
    if (fs::path c = fs::weakly_canonical(file, ec); !ec) file = c;
    const std::string here = fmt::format("{} {}", option, *path);
    for (const auto& [other, where] : seen)
      if (other == file)
        throw UsageError(fmt::format(
            "{} and {}: one file for two outputs; expected different files", where, here));
    seen.emplace_back(file, here);
  }
}

OutputTarget check_output_file(const std::string& path, std::string_view option) {
  namespace fs = std::filesystem;
  if (path == "-")  // not a file named "-", which nobody means
    throw UsageError(
        fmt::format("{} -: expected a file name (only --json writes to standard output)", option));
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(fmt::format("{} {}: is a directory; expected a file name", option, path));
  const OutputTarget target = output_target(path);
  if (target.in_place) {
    if (::access(path.c_str(), W_OK) != 0)
      throw InputError(fmt::format("{} {}: cannot write ({})", option, path, std::strerror(errno)));
    return target;
  }
  const fs::path parent = fs::path(target.file).parent_path();
  const fs::path dir = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(dir, ec))
    throw InputError(fmt::format("{} {}: directory {} {}", option, path, dir.string(),
                                 fs::exists(dir, ec) ? "is not a directory" : "does not exist"));
  // Probe with the temporary file write_file_atomically will use (append: never truncate).
  const std::string tmp = target.file + ".tmp";
  const bool existed = fs::exists(tmp, ec);
  {
    std::ofstream probe(tmp, std::ios::binary | std::ios::app);
    if (!probe)
      throw InputError(fmt::format("{} {}: cannot create a file in {} ({})", option, path,
                                   dir.string(), std::strerror(errno)));
  }
  if (!existed) fs::remove(tmp, ec);
  return target;
}

void check_json_output(const std::string& path, std::string_view option) {
  if (path != kJsonToStdout) check_output_file(path, option);
}

void emit_report(const std::string& text, const nlohmann::json& doc, const std::string& json_path,
                 std::string_view option) {
  if (json_path == kJsonToStdout) {
    std::cerr << text << std::flush;
    std::cout << doc.dump(2) << "\n" << std::flush;
    return;
  }
  if (!json_path.empty()) write_file_atomically(json_path, doc.dump(2) + "\n", option);
  std::cout << text << std::flush;
}

void write_file_atomically(const std::string& path, const std::string& text,
                           std::string_view option) {
  const OutputTarget target = check_output_file(path, option);
  if (target.in_place) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.flush();
    if (!out)
      throw InputError(fmt::format("{} {}: write failed ({})", option, path, std::strerror(errno)));
    return;
  }
  const std::string tmp = target.file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw InputError(
          fmt::format("{} {}: cannot create file ({})", option, path, std::strerror(errno)));
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw InputError(fmt::format("{} {}: write failed", option, path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target.file, ec);
  if (ec) {
    const std::string why = ec.message();  // before remove() overwrites ec
    std::filesystem::remove(tmp, ec);
    throw InputError(fmt::format("{} {}: cannot write file ({})", option, path, why));
  }
}

namespace {

// Hands every tracepoint to each of several sinks (--trace, --ftrace, the occupancy recorder).
class TeeTraceSink final : public kernel::TraceSink {
 public:
  explicit TeeTraceSink(std::vector<kernel::TraceSink*> sinks) : sinks_(std::move(sinks)) {}
  void sched_switch(Time t, int cpu, kernel::TaskId prev, kernel::SwitchState st,
                    kernel::TaskId next) override {
    for (auto* s : sinks_) s->sched_switch(t, cpu, prev, st, next);
  }
  void sched_waking(Time t, int cpu, kernel::TaskId p, int target) override {
    for (auto* s : sinks_) s->sched_waking(t, cpu, p, target);
  }
  void sched_wakeup(Time t, int cpu, kernel::TaskId p, int target) override {
    for (auto* s : sinks_) s->sched_wakeup(t, cpu, p, target);
  }
  void sched_wakeup_new(Time t, int cpu, kernel::TaskId p, int target) override {
    for (auto* s : sinks_) s->sched_wakeup_new(t, cpu, p, target);
  }
  void sched_migrate_task(Time t, int cpu, kernel::TaskId p, int orig, int dest) override {
    for (auto* s : sinks_) s->sched_migrate_task(t, cpu, p, orig, dest);
  }
  void sched_process_exit(Time t, int cpu, kernel::TaskId p) override {
    for (auto* s : sinks_) s->sched_process_exit(t, cpu, p);
  }
  void cpu_idle(Time t, int cpu, int state) override {
    for (auto* s : sinks_) s->cpu_idle(t, cpu, state);
  }
  void pelt_task(Time t, kernel::TaskId p, unsigned long u, unsigned long r,
                 unsigned long l) override {
    for (auto* s : sinks_) s->pelt_task(t, p, u, r, l);
  }
  void pelt_cpu(Time t, int cpu, unsigned long u, unsigned long r, unsigned long l) override {
    for (auto* s : sinks_) s->pelt_cpu(t, cpu, u, r, l);
  }

 private:
  std::vector<kernel::TraceSink*> sinks_;
};

template <class Writer>
void write_trace(Writer& w, const std::string& path, std::string_view option) {
  if (w.truncated())
    fmt::print(
        stderr,
        "schedtwin: warning: {} {}: event limit of {} reached at {:.6f} s simulated; {} later "
        "events were not recorded (--trace-limit raises the limit; --trace-time and --trace-comm "
        "record less)\n",
        option, path, w.limit(), static_cast<double>(w.truncated_at()) / 1e9, w.dropped());
  write_file_atomically(path, w.finish(), option);
}

}  // namespace

struct TraceOutputs::Impl {
  kernel::Kernel* k = nullptr;
  std::string trace_path, ftrace_path;
  std::unique_ptr<metrics::PerfettoTraceWriter> perfetto;
  std::unique_ptr<metrics::FtraceTextWriter> ftrace;
  std::unique_ptr<metrics::OccupancyRecorder> occupancy_recorder;
  std::optional<metrics::Occupancy> occupancy;
  std::unique_ptr<TeeTraceSink> tee;
  // --explain: streamed to stderr, or to FILE.tmp renamed at finish() (explain_path is the
  // rename's target, output_target), or straight into a device or FIFO (explain_path empty).
  std::string explain_path;
  std::unique_ptr<std::ofstream> explain_file;
  std::unique_ptr<kernel::Explain> explain;
  metrics::TraceFilter selection;  // --trace-time, --trace-comm
};

TraceOutputs::TraceOutputs() = default;
TraceOutputs::TraceOutputs(TraceOutputs&&) noexcept = default;
TraceOutputs& TraceOutputs::operator=(TraceOutputs&&) noexcept = default;
TraceOutputs::~TraceOutputs() {
  if (!impl_) return;
  if (impl_->k) {
    impl_->k->set_trace_sink(nullptr);
    impl_->k->set_explain(nullptr);
  }
  if (impl_->explain_file && !impl_->explain_path.empty()) {  // failed: nothing half-written
    impl_->explain_file.reset();
    std::error_code ec;
    std::filesystem::remove(impl_->explain_path + ".tmp", ec);
  }
}

// A window after the run's end, or a comm no task had, leaves the logs empty: say so, with
// the comms there were (a task set's names are often not its comms, e.g. rt-app's
// "cfs_thread" runs as cfs_thread-0, cfs_thread-1, ...).
void TraceOutputs::warn_empty_selection(const kernel::Kernel& k) const {
  const Impl& m = *impl_;
  if (m.selection.from >= k.now())
    fmt::print(stderr,
               "schedtwin: warning: --trace-time: the run ended at {:.6f} s simulated, before "
               "the window starts; nothing was recorded\n",
               static_cast<double>(k.now()) / 1e9);
  if (m.selection.comms.empty()) return;
  std::vector<std::string> all;
  for (int t = 0; t < k.nr_tasks(); ++t) all.push_back(metrics::trace_comm(k, t, 0));
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  for (const std::string& c : m.selection.comms) {
    // Each CPU's idle task and stopper are there whether or not a task's comm matches.
    if (std::binary_search(all.begin(), all.end(), c) || c.rfind("swapper/", 0) == 0 ||
        c.rfind("migration/", 0) == 0)
      continue;
    const std::size_t shown = std::min<std::size_t>(all.size(), 8);
    fmt::print(stderr,
               "schedtwin: warning: --trace-comm {}: no task of the run has this comm (they are "
               "{}{})\n",
               c, fmt::join(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
               all.size() > shown ? fmt::format(" and {} more", all.size() - shown) : "");
  }
}

TraceOutputs open_traces(const CommonOptions& o, kernel::Kernel& k) {
  TraceOutputs out;
  if (!o.explain.empty()) {
    out.impl_ = std::make_unique<TraceOutputs::Impl>();
    TraceOutputs::Impl& m = *out.impl_;
    m.k = &k;
    auto format = o.explain_format == "jsonl" ? kernel::Explain::Format::Jsonl
                                              : kernel::Explain::Format::Text;
    std::ostream* os = &std::cerr;
    if (o.explain != "-") {
      const OutputTarget target = check_output_file(o.explain, "--explain");
      if (!target.in_place) m.explain_path = target.file;
      m.explain_file = std::make_unique<std::ofstream>(
          target.in_place ? o.explain : target.file + ".tmp", std::ios::binary | std::ios::trunc);
      if (!*m.explain_file)
        throw InputError(fmt::format("--explain {}: cannot create file", o.explain));
      os = m.explain_file.get();
    }
    m.explain = std::make_unique<kernel::Explain>(*os, format, o.explain_limit);
    m.selection = {o.trace_from, o.trace_to, o.trace_comms};
    m.explain->set_filter(o.trace_from, o.trace_to, o.trace_comms);
    k.set_explain(m.explain.get());
  }
  if (o.trace_out.empty() && o.ftrace_out.empty() && o.occupancy_bin_ns <= 0) return out;
  if (!o.trace_out.empty()) check_output_file(o.trace_out, "--trace");
  if (o.trace_out.size() > 5 && o.trace_out.compare(o.trace_out.size() - 5, 5, ".json") == 0)
    fmt::print(stderr,
               "schedtwin: note: --trace writes Perfetto's protobuf format, not JSON, to {} "
               "(open it in ui.perfetto.dev; --ftrace writes text)\n",
               o.trace_out);
  if (!o.ftrace_out.empty()) check_output_file(o.ftrace_out, "--ftrace");
  if (!out.impl_) out.impl_ = std::make_unique<TraceOutputs::Impl>();
  TraceOutputs::Impl& m = *out.impl_;
  m.k = &k;
  m.trace_path = o.trace_out;
  m.ftrace_path = o.ftrace_out;
  m.selection = {o.trace_from, o.trace_to, o.trace_comms};
  std::vector<kernel::TraceSink*> sinks;
  if (!o.trace_out.empty()) {
    m.perfetto = std::make_unique<metrics::PerfettoTraceWriter>(k, o.trace_limit, m.selection);
    sinks.push_back(m.perfetto.get());
  }
  if (!o.ftrace_out.empty()) {
    m.ftrace = std::make_unique<metrics::FtraceTextWriter>(k, o.trace_limit, m.selection);
    sinks.push_back(m.ftrace.get());
  }
  if (o.occupancy_bin_ns > 0) {
    m.occupancy_recorder = std::make_unique<metrics::OccupancyRecorder>(k, o.occupancy_bin_ns);
    sinks.push_back(m.occupancy_recorder.get());
  }
  if (sinks.size() > 1) {
    m.tee = std::make_unique<TeeTraceSink>(std::move(sinks));
    k.set_trace_sink(m.tee.get());
  } else {
    k.set_trace_sink(sinks.front());
  }
  return out;
}

std::optional<metrics::Occupancy> TraceOutputs::take_occupancy() {
  if (!impl_) return std::nullopt;
  return std::exchange(impl_->occupancy, std::nullopt);
}

void TraceOutputs::finish() {
  if (!impl_ || !impl_->k) return;
  Impl& m = *impl_;
  m.k->set_trace_sink(nullptr);
  m.k->set_explain(nullptr);
  warn_empty_selection(*m.k);
  if (m.occupancy_recorder) {
    m.occupancy = m.occupancy_recorder->finish(m.k->now());
    m.occupancy_recorder.reset();
  }
  m.k = nullptr;
  if (m.explain) {
    if (m.explain->dropped())
      fmt::print(stderr,
                 "schedtwin: note: --explain wrote {} records; {} later ones were not written "
                 "(--explain-limit)\n",
                 m.explain->written(), m.explain->dropped());
    if (m.explain_file) {
      m.explain_file->flush();
      bool ok = static_cast<bool>(*m.explain_file);
      m.explain_file.reset();
      std::error_code ec;
      if (m.explain_path.empty()) {  // a device or FIFO, written in place
        if (!ok) throw InputError("--explain: write failed");
      } else {
        if (ok) std::filesystem::rename(m.explain_path + ".tmp", m.explain_path, ec);
        if (!ok || ec) {
          std::filesystem::remove(m.explain_path + ".tmp", ec);
          throw InputError(fmt::format("--explain {}: write failed", m.explain_path));
        }
      }
    }
    m.explain.reset();
  }
  // One file at a time, each writer freed once written: a trace can be hundreds of MB.
  if (m.ftrace) {
    write_trace(*m.ftrace, m.ftrace_path, "--ftrace");
    m.ftrace.reset();
  }
  if (m.perfetto) {
    write_trace(*m.perfetto, m.trace_path, "--trace");
    m.perfetto.reset();
  }
  m.tee.reset();
}

}  // namespace schedtwin::cli
