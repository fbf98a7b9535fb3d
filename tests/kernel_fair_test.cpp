// Scenario tests of the fair class: weights, SCHED_IDLE, wakeup preemption, fork placement.
#include <gtest/gtest.h>

#include <memory>

#include "kernel/kernel.h"
#include "kernel_test_util.h"

using namespace schedtwin;
using namespace schedtwin::kernel;
using schedtwin::testutil::BusyBody;
using schedtwin::testutil::flat_machine;
using schedtwin::testutil::PeriodicBody;

namespace {

Config cfg(const char* profile = "v5.4") {
  Config c;
  c.profile = make_profile(profile);
  return c;
}

double share(Kernel& k, TaskId a, TaskId b) {
  double x = static_cast<double>(k.task_stats(a).sum_exec_runtime);
  double y = static_cast<double>(k.task_stats(b).sum_exec_runtime);
  return x / (x + y);
}

}  // namespace

TEST(Fair, TwoNiceZeroTasksShareOneCpuEqually) {
  Kernel k(flat_machine(1, 1), cfg());
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a"}, &a);
  TaskId tb = k.create_task({.name = "b"}, &b);
  k.run_until(sec(2));
  EXPECT_NEAR(share(k, ta, tb), 0.5, 0.01);
  // Both were running almost all the time between them.
  Time total = k.task_stats(ta).sum_exec_runtime + k.task_stats(tb).sum_exec_runtime;
  EXPECT_GE(total, sec(2) - ms(4));  // runtime is accounted lazily, at ticks and switches
}

TEST(Fair, NiceWeightsSplitTimeByWeight) {
  // nice 0 (1024) against nice 5 (335): 1024/1359 = 0.7535.
  Kernel k(flat_machine(1, 1), cfg());
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a", .nice = 0}, &a);
  TaskId tb = k.create_task({.name = "b", .nice = 5}, &b);
  k.run_until(sec(4));
  EXPECT_NEAR(share(k, ta, tb), 1024.0 / 1359.0, 0.01);
}

// Renicing a busy task to a lower weight: set_load_weight -> reweight_task (since v5.1)
// rescales its load_avg to the new weight, so --check's bound (load_avg <= weight) holds.
// Without the rescale a runnable nice-0 task (load_avg near 1024) reniced to 10 (weight 110)
// breaks it at the next event.
TEST(Fair, RenicingABusyTaskRescalesItsLoadAvg) {
  for (const char* profile : {"v5.4", "v5.7", "v6.0", "v6.6"}) {
    Config c = cfg(profile);
    c.check = true;
    Kernel k(flat_machine(1, 1), c);
    BusyBody a, b;
    TaskId ta = k.create_task({.name = "a"}, &a);
    k.create_task({.name = "b"}, &b);
    k.run_until(ms(100));
    k.set_scheduler(ta, Policy::Normal, 10);
    EXPECT_NO_THROW(k.run_until(ms(200))) << profile;
    // And back: a heavier weight needs no help, but must not break either.
    k.set_scheduler(ta, Policy::Normal, -5);
    EXPECT_NO_THROW(k.run_until(ms(300))) << profile;
  }
}

TEST(Fair, SchedIdleTaskGetsWeightThree) {
  // SCHED_IDLE weight 3 against 1024: the idle task gets 3/1027 = 0.29 % of the CPU.
  Kernel k(flat_machine(1, 1), cfg());
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "normal"}, &a);
  TaskId tb = k.create_task({.name = "idle", .policy = Policy::Idle}, &b);
  k.run_until(sec(10));
  EXPECT_NEAR(1.0 - share(k, ta, tb), 3.0 / 1027.0, 0.002);
}

TEST(Fair, WakeeOfSchedIdleCpuRunsAtOnce) {
  // A periodic normal task pinned beside a SCHED_IDLE hog preempts it on every wakeup:
  // its latency is its timer slack (50 us) and nothing more (costs are zero here).
  Kernel k(flat_machine(1, 1), cfg());
  BusyBody hog;
  PeriodicBody p;
  p.k = &k;
  p.work = us(1000);
  p.period = ms(10);
  k.create_task({.name = "hog", .policy = Policy::Idle}, &hog);
  k.create_task({.name = "p"}, &p);
  k.run_until(sec(1));
  ASSERT_GT(p.latencies.size(), 90u);
  for (Time l : p.latencies) EXPECT_EQ(l, us(50));
}

TEST(Fair, ForkSpreadsBusyTasksOverIdleCpus) {
  Kernel k(flat_machine(2, 2), cfg());
  std::vector<std::unique_ptr<BusyBody>> bodies;
  std::vector<int> cpus;
  for (int i = 0; i < 4; ++i) {
    bodies.push_back(std::make_unique<BusyBody>());
    TaskId t = k.create_task({.name = "t"}, bodies.back().get());
    cpus.push_back(k.task_stats(t).fork_cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Fair, SameSeedSameResult) {
  auto run = [] {
    Kernel k(flat_machine(2, 2, us(30), us(100)), cfg());
    std::vector<std::unique_ptr<PeriodicBody>> bodies;
    for (int i = 0; i < 6; ++i) {
      bodies.push_back(std::make_unique<PeriodicBody>());
      bodies.back()->k = &k;
      bodies.back()->work = us(1000 + 300 * i);
      bodies.back()->period = us(3000 + 500 * i);
      k.create_task({.name = "p"}, bodies.back().get());
    }
    k.run_until(sec(1));
    std::vector<Time> all;
    for (auto& b : bodies) all.insert(all.end(), b->latencies.begin(), b->latencies.end());
    return std::make_pair(all, k.events());
  };
  EXPECT_EQ(run(), run());
}
