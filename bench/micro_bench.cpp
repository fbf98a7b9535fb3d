// Micro benchmarks of the simulator's hot paths (issue 7). Times are host ns per item and
// items_per_second is per second of host CPU time (Google Benchmark's default); the set-up of
// each benchmark is outside its timed loop. items_per_second counts:
//
//  BM_EventQueue/N          events per second of engine::EventQueue in a steady-state hold
//                           model: N armed slots; one item = pop the earliest slot and re-arm
//                           it at that time + a seeded pseudo-random delay (0..1 ms).
//  BM_EnqueueDequeuePick/N  fair-class cycles per second on one CPU of xeon-e5-2650v4 (v5.7)
//                           whose cfs_rq holds N runnable tasks (the running one included):
//                           one item = the running task blocks (deactivate_task with
//                           DEQUEUE_SLEEP), pick_next_task_fair picks the next one, and the
//                           blocked task is woken again on the same CPU (activate_task with
//                           ENQUEUE_WAKEUP), i.e. what __schedule and ttwu_do_activate do
//                           without the context switch, the preemption check or the events.
//  BM_PeltUpdate/P          PELT updates per second of one sched_avg (update_pelt:
//                           ___update_load_sum + ___update_load_avg, pelt.cpp) advanced by
//                           seeded pseudo-random deltas of 0..P PELT periods (1 period =
//                           1.048576 ms) with the entity alternating runnable/running/blocked.
//  BM_SelectIdleSibling/B   select_idle_sibling calls per second on one 112-CPU LLC (one
//                           socket of 56 cores x SMT2, kernel v5.7) with B CPUs busy (a
//                           seeded pseudo-random choice, always including the target): a
//                           sync wakeup of a task whose previous CPU is the waker's (busy)
//                           CPU. The counter `probes` is CPUs examined per call (what the
//                           model charges the waker; not charged here). State the search
//                           updates (has_idle_cores, avg_scan_cost) is kept between calls,
//                           as back-to-back wakeups with no CPU changing state would see it.
//  BM_KernelSetup/C         kernels set up per second (items: CPUs per second) on a machine of
//                           2 packages x C/4 cores x SMT2, one LLC per package (xeon-2s-88's
//                           figures, v5.4): run queues, sched domains and groups
//                           (build_sched_domains), idle and NOHZ state, what every run pays
//                           before its first event. The MC level has C/4 groups on each CPU.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "engine/event_queue.h"
#include "engine/rng.h"
#include "kernel/kernel_impl.h"
#include "kernel/pelt.h"
#include "machine/machine_file.h"

using namespace schedtwin;

namespace {

// A task that computes for ever (1000 s per step): keeps its CPU busy.
struct Spinner final : kernel::TaskBody {
  kernel::Step next(kernel::TaskId, Time) override { return kernel::Step::run(sec(1000)); }
};

// A task that blocks at once and whenever it runs again.
struct Sleeper final : kernel::TaskBody {
  kernel::Step next(kernel::TaskId, Time) override { return kernel::Step::block(); }
};

kernel::Config v57_config() {
  kernel::Config c;
  c.profile = kernel::make_profile("v5.7");
  return c;
}

// The xeon-2s-88 preset's file (costs, idle states, SMT throughput), for a topology of its own.
nlohmann::json xeon_2s_88_json() {
  for (const auto& [stem, text] : machine::embedded_presets())
    if (stem == "xeon-2s-88") return nlohmann::json::parse(text);
  throw std::runtime_error("preset xeon-2s-88 is not compiled in");
}

// One socket of 56 cores x 2 threads in one LLC: xeon-2s-88's figures with the topology
// generator widened to a single 56-core package.
machine::Machine llc112_machine() {
  nlohmann::json j = xeon_2s_88_json();
  j["name"] = "bench-1s-56c-smt2";
  j["topology"]["packages"] = 1;
  j["topology"]["cores_per_package"] = 56;
  j["numa_distance"]["matrix"] = nlohmann::json::array({nlohmann::json::array({10})});
  return machine::from_json(j, "micro_bench");
}

// xeon-2s-88 with `cores` cores per package (two packages, SMT2, one node each).
machine::Machine two_socket_machine(int cores) {
  nlohmann::json j = xeon_2s_88_json();
  j["name"] = "bench-2s-smt2";
  j["topology"]["cores_per_package"] = cores;
  return machine::from_json(j, "micro_bench");
}

}  // namespace

static void BM_EventQueue(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  engine::EventQueue q;
  q.reserve(n);
  engine::Rng rng(1);
  constexpr std::uint64_t kMaxDelay = 1'000'000;  // ns
  for (std::size_t i = 0; i < n; ++i)
    q.arm(q.add_slot(0, static_cast<std::uint32_t>(i)), static_cast<Time>(rng.below(kMaxDelay)));
  for (auto _ : state) {
    const Time now = q.next_time();
    const engine::SlotId id = q.pop();
    q.arm(id, now + static_cast<Time>(rng.below(kMaxDelay)));
  }
  benchmark::DoNotOptimize(q.next_time());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventQueue)->Arg(64)->Arg(1000)->Arg(16000)->Arg(260000);

static void BM_EnqueueDequeuePick(benchmark::State& state) {
  using namespace kernel;
  const int n = static_cast<int>(state.range(0));
  KernelImpl k(machine::load_machine("xeon-e5-2650v4"), v57_config());
  // N spinners pinned to CPU 0, run through the documented paths (fork, wakeup, ticks,
  // schedule) for 50 ms, so that the cfs_rq, PELT sums and vruntimes are in a real state.
  Spinner body;
  for (int i = 0; i < n; ++i) k.create_task(TaskAttr{.name = "spin", .cpus = {0}}, &body, 0);
  k.run_until(ms(50));
  Rq& rq = k.cpu_rq(0);
  if (rq.curr == kNoTask || static_cast<int>(rq.nr_running) != n) {
    state.SkipWithError("set-up: CPU 0 does not hold N runnable tasks");
    return;
  }
  // The CPU time each blocking task ran for: seeded pseudo-random 1..100 us.
  engine::Rng rng(2);
  std::vector<Time> run_for(4096);
  for (Time& t : run_for)
    t = us(1) + static_cast<Time>(rng.below(static_cast<std::uint64_t>(us(99))));
  std::size_t i = 0;
  // From here on the event queue is never run again: the events it holds describe the state
  // at 50 ms, which the loop below changes directly.
  for (auto _ : state) {
    k.now_ += run_for[i++ & (run_for.size() - 1)];
    const TaskId prev = rq.curr;
    k.task(prev).state = TaskState::Blocked;
    k.deactivate_task(0, prev, DEQUEUE_SLEEP);
    const TaskId next = k.pick_next_task_fair(rq, prev);
    k.task(next).state = TaskState::Running;
    rq.curr = next;
    k.activate_task(0, prev, ENQUEUE_WAKEUP);
  }
  benchmark::DoNotOptimize(rq.cfs.min_vruntime);
  // The cycle must leave the run queue as --check wants it (counts, weights, timeline order,
  // one current task, PELT bounds); checked once, after timing.
  try {
    k.check_invariants();
  } catch (const CheckError& e) {
    state.SkipWithError(e.what());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EnqueueDequeuePick)->Arg(2)->Arg(16)->Arg(256);

static void BM_PeltUpdate(benchmark::State& state) {
  using namespace kernel;
  constexpr std::uint64_t kPeriodNs = 1024 * 1024;
  const auto max_delta = static_cast<std::uint64_t>(state.range(0)) * kPeriodNs;
  // Deltas and inputs are drawn before timing: one sample per update, cycled.
  struct Sample {
    std::uint64_t delta;  // ns
    unsigned long load, runnable;
    bool running;
  };
  engine::Rng rng(3);
  std::vector<Sample> samples(4096);
  for (Sample& s : samples) {
    s.delta = rng.below(max_delta + 1);
    const auto phase = rng.below(3);  // 0 blocked, 1 runnable waiting, 2 running
    s.load = s.runnable = phase ? 1 : 0;
    s.running = phase == 2;
  }
  sched_avg sa;
  std::uint64_t now = 0;
  std::size_t i = 0;
  for (auto _ : state) {
    const Sample& s = samples[i++ & (samples.size() - 1)];
    now += s.delta;
    benchmark::DoNotOptimize(update_pelt(now, sa, NICE_0_LOAD, s.load, s.runnable, s.running));
  }
  benchmark::DoNotOptimize(sa);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PeltUpdate)->ArgName("periods")->Arg(1)->Arg(4)->Arg(64);

static void BM_SelectIdleSibling(benchmark::State& state) {
  using namespace kernel;
  const int busy = static_cast<int>(state.range(0));
  const machine::Machine m = llc112_machine();
  KernelImpl k(m, v57_config());
  const int ncpu = k.nr_cpus();
  constexpr int kTarget = 0;
  // Busy CPUs: the target and a seeded pseudo-random choice of the others.
  std::vector<int> order(static_cast<std::size_t>(ncpu - 1));
  std::iota(order.begin(), order.end(), 1);
  engine::Rng rng(4);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  order.insert(order.begin(), kTarget);
  Spinner spin;
  for (int i = 0; i < busy; ++i) {
    const int cpu = order[static_cast<std::size_t>(i)];
    k.create_task(TaskAttr{.name = "spin", .cpus = {cpu}}, &spin, cpu);
  }
  // The wakee first runs (and blocks) on the target, then may run anywhere.
  Sleeper sleeper;
  const TaskId wakee =
      k.create_task(TaskAttr{.name = "wakee", .cpus = {kTarget}}, &sleeper, kTarget);
  k.run_until(ms(50));
  k.set_affinity(wakee, {});
  Task& p = k.task(wakee);
  if (p.state != TaskState::Blocked || p.cpu != kTarget) {
    state.SkipWithError("set-up: the wakee did not block on the target CPU");
    return;
  }
  // try_to_wake_up context: the spinner on the target CPU wakes the task.
  k.this_cpu_ = kTarget;
  k.current_ = k.cpu_rq(kTarget).curr;
  std::int64_t probes = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(k.select_idle_sibling(p, kTarget, kTarget));
    probes += k.probes_;
    k.probes_ = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["probes"] =
      benchmark::Counter(static_cast<double>(probes), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_SelectIdleSibling)->ArgName("busy")->Arg(28)->Arg(84)->Arg(111)->Arg(112);

static void BM_KernelSetup(benchmark::State& state) {
  const int cpus = static_cast<int>(state.range(0));
  const machine::Machine m = two_socket_machine(cpus / 4);
  kernel::Config c;
  c.profile = kernel::make_profile("v5.4");
  for (auto _ : state) {
    kernel::KernelImpl k(m, c);
    benchmark::DoNotOptimize(k.nr_cpus());
  }
  state.SetItemsProcessed(state.iterations() * cpus);
}
BENCHMARK(BM_KernelSetup)
    ->ArgName("cpus")
    ->Arg(88)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond);
