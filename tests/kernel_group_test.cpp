// Group scheduling (CONFIG_FAIR_GROUP_SCHED, fair.c v5.15): per-CPU group cfs_rqs and
// entities, calc_group_shares, PELT propagation, task_h_load, idle groups.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernel/kernel.h"
#include "kernel/kernel_impl.h"
#include "kernel_test_util.h"

using namespace schedtwin;
using namespace schedtwin::kernel;
using schedtwin::testutil::BusyBody;
using schedtwin::testutil::flat_machine;

namespace {

Config config(const char* profile = "v5.17") { return testutil::checked_config(profile); }

double share(KernelImpl& k, TaskId a, TaskId b) {
  double ra = static_cast<double>(k.task(a).se.sum_exec_runtime);
  double rb = static_cast<double>(k.task(b).se.sum_exec_runtime);
  return ra / (ra + rb);
}

}  // namespace

// The acceptance test: two always-busy groups with cpu.weight 100 and 300 on one
// CPU split its time 1:3 within 2 %. Their group entities weigh 1024 and 3072 (all of
// each group's load is on this CPU, so calc_group_shares gives the full tg shares).
TEST(GroupSched, WeightsOneToThreeSplitTheCpuOneToThree) {
  KernelImpl k(flat_machine(1, 1), config());
  int g1 = k.create_task_group({.name = "/a", .weight = 100});
  int g3 = k.create_task_group({.name = "/b", .weight = 300});
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a", .group = g1}, &a, 0);
  TaskId tb = k.create_task({.name = "b", .group = g3}, &b, 0);
  k.run_until(2 * kNsPerSec);
  EXPECT_NEAR(share(k, ta, tb), 0.25, 0.25 * 0.02);
  EXPECT_EQ(k.tg_se(g1, 0)->load.weight, 1024u);
  EXPECT_EQ(k.tg_se(g3, 0)->load.weight, 3072u);
}

// Without groups the same two tasks split evenly: the test above fails if groups are ignored.
TEST(GroupSched, TheSameTasksInTheRootGroupSplitEvenly) {
  KernelImpl k(flat_machine(1, 1), config());
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a"}, &a, 0);
  TaskId tb = k.create_task({.name = "b"}, &b, 0);
  k.run_until(2 * kNsPerSec);
  EXPECT_NEAR(share(k, ta, tb), 0.5, 0.01);
}

// Group weight is per group, not per task: a group of three busy tasks against one task of
// an equal-weight group gets half the CPU, not three quarters.
TEST(GroupSched, AGroupsTasksShareTheGroupsWeight) {
  KernelImpl k(flat_machine(1, 1), config());
  int many = k.create_task_group({.name = "/many"});
  int one = k.create_task_group({.name = "/one"});
  BusyBody b[4];
  TaskId t[4];
  for (int i = 0; i < 3; ++i) t[i] = k.create_task({.name = "m", .group = many}, &b[i], 0);
  t[3] = k.create_task({.name = "o", .group = one}, &b[3], 0);
  k.run_until(3 * kNsPerSec);
  double total = 0;
  for (TaskId id : t) total += static_cast<double>(k.task(id).se.sum_exec_runtime);
  EXPECT_NEAR(static_cast<double>(k.task(t[3]).se.sum_exec_runtime) / total, 0.5, 0.01);
  // The hierarchy's counts: the root sees two entities and four tasks.
  EXPECT_EQ(k.cpu_rq(0).cfs.nr_running, 2u);
  EXPECT_EQ(k.cpu_rq(0).cfs.h_nr_running, 4u);
  EXPECT_EQ(k.tg_cfs_rq(many, 0).h_nr_running, 3u);
}

// calc_group_shares: a group busy on two CPUs gives each CPU's group entity about half its
// shares, since each CPU holds half of tg->load_avg (1024 x 1024 / 2048 = 512).
TEST(GroupSched, SharesFollowTheGroupsLoadAcrossCpus) {
  KernelImpl k(flat_machine(1, 2), config());
  int g = k.create_task_group({.name = "/g"});
  BusyBody a, b;
  k.create_task({.name = "a", .cpus = {0}, .group = g}, &a, 0);
  k.create_task({.name = "b", .cpus = {1}, .group = g}, &b, 0);
  k.run_until(kNsPerSec);
  for (int c = 0; c < 2; ++c)
    EXPECT_NEAR(static_cast<double>(k.tg_se(g, c)->load.weight), 512, 512 * 0.03);
  EXPECT_NEAR(static_cast<double>(k.tg_rt_[static_cast<size_t>(g)].load_avg), 2048, 2048 * 0.03);
}

// task_h_load: two busy tasks of one group on one CPU each carry half the group entity's
// load (~1024 x 1024 / 2048 = 512 each), where their own load_avg is ~1024.
TEST(GroupSched, TaskHLoadIsTheTasksPartOfItsGroupsEntity) {
  KernelImpl k(flat_machine(1, 1), config());
  int g = k.create_task_group({.name = "/g"});
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a", .group = g}, &a, 0);
  k.create_task({.name = "b", .group = g}, &b, 0);
  k.run_until(kNsPerSec);
  EXPECT_NEAR(static_cast<double>(k.task(ta).se.avg.load_avg), 1024, 1024 * 0.03);
  EXPECT_NEAR(static_cast<double>(k.task_h_load(k.task(ta))), 512, 512 * 0.03);
  // Propagation: the root sees the group's util, the CPU is full.
  EXPECT_GT(k.cpu_rq(0).cfs.avg.util_avg, 1000u);
  EXPECT_NEAR(static_cast<double>(k.cpu_rq(0).cfs.avg.load_avg), 1024, 1024 * 0.03);
}

// A task forked into a group (two levels deep) on an idle CPU: post_init_entity_util_avg
// gives it util 512 (half the spare capacity) and load 1024, attach_entity_cfs_rq
// propagates that to the root once. The group entities were attached when their groups
// came online, so their first enqueue does not add it again.
TEST(GroupSched, AForkedTasksAveragesReachTheRootOnce) {
  KernelImpl k(flat_machine(1, 2), config());
  int p = k.create_task_group({.name = "/p"});
  int g = k.create_task_group({.name = "/p/g", .parent = p});
  BusyBody a;
  TaskId ta = k.create_task({.name = "a", .group = g}, &a, 0);
  EXPECT_EQ(k.task(ta).se.avg.util_avg, 512u);
  EXPECT_EQ(k.task(ta).se.avg.load_avg, 1024u);
  const cfs_rq& root = k.cpu_rq(0).cfs;
  EXPECT_EQ(root.avg.util_avg, 512u);
  EXPECT_EQ(root.avg.runnable_avg, 512u);
  EXPECT_LE(root.avg.load_avg, 1024u);
  EXPECT_GE(root.avg.load_avg, 1000u);
  // The other CPU's group entities are attached too, and empty.
  EXPECT_EQ(k.cpu_rq(1).cfs.avg.util_avg, 0u);
  EXPECT_NE(k.tg_se(g, 1)->avg.last_update_time, 0u);
}

// A cpu.idle group (v5.15): its entity weighs 3, its tasks count as idle above it, a CPU
// running only them is sched-idle, and a new normal task takes the CPU by the second tick
// (the fork's preemption picks the group's entity again, being leftmost, and BASE_SLICE
// then leaves it min_granularity before the tick preempts it).
TEST(GroupSched, AnIdleGroupsTasksAreIdleAboveTheGroup) {
  KernelImpl k(flat_machine(1, 1), config());
  int g = k.create_task_group({.name = "/idle", .idle = true});
  BusyBody hog, normal;
  TaskId th = k.create_task({.name = "hog", .group = g}, &hog, 0);
  k.run_until(ms(50));
  EXPECT_EQ(k.tg_se(g, 0)->load.weight, WEIGHT_IDLEPRIO);
  EXPECT_EQ(k.task(th).se.load.weight, 1024u);  // the task keeps its own nice-0 weight
  EXPECT_EQ(k.cpu_rq(0).cfs.idle_h_nr_running, 1u);
  EXPECT_EQ(k.tg_cfs_rq(g, 0).idle_h_nr_running, 0u);  // not idle below the idle cfs_rq
  EXPECT_TRUE(k.sched_idle_cpu(0));
  TaskId tn = k.create_task({.name = "n"}, &normal, 0);
  k.run_until(ms(59));  // two ticks at HZ=250
  EXPECT_EQ(k.cpu_rq(0).curr, tn);
  k.run_until(ms(2050));
  // 1024 against 3: the hog gets about 3/1027 of the CPU once the normal task runs.
  double hog_share =
      static_cast<double>(k.task(th).se.sum_exec_runtime - ms(50)) / static_cast<double>(ms(2000));
  EXPECT_LT(hog_share, 0.01);
}

// A nested group: a task two levels down still gets its fair share, and every level's
// counts agree (the --check invariants run after every event in these tests).
TEST(GroupSched, NestedGroupsShareLevelByLevel) {
  KernelImpl k(flat_machine(1, 1), config());
  int parent = k.create_task_group({.name = "/p", .weight = 100});
  int child = k.create_task_group({.name = "/p/c", .parent = parent, .weight = 100});
  int other = k.create_task_group({.name = "/o", .weight = 100});
  BusyBody a, b, c;
  TaskId ta = k.create_task({.name = "a", .group = child}, &a, 0);
  TaskId tb = k.create_task({.name = "b", .group = parent}, &b, 0);
  TaskId tc = k.create_task({.name = "c", .group = other}, &c, 0);
  k.run_until(3 * kNsPerSec);
  // /o gets half; /p's half is split between its task b and its child group /p/c.
  double total =
      static_cast<double>(k.task(ta).se.sum_exec_runtime + k.task(tb).se.sum_exec_runtime +
                          k.task(tc).se.sum_exec_runtime);
  EXPECT_NEAR(static_cast<double>(k.task(tc).se.sum_exec_runtime) / total, 0.5, 0.01);
  EXPECT_NEAR(static_cast<double>(k.task(ta).se.sum_exec_runtime) / total, 0.25, 0.01);
  EXPECT_EQ(k.task(ta).se.depth, 2);
}

// Load balancing moves a group's task with its signals: the source group cfs_rq loses
// the load at once (detach_entity_cfs_rq) and the group's shares follow.
TEST(GroupSched, BalancingSpreadsAGroupAndItsShares) {
  KernelImpl k(flat_machine(1, 2), config());
  int g = k.create_task_group({.name = "/g"});
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a", .cpus = {0}, .group = g}, &a, 0);
  TaskId tb = k.create_task({.name = "b", .cpus = {0}, .group = g}, &b, 0);
  k.run_until(ms(100));
  k.set_affinity(ta, {0, 1});
  k.set_affinity(tb, {0, 1});
  k.run_until(2 * kNsPerSec);
  EXPECT_NE(k.task(ta).cpu, k.task(tb).cpu);
  for (int c = 0; c < 2; ++c)
    EXPECT_NEAR(static_cast<double>(k.tg_se(g, c)->load.weight), 512, 512 * 0.05);
}

// Moving the running task of a group whose other task stays, as active balancing does
// (move_task, then schedule on the old CPU): the group entity stays queued there and must
// go back into its timeline, so the task left behind keeps running.
TEST(GroupSched, MovingARunningTaskLeavesItsGroupQueued) {
  KernelImpl k(flat_machine(1, 2), config());
  int g = k.create_task_group({.name = "/g"});
  BusyBody a, b;
  k.create_task({.name = "a", .cpus = {0}, .group = g}, &a, 0);
  k.create_task({.name = "b", .cpus = {0}, .group = g}, &b, 0);
  k.run_until(ms(50));
  TaskId running = k.cpu_rq(0).curr;
  ASSERT_NE(running, kNoTask);
  TaskId other = running == 0 ? 1 : 0;
  k.task(running).allowed = {false, true};
  k.task(running).nr_cpus_allowed = 1;
  k.move_task(running, 1);
  k.schedule(0);
  k.run_until(ms(100));
  EXPECT_EQ(k.task(running).cpu, 1);
  EXPECT_EQ(k.cpu_rq(0).curr, other);
  EXPECT_TRUE(k.tg_se(g, 0)->on_rq);
  Time before = k.task(other).se.sum_exec_runtime;
  k.run_until(ms(200));
  EXPECT_NEAR(static_cast<double>(k.task(other).se.sum_exec_runtime - before),
              static_cast<double>(ms(100)), ms(2));
}

// update_cfs_group reweights on every call (SMP kernels up to v6.6), and reweight_entity
// sets load_avg = se_weight * load_sum / divider: right after a wakeup into the group, in
// the middle of a PELT period, the group entity's load_avg already matches its load_sum.
TEST(GroupSched, EveryGroupUpdateResyncsTheEntitysLoadAvg) {
  KernelImpl k(flat_machine(1, 1), config());
  int g = k.create_task_group({.name = "/g"});
  BusyBody a;
  struct Sleeper : TaskBody {
    KernelImpl* k = nullptr;
    bool ran = false;
    Step next(TaskId self, Time now) override {
      ran = !ran;
      if (ran) return Step::run(us(30));
      k->arm_timer(self, now + us(1337));
      return Step::block();
    }
  } b;
  b.k = &k;
  k.create_task({.name = "a", .group = g}, &a, 0);
  k.create_task({.name = "b", .group = g}, &b, 0);
  int samples = 0, in_step = 0;
  for (Time t = ms(500); t < ms(600); t += us(97), ++samples) {
    k.run_until(t);
    const sched_entity& se = *k.tg_se(g, 0);
    const std::uint64_t want = se.load.weight * se.avg.load_sum / get_pelt_divider(se.avg);
    if (se.avg.load_avg == want) ++in_step;
  }
  EXPECT_EQ(in_step, samples);
}

// sched_slice with v5.13's ALT_PERIOD: the period counts every task of the CPU (the root's
// h_nr_running), not the entities of the task's own cfs_rq. A nice -20 task beside a group
// of 9 busy tasks: v5.7 shares a 6 ms period (2 entities at the root), v5.17 a 7.5 ms one
// (10 tasks > sched_nr_latency, 10 x 0.75 ms), each in the ratio of the two weights.
TEST(GroupSched, AltPeriodCountsEveryTaskOfTheCpu) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    SCOPED_TRACE(profile);
    KernelImpl k(flat_machine(1, 1), config(profile));
    int g = k.create_task_group({.name = "/g"});
    BusyBody heavy;
    std::vector<BusyBody> rest(9);
    TaskId h = k.create_task({.name = "heavy", .nice = -20}, &heavy, 0);
    for (BusyBody& b : rest) k.create_task({.name = "b", .group = g}, &b, 0);
    sched_entity& se = k.task(h).se;
    const double w = static_cast<double>(se.load.weight);
    const double wg = static_cast<double>(k.tg_se(g, 0)->load.weight);
    const double period = std::string(profile) == "v5.7" ? 6e6 : 7.5e6;
    EXPECT_NEAR(static_cast<double>(k.sched_slice(*se.cfs, se)), period * w / (w + wg),
                period * 1e-3);
  }
}

// BASE_SLICE (v5.13): no slice below min_granularity (0.75 ms on one CPU). Nine tasks of a
// group beside one root task of equal weight: v5.7 gives a group task 6.75 ms x 1/2 x 1/9 =
// 0.375 ms, v5.17 (period 7.5 ms: 0.42 ms) is raised to 0.75 ms.
TEST(GroupSched, BaseSliceIsAtLeastMinGranularity) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    SCOPED_TRACE(profile);
    KernelImpl k(flat_machine(1, 1), config(profile));
    int g = k.create_task_group({.name = "/g"});
    BusyBody one;
    std::vector<BusyBody> rest(9);
    k.create_task({.name = "one"}, &one, 0);
    TaskId t = kNoTask;
    for (BusyBody& b : rest) t = k.create_task({.name = "b", .group = g}, &b, 0);
    sched_entity& se = k.task(t).se;
    const double wg = static_cast<double>(k.tg_se(g, 0)->load.weight);
    const double v57 = 6.75e6 * wg / (wg + 1024) / 9;  // 9 > sched_nr_latency: 9 x 0.75 ms
    EXPECT_NEAR(static_cast<double>(k.sched_slice(*se.cfs, se)),
                std::string(profile) == "v5.7" ? v57 : 750000.0, 1e3);
  }
}

// v5.15 (51ce83ed523b): an idle entity among non-idle ones gets the slice floor
// sysctl_sched_idle_min_granularity, 0.75 ms whatever the CPU count, where min_granularity
// is 0.75 ms x (1 + ilog2(8)) = 3 ms on 8 CPUs. On CPU 0 of 8: three nice -20 tasks, a
// SCHED_IDLE task beside them, and a SCHED_IDLE task alone in group /g. ALT_PERIOD: 5 tasks,
// period 24 ms. The root's SCHED_IDLE task: 24 ms x 3 / (3 x 88761 + 3 + w(/g)) ~ 0.3 us,
// raised to 0.75 ms; the one in /g is the only entity of its cfs_rq (sched_idle_cfs_rq), so
// its floor stays min_granularity: 3 ms; a nice -20 task's share is above both floors.
TEST(GroupSched, AnIdleEntityAmongNormalOnesHasTheUnscaledIdleFloor) {
  for (const char* profile : {"v5.17", "v6.0"}) {
    SCOPED_TRACE(profile);
    KernelImpl k(flat_machine(1, 8), config(profile));
    ASSERT_EQ(k.sysctl_sched_min_granularity, 3'000'000);
    int g = k.create_task_group({.name = "/g"});
    BusyBody b[5];
    TaskId heavy = kNoTask;
    for (int i = 0; i < 3; ++i)
      heavy = k.create_task({.name = "heavy", .nice = -20, .cpus = {0}}, &b[i], 0);
    TaskId idle_root =
        k.create_task({.name = "idle", .policy = Policy::Idle, .cpus = {0}}, &b[3], 0);
    TaskId idle_g = k.create_task(
        {.name = "idle-g", .policy = Policy::Idle, .cpus = {0}, .group = g}, &b[4], 0);
    sched_entity& root_se = k.task(idle_root).se;
    sched_entity& g_se = k.task(idle_g).se;
    ASSERT_EQ(root_se.cfs->nr_running, 5u);
    EXPECT_EQ(root_se.cfs->idle_nr_running, 1u);
    EXPECT_EQ(g_se.cfs->idle_nr_running, 1u);
    EXPECT_EQ(k.sched_slice(*root_se.cfs, root_se), 750'000);
    EXPECT_EQ(k.sched_slice(*g_se.cfs, g_se), 3'000'000);
    sched_entity& heavy_se = k.task(heavy).se;
    EXPECT_GT(k.sched_slice(*heavy_se.cfs, heavy_se), 3'000'000);
  }
}
