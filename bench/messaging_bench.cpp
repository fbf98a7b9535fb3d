// perf bench sched messaging on xeon-e5-2650v4, -g 20, as a benchmark: wall time,
// engine events per second and messages per second. The loop count is the benchmark
// argument; issue 3's figure is -l 40000 (320 M messages; the real 48-CPU machine took
// 29.4 s): run it with --benchmark_filter=BM_Messaging/40000.
#include <benchmark/benchmark.h>

#include "kernel/kernel.h"
#include "machine/machine_file.h"
#include "workload/messaging.h"

using namespace schedtwin;

static void BM_Messaging(benchmark::State& state) {
  machine::Machine m = machine::load_machine("xeon-e5-2650v4");
  workload::MessagingParams p;
  p.groups = 20;
  p.loops = state.range(0);
  std::uint64_t events = 0, messages = 0;
  for (auto _ : state) {
    kernel::Config c;
    c.profile = kernel::make_profile("v5.7");
    kernel::Kernel k(m, c);
    workload::MessagingResult r = workload::run_messaging(k, p);
    events += k.events();
    messages += static_cast<std::uint64_t>(r.messages);
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["messages_per_s"] = benchmark::Counter(static_cast<double>(messages), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Messaging)->Arg(400)->Arg(40000)->Unit(benchmark::kSecond)->Iterations(1);
