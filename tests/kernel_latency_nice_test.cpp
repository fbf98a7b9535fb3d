// The latency-nice RFC's idle-search changes (fair-class.md §7) and the SIS budgets:
// budget arithmetic, the rotating window, SIS_CORE off, SIS_SMT_FIRST, SIS_UTIL, and
// the probe cost charged to the waker.
#include <gtest/gtest.h>

#include <vector>

#include "engine/error.h"
#include "kernel/kernel.h"
#include "kernel/kernel_impl.h"
#include "kernel_test_util.h"
#include "machine/machine_file.h"

using namespace schedtwin;
using namespace schedtwin::kernel;
using schedtwin::testutil::BusyBody;
using schedtwin::testutil::flat_machine;

namespace {

Config config(const char* profile, const char* features = "") {
  Config c;
  c.profile = make_profile(profile);
  apply_features(c.profile.features, features, "--features");
  return c;
}

// Every CPU of the machine but `skip` runs a pinned always-busy task; returns one more
// task (on CPU 0) to search for.
TaskId all_busy(KernelImpl& k, std::vector<BusyBody>& bodies, int skip = -1) {
  bodies.resize(static_cast<size_t>(k.nr_cpus()) + 1);
  for (int c = 0; c < k.nr_cpus(); ++c)
    if (c != skip) k.create_task({.name = "busy", .cpus = {c}}, &bodies[c], c);
  TaskId p = k.create_task({.name = "p", .cpus = {0}}, &bodies.back(), 0);
  k.run_until(ms(1));
  k.task(p).allowed.assign(static_cast<size_t>(k.nr_cpus()), true);
  k.task(p).nr_cpus_allowed = k.nr_cpus();
  return p;
}

// The CPUs of `cpu`'s LLC domain, in the order select_idle_cpu walks them.
const std::vector<int>& llc_span(KernelImpl& k, int cpu) {
  const Rq& rq = k.cpu_rq(cpu);
  return k.levels_[static_cast<size_t>(rq.sd[static_cast<size_t>(rq.sd_llc)].level_id)].span;
}

}  // namespace

// xeon-2s-88: an LLC of 44 CPUs (22 cores x SMT2). latency-nice 5: nr = 5*44/100 = 2,
// floor max(2, 2 siblings) = 2; "decrement then test" examines nr-1 = 1 CPU.
TEST(LatencyNice, Nice5OnA44CpuLlcExaminesOneCpu) {
  KernelImpl k(machine::load_machine("xeon-2s-88"), config("v5.3", "latency-nice"));
  ASSERT_EQ(k.cpu_rq(0).llc_size, 44);
  std::vector<BusyBody> bodies;
  TaskId p = all_busy(k, bodies);
  EXPECT_EQ(k.task(p).latency_nice, 5);
  k.probes_ = 0;
  k.this_cpu_ = 0;
  EXPECT_EQ(k.select_idle_cpu(k.task(p), 0), -1);
  EXPECT_EQ(k.probes_, 1);
}

// latency-nice 100: nr = 44, so 43 CPUs are examined; 50: nr = 22 -> 21.
TEST(LatencyNice, TheBudgetScalesWithLatencyNice) {
  for (auto [ln, probes] : {std::pair{100, 43}, std::pair{50, 21}, std::pair{1, 1}}) {
    KernelImpl k(machine::load_machine("xeon-2s-88"), config("v5.3", "latency-nice"));
    std::vector<BusyBody> bodies;
    TaskId p = all_busy(k, bodies);
    k.task(p).latency_nice = ln;
    k.probes_ = 0;
    EXPECT_EQ(k.select_idle_cpu(k.task(p), 0), -1);
    EXPECT_EQ(k.probes_, probes) << "latency-nice " << ln;
  }
}

// Tasks take the latency-nice of their group; values outside 1..100 are refused.
TEST(LatencyNice, TasksTakeTheirGroupsValue) {
  Kernel k(flat_machine(1, 4), config("v5.3", "latency-nice"));
  int g = k.create_task_group({.name = "/lat", .latency_nice = 40});
  EXPECT_EQ(k.task_group(g).latency_nice, 40);
  EXPECT_THROW(k.create_task_group({.name = "/bad", .latency_nice = 0}), InputError);
  EXPECT_THROW(k.create_task_group({.name = "/bad", .latency_nice = 101}), InputError);
  EXPECT_THROW(k.create_task_group({.name = "/bad", .parent = 7}), InputError);
}

// SIS_ROTATE: the search records where it stopped, keyed by the target CPU, and the next
// search for the same target starts there.
TEST(LatencyNice, ASecondSearchForTheSameTargetStartsWhereTheFirstStopped) {
  KernelImpl k(machine::load_machine("xeon-2s-88"), config("v5.3", "latency-nice"));
  std::vector<BusyBody> bodies;
  TaskId p = all_busy(k, bodies);
  const auto& span = llc_span(k, 0);
  // nr = 2: the loop visits the target (examined), then the next CPU of the span, where
  // the budget runs out; that unexamined CPU is where the next search starts.
  EXPECT_EQ(k.select_idle_cpu(k.task(p), 0), -1);
  EXPECT_EQ(k.cpu_rq(0).sis_next_cpu, span[1]);
  k.probes_ = 0;
  EXPECT_EQ(k.select_idle_cpu(k.task(p), 0), -1);
  EXPECT_EQ(k.cpu_rq(0).sis_next_cpu, span[2]);
  // Without SIS_ROTATE nothing is recorded.
  KernelImpl k2(machine::load_machine("xeon-2s-88"), config("v5.3", "LATENCY_NICE_SIS"));
  std::vector<BusyBody> bodies2;
  TaskId p2 = all_busy(k2, bodies2);
  k2.select_idle_cpu(k2.task(p2), 0);
  EXPECT_EQ(k2.cpu_rq(0).sis_next_cpu, -1);
}

// The rotating window finds an idle CPU a fixed start would not reach with a budget of one.
TEST(LatencyNice, RotationReachesAnIdleCpuBeyondTheBudget) {
  KernelImpl probe(machine::load_machine("xeon-2s-88"), config("v5.3", "latency-nice"));
  const int idle = llc_span(probe, 0)[3];
  for (const char* f : {"latency-nice", "LATENCY_NICE_SIS"}) {
    KernelImpl k(machine::load_machine("xeon-2s-88"), config("v5.3", f));
    std::vector<BusyBody> bodies;
    TaskId p = all_busy(k, bodies, idle);
    ASSERT_TRUE(k.idle_cpu(idle));
    int found = -1;
    for (int search = 0; search < 4 && found < 0; ++search) found = k.select_idle_cpu(k.task(p), 0);
    // With rotation the third search examines span[3]; without it every search examines CPU 0.
    EXPECT_EQ(found, std::string(f) == "latency-nice" ? idle : -1) << f;
  }
}

namespace {

// An SMT2 machine with one LLC of 4 cores; the target's sibling is idle and so is core 3.
struct SmtCase {
  machine::Machine m;
  SmtCase() {
    m = flat_machine(1, 8);
    for (auto& c : m.cpus) c.core = c.id / 2;
    m.smt_throughput = 0.6;
  }
};

int pick(const char* features) {
  SmtCase s;
  KernelImpl k(s.m, config("v5.3", features));
  BusyBody b[5];
  for (int c : {0, 2, 3, 4, 5})
    k.create_task({.name = "busy", .cpus = {c}}, &b[c == 0 ? 0 : c - 1], c);
  BusyBody pb;
  TaskId p = k.create_task({.name = "p", .cpus = {0}}, &pb, 0);
  k.run_until(ms(1));
  k.task(p).allowed.assign(8, true);
  k.set_idle_cores(0, true);
  k.this_cpu_ = 0;
  return k.select_idle_sibling(k.task(p), 0, 0);
}

}  // namespace

// CPUs 0,2,3,4,5 busy: core 3 (CPUs 6,7) is idle, CPU 1 (sibling of the target) is idle.
TEST(LatencyNice, SisCoreOffSkipsTheIdleCoreScan) {
  EXPECT_EQ(pick(""), 6);             // select_idle_core finds the idle core
  EXPECT_EQ(pick("NO_SIS_CORE"), 1);  // select_idle_cpu from the target finds CPU 1 first
}

TEST(LatencyNice, SmtFirstTriesTheTargetsSiblingsBeforeTheLlcScan) {
  EXPECT_EQ(pick("NO_SIS_CORE,SIS_SMT_FIRST"), 1);
}

// The idle-search probes are charged to the waking CPU: a wakeup costs the waker
// costs.wakeup plus one costs.idle_probe per CPU examined.
TEST(LatencyNice, ProbeCostShowsUpInTheWakersTime) {
  machine::Machine m = machine::load_machine("xeon-2s-88");
  m.costs.idle_probe.ns = 1000;
  m.costs.wakeup.ns = 300;
  for (const char* f : {"latency-nice", ""}) {
    KernelImpl k(m, config("v5.3", f));
    std::vector<BusyBody> bodies;
    TaskId p = all_busy(k, bodies);
    // Put p to sleep so that it can be woken: it is queued (not running) on CPU 0.
    k.task(p).state = TaskState::Blocked;
    k.deactivate_task(0, p, DEQUEUE_SLEEP);
    k.this_cpu_ = 4;
    k.current_ = k.cpu_rq(4).curr;
    k.settle(4);
    Time debt_before = k.cpu_rq(4).debt;
    k.probes_ = 0;
    ASSERT_TRUE(k.try_to_wake_up(p, WF_NONE));
    Time charged = k.cpu_rq(4).debt - debt_before;
    EXPECT_GT(charged, 300) << f;
    EXPECT_EQ((charged - 300) % 1000, 0) << f;
  }
}

// select_task_rq returns before ttwu_queue: the wakee's CPU is kicked only once the search
// is over, so it starts running the scan's cost later (IPI, then its idle state's exit).
TEST(LatencyNice, ProbeCostDelaysTheWakee) {
  machine::Machine m = machine::load_machine("xeon-2s-88");
  m.costs.idle_probe.ns = 1000;
  KernelImpl probe(m, config("v5.3", "latency-nice"));
  const int idle = llc_span(probe, 0)[10];
  KernelImpl k(m, config("v5.3", "latency-nice"));
  std::vector<BusyBody> bodies;
  TaskId p = all_busy(k, bodies, idle);
  k.task(p).latency_nice = 100;  // a budget of 43 CPUs reaches span[10]
  k.task(p).state = TaskState::Blocked;
  k.deactivate_task(0, p, DEQUEUE_SLEEP);
  ASSERT_EQ(k.cpu_rq(idle).mode, CpuMode::Idle);
  const int state = k.cpu_rq(idle).idle_state;
  ASSERT_GE(state, 0);
  k.this_cpu_ = 4;
  k.current_ = k.cpu_rq(4).curr;
  k.settle(4);
  const Time debt_before = k.cpu_rq(4).debt;
  k.probes_ = 0;
  ASSERT_TRUE(k.try_to_wake_up(p, WF_NONE));
  ASSERT_EQ(k.task(p).cpu, idle);
  const Time scan = k.cpu_rq(4).debt - debt_before - m.costs.wakeup.ns;
  EXPECT_GE(scan, 10 * 1000);
  EXPECT_EQ(
      k.q_.when(k.cpu_rq(idle).idle_exit_slot),
      k.now_ + scan + m.costs.ipi.ns + m.idle_states[static_cast<size_t>(state)].real_exit_ns);
}

// SIS_UTIL (v6.0): nr_idle_scan = llc_weight * (1 - (util/llc_weight)^2 * pct^2 / 10^4 / 1024^2)
// With the LLC idle (util 0) the whole LLC may be scanned; at 85 % utilization none.
TEST(LatencyNice, SisUtilScanDepthFallsWithUtilization) {
  KernelImpl k(flat_machine(1, 8), config("v6.0"));
  lb_env env;
  env.dst_cpu = 0;
  env.sd_idx = 0;
  env.idle = CPU_IDLE;
  int pct = k.level_of(0, 0).imbalance_pct;
  ASSERT_EQ(pct, 117);
  k.update_idle_cpu_scan(env, 0);
  EXPECT_EQ(k.llc_shared_[0].nr_idle_scan, 8);
  // x = 4096/8 = 512; tmp = 512^2 * 117^2 / (10000 * 1024) = 350; y = (1024-350)*8/1024 = 5
  k.update_idle_cpu_scan(env, 4096);
  EXPECT_EQ(k.llc_shared_[0].nr_idle_scan, 5);
  k.update_idle_cpu_scan(env, 8 * 1024 * 100 / 117 + 8);
  EXPECT_EQ(k.llc_shared_[0].nr_idle_scan, 0);
  env.idle = CPU_NEWLY_IDLE;  // newly idle balancing never writes it
  k.update_idle_cpu_scan(env, 0);
  EXPECT_EQ(k.llc_shared_[0].nr_idle_scan, 0);
}
