// Scenario tests of the wakeup path: the decisions select_idle_sibling takes with and
// without the sched-idle fallback (fair-class.md §4.5, §4.10).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

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

namespace {

// Runs 100 us, then wakes each of `wakees` (sync or not), `rounds` times; then runs on.
struct WakerBody : TaskBody {
  Kernel* k = nullptr;
  std::vector<TaskId> wakees;
  unsigned flags = WF_NONE;
  int rounds = 0;
  int woken = 0;  // wake_up calls that woke a task
  bool ran = false;
  Step next(TaskId, Time) override {
    if (!ran || rounds == 0) {
      ran = true;
      return Step::run(rounds == 0 ? kNsPerSec * 3600 : us(100));
    }
    ran = false;
    --rounds;
    for (TaskId w : wakees) woken += k->wake_up(w, flags) ? 1 : 0;
    return Step::run(0);
  }
};

// Runs 10 us each time it is woken, then blocks.
struct ShortBody : TaskBody {
  bool ran = false;
  Step next(TaskId, Time) override {
    ran = !ran;
    return ran ? Step::run(us(10)) : Step::block();
  }
};

// The numbers of one line of `schedstat` that starts with `prefix` ("cpu0 ", "domain1 "),
// the first line after the line `after` when given (a CPU's domain lines follow its cpu line).
std::vector<std::uint64_t> schedstat_fields(const std::string& s, const std::string& prefix,
                                            const std::string& after = "") {
  std::size_t at = after.empty() ? 0 : s.find("\n" + after);
  at = s.find("\n" + prefix, at);
  EXPECT_NE(at, std::string::npos) << prefix;
  std::istringstream line(s.substr(at + 1, s.find('\n', at + 1) - at - 1));
  std::string word;
  line >> word;                                    // cpuN / domainN
  if (prefix.starts_with("domain")) line >> word;  // the span mask
  std::vector<std::uint64_t> v;
  for (std::uint64_t x; line >> x;) v.push_back(x);
  return v;
}

}  // namespace

// ttwu_stat (core.c v5.4) counts on the waker's runqueue: ttwu_count for every wakeup,
// ttwu_local when the wakee goes to the waker's CPU, otherwise ttwu_wake_remote of the
// waker's lowest domain spanning the wakee's CPU. Two LLCs {0,1} {2,3}: the waker on CPU 0
// wakes a task pinned to CPU 3 (remote, in domain1) and one pinned to CPU 0 (local).
TEST(Wakeup, SchedstatCountsWakeupsOnTheWakersRunqueue) {
  Config c;
  c.profile = make_profile("v5.4");
  Kernel k(flat_machine(2, 2), c);
  ShortBody far, near;
  TaskId tfar = k.create_task({.name = "far", .cpus = {3}}, &far);
  TaskId tnear = k.create_task({.name = "near", .cpus = {0}}, &near);
  k.run_until(ms(1));  // both have run and blocked
  WakerBody w;
  w.k = &k;
  w.wakees = {tfar, tnear};
  w.rounds = 10;
  k.create_task({.name = "waker", .cpus = {0}}, &w);
  k.run_until(ms(10));
  ASSERT_EQ(w.woken, 20);
  const std::string s = k.schedstat();
  // cpu fields: yld_count, 0, sched_count, sched_goidle, ttwu_count, ttwu_local, ...
  const auto cpu0 = schedstat_fields(s, "cpu0 ");
  EXPECT_EQ(cpu0[4], 20u);
  EXPECT_EQ(cpu0[5], 10u);
  EXPECT_EQ(schedstat_fields(s, "cpu3 ")[4], 0u);  // the wakee's CPU counts nothing
  // domain fields: 24 lb_*, 3 alb_*, 6 zeros, ttwu_wake_remote, ttwu_move_affine, _balance
  EXPECT_EQ(schedstat_fields(s, "domain0 ", "cpu0 ")[33], 0u);
  EXPECT_EQ(schedstat_fields(s, "domain1 ", "cpu0 ")[33], 10u);
  EXPECT_EQ(schedstat_fields(s, "domain1 ", "cpu0 ")[35], 0u);
}

// wake_affine (fair.c v5.4) counts ttwu_move_affine in the domain it decided in: a sync
// wakeup from CPU 0, the waker alone there, of a task last on CPU 1 of the same LLC picks
// the waker's CPU (wake_affine_idle) and counts once in CPU 0's domain0.
TEST(Wakeup, SchedstatCountsAnAffineDecisionInItsDomain) {
  Config c;
  c.profile = make_profile("v5.4");
  Kernel k(flat_machine(1, 4), c);
  ShortBody wakee;
  TaskId t = k.create_task({.name = "wakee", .cpus = {1}}, &wakee);
  k.run_until(ms(1));
  k.set_affinity(t, {});
  WakerBody w;
  w.k = &k;
  w.wakees = {t};
  w.flags = WF_SYNC;
  w.rounds = 1;
  k.create_task({.name = "waker", .cpus = {0}}, &w);
  k.run_until(ms(2));
  ASSERT_EQ(w.woken, 1);
  const std::string s = k.schedstat();
  EXPECT_EQ(schedstat_fields(s, "domain0 ", "cpu0 ")[34], 1u);
  EXPECT_EQ(schedstat_fields(s, "domain0 ", "cpu1 ")[34], 0u);
}

// Fork placement across two NUMA nodes (find_idlest_group, group_has_spare on an SD_NUMA
// domain): tasks forked one after another from CPU 0 stay on node 0 while the profile's
// NUMA imbalance allowance holds. Two nodes of 8 CPUs, one LLC each:
//   v5.7:  while node 0 has an idle CPU: 8 tasks;
//   v5.17: while node 0 runs fewer than 16 / 4 = 4 tasks (allow_numa_imbalance, span_weight);
//   v6.0:  while node 0, with the new task, runs at most imb_numa_nr and the nodes' idle
//          CPUs differ by at most 2. imb_numa_nr is 1, not the 2 LLCs the NUMA domain spans:
//          build_sched_domains sets it before the DIE level, which spans the node's one LLC,
//          is dropped as degenerate, so DIE counts one LLC and allows max(1, 8 >> 3) = 1,
//          which NUMA inherits (factor 16 / 16 = 1): 1 task.
// The next task goes to node 1, which has more idle CPUs.
TEST(Wakeup, ForkPlacementKeepsTheNumaImbalanceTheProfileAllows) {
  struct Case {
    const char* profile;
    int stay;
  };
  for (const Case& c : {Case{"v5.7", 8}, Case{"v5.17", 4}, Case{"v6.0", 1}}) {
    machine::Machine m = flat_machine(2, 8);
    for (auto& cpu : m.cpus) cpu.package = cpu.node = cpu.llc;
    m.numa_distance = {{10, 21}, {21, 10}};
    Config cfg;
    cfg.profile = make_profile(c.profile);
    Kernel k(m, cfg);
    BusyBody bodies[10];
    for (int i = 0; i <= c.stay; ++i) {
      const TaskId t = k.create_task({.name = "child"}, &bodies[i], 0);
      EXPECT_EQ(k.task_cpu(t) < 8, i < c.stay)
          << c.profile << " task " << i << " on cpu" << k.task_cpu(t);
    }
  }
}

// v5.4's find_idlest_group (before v5.5's rework) compares runnable load, and on an idle
// machine the first other group wins: min_runnable_load starts at ULONG_MAX, and the local
// group is kept only if its load is lower than the idlest's by more than the imbalance
// (256 at DIE's 125 %, 174 at MC's 117 %). Two LLCs {0-3} {4-7}, nothing running, a task
// forked on CPU 0: v5.4 sends it to group {4-7} at DIE (CPU 4), then from CPU 4 to group {5}
// at MC: CPU 5. v5.7 compares idle CPUs, 4 against 4 then 1 against 1, and keeps it on CPU 0.
TEST(Wakeup, V54ForkPlacementLeavesTheLocalGroupOnAnIdleMachine) {
  for (const auto& [profile, want] : {std::pair{"v5.4", 5}, std::pair{"v5.7", 0}}) {
    Config cfg;
    cfg.profile = make_profile(profile);
    Kernel k(flat_machine(2, 4), cfg);
    BusyBody body;
    const TaskId t = k.create_task({.name = "child"}, &body, 0);
    EXPECT_EQ(k.task_cpu(t), want) << profile;
  }
}

// A fork that ends on a CPU outside the task's mask goes through select_fallback_rq (core.c
// v5.4): the first allowed CPU of the parent CPU's node, not the first allowed CPU. Two nodes
// {0-3} {4-7}; a busy task pinned on CPU 6; a child allowed on CPUs 1 and 6 forked on CPU 4.
// v5.4: at NUMA both nodes are idle enough to stay; at MC the local group {4} is not allowed,
// so this_runnable_load stays ULONG_MAX and this_runnable_load + imbalance wraps to 173,
// below {6}'s 1024: find_idlest_group returns NULL (v5.5 added `if (!local) return idlest`)
// and the walk ends on CPU 4, which the fallback turns into CPU 6 (node 1), not CPU 1.
TEST(Wakeup, AForkOutsideTheMaskFallsBackWithinTheParentsNode) {
  machine::Machine m = flat_machine(2, 4);
  for (auto& cpu : m.cpus) cpu.package = cpu.node = cpu.llc;
  m.numa_distance = {{10, 21}, {21, 10}};
  Config cfg;
  cfg.profile = make_profile("v5.4");
  Kernel k(m, cfg);
  BusyBody busy, child;
  k.create_task({.name = "busy", .cpus = {6}}, &busy, 6);
  std::ostringstream out;
  Explain xp(out, Explain::Format::Jsonl, 100);
  k.set_explain(&xp);
  const TaskId t = k.create_task({.name = "child", .cpus = {1, 6}}, &child, 4);
  EXPECT_EQ(k.task_cpu(t), 6);
  // The record names the CPU the task was placed on, as sched_wakeup_new does.
  EXPECT_NE(out.str().find("\"target_cpu\":6"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("cpu4 not allowed: select_fallback_rq -> cpu6"), std::string::npos)
      << out.str();
}

// wake_affine_idle from v5.11 (d8fcb81f1acf): an idle prev_cpu is kept before
// wake_affine_weight is asked, and the decision counts as ttwu_move_affine. Two LLCs {0,1}
// {2,3}: the waker on CPU 0 wakes (not sync) a task that last ran on the idle CPU 2. v5.7
// asks wake_affine_weight, which keeps prev as well, uncounted; v5.17 and v6.0 count it in
// CPU 0's domain1, the domain that spans both.
TEST(Wakeup, AnIdlePrevIsAnAffineDecisionFromV511) {
  for (const char* profile : {"v5.7", "v5.17", "v6.0"}) {
    Config c;
    c.profile = make_profile(profile);
    Kernel k(flat_machine(2, 2), c);
    ShortBody wakee;
    TaskId t = k.create_task({.name = "wakee", .cpus = {2}}, &wakee);
    k.run_until(ms(1));
    k.set_affinity(t, {});
    WakerBody w;
    w.k = &k;
    w.wakees = {t};
    w.rounds = 1;
    k.create_task({.name = "waker", .cpus = {0}}, &w);
    k.run_until(ms(2));
    ASSERT_EQ(w.woken, 1) << profile;
    EXPECT_EQ(k.task_cpu(t), 2) << profile;
    const bool v511 = std::string(profile) != "v5.7";
    EXPECT_EQ(schedstat_fields(k.schedstat(), "domain1 ", "cpu0 ")[34], v511 ? 1u : 0u) << profile;
  }
}

// p->recent_used_cpu (fair.c): up to v5.14 the CPU p last woke another task from (here never:
// it stays p's fork CPU), from v5.15 (89aafd67f28c) p's prev at its previous wakeup. One LLC
// of 6 CPUs; the waker runs on CPU 0, hogs on 1 and 5. p last ran on CPU 2, now taken by
// hog A, so the first wakeup scans and finds CPU 3. A then moves to CPU 3, leaving 2 and 4
// idle, and the second wakeup of p (prev 3, busy; target 3 from wake_affine_weight) takes
// its recent_used_cpu 2 from v5.15, where v5.7 scans on from 3 and finds 4.
TEST(Wakeup, RecentUsedCpuIsThePrevOfTheLastWakeupFromV515) {
  // Always running, in steps of 10 us (a task changes CPU under set_affinity at a step's end).
  struct ChunkBody : TaskBody {
    Step next(TaskId, Time) override { return Step::run(us(10)); }
  };
  for (const char* profile : {"v5.7", "v5.17", "v6.6"}) {
    Config c;
    c.profile = make_profile(profile);
    Kernel k(flat_machine(1, 6), c);
    ChunkBody hog_a;
    BusyBody hog_b, hog_d;
    ShortBody wakee;
    TaskId t = k.create_task({.name = "wakee", .cpus = {2}}, &wakee, 0);
    k.run_until(ms(1));
    k.set_affinity(t, {});
    TaskId a = k.create_task({.name = "hog_a", .cpus = {2}}, &hog_a);
    k.create_task({.name = "hog_b", .cpus = {1}}, &hog_b);
    k.create_task({.name = "hog_d", .cpus = {5}}, &hog_d);
    WakerBody w;
    w.k = &k;
    w.wakees = {t};
    w.rounds = 2;
    const Time start = k.now();
    k.create_task({.name = "waker", .cpus = {0}}, &w);
    k.run_until(start + us(150));  // the first wakeup at 100 us
    ASSERT_EQ(w.woken, 1) << profile;
    ASSERT_EQ(k.task_cpu(t), 3) << profile;
    k.set_affinity(a, {3});
    k.run_until(start + us(300));
    ASSERT_EQ(w.woken, 2) << profile;
    EXPECT_EQ(k.task_cpu(t), std::string(profile) == "v5.7" ? 4 : 2) << profile;
  }
}
