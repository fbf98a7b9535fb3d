// --explain's decision log: the records say what the kernel decided and why, in order.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "kernel/kernel.h"
#include "kernel/kernel_impl.h"
#include "kernel_test_util.h"

using namespace schedtwin;
using namespace schedtwin::kernel;
using schedtwin::testutil::BusyBody;
using schedtwin::testutil::flat_machine;
using schedtwin::testutil::PeriodicBody;

namespace {

std::string run(const char* profile, Explain::Format f, std::uint64_t limit = 1000000) {
  Config c;
  c.profile = make_profile(profile);
  Kernel k(flat_machine(1, 4, us(200), us(10)), c);
  std::ostringstream out;
  Explain x(out, f, limit);
  k.set_explain(&x);
  BusyBody hogs[3];
  for (int i = 0; i < 3; ++i)
    k.create_task({.name = "hog", .policy = Policy::Idle, .cpus = {i}}, &hogs[i]);
  PeriodicBody p;
  p.k = &k;
  p.work = us(2000);
  p.period = ms(8);
  TaskId t = k.create_task({.name = "p", .cpus = {0}}, &p);
  k.set_affinity(t, {});
  k.run_until(ms(100));
  return out.str();
}

// A task that runs 10 us and blocks, on and on.
struct Sleeper : TaskBody {
  bool ran = false;
  Step next(TaskId, Time) override {
    ran = !ran;
    return ran ? Step::run(us(10)) : Step::block();
  }
};

// Runs 100 us steps and wakes `wakee` with WF_SYNC at the start of its second.
struct SyncWaker : TaskBody {
  Kernel* k = nullptr;
  TaskId wakee = kNoTask;
  int step = 0;
  Step next(TaskId, Time) override {
    if (step++ == 1) k->wake_up(wakee, WF_SYNC);
    return Step::run(us(100));
  }
};

// v5.4 on m: a sleeper that last ran on `wakee_cpu` is woken with WF_SYNC by a task alone on
// CPU 0; the explain log of that wakeup (and whatever follows it to 2 ms).
std::string sync_wakeup_from_cpu0(const machine::Machine& m, int wakee_cpu, Explain::Format f) {
  Config c;
  c.profile = make_profile("v5.4");
  Kernel k(m, c);
  Sleeper s;
  const TaskId t = k.create_task({.name = "wakee", .cpus = {wakee_cpu}}, &s);
  k.run_until(ms(1));
  k.set_affinity(t, {});
  std::ostringstream out;
  Explain x(out, f, 100);
  k.set_explain(&x);
  SyncWaker w;
  w.k = &k;
  w.wakee = t;
  k.create_task({.name = "waker", .cpus = {0}}, &w);
  k.run_until(ms(2));
  return out.str();
}

// A v5.7 kernel on m whose text explain log is kept in `out` (attached by the test).
struct ExplainedKernel {
  ExplainedKernel(const machine::Machine& m, std::uint64_t limit)
      : k(m, config()), x(out, Explain::Format::Text, limit) {}
  static Config config() {
    Config c;
    c.profile = make_profile("v5.7");
    return c;
  }
  Kernel k;
  std::ostringstream out;
  Explain x;
};

}  // namespace

// The sched-idle fallback scenario: the wakee's target runs only a SCHED_IDLE hog.
TEST(Explain, WakeupRecordsGiveTheDecisionOrder) {
  std::string v54 = run("v5.4", Explain::Format::Text);
  EXPECT_NE(
      v54.find(
          "wakeup p[4]: prev=0 waker=irq wake_wide=no want_affine=yes | wake_affine in MC domain: "
          "target cpu0 "
          "(waker is on prev) | target cpu0 sched-idle: take it | "
          "check_preempt_wakeup on cpu0 (curr hog[1]): curr is SCHED_IDLE, the wakee "
          "is not: preempt -> cpu0"),
      std::string::npos)
      << v54;
  std::string v53 = run("v5.3", Explain::Format::Text);
  // Without the fallback a sched-idle target is not taken and the LLC scan finds CPU 3.
  EXPECT_NE(
      v53.find("| target cpu0 sched-idle | select_idle_core: no SMT | select_idle_cpu budget="),
      std::string::npos)
      << v53;
  EXPECT_NE(v53.find("select_idle_cpu budget="), std::string::npos);
  EXPECT_NE(v53.find("0 sched-idle 1 sched-idle 2 sched-idle 3 idle | found cpu3 -> cpu3"),
            std::string::npos)
      << v53;
  EXPECT_NE(v53.find("fork p[4]"), std::string::npos);
}

// The scan budget comes with what it was computed from, and the figures agree with v5.4's
// select_idle_cpu: nr = span * (avg_idle / 512) / (avg_scan_cost + 1), at least 4, of which
// nr - 1 CPUs are examined. The first search runs before any idle period of the waker's CPU:
// avg_idle is its boot value, 2 * migration_cost = 1 ms, so 1953 after the division.
TEST(Explain, TheScanBudgetShowsItsInputs) {
  std::istringstream lines(run("v5.3", Explain::Format::Jsonl));
  std::string line;
  int checked = 0;
  long long first_avg_idle = -1;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const nlohmann::json& f = j["fields"];
    if (!f.contains("budget")) continue;
    ASSERT_EQ(f["budget_rule"], "SIS_PROP (v5.4: avg_idle / 512)") << line;
    const long long idle_ns = f["budget_avg_idle_ns"], cost = f["budget_avg_scan_cost_ns"];
    ASSERT_EQ(f["budget_avg_idle_divisor"], 512) << line;
    const long long span_avg = 4 * (idle_ns / 512);
    const long long nr = span_avg > 4 * (cost + 1) ? span_avg / (cost + 1) : 4;
    EXPECT_EQ(f["budget_nr"].get<long long>(), nr) << line;
    EXPECT_EQ(f["budget"].get<long long>(), nr - 1) << line;  // the loop's --nr test
    const long long idle = idle_ns;
    if (first_avg_idle < 0) first_avg_idle = idle;
    ++checked;
  }
  EXPECT_GE(checked, 1);
  EXPECT_EQ(first_avg_idle, 1000000);  // rq->avg_idle's boot value: 2 x migration_cost
}

TEST(Explain, BalanceRecordsNameTheDomainAndTheOutcome) {
  std::string text = run("v5.4", Explain::Format::Text);
  EXPECT_NE(text.find("balance: domain=MC type="), std::string::npos) << text;
  EXPECT_NE(text.find("| local 3: has_spare nr_running=0 idle_cpus=1"), std::string::npos) << text;
  EXPECT_NE(text.find("-> balanced"), std::string::npos);
}

// Three busy tasks in LLC 0 of 2 x 4 CPUs (kernel_balance_test's spread case): the idle
// LLC's DIE balance finds each task alone on its CPU, nothing moves, and after repeated
// failures the stopper pushes one; its own record says which task went where. Then the
// two LLCs are balanced, and the record names the test that says so.
TEST(Explain, AnActiveBalancePushHasItsOwnRecordAndBalancedSaysWhy) {
  ExplainedKernel e(flat_machine(2, 4), 100000);
  e.k.set_explain(&e.x);
  BusyBody body[3];
  for (int i = 0; i < 3; ++i) {
    TaskId t = e.k.create_task({.name = "busy", .cpus = {i}}, &body[i]);
    e.k.set_affinity(t, {});
  }
  e.k.run_until(ms(200));
  const std::string& text = e.out.str();
  EXPECT_NE(text.find("-> nothing moved; active balance kicked on cpu"), std::string::npos);
  const size_t push = text.find(" active_balance busy[");
  ASSERT_NE(push, std::string::npos) << text;
  const std::string line = text.substr(push, text.find('\n', push) - push);
  EXPECT_NE(line.find("domain=DIE dst=4 was_running=yes -> pushed to cpu4"), std::string::npos)
      << line;
  EXPECT_NE(text.find("-> balanced: local has at most one idle CPU more than busiest", push),
            std::string::npos);
  EXPECT_EQ(e.k.lb_stats().migrations, 1u);
}

TEST(Explain, JsonLinesParseAndTheLimitIsKept) {
  std::string jl = run("v5.3", Explain::Format::Jsonl, 5);
  std::istringstream in(jl);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("t_ns") && j.contains("kind") && j.contains("steps") &&
                j.contains("result"));
    ++n;
  }
  EXPECT_EQ(n, 5);
}

// Explaining does not change the simulation.
TEST(Explain, ARunWithExplainGivesTheSameSchedule) {
  auto sig = [](bool explain) {
    Config c;
    c.profile = make_profile("v5.3");
    Kernel k(flat_machine(2, 2, us(50), us(10)), c);
    std::ostringstream out;
    Explain x(out, Explain::Format::Text, 1000000);
    if (explain) k.set_explain(&x);
    PeriodicBody p[6];
    for (int i = 0; i < 6; ++i) {
      p[i].k = &k;
      p[i].work = us(700 + 300 * i);
      p[i].period = ms(3 + i);
      k.create_task({.name = "p"}, &p[i]);
    }
    k.run_until(ms(300));
    std::string s;
    for (int i = 0; i < 6; ++i)
      s += std::to_string(p[i].latencies.size()) + ":" + std::to_string(k.task_cpu(i)) + ",";
    return s + std::to_string(k.events());
  };
  EXPECT_EQ(sig(false), sig(true));
}

// A text record's time is in seconds with µs, rounded to the nearest µs as ftrace's
// timestamps are (ns2usecs), so that a decision and the trace events around it line up.
TEST(Explain, TextTimesRoundToTheMicrosecondLikeFtrace) {
  std::ostringstream out;
  Explain x(out, Explain::Format::Text, 10);
  ASSERT_TRUE(x.begin("wakeup", 1'999'999'500, 3, "t"));
  x.end("cpu3");
  ASSERT_TRUE(x.begin("wakeup", 1'499, 0, "t"));
  x.end("cpu0");
  EXPECT_EQ(out.str(),
            "[    2.000000] cpu3 wakeup t: -> cpu3\n[    0.000001] cpu0 wakeup t: -> cpu0\n");
}

// A wakeup record says which wake_affine test decided: a sync wakeup from CPU 0, whose
// waker runs alone there, of a task last on CPU 1 is taken by wake_affine_idle. Its JSON
// names the waker and wake_wide's inputs: the waker's first wakee (1 flip), a wakee that
// has woken no one (0), and the 4 CPUs of the LLC.
TEST(Explain, WakeAffineRecordsTheTestThatDecided) {
  const std::string text = sync_wakeup_from_cpu0(flat_machine(1, 4), 1, Explain::Format::Text);
  EXPECT_NE(
      text.find("wakeup wakee[1]: prev=1 sync=yes waker=waker[2] wake_wide=no want_affine=yes | "
                "wake_affine_idle: cpu0 (sync, the waker runs alone) | wake_affine in "
                "MC domain: target cpu0 (the waker's CPU)"),
      std::string::npos)
      << text;
  const std::string jsonl = sync_wakeup_from_cpu0(flat_machine(1, 4), 1, Explain::Format::Jsonl);
  // yes/no fields are JSON booleans; sync is there when false too.
  EXPECT_NE(jsonl.find("\"prev\":1,\"sync\":true,\"waker\":\"waker[2]\",\"wake_wide\":false,"
                       "\"want_affine\":true,"
                       "\"waker_wakee_flips\":1,\"wakee_wakee_flips\":0,\"wake_wide_factor\":4"),
            std::string::npos)
      << jsonl;
}

// A prev CPU in another LLC than the target is not tried, and the record says so (trial 6
// found the check missing from records, with nothing to say why). The wakee last ran on
// CPU 5 (LLC 1); a sync wakeup from CPU 0, whose waker runs alone, targets CPU 0 (LLC 0).
TEST(Explain, APrevCpuInAnotherLlcSaysItWasNotTried) {
  const std::string text = sync_wakeup_from_cpu0(flat_machine(2, 4), 5, Explain::Format::Text);
  EXPECT_NE(text.find("wakeup wakee[1]: prev=5"), std::string::npos) << text;
  EXPECT_NE(text.find("| target cpu0 busy (nr_running=1) | prev cpu5: another LLC than the "
                      "target, not tried |"),
            std::string::npos)
      << text;
}

// A fork record walks find_idlest_cpu: at the domain spanning both LLCs, the local LLC
// fully busy with two tasks against an empty one sends the third task over, and the record
// gives both groups' statistics and the move.
TEST(Explain, ForkRecordsWalkFindIdlestCpuWithGroupStatistics) {
  ExplainedKernel e(flat_machine(2, 2), 1000);
  Kernel& k = e.k;
  k.set_explain(&e.x);
  BusyBody a, b, d;
  k.create_task({.name = "a", .cpus = {0}}, &a, 0);
  k.create_task({.name = "b", .cpus = {1}}, &b, 0);
  k.run_until(ms(50));
  TaskId t = k.create_task({.name = "d"}, &d, 0);
  EXPECT_GE(k.task_cpu(t), 2);
  const std::string s = e.out.str();
  const auto at = s.find("fork d[3]");
  ASSERT_NE(at, std::string::npos) << s;
  const std::string rec = s.substr(at, s.find('\n', at) - at);
  EXPECT_NE(rec.find("find_idlest_group in"), std::string::npos) << rec;
  EXPECT_NE(rec.find("local 0-1: fully_busy nr_running=2 idle_cpus=0"), std::string::npos) << rec;
  EXPECT_NE(rec.find("idlest 2-3: has_spare nr_running=0 idle_cpus=2"), std::string::npos) << rec;
  EXPECT_NE(rec.find("go to the idlest group: cpu"), std::string::npos) << rec;
}

// detach_tasks skips a task whose utilisation does not fit the imbalance, and the balance
// record says so. CPU 0 runs two hogs (util_avg about 512 each, never sampled by util_est as
// they never sleep); CPU 1 a task busy 7 ms of every 10 (util_avg about 700): CPU 1's group
// has spare capacity against an overloaded one, so calculate_imbalance asks to fill it,
// migrate_util with an imbalance of 1024 - 700, about 320, below a hog's 512.
TEST(Explain, DetachTasksSaysWhyATaskDidNotFitTheImbalance) {
  ExplainedKernel e(flat_machine(1, 2), 100000);
  Kernel& k = e.k;
  BusyBody h[2];
  const TaskId a = k.create_task({.name = "hog", .cpus = {0}}, &h[0], 0);
  const TaskId b = k.create_task({.name = "hog", .cpus = {0}}, &h[1], 0);
  PeriodicBody p;
  p.k = &k;
  p.work = ms(7);
  p.period = ms(10);
  k.create_task({.name = "p", .cpus = {1}}, &p, 1);
  k.run_until(ms(300));
  k.set_explain(&e.x);
  for (TaskId t : {a, b}) k.set_affinity(t, {});
  k.run_until(ms(400));
  const std::string s = e.out.str();
  const auto at = s.find("imbalance migrate_util");
  ASSERT_NE(at, std::string::npos) << s.substr(0, 4000);
  const std::string rec = s.substr(at, s.find('\n', at) - at);
  EXPECT_NE(rec.find("util_est"), std::string::npos) << rec;
  EXPECT_NE(rec.find("above the imbalance"), std::string::npos) << rec;
}

// explain_step, the README's hook for an idea's own branch: inside an open record it is one
// more step of that record; where none is open (newidle_balance before its domain loop, for
// one) it is a "note" record of its own, with the CPU's current task.
TEST(Explain, AStepOutsideARecordIsANoteOfItsOwn) {
  std::ostringstream out;
  Explain x(out, Explain::Format::Text, 100);
  Config c;
  c.profile = make_profile("v5.7");
  KernelImpl k(flat_machine(1, 2), c);
  k.explain_ = &x;
  BusyBody hog;
  k.create_task({.name = "hog", .cpus = {1}}, &hog, 1);
  k.run_until(us(10));
  out.str("");  // the fork record
  k.explain_step(1, "MY_IDEA: here");
  EXPECT_EQ(out.str(), "[    0.000010] cpu1 note hog[1]: | MY_IDEA: here -> noted\n");
  ASSERT_TRUE(x.begin("wakeup", k.now_, 0, "t[2]"));
  k.explain_step(0, "MY_IDEA: inside");
  x.end("cpu0");
  EXPECT_NE(out.str().find("cpu0 wakeup t[2]: | MY_IDEA: inside -> cpu0\n"), std::string::npos)
      << out.str();
  k.explain_ = nullptr;
  k.explain_step(0, "nothing written");
  EXPECT_EQ(x.written(), 3u);  // the fork, the note and the wakeup
}

// Wakeup preemption is in the log: a task that slept long wakes onto a CPU where a hog runs
// alone, so min_vruntime is the hog's vruntime and place_entity (GENTLE_FAIR_SLEEPERS) puts
// the sleeper half a sched_latency behind it. With 4 CPUs the tunables scale by
// 1 + ilog2(4) = 3: sched_latency 18 ms, so vdiff = 9 ms, against wakeup_gran 1 ms x 3 =
// 3 ms: preempt. With 8 CPUs in two LLCs (scale 4: 12 ms against 4 ms) the wakeup from the
// other LLC goes on the wake list, and the decision comes when CPU 0 takes it: a record of
// its own, named for the wakee.
TEST(Explain, WakeupPreemptionIsExplained) {
  struct Sleeper : TaskBody {
    Step next(TaskId, Time) override { return Step::block(); }
  };
  struct Waker : TaskBody {
    Kernel* k = nullptr;
    TaskId wakee = kNoTask;
    int step = 0;
    Step next(TaskId, Time) override {
      if (step++ == 0) return Step::run(ms(50));
      k->wake_up(wakee, WF_NONE);
      return Step::block();
    }
  };
  auto run = [](int llcs, int waker_cpu, Explain::Format format) {
    Config c;
    c.profile = make_profile("v5.4");
    Kernel k(flat_machine(llcs, 4), c);
    std::ostringstream out;
    Explain x(out, format, 1000);
    k.set_explain(&x);
    BusyBody hog;
    k.create_task({.name = "hog", .cpus = {0}}, &hog);
    Sleeper s;
    const TaskId t = k.create_task({.name = "sleeper", .cpus = {0}}, &s);
    Waker w;
    w.k = &k;
    w.wakee = t;
    k.create_task({.name = "waker", .cpus = {waker_cpu}}, &w);
    k.run_until(ms(60));
    return out.str();
  };
  const std::string local = run(1, 1, Explain::Format::Text);
  EXPECT_NE(local.find("cpu1 wakeup sleeper[2]: prev=0 waker=waker[3] | pinned to "
                       "one CPU: no selection | check_preempt_wakeup on cpu0 (curr hog[1]): "
                       "wakeup_preempt_entity: curr's vruntime - wakee's = 9000000 ns > "
                       "wakeup_gran 3000000 ns: preempt -> cpu0"),
            std::string::npos)
      << local;
  const std::string remote = run(2, 4, Explain::Format::Jsonl);
  std::istringstream lines(remote);
  std::string line;
  int records = 0;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["kind"] != "preempt") continue;
    ++records;
    EXPECT_EQ(j["cpu"], 0);
    EXPECT_EQ(j["task"], "sleeper[2]");
    EXPECT_EQ(j["result"], "resched");
    EXPECT_EQ(j["fields"]["preempt"], true);
    EXPECT_EQ(j["fields"]["preempt_curr"], "hog[1]");
    EXPECT_EQ(j["fields"]["preempt_vdiff_ns"], 12000000);
    EXPECT_EQ(j["fields"]["preempt_wakeup_gran_ns"], 4000000);
  }
  EXPECT_EQ(records, 1) << remote;
}

namespace {
struct BlockBody : TaskBody {
  Step next(TaskId, Time) override { return Step::block(); }
};
// Runs 100 us, wakes `wakee`, then blocks for good.
struct WakeOnceBody : TaskBody {
  Kernel* k = nullptr;
  TaskId wakee = kNoTask;
  int calls = 0;
  Step next(TaskId, Time) override {
    if (calls++ == 0) return Step::run(us(100));
    if (calls == 2) k->wake_up(wakee, 0);
    return Step::block();
  }
};
}  // namespace

// From v6.0 (f3dd3f674555) a wakeup onto an idle CPU of the waker's LLC goes through that
// CPU's wake list; the record says so, as it does for a cross-LLC wakeup.
TEST(Explain, AWakeListWakeupWithinTheLlcIsNamed) {
  for (const char* profile : {"v5.17", "v6.0"}) {
    Config c;
    c.profile = make_profile(profile);
    Kernel k(flat_machine(1, 4), c);
    std::ostringstream out;
    Explain x(out, Explain::Format::Text, 1000);
    k.set_explain(&x);
    BlockBody sleeper;
    TaskId b = k.create_task({.name = "b", .cpus = {1}}, &sleeper, 1);
    k.run_until(ms(1));
    WakeOnceBody waker;
    waker.k = &k;
    waker.wakee = b;
    k.create_task({.name = "a", .cpus = {0}}, &waker, 0);
    k.run_until(ms(5));
    const bool v60 = std::string(profile) == "v6.0";
    EXPECT_EQ(out.str().find("-> cpu1 (wake list of the idle CPU + IPI)") != std::string::npos, v60)
        << profile << "\n"
        << out.str();
  }
}

// An all-pinned balance redoes without the pinned CPUs (load_balance's redo): its JSON
// fields describe the last pass only, with "passes", not pass 1's busiest queue beside pass
// 2's busiest group. Three hogs allowed on CPUs 0-1 of four: CPU 2 or 3 finds CPU 0 or 1
// busiest, can move nothing, and balances the rest, where the other runs one task.
TEST(Explain, ARedoneBalanceDescribesItsLastPass) {
  Config c;
  c.profile = make_profile("v5.4");
  Kernel k(flat_machine(1, 4), c);
  std::ostringstream out;
  Explain x(out, Explain::Format::Jsonl, 100000);
  k.set_explain(&x);
  BusyBody h[3];
  for (BusyBody& b : h) k.create_task({.name = "hog", .cpus = {0, 1}}, &b, 0);
  k.run_until(ms(50));
  std::istringstream lines(out.str());
  int redone = 0;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json r = nlohmann::json::parse(line);
    if (r["kind"] != "balance" || !r["fields"].contains("passes")) continue;
    ++redone;
    const nlohmann::json& f = r["fields"];
    EXPECT_EQ(f["passes"], 2) << line;
    // Pass 2 left the pinned CPU out: whatever it found, it is not pass 1's queue.
    if (f.contains("busiest_cpu") && f.contains("busiest_cpus")) {
      EXPECT_EQ(f["busiest_cpus"], std::to_string(f["busiest_cpu"].get<int>())) << line;
    }
    if (!f.contains("busiest_cpu")) {
      EXPECT_FALSE(f.contains("imbalance")) << line;
    }
  }
  EXPECT_GT(redone, 0);
}
