// The sched-idle balancing RFC's mechanisms (fair-class.md §8), as flags on the flat
// (no group scheduling) model: task_h_idle is the SCHED_IDLE policy.
#include <gtest/gtest.h>

#include "kernel/kernel.h"
#include "kernel/kernel_impl.h"
#include "kernel_test_util.h"

using namespace schedtwin;
using namespace schedtwin::kernel;
using schedtwin::testutil::BusyBody;
using schedtwin::testutil::flat_machine;

namespace {

Config config(const char* features) {
  Config c;
  c.profile = make_profile("v5.17");
  apply_features(c.profile.features, features, "--features");
  return c;
}

// CPU 0: three always-running normal tasks; CPU 1: one SCHED_IDLE hog. All pinned at
// creation so that regular balancing leaves them alone; `free` lets the normal ones move.
struct Stacked {
  KernelImpl k;
  BusyBody normal[3], hog;
  TaskId normal_id[3]{}, hog_id = kNoTask;
  explicit Stacked(const char* features, bool free = true)
      : k(flat_machine(1, 2), config(features)) {
    for (int i = 0; i < 3; ++i)
      normal_id[i] = k.create_task({.name = "n", .cpus = {0}}, &normal[i], 0);
    hog_id = k.create_task({.name = "hog", .policy = Policy::Idle, .cpus = {1}}, &hog, 1);
    k.run_until(ms(10));
    if (free)
      for (TaskId t : normal_id) {
        k.task(t).allowed.assign(2, true);
        k.task(t).nr_cpus_allowed = 2;
      }
  }
};

}  // namespace

// The overloaded mask changes only at the tick (and when a CPU goes idle).
TEST(SchedIdleBalance, TheOverloadMaskFollowsTheTick) {
  Stacked s("sched-idle-balancing", false);
  EXPECT_TRUE(s.k.cpu_rq(0).overloaded);
  EXPECT_FALSE(s.k.cpu_rq(1).overloaded);  // one SCHED_IDLE task: not overloaded
  EXPECT_EQ(s.k.llc_shared_[static_cast<size_t>(s.k.cpu_rq(0).llc_id)].nr_overloaded, 1);
  Stacked off("", false);
  EXPECT_FALSE(off.k.cpu_rq(0).overloaded);
}

// A sched-idle CPU pulls exactly one non-idle task per call, and never the last one.
TEST(SchedIdleBalance, OnePullPerCallNeverTheLastNonIdleTask) {
  Stacked s("sched-idle-balancing");
  ASSERT_TRUE(s.k.need_pull_cfs_task(s.k.cpu_rq(1)));
  EXPECT_EQ(s.k.sched_idle_balance(1), 1);
  EXPECT_EQ(s.k.cpu_rq(1).cfs.h_nr_running, 2u);
  EXPECT_EQ(s.k.cpu_rq(0).cfs.h_nr_running, 2u);
  const SchedDomain& sd = s.k.cpu_rq(1).sd[static_cast<size_t>(s.k.cpu_rq(1).sd_llc)];
  EXPECT_EQ(sd.sib_pulled, 1u);
  // CPU 1 now has a non-idle task, so it no longer needs to pull.
  EXPECT_FALSE(s.k.need_pull_cfs_task(s.k.cpu_rq(1)));
  // Leave CPU 0 with one non-idle task: not overloaded, nothing may be pulled from it.
  Stacked t("sched-idle-balancing");
  ASSERT_EQ(t.k.sched_idle_balance(1), 1);
  lb_env env;
  env.dst_cpu = 1;
  env.sd_idx = 0;
  env.idle = CPU_IDLE;
  ++t.k.lb_epoch_;
  // Move a second one by hand so that CPU 0 keeps only its running task.
  for (auto it = t.k.cpu_rq(0).cfs_tasks.rbegin(); it != t.k.cpu_rq(0).cfs_tasks.rend(); ++it) {
    Task& p = t.k.task(it->task);
    if (t.k.cpu_rq(0).curr == p.se.task) continue;
    t.k.detach_task_lb(p, 1, 0);
    t.k.attach_task_lb(p, 1);
    break;
  }
  ASSERT_FALSE(t.k.cfs_rq_overloaded(t.k.cpu_rq(0)));
  Task& last = t.k.task(t.k.cpu_rq(0).curr);
  EXPECT_FALSE(t.k.can_migrate_task(last, env));  // SIB_LAST_NONIDLE, before "running"
}

// Without the flags the sched-idle CPU does not pull on its own.
TEST(SchedIdleBalance, WithoutTheSeriesNothingIsPulledThisWay) {
  Stacked s("");
  EXPECT_EQ(s.k.sched_idle_balance(1), 0);
}

// SIB_SIS_FILTER: overloaded CPUs are removed from the idle search before the budget.
TEST(SchedIdleBalance, TheSisFilterSkipsOverloadedCpus) {
  Stacked s("sched-idle-balancing");
  s.k.probes_ = 0;
  s.k.this_cpu_ = 1;
  Task& p = s.k.task(s.hog_id);
  p.allowed.assign(2, true);
  // Target 1: v5.17 scans from target + 1, so CPU 0 comes first, then CPU 1.
  EXPECT_EQ(s.k.select_idle_cpu(p, 1), 1);
  EXPECT_EQ(s.k.probes_, 1);  // only CPU 1; CPU 0 is overloaded
  Stacked u("");
  u.k.probes_ = 0;
  u.k.this_cpu_ = 1;
  Task& q = u.k.task(u.hog_id);
  q.allowed.assign(2, true);
  EXPECT_EQ(u.k.select_idle_cpu(q, 1), 1);
  EXPECT_EQ(u.k.probes_, 2);  // CPU 0 (busy), then CPU 1
}

// SIB_IDLE_TASK_SPREAD: a SCHED_IDLE task forked into a group does not stop at a
// sched-idle CPU; a normal task does (v5.6 consistent rule).
TEST(SchedIdleBalance, IdleTasksDoNotStopAtSchedIdleCpus) {
  for (const char* f : {"sched-idle-balancing", ""}) {
    KernelImpl k(flat_machine(1, 4, us(10), us(10)), config(f));
    BusyBody hog, b2, b3;
    k.create_task({.name = "hog", .policy = Policy::Idle, .cpus = {0}}, &hog, 0);
    k.create_task({.name = "b", .cpus = {1}}, &b2, 1);
    k.run_until(ms(5));
    BusyBody nb;
    TaskId idle_task = k.create_task({.name = "i", .policy = Policy::Idle, .cpus = {3}}, &nb, 3);
    k.task(idle_task).allowed.assign(4, true);
    // find_idlest_group_cpu on a group spanning CPUs 0-3 (a one-LLC machine has no level
    // above MC whose group would hold them all, so one is added by hand).
    SchedGroup all;
    all.cpus = {0, 1, 2, 3};
    k.groups_.push_back(all);
    int chosen =
        k.find_idlest_group_cpu(static_cast<int>(k.groups_.size()) - 1, k.task(idle_task), 0);
    if (std::string(f).empty())
      EXPECT_EQ(chosen, 0) << "consistent rule: the sched-idle CPU wins";
    else
      EXPECT_NE(chosen, 0) << "spread: an idle CPU is taken instead";
  }
}

// select_idle_cpu's scan order: from target up to v5.14, from target + 1 since v5.15
// (56498cfb045d), target last. CPU 0 runs the task, CPUs 1-3 are idle.
TEST(SelectIdleCpu, TheScanStartsAfterTargetFromV515) {
  for (const char* profile : {"v5.4", "v5.17"}) {
    Config c;
    c.profile = make_profile(profile);
    KernelImpl k(flat_machine(1, 4), c);
    BusyBody b;
    TaskId t = k.create_task({.name = "t", .cpus = {0}}, &b, 0);
    k.task(t).allowed.assign(4, true);
    k.this_cpu_ = 0;
    k.probes_ = 0;
    const int got = k.select_idle_cpu(k.task(t), 2);
    EXPECT_EQ(got, std::string(profile) == "v5.4" ? 2 : 3) << profile;
    EXPECT_EQ(k.probes_, 1) << profile;
    EXPECT_EQ(k.select_idle_cpu(k.task(t), 3), std::string(profile) == "v5.4" ? 3 : 1)
        << profile << ": wraps past the LLC's last CPU to the busy CPU 0, then CPU 1";
  }
}

namespace {

// One LLC of 4 SMT2 cores (CPUs 2c, 2c+1). Normal always-running tasks on `busy`, SCHED_IDLE
// hogs on `sched_idle`; the wakee p sits on CPU 0 and may run anywhere.
struct SmtLlc {
  KernelImpl k;
  BusyBody bodies[8], pb;
  TaskId p = kNoTask;
  SmtLlc(const char* profile, std::vector<int> busy, std::vector<int> sched_idle)
      : k(machine(), profile_config(profile)) {
    int n = 0;
    for (int c : busy) k.create_task({.name = "busy", .cpus = {c}}, &bodies[n++], c);
    for (int c : sched_idle)
      k.create_task({.name = "hog", .policy = Policy::Idle, .cpus = {c}}, &bodies[n++], c);
    p = k.create_task({.name = "p", .cpus = {0}}, &pb, 0);
    k.run_until(ms(1));
    k.task(p).allowed.assign(8, true);
    k.this_cpu_ = 0;
    k.probes_ = 0;
  }
  static machine::Machine machine() {
    machine::Machine m = flat_machine(1, 8);
    for (auto& c : m.cpus) c.core = c.id / 2;
    return m;
  }
  static Config profile_config(const char* profile) {
    Config c;
    c.profile = make_profile(profile);
    return c;
  }
};

}  // namespace

// v5.17 (select_idle_core merged into select_idle_cpu): while the LLC's idle-core hint is
// set the scan has no budget; with no fully idle core it returns the first idle or
// sched-idle CPU it saw and clears the hint. CPUs 0-5 busy, CPU 6 sched-idle, CPU 7 busy.
TEST(SelectIdleCpu, WithTheIdleCoreHintV517ScansTheWholeLlcAndFallsBackToASchedIdleCpu) {
  SmtLlc s("v5.17", {1, 2, 3, 4, 5, 7}, {6});
  s.k.set_idle_cores(0, true);
  EXPECT_EQ(s.k.select_idle_cpu(s.k.task(s.p), 0, true), 6);
  EXPECT_FALSE(s.k.test_idle_cores(0));
  // From target + 1: core of CPU 1 (1, then its sibling 0), cores 1 and 2 (two CPUs each),
  // then core 3 stops at the sched-idle CPU 6.
  EXPECT_EQ(s.k.probes_, 7);
  // Without the hint the SIS_PROP budget (nr = 4: three CPUs) gives up first.
  s.k.probes_ = 0;
  EXPECT_EQ(s.k.select_idle_cpu(s.k.task(s.p), 0, false), -1);
  EXPECT_EQ(s.k.probes_, 3);
}

// A fully idle core wins over a sched-idle CPU seen before it.
TEST(SelectIdleCpu, WithTheIdleCoreHintAWholeIdleCoreIsReturned) {
  SmtLlc s("v5.17", {1, 3, 4, 5}, {2});  // CPU 2 sched-idle, core 3 (CPUs 6, 7) idle
  s.k.set_idle_cores(0, true);
  EXPECT_EQ(s.k.select_idle_cpu(s.k.task(s.p), 0, true), 6);
  EXPECT_TRUE(s.k.test_idle_cores(0));  // the hint stays: an idle core was found
}

// v5.13+ select_idle_sibling: with no idle core known, prev's SMT sibling is tried before the
// LLC scan (c722f35b513f). CPUs 1, 3, 4 busy besides p on CPU 0; CPUs 2, 5, 6, 7 idle.
TEST(SelectIdleSibling, V517TriesPrevsSiblingBeforeTheLlcScan) {
  SmtLlc s("v5.17", {1, 3, 4}, {});
  s.k.set_idle_cores(0, false);
  EXPECT_EQ(s.k.select_idle_sibling(s.k.task(s.p), 4, 0), 5);  // prev 4's sibling
  SmtLlc old("v5.4", {1, 3, 4}, {});
  old.k.set_idle_cores(0, false);
  EXPECT_EQ(old.k.select_idle_sibling(old.k.task(old.p), 4, 0), 2);  // the scan from target 0
}

// The RFC calls sched_idle_balance from newidle_balance and ignores its result: after the
// sched-idle pull the first domain is still balanced, and only then does nr_running > 0
// end the walk. Four non-hot tasks on CPU 0, CPU 1 newly idle. Without the series
// load_balance moves half the difference in tasks (v5.10's migrate_task in a domain that
// shares its cache): two. With it the sched-idle pull takes one and load_balance half of
// the remaining difference of two, one more; a hook that stopped after the pull would leave
// CPU 1 with one.
TEST(SchedIdleBalance, NewlyIdleBalanceStillWalksTheFirstDomainAfterASchedIdlePull) {
  for (const char* features : {"sched-idle-balancing", ""}) {
    KernelImpl k(flat_machine(1, 2), config(features));
    BusyBody body[4];
    TaskId id[4];
    for (int i = 0; i < 4; ++i) id[i] = k.create_task({.name = "n", .cpus = {0}}, &body[i], 0);
    k.run_until(ms(10));
    for (TaskId t : id) {
      k.task(t).allowed.assign(2, true);
      k.task(t).nr_cpus_allowed = 2;
      if (k.cpu_rq(0).curr != t) k.task(t).se.exec_start = k.clock_task() - ms(1);  // not cache hot
    }
    k.cpu_rq(0).cfs.next = k.cpu_rq(0).cfs.last = nullptr;
    k.rd_overload_ = true;
    k.cpu_rq(1).avg_idle = ms(1);
    ASSERT_EQ(k.cpu_rq(1).nr_running, 0u);
    EXPECT_GT(k.newidle_balance(1), 0) << features;
    const SchedDomain& sd = k.cpu_rq(1).sd[static_cast<size_t>(k.cpu_rq(1).sd_llc)];
    EXPECT_EQ(sd.sib_pulled, *features ? 1u : 0u) << features;
    EXPECT_EQ(k.cpu_rq(1).cfs.h_nr_running, 2u) << features;
  }
}
