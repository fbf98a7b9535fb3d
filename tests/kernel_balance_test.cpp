// Scenario tests of the load balancer (fair-class.md §5): the decisions the v5.7 kernel
// takes on small hand-built cases. White-box where a decision has to be provoked at one
// instant (KernelImpl), black-box (Kernel) where the outcome over time is the point.
#include <gtest/gtest.h>

#include <string>

#include "kernel/kernel.h"
#include "kernel/kernel_impl.h"
#include "kernel_test_util.h"
#include "machine/machine_file.h"

using namespace schedtwin;
using namespace schedtwin::kernel;
using schedtwin::testutil::BusyBody;
using schedtwin::testutil::flat_machine;

namespace {

Config config(const char* profile, std::uint64_t seed = 1) {
  Config c;
  c.profile = make_profile(profile);
  c.seed = seed;
  return c;
}

}  // namespace

// Two always-running tasks forked onto CPU 0 of an idle 4-CPU LLC: CPU 0's busy tick
// sees nr_running >= 2 and kicks the idle load balancer, which pulls one task. The MC
// domain's min_interval is 4 ms (sd_weight), so by 4 ms plus one tick they have spread.
TEST(Balance, TwoTasksOnOneCpuOfAnIdleLlcSpreadWithinOneInterval) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Kernel k(flat_machine(1, 4), config("v5.7", seed));
    BusyBody a, b;
    TaskId ta = k.create_task({.name = "a", .cpus = {0}}, &a);
    TaskId tb = k.create_task({.name = "b", .cpus = {0}}, &b);
    k.set_affinity(ta, {});
    k.set_affinity(tb, {});
    k.run_until(ms(8));
    EXPECT_NE(k.task_cpu(ta), k.task_cpu(tb)) << "seed " << seed;
    EXPECT_EQ(k.lb_stats().migrations, 1u) << "seed " << seed;
  }
}

// Three always-running tasks on CPUs 0-2 of LLC 0, LLC 1 idle. CPU 0's busy tick kicks
// the idle load balancer because three CPUs of its LLC are busy (nr_busy_cpus > 1). LLC 0
// has spare capacity (idle_cpus 1), yet it is the busiest group at the DIE level:
// init_sd_lb_stats (fair.c v5.5+) starts busiest_stat.idle_cpus at UINT_MAX. With
// prefer_sibling (MC below sets it) 3 > 0 + 1 forces the balance, calculate_imbalance asks
// for (3 - 0) >> 1 = 1 task, and since each task runs alone, detach_tasks finds none: after
// cache_nice_tries + 3 failures the stopper pushes one (active_load_balance_cpu_stop counts
// itself in nr_running). Then 2 against 1 is balanced.
TEST(Balance, AnLlcWithSpareCapacityIsStillTheBusiestGroupForAnIdleLlc) {
  for (const char* profile : {"v5.6", "v5.7", "v5.17"}) {
    Kernel k(flat_machine(2, 4), config(profile));
    BusyBody body[3];
    TaskId t[3];
    for (int i = 0; i < 3; ++i) {
      t[i] = k.create_task({.name = "busy", .cpus = {i}}, &body[i]);
      k.set_affinity(t[i], {});
    }
    k.run_until(ms(200));
    int in_llc1 = 0;
    for (TaskId id : t) in_llc1 += k.task_cpu(id) >= 4;
    EXPECT_EQ(in_llc1, 1) << profile;
    const LbStats& s = k.lb_stats();
    EXPECT_EQ(s.migrations, 1u) << profile;
    // The move is the DIE domain's, by the stopper; MC classified groups but moved nothing.
    ASSERT_EQ(s.by_domain.size(), 2u) << profile;
    EXPECT_EQ(s.by_domain[0].level, "MC");
    EXPECT_EQ(s.by_domain[1].level, "DIE");
    EXPECT_EQ(s.by_domain[0].migrations, 0u) << profile;
    EXPECT_EQ(s.by_domain[1].migrations, 1u) << profile;
    EXPECT_EQ(s.by_domain[1].active_migrations, 1u) << profile;
    std::uint64_t total = 0, by_domain = 0, mc = 0;
    for (int type = 0; type < 6; ++type)
      for (int nr = 0; nr < 5; ++nr) {
        for (int it = 0; it < 3; ++it) total += s.classified[it][type][nr];
        for (const LbDomainStats& d : s.by_domain) by_domain += d.classified[type][nr];
        mc += s.by_domain[0].classified[type][nr];
      }
    EXPECT_EQ(by_domain, total) << profile;
    EXPECT_GT(mc, 0u) << profile;
  }
}

// The NUMA imbalance allowance of periodic balancing (calculate_imbalance, group_has_spare
// on an SD_NUMA domain), two nodes of 8 CPUs with one LLC each, N always-running tasks on
// node 0 and node 1 idle. Each runs alone, so after repeated failures the stopper pushes
// one. By hand:
//   v5.7:  a busiest node of at most 2 tasks is left alone: N=2 stays, N=3 moves (3 >> 1).
//   v5.17: allow_numa_imbalance(busiest's tasks, busiest's weight 8): only while it runs
//          fewer than 2, so N=2 moves one (2 >> 1 = 1) as N=3 does.
//   v6.0:  the whole difference goes through adjust_numa_imbalance(local + 1 = 1,
//          imb_numa_nr 1: 12.5 % of the node's one LLC, at least 1) and is halved after:
//          N=2 gives 2, at most NUMA_IMBALANCE_MIN, so 0; N=3 gives 3, halved to 1.
// Then 2 against 1 is balanced: the local node has at most one idle CPU more.
TEST(Balance, TheNumaAllowanceOfPeriodicBalancingFollowsTheProfile) {
  struct Case {
    const char* profile;
    int tasks, moved;
  };
  for (const Case& c : {Case{"v5.7", 2, 0}, Case{"v5.7", 3, 1}, Case{"v5.17", 2, 1},
                        Case{"v5.17", 3, 1}, Case{"v6.0", 2, 0}, Case{"v6.0", 3, 1}}) {
    machine::Machine m = flat_machine(2, 8);
    for (auto& cpu : m.cpus) cpu.package = cpu.node = cpu.llc;
    m.numa_distance = {{10, 21}, {21, 10}};
    Kernel k(m, config(c.profile));
    BusyBody body[3];
    TaskId t[3];
    for (int i = 0; i < c.tasks; ++i) {
      t[i] = k.create_task({.name = "busy", .cpus = {i}}, &body[i]);
      k.set_affinity(t[i], {});
    }
    k.run_until(ms(2000));
    int on_node1 = 0;
    for (int i = 0; i < c.tasks; ++i) on_node1 += k.task_cpu(t[i]) >= 8;
    EXPECT_EQ(on_node1, c.moved) << c.profile << " with " << c.tasks << " tasks";
  }
}

// sd_init sets the LLC's nr_busy_cpus to its weight; each CPU's tickless idle entry takes
// one off. A booted idle machine counts none busy, and a CPU that starts running counts
// again at its first busy tick (nohz_balance_exit_idle).
TEST(Balance, NrBusyCpusCountsTheLlcsNonTicklessCpus) {
  KernelImpl k(flat_machine(2, 4), config("v5.7"));
  EXPECT_EQ(k.llc_shared_[0].nr_busy_cpus, 0);
  EXPECT_EQ(k.llc_shared_[4].nr_busy_cpus, 0);
  BusyBody a, b;
  k.create_task({.name = "a", .cpus = {1}}, &a, 1);
  k.create_task({.name = "b", .cpus = {2}}, &b, 2);
  k.run_until(ms(10));
  EXPECT_EQ(k.llc_shared_[0].nr_busy_cpus, 2);
  EXPECT_EQ(k.llc_shared_[4].nr_busy_cpus, 0);
}

// update_sd_pick_busiest against a fresh sd_lb_stats: any has_spare group running a task is
// busier than none, however many idle CPUs it has; one with more idle CPUs is not busier.
TEST(Balance, AnyGroupWithTasksBeatsNoBusiestGroupYet) {
  KernelImpl k(flat_machine(2, 4), config("v5.7"));
  sd_lb_stats sds;
  sg_lb_stats sgs;
  sgs.sum_nr_running = sgs.sum_h_nr_running = 1;
  sgs.idle_cpus = 3;
  sgs.group_weight = 4;
  EXPECT_TRUE(k.update_sd_pick_busiest(sds, sgs));
  sds.busiest_stat = sgs;
  sgs.idle_cpus = 4;
  EXPECT_FALSE(k.update_sd_pick_busiest(sds, sgs));
}

// A kernel built without NO_HZ idle: idle CPUs keep their tick, none is ever tickless, so
// no idle load balancer is kicked; CPU 1's own idle tick (trigger_load_balance with
// rq->idle_balance, rebalance_domains(CPU_IDLE)) pulls one of the two tasks of CPU 0.
TEST(Balance, WithoutNohzIdleAnIdleCpuBalancesFromItsOwnTick) {
  machine::Machine m = flat_machine(1, 2);
  m.build.nohz_idle = false;
  KernelImpl k(m, config("v5.7"));
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a", .cpus = {0}}, &a, 0);
  TaskId tb = k.create_task({.name = "b", .cpus = {0}}, &b, 0);
  k.set_affinity(ta, {});
  k.set_affinity(tb, {});
  EXPECT_TRUE(k.q_.armed(k.cpu_rq(1).tick_slot));
  k.run_until(ms(8));
  EXPECT_NE(k.task(ta).cpu, k.task(tb).cpu);
  EXPECT_EQ(k.nohz_.nr_cpus, 0);
  const SchedDomain& sd = k.cpu_rq(1).sd[0];
  EXPECT_GE(sd.lb_count[CPU_IDLE], 1u);
  EXPECT_EQ(sd.lb_gained[CPU_IDLE], 1u);
  EXPECT_EQ(sd.lb_count[CPU_NEWLY_IDLE], 0u);
}

// Of three tasks stacked on CPU 0, the two pinned there never move; the free one does.
TEST(Balance, APinnedTaskIsNeverMoved) {
  Kernel k(flat_machine(2, 2), config("v5.7"));
  BusyBody a, b, c;
  TaskId ta = k.create_task({.name = "pinned-a", .cpus = {0}}, &a);
  TaskId tb = k.create_task({.name = "pinned-b", .cpus = {0}}, &b);
  TaskId tc = k.create_task({.name = "free", .cpus = {0}}, &c);
  k.set_affinity(tc, {});
  k.run_until(ms(1000));
  EXPECT_EQ(k.task_cpu(ta), 0);
  EXPECT_EQ(k.task_cpu(tb), 0);
  EXPECT_EQ(k.task_stats(ta).nr_migrations, 0);
  EXPECT_EQ(k.task_stats(tb).nr_migrations, 0);
  EXPECT_NE(k.task_cpu(tc), 0);
  // CPU 0 stays imbalanced, so balancing kept trying: the pinned tasks were examined.
  EXPECT_NE(k.schedstat().find("domain0"), std::string::npos);
}

// /proc/schedstat prints a domain's span with %*pb: 32-bit hex chunks, the first only as
// wide as nr_cpu_ids % 32 needs (lib/vsprintf.c bitmap_string). 4 CPUs in one cluster:
// "f"; 2 x 20: the MC span of CPU 0 is 0-19 (five digits "fffff"), the top one 0-39 in
// "ff,ffffffff".
TEST(Balance, SchedstatMasksAreAsWideAsTheKernelPrintsThem) {
  Kernel four(flat_machine(1, 4), config("v5.7"));
  EXPECT_NE(four.schedstat().find("\ndomain0 f "), std::string::npos) << four.schedstat();
  Kernel forty(flat_machine(2, 20), config("v5.7"));
  const std::string s = forty.schedstat();
  EXPECT_NE(s.find("\ncpu0 "), std::string::npos);
  EXPECT_NE(s.find("\ndomain0 00,000fffff "), std::string::npos) << s.substr(0, 400);
  EXPECT_NE(s.find("\ndomain1 ff,ffffffff "), std::string::npos) << s.substr(0, 400);
}

namespace {

// Two tasks that have shared CPU 0 for 100 ms; CPU 1 of the same 2-CPU LLC is idle.
// Returns the task that is queued (not running) on CPU 0, made cache hot: it ran until now.
TaskId stacked_with_hot_waiter(KernelImpl& k, BusyBody& a, BusyBody& b) {
  TaskId ta = k.create_task({.name = "a", .cpus = {0}}, &a, 0);
  TaskId tb = k.create_task({.name = "b", .cpus = {0}}, &b, 0);
  k.run_until(ms(100));
  k.task(ta).allowed.assign(2, true);
  k.task(ta).nr_cpus_allowed = 2;
  k.task(tb).allowed.assign(2, true);
  k.task(tb).nr_cpus_allowed = 2;
  TaskId waiting = k.cpu_rq(0).curr == ta ? tb : ta;
  k.task(waiting).se.exec_start = k.clock_task();  // descheduled just now: task_hot
  return waiting;
}

}  // namespace

// task_hot: a task that ran less than migration_cost (0.5 ms) ago is not pulled, unless
// balancing of that domain has failed more than cache_nice_tries (1 for MC) times.
TEST(Balance, ACacheHotTaskIsPulledOnlyAfterRepeatedFailures) {
  machine::Machine m = flat_machine(1, 2);
  m.build.nohz_idle = true;
  KernelImpl k(m, config("v5.7"));
  BusyBody a, b;
  TaskId waiting = stacked_with_hot_waiter(k, a, b);
  ASSERT_EQ(k.cpu_rq(0).nr_running, 2u);
  ASSERT_TRUE(k.idle_cpu(1));
  SchedDomain& sd = k.cpu_rq(1).sd[0];
  ASSERT_EQ(k.levels_[static_cast<size_t>(sd.level_id)].cache_nice_tries, 1);

  bool cont = true;
  EXPECT_EQ(k.load_balance(1, 0, CPU_IDLE, cont), 0);  // hot: failed once
  EXPECT_EQ(sd.nr_balance_failed, 1u);
  EXPECT_EQ(k.load_balance(1, 0, CPU_IDLE, cont), 0);  // 1 > 1 is false: still hot
  EXPECT_EQ(sd.nr_balance_failed, 2u);
  EXPECT_EQ(k.task(waiting).cpu, 0);
  EXPECT_EQ(k.load_balance(1, 0, CPU_IDLE, cont), 1);  // 2 > 1: hotness is overridden
  EXPECT_EQ(k.task(waiting).cpu, 1);
  EXPECT_EQ(sd.lb_hot_gained[CPU_IDLE], 1u);
  EXPECT_EQ(sd.lb_failed[CPU_IDLE], 2u);
  EXPECT_EQ(sd.nr_balance_failed, 0u);
}

TEST(Balance, ATaskThatRanLongerAgoThanMigrationCostIsPulledAtOnce) {
  KernelImpl k(flat_machine(1, 2), config("v5.7"));
  BusyBody a, b;
  TaskId waiting = stacked_with_hot_waiter(k, a, b);
  k.task(waiting).se.exec_start = k.clock_task() - us(501);
  bool cont = true;
  EXPECT_EQ(k.load_balance(1, 0, CPU_IDLE, cont), 1);
  EXPECT_EQ(k.task(waiting).cpu, 1);
  EXPECT_EQ(k.cpu_rq(1).sd[0].lb_hot_gained[CPU_IDLE], 0u);
}

// newidle_balance's skip test (fair-class.md §5.3): up to v5.15 a CPU expecting to be idle
// for less than sysctl_sched_migration_cost (0.5 ms) does not balance; from v5.16
// (9d783c8dd112, c5b0a7eefc70) the bar is its lowest domain's max_newidle_lb_cost. CPU 1
// expects 100 us of idle and has measured 10 us per newly-idle balance; a task waits on
// CPU 0 that last ran 1 ms ago (not cache hot).
TEST(Balance, NewlyIdleBalanceSkipsBelowMigrationCostUntilV516ThenBelowItsOwnCost) {
  struct Case {
    const char* profile;
    Time avg_idle;
    int pulled;
  };
  for (const Case& c : {Case{"v5.7", us(100), 0}, Case{"v5.17", us(100), 1},
                        Case{"v5.17", us(5), 0}, Case{"v5.7", us(600), 1}}) {
    KernelImpl k(flat_machine(1, 2), config(c.profile));
    BusyBody a, b;
    TaskId waiting = stacked_with_hot_waiter(k, a, b);
    k.task(waiting).se.exec_start = k.clock_task() - ms(1);
    k.rd_overload_ = true;
    Rq& rq = k.cpu_rq(1);
    rq.avg_idle = c.avg_idle;
    rq.sd.front().max_newidle_lb_cost = us(10);
    EXPECT_EQ(k.newidle_balance(1) > 0, c.pulled == 1) << c.profile << " " << c.avg_idle;
    EXPECT_EQ(k.task(waiting).cpu, c.pulled ? 1 : 0) << c.profile << " " << c.avg_idle;
  }
}

// should_we_balance: of a busy local group, only its first CPU balances a domain.
TEST(Balance, OnlyTheGroupsBalanceCpuBalancesWhenNoneIsIdle) {
  KernelImpl k(flat_machine(2, 2), config("v5.7"));
  BusyBody body[4];
  for (int c = 0; c < 4; ++c) k.create_task({.name = "t", .cpus = {c}}, &body[c], c);
  k.run_until(ms(10));
  // DIE level (index 1): local groups are {0,1} and {2,3}.
  lb_env env;
  env.sd_idx = 1;
  env.idle = CPU_NOT_IDLE;
  ++k.lb_epoch_;
  env.dst_cpu = 0;
  EXPECT_TRUE(k.should_we_balance(env));
  env.dst_cpu = 1;
  EXPECT_FALSE(k.should_we_balance(env));
  env.dst_cpu = 2;
  EXPECT_TRUE(k.should_we_balance(env));
  env.idle = CPU_NEWLY_IDLE;
  env.dst_cpu = 3;
  EXPECT_TRUE(k.should_we_balance(env));
}

// v6.6's should_we_balance prefers an idle CPU on a wholly idle core above the SMT level.
// Two LLCs of two SMT2 cores (CPUs 0-3, cores {0,1} {2,3}); a task busy on CPU 0. For the
// top domain the local group is LLC 0: its first idle CPU, 1, has a busy sibling, so v6.6
// lets CPU 2 (an idle core) balance where v5.7 lets CPU 1.
TEST(Balance, V66BalancesFromAnIdleCoreBeforeAnIdleSmtSibling) {
  for (const char* profile : {"v5.7", "v6.6"}) {
    machine::Machine m = flat_machine(2, 4);
    for (auto& c : m.cpus) c.core = c.id / 2;
    KernelImpl k(m, config(profile));
    BusyBody busy;
    k.create_task({.name = "busy", .cpus = {0}}, &busy, 0);
    k.run_until(ms(10));
    ASSERT_FALSE(k.idle_cpu(0));
    ASSERT_TRUE(k.idle_cpu(1) && k.idle_cpu(2) && k.idle_cpu(3));
    lb_env env;
    env.sd_idx = static_cast<int>(k.cpu_rq(1).sd.size()) - 1;
    env.idle = CPU_IDLE;
    ++k.lb_epoch_;
    const bool v66 = std::string(profile) == "v6.6";
    env.dst_cpu = 1;
    EXPECT_EQ(k.should_we_balance(env), !v66) << profile;
    env.dst_cpu = 2;
    EXPECT_EQ(k.should_we_balance(env), v66) << profile;
    // At the SMT level the first idle CPU balances, busy sibling or not.
    env.sd_idx = 0;
    env.dst_cpu = 1;
    EXPECT_TRUE(k.should_we_balance(env)) << profile;
  }
}

// group_classify with and without runnable_avg (fair-class.md §5.7): 5 tasks on 4 CPUs
// whose util dipped (3000 of 4096) while they wait (runnable 5000). pct 117:
//   util test:     4096*100 = 409600 > 3000*117 = 351000 -> capacity left, not overloaded
//   runnable test: 4096*117 = 479232 < 5000*100 = 500000 -> overloaded
TEST(Balance, RunnableAvgMakesAGroupWithWaitingTasksOverloaded) {
  sg_lb_stats sgs;
  sgs.sum_nr_running = 5;
  sgs.group_weight = 4;
  sgs.group_capacity = 4096;
  sgs.group_util = 3000;
  sgs.group_runnable = 5000;
  {
    KernelImpl k(flat_machine(1, 4), config("v5.6"));
    EXPECT_EQ(k.group_classify(117, 0, sgs), sg_type::group_has_spare);
  }
  {
    KernelImpl k(flat_machine(1, 4), config("v5.7"));
    EXPECT_EQ(k.group_classify(117, 0, sgs), sg_type::group_overloaded);
  }
  // As many tasks as CPUs, runnable above capacity: no spare capacity, but not overloaded.
  sgs.sum_nr_running = 4;
  KernelImpl k(flat_machine(1, 4), config("v5.7"));
  EXPECT_EQ(k.group_classify(117, 0, sgs), sg_type::group_fully_busy);
  KernelImpl k6(flat_machine(1, 4), config("v5.6"));
  EXPECT_EQ(k6.group_classify(117, 0, sgs), sg_type::group_has_spare);
}

namespace {

// Run `work`, sleep to the next multiple of `period` (an hrtimer on the KernelImpl).
struct Periodic : TaskBody {
  KernelImpl* k = nullptr;
  Time work = 0, period = 0, t_next = 0;
  bool running = false;
  Step next(TaskId self, Time now) override {
    if (running) {
      running = false;
      t_next += period;
      if (now < t_next) {
        k->arm_timer(self, t_next);
        return Step::block();
      }
      t_next = now;
    }
    running = true;
    if (!t_next) t_next = now;
    return Step::run(work);
  }
};

}  // namespace

// Wasted cores (Lozi et al., EuroSys 2016): a CPU must not stay idle for long while
// another CPU of its LLC has a task waiting. Periodic tasks of mixed sizes beside four
// always-running tasks forked onto CPU 0 (only balancing can spread those), on 2 LLCs of
// 4 CPUs, sampled every 100 us for 2 s.
TEST(Balance, NoCpuStaysIdleWhileATaskWaitsInItsLlc) {
  for (const char* profile : {"v5.4", "v5.6", "v5.7"}) {
    KernelImpl k(flat_machine(2, 4, us(20), us(50)), config(profile));
    Periodic bodies[6];
    for (int i = 0; i < 6; ++i) {
      bodies[i].k = &k;
      bodies[i].work = us(300 + 450 * i);
      bodies[i].period = ms(4 + (i % 5) * 3);
      k.create_task({.name = "p"}, &bodies[i], i % 8);
    }
    BusyBody busy[4];
    for (auto& b : busy) {
      TaskId t = k.create_task({.name = "busy", .cpus = {0}}, &b, 0);
      k.set_affinity(t, {});
    }
    std::vector<Time> idle_while_waiting(8, 0);
    Time worst = 0;
    const Time step = us(100);
    for (Time t = step; t <= ms(2000); t += step) {
      k.run_until(t);
      for (int c = 0; c < 8; ++c) {
        bool waiting = false;
        for (int o = 0; o < 8; ++o)
          if (o / 4 == c / 4 && k.cpu_rq(o).cfs.h_nr_running >= 2) waiting = true;
        if (k.idle_cpu(c) && waiting) {
          idle_while_waiting[c] += step;
          worst = std::max(worst, idle_while_waiting[c]);
        } else {
          idle_while_waiting[c] = 0;
        }
      }
    }
    // A few MC balance intervals (4 ms each) at most.
    EXPECT_LE(worst, ms(12)) << profile;
  }
}

// Balancing moves PELT signals with the task: the source loses the task's load at its
// next update, the destination gains it on attach.
TEST(Balance, MigrationMovesTheTasksLoadAvg) {
  KernelImpl k(flat_machine(1, 2), config("v5.7"));
  BusyBody a, b;
  TaskId waiting = stacked_with_hot_waiter(k, a, b);
  k.task(waiting).se.exec_start = 0;
  k.update_cfs_rq_load_avg(k.now_, k.cpu_rq(0).cfs);
  unsigned long src_before = k.cpu_rq(0).cfs.avg.load_avg;
  bool cont = true;
  ASSERT_EQ(k.load_balance(1, 0, CPU_IDLE, cont), 1);
  unsigned long task_load = k.task(waiting).se.avg.load_avg;  // as detach_entity_load_avg saw it
  ASSERT_GT(task_load, 100u);
  EXPECT_EQ(k.cpu_rq(1).cfs.avg.load_avg, task_load);
  EXPECT_EQ(k.cpu_rq(0).cfs.avg.load_avg, src_before - task_load);
}

// --check stops the run at the first event after the model's state is corrupted.
TEST(Check, ACorruptedRunQueueStopsTheRun) {
  Config c = config("v5.7");
  c.check = true;
  KernelImpl k(flat_machine(1, 2), c);
  BusyBody a, b;
  k.create_task({.name = "a", .cpus = {0}}, &a, 0);
  k.create_task({.name = "b", .cpus = {0}}, &b, 0);
  k.run_until(ms(20));
  EXPECT_GT(k.check_stats_.checks, 0u);
  k.cpu_rq(0).cfs.idle_h_nr_running = 1;
  try {
    k.run_until(ms(40));
    FAIL() << "no CheckError";
  } catch (const CheckError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cpu0: idle_h_nr_running=1 but 0 idle tasks queued below"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("cpu0 curr="), std::string::npos);  // the dump
  }
}

// The wasted-cores counter: CPU 1 idle while a task that may run there waits on CPU 0
// for 15 ms is one episode; it is counted, the run goes on. (The checker is driven by
// hand here: the balancer would not leave such a task waiting.)
TEST(Check, WastedCoresAreCountedNotFatal) {
  Config c = config("v5.7");
  c.check = true;
  KernelImpl k(flat_machine(1, 2), c);
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a", .cpus = {0}}, &a, 0);
  TaskId tb = k.create_task({.name = "b", .cpus = {0}}, &b, 0);
  k.run_until(ms(20));
  EXPECT_EQ(k.check_stats_.wasted_episodes, 0u);
  ASSERT_TRUE(k.idle_cpu(1));
  if (k.cpu_rq(0).curr == tb) tb = ta;  // the waiting one
  k.task(tb).allowed[1] = true;
  k.check_invariants();
  k.now_ += ms(15);
  k.check_invariants();
  k.task(tb).allowed[1] = false;
  k.check_invariants();
  EXPECT_EQ(k.check_stats_.wasted_episodes, 1u);
  EXPECT_EQ(k.check_stats_.wasted_ns, ms(15));
  EXPECT_EQ(k.check_stats_.longest_wasted_cpu, 1);  // named so that it can be looked at
  EXPECT_EQ(k.check_stats_.longest_wasted_start, ms(20));
  EXPECT_EQ(k.check_stats_.longest_wasted_ns, ms(15));
}

namespace {
// A task that runs 50 ms and then blocks for good: its CPU is left idle with blocked load.
struct RunThenSleep : TaskBody {
  bool ran = false;
  Step next(TaskId, Time) override {
    if (ran) return Step::block();
    ran = true;
    return Step::run(ms(50));
  }
};
}  // namespace

// find_busiest_queue: an idle rq whose blocked load is the highest is the busiest queue in
// v5.7 (migrate_load compares cpu_load, which keeps blocked load); from v5.12 (fc488ffd4297
// "sched/fair: Skip idle cfs_rq") an rq without CFS tasks is skipped. CPU 1 ran a task for
// 50 ms that then blocked: idle, with load left to decay.
TEST(Balance, AnIdleRqIsTheBusiestQueueOnlyBeforeV512) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    KernelImpl k(flat_machine(1, 4), config(profile));
    RunThenSleep body;
    k.create_task({.name = "sleeper", .cpus = {1}}, &body, 1);
    k.run_until(ms(60));
    ASSERT_TRUE(k.idle_cpu(1));
    ASSERT_GT(k.cpu_load(1), 0u);
    lb_env env;
    env.sd_idx = 0;
    env.dst_cpu = 0;
    env.idle = CPU_IDLE;
    env.mtype = migrate_load;
    env.imbalance = 1 << 20;
    ++k.lb_epoch_;
    const int group_of_cpu1 = k.cpu_rq(0).sd[0].groups[1];
    ASSERT_EQ(k.groups_[static_cast<size_t>(group_of_cpu1)].cpus, std::vector<int>{1});
    EXPECT_EQ(k.find_busiest_queue(env, group_of_cpu1), std::string(profile) == "v5.7" ? 1 : -1)
        << profile;
  }
}

// Before v5.5 (11f10e5420f6) the wakeup path compares cpu_runnable_load, the load of the
// queued entities, where v5.5 on compares cpu_load, which keeps the blocked load of tasks that
// slept. CPU 1 ran a task for 50 ms that then blocked; CPU 2 runs a busy task.
TEST(Balance, WakeupPathReadsRunnableLoadBeforeV55) {
  for (const char* profile : {"v5.4", "v5.7"}) {
    KernelImpl k(flat_machine(1, 4), config(profile));
    RunThenSleep sleeper;
    BusyBody busy;
    k.create_task({.name = "sleeper", .cpus = {1}}, &sleeper, 1);
    const TaskId b = k.create_task({.name = "busy", .cpus = {2}}, &busy, 2);
    k.run_until(ms(60));
    ASSERT_TRUE(k.idle_cpu(1));
    ASSERT_GT(k.cpu_load(1), 300u);  // 50 ms of running, 10 ms of decay
    EXPECT_EQ(k.cpu_runnable_load(1), 0u) << profile;
    EXPECT_EQ(k.cpu_runnable_load(2), k.task(b).se.avg.load_avg) << profile;
    EXPECT_EQ(k.wakeup_cpu_load(1), std::string(profile) == "v5.4" ? 0 : k.cpu_load(1)) << profile;
  }
}

// v5.16's CLS level (778c558f49a2): two 4-CPU clusters sharing one 8-CPU LLC (as on
// Kunpeng 920 or Jacobsville) get a CLS domain of the cluster under MC, whose groups become
// the clusters; v5.7 has MC alone with one group per CPU. A cluster that holds its whole LLC
// (hikey) makes no CLS level (cpu_clustergroup_mask, v5.19).
// sd_degenerate (topology.c v5.4): a domain of one CPU is dropped, the SMT level included.
// Three SMT2 cores and a core of one thread (an offlined sibling) in one LLC: CPU 6 has MC
// alone, CPU 0 SMT then MC.
TEST(SchedDomains, ASingleThreadCoreHasNoSmtDomain) {
  machine::Machine m = flat_machine(1, 7);
  for (machine::Cpu& c : m.cpus) c.core = c.id / 2;
  KernelImpl k(m, config("v5.4"));
  ASSERT_EQ(k.cpu_rq(6).sd.size(), 1u);
  EXPECT_EQ(k.levels_[static_cast<size_t>(k.cpu_rq(6).sd[0].level_id)].name, "MC");
  ASSERT_EQ(k.cpu_rq(0).sd.size(), 2u);
  EXPECT_EQ(k.levels_[static_cast<size_t>(k.cpu_rq(0).sd[0].level_id)].name, "SMT");
  EXPECT_EQ(k.cpu_rq(0).sd[1].groups.size(), 4u);  // MC: the cores {0,1} {2,3} {4,5} {6}
}

TEST(SchedDomains, ClsLevelForClustersInsideTheLlcFromV516) {
  machine::Machine m = flat_machine(1, 8);
  for (machine::Cpu& c : m.cpus) c.cluster = c.id / 4;
  Config c517;
  c517.profile = make_profile("v5.17");
  KernelImpl k(m, c517);
  const Rq& rq = k.cpu_rq(5);
  ASSERT_EQ(rq.sd.size(), 2u);
  const DomainLevel& cls = k.levels_[static_cast<size_t>(rq.sd[0].level_id)];
  const DomainLevel& mc = k.levels_[static_cast<size_t>(rq.sd[1].level_id)];
  EXPECT_EQ(cls.name, "CLS");
  EXPECT_EQ(cls.span, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(cls.imbalance_pct, 117);
  EXPECT_EQ(rq.sd[0].groups.size(), 4u);
  EXPECT_EQ(mc.name, "MC");
  ASSERT_EQ(rq.sd[1].groups.size(), 2u);
  EXPECT_EQ(k.groups_[static_cast<size_t>(rq.sd[1].groups[0])].cpus,
            (std::vector<int>{4, 5, 6, 7}));
  Config c57;
  c57.profile = make_profile("v5.7");
  KernelImpl old(m, c57);
  ASSERT_EQ(old.cpu_rq(5).sd.size(), 1u);
  EXPECT_EQ(old.levels_[static_cast<size_t>(old.cpu_rq(5).sd[0].level_id)].name, "MC");
  EXPECT_EQ(old.cpu_rq(5).sd[0].groups.size(), 8u);
  KernelImpl whole(flat_machine(2, 4), c517);  // clusters equal to the LLCs
  for (int cpu = 0; cpu < 8; ++cpu)
    for (const SchedDomain& sd : whole.cpu_rq(cpu).sd)
      EXPECT_NE(whole.levels_[static_cast<size_t>(sd.level_id)].name, "CLS");
}

// sd_init's NUMA flags: a level farther than node_reclaim_distance balances no forks or
// execs and takes no affine wakeups. Two nodes at SLIT distance 32 (an AMD EPYC board): with
// RECLAIM_DISTANCE (30) the NUMA level loses the three flags; with x86's 32 for Zen (v5.4+,
// a55c7454a8c8) it keeps them; v5.3 had only the constant.
TEST(SchedDomains, NodeReclaimDistanceDecidesTheNumaLevelsWakeAndForkFlags) {
  machine::Machine m = flat_machine(2, 2);
  for (machine::Cpu& c : m.cpus) c.node = c.package = c.llc;
  m.numa_distance = {{10, 32}, {32, 10}};
  const unsigned three = SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE;
  auto numa_flags = [&](const char* profile, int reclaim) {
    machine::Machine mm = m;
    mm.node_reclaim_distance = reclaim;
    KernelImpl k(mm, config(profile));
    const Rq& rq = k.cpu_rq(0);
    const DomainLevel& top = k.levels_[static_cast<size_t>(rq.sd.back().level_id)];
    EXPECT_NE(top.flags & SD_NUMA, 0u);
    return top.flags & three;
  };
  EXPECT_EQ(numa_flags("v5.7", 30), 0u);
  EXPECT_EQ(numa_flags("v5.7", 32), three);
  EXPECT_EQ(numa_flags("v5.3", 32), 0u);
}

// Nodes of different shapes (fresh-user trial 8): node 0 is CPUs 0-1 (one LLC), node 1 is
// CPU 2 alone, whose domains below NUMA are all degenerate. build_sched_domains builds the
// NUMA level's groups from each CPU's child domain before degenerate ones are removed, so
// every CPU sees the groups {0,1} and {2}, its own first; the model once took CPU 2's
// "child" from the same height of its kept domains and gave CPU 0 a group {0,1,2}. Then a
// task forked on CPU 0 while CPUs 0 and 1 run hogs goes to the idle CPU 2 (v5.17's
// find_idlest_group: local group fully busy, the other has spare).
TEST(SchedDomains, NumaGroupsComeFromEachCpusChildEvenWhenNodesDifferInShape) {
  machine::Machine m = flat_machine(2, 2);
  m.cpus.pop_back();  // CPU 3 gone: node 1 is CPU 2 alone
  for (machine::Cpu& c : m.cpus) c.node = c.package = c.llc;
  m.numa_distance = {{10, 21}, {21, 10}};
  KernelImpl k(m, config("v5.17"));
  auto groups = [&](int cpu) {
    std::vector<std::vector<int>> out;
    for (int g : k.cpu_rq(cpu).sd.back().groups)
      out.push_back(k.groups_[static_cast<size_t>(g)].cpus);
    return out;
  };
  EXPECT_EQ(groups(0), (std::vector<std::vector<int>>{{0, 1}, {2}}));
  EXPECT_EQ(groups(1), (std::vector<std::vector<int>>{{0, 1}, {2}}));
  EXPECT_EQ(groups(2), (std::vector<std::vector<int>>{{2}, {0, 1}}));
  BusyBody b[3];
  k.create_task({.name = "hog0", .cpus = {0}}, &b[0], 0);
  k.create_task({.name = "hog1", .cpus = {1}}, &b[1], 0);
  k.run_until(10 * kNsPerMs);
  const TaskId t = k.create_task({.name = "new"}, &b[2], 0);
  EXPECT_EQ(k.task(t).cpu, 2);
}

// get_sd_balance_interval (fair.c), in jiffies at HZ=250: a 4-CPU MC domain at its
// min_interval of 4 ms. Busy, v5.7 multiplies by busy_factor 32 (128 ms = 32 jiffies);
// v5.17 by 16 (64 ms = 16 jiffies) and, from v5.10 (e4d32e4d5444), takes one jiffy off (15).
// Not busy, both give 4 ms = 1 jiffy.
TEST(Balance, BusyBalanceIntervalIsOneJiffyShortFromV510) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    KernelImpl k(flat_machine(1, 4), config(profile));
    const SchedDomain& sd = k.cpu_rq(0).sd[0];
    ASSERT_EQ(sd.balance_interval, 4) << profile;
    const bool v510 = std::string(profile) == "v5.17";
    EXPECT_EQ(k.get_sd_balance_interval(sd, true), v510 ? 15 : 32) << profile;
    EXPECT_EQ(k.get_sd_balance_interval(sd, false), 1) << profile;
  }
}

// detach_tasks' migrate_load test (fair.c): v5.5-v5.9 refuse a task whose half load exceeds
// the imbalance while nr_balance_failed <= cache_nice_tries (1 for MC); from v5.10
// (5a7f55590467) a task whose load >> nr_balance_failed exceeds it. The waiting task of
// CPU 0 (load L, not cache hot) against imbalances of 3L/4 with no failure (v5.7 takes it,
// v5.17 does not) and L/4 - 1 after two failures (v5.7 takes it, v5.17 does not: L >> 2),
// and 2L/3 after one failure (both refuse: L/2 and L >> 1 exceed it).
TEST(Balance, MigrateLoadHalvesTheLoadPerFailedBalanceFromV510) {
  struct Case {
    const char* profile;
    unsigned failed;
    int num, den;  // imbalance = L * num / den - (den == 4 && num == 1)
    int detached;
  };
  for (const Case& c :
       {Case{"v5.7", 0, 3, 4, 1}, Case{"v5.17", 0, 3, 4, 0}, Case{"v5.7", 2, 1, 4, 1},
        Case{"v5.17", 2, 1, 4, 0}, Case{"v5.7", 1, 1, 3, 0}, Case{"v5.17", 1, 1, 3, 0}}) {
    KernelImpl k(flat_machine(1, 2), config(c.profile));
    BusyBody a, b;
    TaskId waiting = stacked_with_hot_waiter(k, a, b);
    k.task(waiting).se.exec_start = k.clock_task() - ms(1);
    const long load = static_cast<long>(k.task_h_load(k.task(waiting)));
    ASSERT_GT(load, 500) << c.profile;
    k.cpu_rq(1).sd[0].nr_balance_failed = c.failed;
    lb_env env;
    env.src_cpu = 0;
    env.dst_cpu = 1;
    env.idle = CPU_IDLE;
    env.imbalance = load * c.num / c.den - (c.num == 1 && c.den == 4 ? 1 : 0);
    env.loop_max = k.cpu_rq(0).nr_running;
    env.mtype = migrate_load;
    EXPECT_EQ(k.detach_tasks(env), c.detached)
        << c.profile << " failed " << c.failed << " imbalance " << env.imbalance << " load "
        << load;
  }
}

// calculate_imbalance with a local group that has spare capacity and an overloaded busiest
// group (hand-set statistics, MC domain of a 4-CPU LLC). v5.7 fills the local group's spare
// capacity with utilization (1024 - 100); from v5.10 (16b0a7a1a0af) a domain that shares
// its cache moves tasks instead: half the difference in tasks with single-CPU groups, half
// the difference in idle CPUs otherwise, computed in unsigned int as the kernel does, so
// that a busiest group with more idle CPUs gives (2^32 - 1) >> 1.
TEST(Balance, AnOverloadedGroupInTheLlcGivesTasksNotUtilFromV510) {
  struct Case {
    const char* profile;
    unsigned weight, local_idle, busiest_idle;
    migration_type mtype;
    long imbalance;
  };
  for (const Case& c :
       {Case{"v5.7", 1, 1, 0, migrate_util, 924}, Case{"v5.17", 1, 1, 0, migrate_task, 1},
        Case{"v5.17", 2, 2, 0, migrate_task, 1},
        Case{"v5.17", 2, 1, 2, migrate_task, 0x7fffffffL}}) {
    KernelImpl k(flat_machine(1, 4), config(c.profile));
    lb_env env;
    env.dst_cpu = 1;
    env.idle = CPU_IDLE;
    sd_lb_stats sds;
    sds.prefer_sibling = false;
    sds.local_stat.group_type = sg_type::group_has_spare;
    sds.local_stat.group_capacity = 1024 * c.weight;
    sds.local_stat.group_util = 100;
    sds.local_stat.group_weight = c.weight;
    sds.local_stat.idle_cpus = c.local_idle;
    sds.busiest_stat.group_type = sg_type::group_overloaded;
    sds.busiest_stat.group_weight = c.weight;
    sds.busiest_stat.sum_nr_running = 3;
    sds.busiest_stat.idle_cpus = c.busiest_idle;
    k.calculate_imbalance(env, sds);
    EXPECT_EQ(env.mtype, c.mtype) << c.profile << " weight " << c.weight;
    EXPECT_EQ(env.imbalance, c.imbalance) << c.profile << " weight " << c.weight;
  }
}

// need_active_balance after repeated failures (cache_nice_tries + 3 of them): v5.7 kicks an
// active balance whatever the migration type; from v5.12 (e9b9734b7465) only when the
// imbalance is in tasks (imbalanced_active_balance).
TEST(Balance, RepeatedFailureAsksForActiveBalanceOnlyForTasksFromV512) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    KernelImpl k(flat_machine(1, 2), config(profile));
    SchedDomain& sd = k.cpu_rq(1).sd[0];
    const int tries = k.levels_[static_cast<size_t>(sd.level_id)].cache_nice_tries;
    lb_env env;
    env.sd_idx = 0;
    env.dst_cpu = 1;
    env.src_cpu = 0;
    env.idle = CPU_IDLE;
    const bool v57 = std::string(profile) == "v5.7";
    for (migration_type t : {migrate_load, migrate_util, migrate_task}) {
      env.mtype = t;
      sd.nr_balance_failed = static_cast<unsigned>(tries + 2);
      EXPECT_FALSE(k.need_active_balance(env)) << profile << " type " << t;
      sd.nr_balance_failed = static_cast<unsigned>(tries + 3);
      EXPECT_EQ(k.need_active_balance(env), v57 || t == migrate_task) << profile << " type " << t;
    }
  }
}

// The waiting task of CPU 0 may not run on CPU 1; the running one may. The fourth failed
// balance in a row kicks an active balance on both profiles. v5.7 then backs off (the
// balance interval doubles); v5.12 (e9b9734b7465) asks need_active_balance again, which is
// false once nr_balance_failed is reset to cache_nice_tries + 1, and leaves the interval.
// LBF_ALL_PINNED (8a41dfcda7a3) ends cleared on both: the running task could run here.
TEST(Balance, AnActiveBalanceKickBacksOffOnlyBeforeV512) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    KernelImpl k(flat_machine(1, 2), config(profile));
    BusyBody a, b;
    TaskId waiting = stacked_with_hot_waiter(k, a, b);
    k.task(waiting).allowed = {true, false};
    k.task(waiting).nr_cpus_allowed = 1;
    SchedDomain& sd = k.cpu_rq(1).sd[0];
    const DomainLevel& lvl = k.levels_[static_cast<size_t>(sd.level_id)];
    sd.nr_balance_failed = static_cast<unsigned>(lvl.cache_nice_tries + 2);
    sd.balance_interval = static_cast<unsigned>(lvl.min_interval);
    ASSERT_LT(sd.balance_interval, static_cast<unsigned>(lvl.max_interval));
    bool cont = true;
    EXPECT_EQ(k.load_balance(1, 0, CPU_IDLE, cont), 0) << profile;
    EXPECT_TRUE(k.cpu_rq(0).active_balance) << profile;
    EXPECT_EQ(sd.nr_balance_failed, static_cast<unsigned>(lvl.cache_nice_tries + 1)) << profile;
    EXPECT_EQ(sd.balance_interval,
              static_cast<unsigned>(lvl.min_interval) * (std::string(profile) == "v5.7" ? 2 : 1))
        << profile;
  }
}

namespace {

// A tickless idle CPU whose cfs_rq last updated its averages at boot with util_avg (and
// load_avg) `avg`, then 32 PELT periods (32 x 1024 x 1024 ns) pass: a refresh of its blocked
// load halves the averages (y^32 = 1/2); a stale CPU still shows `avg`.
constexpr Time kThirtyTwoPeltPeriods = 32 * 1024 * 1024;

void give_stale_blocked_load(KernelImpl& k, int cpu, unsigned long avg) {
  sched_avg& a = k.cpu_rq(cpu).cfs.avg;
  a.last_update_time = k.clock_pelt();  // the PELT clock starts on a period boundary
  a.period_contrib = 0;
  a.util_avg = a.load_avg = a.runnable_avg = avg;
  a.util_sum = static_cast<std::uint32_t>(avg * PELT_MIN_DIVIDER);
  a.load_sum = a.runnable_sum = avg * PELT_MIN_DIVIDER;
  ASSERT_TRUE(k.cpu_rq(cpu).nohz_tick_stopped);  // every CPU boots idle and tickless
  ASSERT_TRUE(k.cpu_rq(cpu).has_blocked_load);
}

// One LLC of 4 CPUs built with NO_HZ idle: every CPU boots idle and tickless.
machine::Machine tickless_llc4() {
  machine::Machine m = flat_machine(1, 4);
  m.build.nohz_idle = true;
  return m;
}

// CPU 2's blocked load (600) last updated at boot, and 32 PELT periods later now.
void make_cpu2_stale(KernelImpl& k) {
  give_stale_blocked_load(k, 2, 600);
  k.now_ = kThirtyTwoPeltPeriods;
}

}  // namespace

// nohz_newidle_balance (fair.c v4.17-v5.12; c6f886546cb8 from v5.13): a CPU about to idle
// for longer than sysctl_sched_migration_cost, when the idle CPUs' blocked load is due for
// a refresh and nothing is overloaded, refreshes it itself instead of waking an idle CPU for
// it. Up to v5.12 inside newidle_balance; from v5.13 newidle_balance only sets
// NOHZ_NEWILB_KICK and the idle loop does the refresh on entry. Below 0.5 ms of expected idle
// neither happens.
TEST(Balance, ANewlyIdleCpuRefreshesTheIdleCpusBlockedLoad) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    for (Time avg_idle : {us(1000), us(400)}) {
      KernelImpl k(tickless_llc4(), config(profile));
      make_cpu2_stale(k);
      k.rd_overload_ = false;
      Rq& rq = k.cpu_rq(1);
      rq.avg_idle = avg_idle;
      const bool v513 = std::string(profile) == "v5.17";
      const bool refresh = avg_idle >= us(500);
      EXPECT_EQ(k.newidle_balance(1), 0);
      EXPECT_EQ(rq.nohz_flags, v513 && refresh ? NOHZ_NEWILB_KICK : 0u) << profile;
      const unsigned long after_newidle = k.cpu_rq(2).cfs.avg.util_avg;
      k.enter_idle(1);
      const unsigned long after_idle_entry = k.cpu_rq(2).cfs.avg.util_avg;
      EXPECT_EQ(rq.nohz_flags, 0u) << profile;
      if (!refresh) {
        EXPECT_EQ(after_idle_entry, 600u) << profile;
        continue;
      }
      EXPECT_EQ(after_newidle, v513 ? 600u : 299u) << profile;
      EXPECT_EQ(after_idle_entry, 299u) << profile;
      EXPECT_EQ(k.cpu_rq(2).cfs.avg.load_avg, 299u) << profile;
      EXPECT_EQ(k.nohz_.next_blocked, k.jiffies() + 8) << profile;  // 32 ms at HZ=250
    }
  }
}

// Newly idle balancing with LBF_NOHZ_STATS (e022e0d38ad4, v4.17; removed by 0826530de3cb in
// v5.13): while something is overloaded, the groups' statistics are read after refreshing
// the tickless idle CPUs' blocked load. From v5.13 the pass reads the stale figures.
TEST(Balance, NewlyIdleBalancingRefreshesTheBlockedLoadItReadsUntilV513) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    KernelImpl k(tickless_llc4(), config(profile));
    make_cpu2_stale(k);
    k.rd_overload_ = true;
    k.cpu_rq(1).avg_idle = us(1000);
    EXPECT_EQ(k.newidle_balance(1), 0);
    const bool v513 = std::string(profile) == "v5.17";
    EXPECT_EQ(k.cpu_rq(2).cfs.avg.util_avg, v513 ? 600u : 299u) << profile;
    EXPECT_EQ(k.lb_stats_.classified[CPU_NEWLY_IDLE][0][0], 4u) << profile;  // one group a CPU
  }
}

// The idle load balancer's walk (_nohz_idle_balance): up to v5.12 the other idle CPUs in
// order, then itself; from v5.13 (7a82e5f52a35) from the CPU after itself, wrapping, so
// that it ends with itself. Kicked on CPU 2 with a task waiting on CPU 0 and CPUs 1-3 all
// due to balance: the first CPU the walk reaches pulls it, CPU 1 under v5.7 and CPU 3 under
// v5.17.
TEST(Balance, TheIdleLoadBalancerWalksFromTheNextCpuFromV513) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    KernelImpl k(tickless_llc4(), config(profile));
    BusyBody a, b;
    TaskId ta = k.create_task({.name = "a", .cpus = {0}}, &a, 0);
    TaskId tb = k.create_task({.name = "b", .cpus = {0}}, &b, 0);
    k.run_until(ms(100));
    for (TaskId t : {ta, tb}) {
      k.task(t).allowed.assign(4, true);
      k.task(t).nr_cpus_allowed = 4;
    }
    TaskId waiting = k.cpu_rq(0).curr == ta ? tb : ta;
    k.task(waiting).se.exec_start = k.clock_task() - ms(1);  // not cache hot
    for (int c = 1; c < 4; ++c) {
      Rq& rq = k.cpu_rq(c);
      ASSERT_TRUE(k.idle_cpu(c) && rq.nohz_tick_stopped) << profile << " cpu" << c;
      rq.next_balance = k.jiffies() - 1;
      for (SchedDomain& sd : rq.sd) sd.last_balance = k.jiffies() - 1000;
    }
    k.this_cpu_ = 2;
    k.current_ = kNoTask;
    k.in_cpu_context_ = true;
    k._nohz_idle_balance(2, NOHZ_KICK_MASK, CPU_IDLE);
    EXPECT_EQ(k.task(waiting).cpu, std::string(profile) == "v5.7" ? 1 : 3) << profile;
  }
}

// NOHZ_NEXT_KICK (v5.16, efd984c481ab / 7fd7a9e0caba): a CPU entering tickless idle sets
// nohz.needs_update, and the next busy tick kicks an idle load balancer just to collate the
// idle CPUs' next_balance into nohz.next_balance, leaving their blocked load alone. Not in
// v5.7: with nothing due, that tick kicks no one.
TEST(Balance, ACpuGoingTicklessHasItsNextBalanceCollatedFromV516) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    KernelImpl k(tickless_llc4(), config(profile));
    const bool v516 = std::string(profile) == "v5.17";
    EXPECT_EQ(k.nohz_.needs_update, v516) << profile;  // every CPU boots tickless
    ASSERT_FALSE(k.nohz_.has_blocked && k.jiffies() > k.nohz_.next_blocked);  // no stats due
    k.nohz_.next_balance = k.jiffies() + 100;                                 // nor a balance
    k.this_cpu_ = 0;
    k.nohz_balancer_kick(0);
    EXPECT_EQ(k.cpu_rq(1).nohz_flags, v516 ? NOHZ_NEXT_KICK : 0u) << profile;  // first idle CPU
    if (!v516) continue;
    const std::int64_t j = k.jiffies();
    k.cpu_rq(1).next_balance = j + 20;
    k.cpu_rq(2).next_balance = j + 7;
    k.cpu_rq(3).next_balance = j + 30;
    const std::int64_t next_blocked = k.nohz_.next_blocked;
    const bool has_blocked = k.nohz_.has_blocked;
    k.this_cpu_ = 1;
    k._nohz_idle_balance(1, NOHZ_NEXT_KICK, CPU_IDLE);
    EXPECT_FALSE(k.nohz_.needs_update);
    EXPECT_EQ(k.nohz_.next_balance, j + 7);
    EXPECT_EQ(k.nohz_.has_blocked, has_blocked);
    EXPECT_EQ(k.nohz_.next_blocked, next_blocked);
  }
}

// calculate_imbalance's migrate_load case, local group fully busy (hand-set statistics): the
// domain average is 1000, the busiest group's avg_load 1500. The kernel computes
// min((busiest - avg) * cap, (avg - local) * cap) / 1024 in unsigned long, so a local group
// above the average wraps its term and the busiest group's 500 is taken. v5.7
// (111688ca1c4a) returns 0 for a local group at least as loaded as the busiest, v6.3
// (91dcf1e8068e) for one at least as loaded as the domain average.
TEST(Balance, TheLoadImbalanceIsComputedInUnsignedLongAsTheKernelDoes) {
  struct Case {
    const char* profile;
    unsigned long local_load;
    long imbalance;
  };
  for (const Case& c : {Case{"v5.6", 1200, 500}, Case{"v5.6", 1600, 500}, Case{"v5.7", 1200, 500},
                        Case{"v5.7", 1600, 0}, Case{"v5.17", 1200, 500}, Case{"v6.6", 1200, 0},
                        Case{"v6.6", 900, 100}}) {
    KernelImpl k(flat_machine(1, 4), config(c.profile));
    lb_env env;
    env.dst_cpu = 1;
    env.idle = CPU_NOT_IDLE;
    sd_lb_stats sds;
    sds.total_load = 2000;
    sds.total_capacity = 2048;
    sds.local_stat.group_type = sg_type::group_fully_busy;
    sds.local_stat.group_load = c.local_load;
    sds.local_stat.group_capacity = 1024;
    sds.busiest_stat.group_type = sg_type::group_overloaded;
    sds.busiest_stat.avg_load = 1500;
    sds.busiest_stat.group_capacity = 1024;
    k.calculate_imbalance(env, sds);
    EXPECT_EQ(env.imbalance, c.imbalance) << c.profile << " local load " << c.local_load;
  }
}

// task_hot: from v5.10 (ec73240b1627) a task is never cache hot for its SMT sibling ("SMT
// siblings share cache"); above the SMT level, and before v5.10, a task that ran within
// migration_cost (0.5 ms) is.
TEST(Balance, SmtSiblingsShareCacheFromV510) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    KernelImpl k(machine::load_machine("xeon-e5-2650v4"), config(profile));
    BusyBody body;
    TaskId t = k.create_task({.name = "p", .cpus = {0}}, &body, 0);
    k.run_until(ms(1));
    Task& p = k.task(t);
    p.se.exec_start = k.clock_task();
    const int sibling = k.smt_siblings(0)[0] == 0 ? k.smt_siblings(0)[1] : k.smt_siblings(0)[0];
    ASSERT_EQ(k.levels_[static_cast<size_t>(k.cpu_rq(sibling).sd[0].level_id)].name, "SMT");
    lb_env env;
    env.src_cpu = 0;
    env.dst_cpu = sibling;
    env.sd_idx = 0;
    env.idle = CPU_IDLE;
    EXPECT_EQ(k.task_hot(p, env), std::string(profile) == "v5.7" ? 1 : 0) << profile;
    env.dst_cpu = 1;  // another core of the LLC
    env.sd_idx = 1;
    EXPECT_EQ(k.task_hot(p, env), 1) << profile;
  }
}

// active_load_balance_cpu_stop: "Active balancing done, reset the failure counter."
TEST(Balance, ASuccessfulActiveBalanceResetsTheFailureCount) {
  KernelImpl k(flat_machine(1, 2), config("v5.7"));
  BusyBody body;
  TaskId t = k.create_task({.name = "p", .cpus = {0}}, &body, 0);
  k.set_affinity(t, {});
  k.run_until(ms(1));
  ASSERT_EQ(k.task(t).cpu, 0);
  k.cpu_rq(0).active_balance = true;
  k.cpu_rq(0).push_cpu = 1;
  k.cpu_rq(1).sd[0].nr_balance_failed = 5;
  k.active_load_balance_cpu_stop(0);
  EXPECT_EQ(k.task(t).cpu, 1);
  EXPECT_EQ(k.cpu_rq(1).sd[0].alb_pushed, 1u);
  EXPECT_EQ(k.cpu_rq(1).sd[0].nr_balance_failed, 0u);
}

// A CPU going newly idle with a wakeup queued on it: from v5.13 (9c9f520a1467)
// newidle_balance returns at once, before idle_stamp is set; from v6.0 (792b9f65a568)
// should_we_balance also stops a newly idle balance once the CPU has something to run.
TEST(Balance, ANewlyIdleCpuWithAQueuedWakeupDoesNotBalance) {
  for (const char* profile : {"v5.7", "v5.17", "v6.0"}) {
    KernelImpl k(flat_machine(1, 2), config(profile));
    k.run_until(ms(5));
    Rq& rq = k.cpu_rq(1);
    rq.idle_stamp = 0;
    rq.avg_idle = ms(1);
    rq.ttwu_pending = 1;
    k.rd_overload_ = true;
    k.newidle_balance(1);
    EXPECT_EQ(rq.idle_stamp, std::string(profile) == "v5.7" ? k.now_ : 0) << profile;
    lb_env env;
    env.dst_cpu = 1;
    env.sd_idx = 0;
    env.idle = CPU_NEWLY_IDLE;
    ++k.lb_epoch_;
    EXPECT_EQ(k.should_we_balance(env), std::string(profile) != "v6.0") << profile;
    rq.ttwu_pending = 0;
  }
}

// Active balance pushes CPU 0's running task A to CPU 1 (behind B); CPU 0's next pick
// balances newly idle and pulls A straight back (the domain has failed often enough that
// cache hotness is overridden). In the kernel prev is then the stopper and A is switched
// in: A is CPU 0's running task again, and its run delay counts only the time it waited,
// none here (it used to count from the wakeup before it last ran).
TEST(Balance, ARunningTaskPushedAwayAndPulledBackRunsAgain) {
  for (const char* profile : {"v5.4", "v5.7"}) {
    KernelImpl k(flat_machine(1, 2), config(profile));
    BusyBody a, b;
    TaskId ta = k.create_task({.name = "a"}, &a, 0);
    TaskId tb = k.create_task({.name = "b", .cpus = {1}}, &b, 1);
    k.run_until(ms(100));
    ASSERT_EQ(k.cpu_rq(0).curr, ta) << profile;
    const Time delay_before = k.task(ta).run_delay;
    Rq& rq0 = k.cpu_rq(0);
    rq0.push_cpu = 1;
    rq0.active_balance = true;
    rq0.sd[0].nr_balance_failed = 5;
    k.rd_overload_ = true;
    k.active_load_balance_cpu_stop(0);
    EXPECT_EQ(k.task(ta).cpu, 0) << profile;
    EXPECT_EQ(rq0.curr, ta) << profile;
    EXPECT_EQ(k.task(ta).state, TaskState::Running) << profile;
    EXPECT_EQ(k.task(ta).run_delay, delay_before) << profile;
    EXPECT_EQ(k.cpu_rq(1).curr, tb) << profile;
    k.run_until(ms(110));  // the suite's --check would stop a corrupted run here
  }
}

// task_hot compares exec_start with rq_clock_task, which has run since boot: a task that
// never ran (exec_start 0 from __sched_fork) is not cache hot, even in the run's first
// sysctl_sched_migration_cost (0.5 ms), where the model's clock once made it so (trial 6:
// "ran 151 us ago" for a task forked 16 us earlier). The task that runs is hot.
TEST(Balance, ATaskThatNeverRanIsNotCacheHotEvenAtTheStart) {
  KernelImpl k(flat_machine(1, 2), config("v5.7"));
  BusyBody a, b;
  TaskId ta = k.create_task({.name = "a", .cpus = {0}}, &a, 0);
  TaskId tb = k.create_task({.name = "b", .cpus = {0}}, &b, 0);
  k.run_until(us(100));
  const TaskId running = k.cpu_rq(0).curr;
  const TaskId waiting = running == ta ? tb : ta;
  ASSERT_EQ(k.task(waiting).se.sum_exec_runtime, 0);
  lb_env env;
  env.src_cpu = 0;
  env.dst_cpu = 1;
  env.idle = CPU_IDLE;
  EXPECT_EQ(k.task_hot(k.task(waiting), env), 0);
  EXPECT_EQ(k.task_hot(k.task(running), env), 1);
}
