// What every harness shares: the short simulation it runs of what it parsed, and the rule
// that only InputError is an expected outcome. Anything else (another exception, a crash, a
// sanitizer report, kernel::CheckError from --check's invariants, a hang) is a finding.
//
// Bounds keep one input cheap: at most kSimNs of simulated time and about kMaxSimEvents
// events (a set of 1 us timer periods reaches 290 000 events in 20 ms: 6 s under ASan with
// --check), kMaxSimThreads rt-app threads, kMaxSimCpus CPUs for a parsed machine (larger
// machines are parsed, validated and round-tripped, not simulated).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/error.h"
#include "engine/time.h"
#include "kernel/features.h"
#include "kernel/kernel.h"
#include "machine/machine.h"
#include "machine/machine_file.h"
#include "workload/json_relaxed.h"
#include "workload/rtapp.h"

namespace schedtwin::fuzz {

inline constexpr Time kSimNs = 20 * kNsPerMs;
inline constexpr int kMaxSimThreads = 32;
inline constexpr int kMaxSimCpus = 64;
inline constexpr std::uint64_t kMaxSimEvents = 20'000;
inline constexpr Time kSimChunkNs = 100 * kNsPerUs;  // the event bound is checked this often

// A finding that is not a crash by itself (a broken round trip): report it and abort, so
// that libFuzzer saves the input.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::abort();
}

// Profile v5.4 with the model's invariant checker on (--check), seed 1.
inline kernel::Config sim_config() {
  kernel::Config c;
  c.profile = kernel::make_profile("v5.4");
  c.check = true;
  return c;
}

// Runs a parsed task set on m for at most kSimNs (and about kMaxSimEvents) and formats its
// log rows; does nothing for a set of more than kMaxSimThreads threads.
inline void simulate_rtapp(const workload::rtapp::Config& cfg, const machine::Machine& m) {
  if (cfg.nr_threads > kMaxSimThreads || m.nr_cpus() > kMaxSimCpus) return;
  kernel::Kernel k(m, sim_config());
  workload::rtapp::Runner runner(cfg, k);
  const Time end = std::min(runner.end_time(), kSimNs);
  for (Time t = 0; t < end && k.events() < kMaxSimEvents;) {
    t = std::min(end, t + kSimChunkNs);
    k.run_until(t);
  }
  std::size_t bytes = runner.log_header().size();
  for (const auto& th : runner.results())
    for (const auto& row : th.rows) bytes += workload::rtapp::format_row(row).size();
  if (bytes == 0) finding("empty rt-app log header");
}

// A fixed task set sized to m: periodic timer threads (one more than the CPUs, at most
// kMaxSimThreads - 3), two CPU hogs and a SCHED_IDLE task, so that wakeups, idle states,
// SMT, migration costs and load balancing of the machine all get used.
inline void simulate_machine(const machine::Machine& m) {
  if (m.nr_cpus() > kMaxSimCpus) return;
  const int periodic = std::min(m.nr_cpus() + 1, kMaxSimThreads - 3);
  const std::string text =
      R"({"global": {"duration": 1, "log_size": "disable"}, "tasks": {
           "periodic": {"instance": )" +
      std::to_string(periodic) + R"(, "run": 700, "timer": {"ref": "unique", "period": 2000}},
           "hog": {"instance": 2, "loop": -1, "run": 5000, "sleep": 100},
           "idle": {"policy": "SCHED_IDLE", "run": 3000, "sleep": 500}}})";
  const auto cfg =
      workload::rtapp::parse(workload::parse_relaxed_json(text, "fuzz-machine-taskset"),
                             "fuzz-machine-taskset", m.nr_cpus());
  simulate_rtapp(cfg, m);
}

// A valid machine must survive its own dump: dump, parse the dump, dump again, same text.
inline void check_round_trip(const machine::Machine& m) {
  const std::string once = machine::dump_machine_file(m);
  std::string twice;
  try {
    twice = machine::dump_machine_file(machine::parse_machine(once, "round-trip"));
  } catch (const InputError& e) {
    finding(std::string("dump_machine_file output does not parse: ") + e.what() + "\n" + once);
  }
  if (once != twice) finding("dump_machine_file round trip differs:\n" + once + "---\n" + twice);
}

}  // namespace schedtwin::fuzz
