// The sched-idle fallback experiment (rt-app, hikey, 5 s) as a benchmark: reports
// simulated seconds per wall second and engine events per second.
#include <benchmark/benchmark.h>

#include <string>

#include "kernel/kernel.h"
#include "machine/machine_file.h"
#include "workload/rtapp.h"

using namespace schedtwin;

static void BM_SchedIdleFallback(benchmark::State& state, const char* profile) {
  machine::Machine m = machine::load_machine("hikey");
  workload::rtapp::Config cfg = workload::rtapp::parse_file(
      std::string(SCHEDTWIN_SOURCE_DIR) + "/examples/rt-app/lkml/sched-idle.json", m.nr_cpus());
  std::uint64_t events = 0;
  double sim_s = 0;
  for (auto _ : state) {
    kernel::Config c;
    c.profile = kernel::make_profile(profile);
    kernel::Kernel k(m, c);
    workload::rtapp::Runner r(cfg, k);
    k.run_until(r.end_time());
    events += k.events();
    sim_s += static_cast<double>(k.now()) / 1e9;
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["sim_s_per_wall_s"] = benchmark::Counter(sim_s, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_SchedIdleFallback, v5_3, "v5.3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SchedIdleFallback, v5_4, "v5.4")->Unit(benchmark::kMillisecond);
