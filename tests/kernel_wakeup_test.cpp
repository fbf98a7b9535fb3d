// Scenario tests of the wakeup path: the decisions select_idle_sibling takes with and
// without the sched-idle fallback (fair-class.md §4.5, §4.10).
#include <gtest/gtest.h>

#include "kernel/kernel.h"
#include "kernel_test_util.h"

using namespace schedtwin;
using namespace schedtwin::kernel;
using schedtwin::testutil::BusyBody;
using schedtwin::testutil::flat_machine;
using schedtwin::testutil::PeriodicBody;

namespace {

struct Outcome {
  std::vector<Time> latencies;
  std::int64_t migrations;
  int final_cpu;
};

// One LLC of 4 CPUs; SCHED_IDLE hogs pinned on CPUs 0-2, CPU 3 idle with a 200 us exit
// cost. A periodic normal task starts on CPU 0 (pinned at fork, then free to move).
Outcome run(const char* profile) {
  Config c;
  c.profile = make_profile(profile);
  Kernel k(flat_machine(1, 4, us(200), us(10)), c);
  BusyBody hogs[3];
  for (int i = 0; i < 3; ++i)
    k.create_task({.name = "hog", .policy = Policy::Idle, .cpus = {i}}, &hogs[i]);
  PeriodicBody p;
  p.k = &k;
  p.work = us(2000);
  p.period = ms(8);
  TaskId t = k.create_task({.name = "p", .cpus = {0}}, &p);
  k.set_affinity(t, {});
  k.run_until(ms(500));
  return {p.latencies, k.task_stats(t).nr_migrations, k.task_cpu(t)};
}

}  // namespace

TEST(Wakeup, WithoutFallbackTheWakeeLeavesTheSchedIdleCpuForAnIdleOne) {
  Outcome o = run("v5.3");
  EXPECT_EQ(o.final_cpu, 3);
  EXPECT_GE(o.migrations, 1);
  // Every wakeup but the first pays the idle CPU's exit cost after the 50 us slack.
  ASSERT_GT(o.latencies.size(), 50u);
  for (size_t i = 1; i < o.latencies.size(); ++i) EXPECT_EQ(o.latencies[i], us(250)) << i;
}

TEST(Wakeup, WithFallbackTheWakeeStaysOnTheSchedIdleCpu) {
  Outcome o = run("v5.4");
  EXPECT_EQ(o.final_cpu, 0);
  EXPECT_EQ(o.migrations, 0);
  ASSERT_GT(o.latencies.size(), 50u);
  for (Time l : o.latencies) EXPECT_EQ(l, us(50));  // slack only: the hog is preempted at once
}

TEST(Wakeup, FallbackFlagAloneMatchesTheV54Profile) {
  Config c;
  c.profile = make_profile("v5.3");
  apply_features(c.profile.features, "sched-idle-fallback", "--features");
  EXPECT_TRUE(c.profile.features.has(Feature::SIS_SCHED_IDLE_FALLBACK));
  EXPECT_EQ(c.profile.features, make_profile("v5.4").features);
}
