// `schedtwin machine list | show NAME|FILE [--json] | capture [--sysroot DIR] [--out FILE]`
// (DESIGN.md §4, §5). Further machine subcommands (e.g. `domains`) attach to the same parent:
//   app.get_subcommand("machine")->add_subcommand("domains", ...)
// after register_machine_commands(app) has run.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cli/cli.h"
#include "cli/run_common.h"
#include "engine/error.h"
#include "machine/capture.h"
#include "machine/machine_file.h"

namespace schedtwin::cli {

namespace {

// A machine file may leave a source out: say so rather than print an empty line.
void print_source(const std::string& source) {
  fmt::print("  source: {}\n", source.empty() ? "(not given in the file)" : source);
}

using machine::Machine;

std::string us_text(Time ns) {
  // Exact: ns values are integers, so print µs with up to three decimals and no trailing zeros.
  std::string s = fmt::format("{}.{:03}", ns / 1000, ns % 1000);  // ns >= 0 (validated)
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s + " us";
}

const char* preempt_text(machine::Preemption p) {
  switch (p) {
    case machine::Preemption::None:
      return "none (PREEMPT_NONE)";
    case machine::Preemption::Voluntary:
      return "voluntary (PREEMPT_VOLUNTARY)";
    case machine::Preemption::Full:
      return "full (PREEMPT)";
  }
  return "?";
}

// Prints groups such as "[0,24] [1,25] ..." wrapped to stay under 100 columns.
void print_groups(const std::string& label, const std::vector<std::vector<int>>& groups) {
  std::string line = fmt::format("  {:<10}", label);
  const std::string pad(12, ' ');
  for (size_t g = 0; g < groups.size(); ++g) {
    std::string item = fmt::format("{}:{}", g, machine::format_cpu_list(groups[g]));
    if (line.size() + item.size() + 1 > 100 && line.size() > pad.size()) {
      fmt::print("{}\n", line);
      line = pad;
    }
    if (line.size() > pad.size()) line += ' ';
    line += item;
  }
  fmt::print("{}\n", line);
}

template <class Id>
std::vector<std::vector<int>> groups_by(const Machine& m, int count, Id id) {
  std::vector<std::vector<int>> g(static_cast<size_t>(count));
  for (const machine::Cpu& c : m.cpus) g[static_cast<size_t>(id(c))].push_back(c.id);
  return g;
}

void show_text(const Machine& m) {
  fmt::print("machine: {}\n", m.name);
  if (!m.description.empty()) fmt::print("  {}\n", m.description);

  const int n = m.nr_cpus();
  fmt::print(
      "\ntopology: {} CPUs, {} package{}, {} NUMA node{}, {} LLC{}, {} cluster{}, {} cores, {}\n",
      n, m.nr_packages(), m.nr_packages() == 1 ? "" : "s", m.nr_nodes(),
      m.nr_nodes() == 1 ? "" : "s", m.nr_llcs(), m.nr_llcs() == 1 ? "" : "s", m.nr_clusters(),
      m.nr_clusters() == 1 ? "" : "s", m.nr_cores(),
      m.smt_width() > 1 ? fmt::format("SMT{}", m.smt_width()) : std::string("no SMT"));
  print_source(m.topology_source);
  fmt::print("  CPU lists per level (id:cpus)\n");
  print_groups("SMT", groups_by(m, m.nr_cores(), [](const machine::Cpu& c) { return c.core; }));
  print_groups("cluster",
               groups_by(m, m.nr_clusters(), [](const machine::Cpu& c) { return c.cluster; }));
  print_groups("LLC", groups_by(m, m.nr_llcs(), [](const machine::Cpu& c) { return c.llc; }));
  print_groups("package",
               groups_by(m, m.nr_packages(), [](const machine::Cpu& c) { return c.package; }));
  print_groups("node", groups_by(m, m.nr_nodes(), [](const machine::Cpu& c) { return c.node; }));

  std::map<int, std::vector<int>> by_capacity;
  for (const machine::Cpu& c : m.cpus) by_capacity[c.capacity].push_back(c.id);
  std::string caps;
  for (const auto& [cap, cpus] : by_capacity)
    caps += fmt::format("{}{} on CPUs {}", caps.empty() ? "" : "; ", cap,
                        machine::format_cpu_list(cpus));
  fmt::print("  capacity  {}\n", caps);

  fmt::print("\nNUMA distances\n");
  fmt::print("  {:>6}", "node");
  for (int b = 0; b < m.nr_nodes(); ++b) fmt::print(" {:>4}", b);
  fmt::print("\n");
  for (int a = 0; a < m.nr_nodes(); ++a) {
    fmt::print("  {:>6}", a);
    for (int d : m.numa_distance[static_cast<size_t>(a)]) fmt::print(" {:>4}", d);
    fmt::print("\n");
  }
  if (m.nr_nodes() > 1)
    fmt::print(
        "  node_reclaim_distance {}: NUMA levels farther apart balance no forks or execs and "
        "take no affine wakeups (v5.4+; 30 before)\n",
        m.node_reclaim_distance);
  print_source(m.numa_source);

  fmt::print("\nSMT throughput: {:.4g} per thread when all siblings of a core are busy\n",
             m.smt_throughput);
  print_source(m.smt_source);

  fmt::print("\nidle states (kernel view: exit latency, target residency; real exit cost)\n");
  if (m.idle_states.empty()) fmt::print("  (none: the CPU idles without a cpuidle driver)\n");
  size_t width = 4;
  for (const machine::IdleState& s : m.idle_states) width = std::max(width, s.name.size());
  if (!m.idle_states.empty())
    fmt::print("  {:<{}}  {:>12}  {:>12}  {:>12}  {}\n", "name", width, "exit latency", "residency",
               "real exit", "polling");
  for (const machine::IdleState& s : m.idle_states)
    fmt::print("  {:<{}}  {:>12}  {:>12}  {:>12}  {}\n", s.name, width, us_text(s.exit_latency_ns),
               us_text(s.target_residency_ns), us_text(s.real_exit_ns),
               s.polling   ? "yes"
               : s.cluster ? "no; cluster-level: as deep as the last CPU-level state until the "
                             "whole cluster is in it"
                           : "no");
  // States often share a citation; print each distinct one once, naming its states.
  auto print_sources = [&](const char* what, auto field) {
    std::vector<std::pair<std::string, std::string>> seen;  // source -> state names
    for (const machine::IdleState& s : m.idle_states) {
      const std::string& src = s.*field;
      auto it =
          std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == src; });
      if (it == seen.end())
        seen.emplace_back(src, s.name);
      else
        it->second += ", " + s.name;
    }
    for (const auto& [src, names] : seen)
      fmt::print("  {} ({}): {}\n", what, names, src.empty() ? "(not given in the file)" : src);
  };
  print_sources("kernel figures", &machine::IdleState::source);
  print_sources("real exit", &machine::IdleState::real_exit_source);

  fmt::print("\ncost model (what each figure is charged for; then where it comes from)\n");
  const std::tuple<const char*, const machine::Cost*, const char*> costs[] = {
      {"context_switch", &m.costs.context_switch,
       "each switch to another task, kernel entry and exit included, on the switching CPU"},
      {"ipi", &m.costs.ipi,
       "one-way delivery of a wakeup or reschedule IPI, before the target CPU acts on it"},
      {"idle_probe", &m.costs.idle_probe,
       "each CPU the idle-CPU search examines (a remote cache line), on the waking CPU"},
      {"cache_cold", &m.costs.cache_cold,
       "extra work of a task's first run after it moved to another LLC"},
      {"wakeup", &m.costs.wakeup, "try_to_wake_up on the waker (enqueue, preemption check)"},
      {"pipe_write", &m.costs.pipe_write, "one write() of a 100-byte message into a pipe"},
      {"pipe_read", &m.costs.pipe_read, "one read() of a 100-byte message from a pipe"},
      {"socket_write", &m.costs.socket_write,
       "one write() of a 100-byte message on an AF_UNIX stream socket"},
      {"socket_read", &m.costs.socket_read,
       "one read() of a 100-byte message from an AF_UNIX stream socket"},
      {"timer_irq", &m.costs.timer_irq,
       "a timer interrupt's delivery and handler before it wakes its task, on the timer's CPU"},
  };
  for (const auto& [name, c, covers] : costs)
    fmt::print("  {:<14} {:>11}  {}. {}\n", name, us_text(c->ns), covers,
               c->source.empty() ? "(source not given in the file)" : c->source);

  fmt::print("\nkernel build: HZ={}, preemption {}, NO_HZ_IDLE {}\n", m.build.hz,
             preempt_text(m.build.preempt), m.build.nohz_idle ? "yes" : "no");
  print_source(m.build.source);
}

struct MachineOptions {
  std::string show_name;
  bool show_json = false;
  std::string sysroot;
  std::string out;
};

}  // namespace

void register_machine_commands(CLI::App& app) {
  auto opt = std::make_shared<MachineOptions>();
  CLI::App* mach = app.add_subcommand("machine", "Machine presets, machine files and capture");
  mach->require_subcommand(1);

  CLI::App* list = mach->add_subcommand("list", "List the machine presets");
  list->callback([] {
    std::vector<std::string> names = machine::preset_names();
    size_t width = 4;
    for (const std::string& n : names) width = std::max(width, n.size());
    for (const std::string& name : names) {
      if (name == "host") {
        // Capture may fail (no /sys in a container); the listing still shows the other presets.
        try {
          Machine m = machine::load_machine(name);
          fmt::print("{:<{}}  {:>5} CPUs  this machine, captured from /sys at run time\n", name,
                     width, m.nr_cpus());
        } catch (const InputError& e) {
          fmt::print(
              "{:<{}}  {:>5}       this machine, captured from /sys at run time "
              "(unavailable here: {})\n",
              name, width, "?", e.what());
        }
        continue;
      }
      Machine m = machine::load_machine(name);
      fmt::print("{:<{}}  {:>5} CPUs  {}\n", name, width, m.nr_cpus(), m.description);
    }
  });

  CLI::App* show = mach->add_subcommand("show", "Describe a machine (preset, \"host\" or file)");
  show->add_option("machine", opt->show_name, "Preset name, \"host\" or machine file (JSON)")
      ->required();
  show->add_flag("--json", opt->show_json,
                 "Print the machine file (JSON); `show X --json > f.json` loads back as f.json");
  show->callback([opt] {
    Machine m = load_cli_machine(opt->show_name);
    print_machine_notes(m, opt->show_name);
    if (opt->show_json)
      fmt::print("{}", machine::dump_machine_file(m));
    else
      show_text(m);
  });

  CLI::App* cap =
      mach->add_subcommand("capture", "Write a machine file for this machine from sysfs");
  cap->add_option("--sysroot", opt->sysroot,
                  "Read DIR/sys/devices/system instead of /sys/devices/system");
  cap->add_option("--out", opt->out, "Write the machine file to FILE (default: standard output)")
      ->check(file_name());
  cap->callback([opt] {
    std::error_code ec;
    if (!opt->sysroot.empty() && !std::filesystem::is_directory(opt->sysroot, ec))
      throw InputError(fmt::format(
          "--sysroot {}: {}", opt->sysroot,
          std::filesystem::exists(opt->sysroot, ec) ? "is not a directory" : "no such directory"));
    if (!opt->out.empty()) check_output_file(opt->out, "--out");
    // This host (no --sysroot): its kernel build too, as `--machine host` has it.
    Machine m =
        opt->sysroot.empty() ? load_cli_machine("host") : machine::capture_sysfs(opt->sysroot);
    const std::string text = machine::dump_machine_file(m);
    if (opt->out.empty())
      fmt::print("{}", text);
    else
      write_file_atomically(opt->out, text, "--out");
  });
}

}  // namespace schedtwin::cli
