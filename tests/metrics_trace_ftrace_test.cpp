// FtraceTextWriter: the kernel's trace-file layout, fed hand-made tracepoints (no
// simulation runs: the writer only reads task names and nice values from the Kernel).
#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "kernel_test_util.h"
#include "metrics/trace_ftrace.h"

namespace schedtwin {
namespace {

using kernel::kNoTask;
using kernel::SwitchState;

struct Fixture {
  machine::Machine m = testutil::flat_machine(1, 4);
  kernel::Kernel k{m, kernel::Config{kernel::make_profile("v5.4")}};
  testutil::BusyBody body;
  Fixture() {
    k.create_task(kernel::TaskAttr{.name = "worker"}, &body);                              // pid 1
    k.create_task(kernel::TaskAttr{.name = "a_very_long_thread_name", .nice = 5}, &body);  // pid 2
    k.create_task(kernel::TaskAttr{.name = "idler", .policy = kernel::Policy::Idle, .nice = 19},
                  &body);  // pid 3
  }
};

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

TEST(FtraceText, HeaderAsTheNopTracerPrintsIt) {
  Fixture f;
  metrics::FtraceTextWriter w(f.k);
  std::vector<std::string> l = lines(w.finish());
  ASSERT_EQ(l.size(), 11u);
  EXPECT_EQ(l[0], "# tracer: nop");
  EXPECT_EQ(l[1], "#");
  EXPECT_EQ(l[2], "# entries-in-buffer/entries-written: 0/0   #P:4");
  EXPECT_EQ(l[9], "#           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION");
  EXPECT_EQ(l[10], "#              | |       |   ||||       |         |");
}

// From v5.13 the trace file has a 7-wide pid column and a fifth flag, migrate-disable
// (54357f0c9149), and from v5.17 the first flag is irqs-off/BH-disabled: the layout of the
// kernel a v5.17 or later profile stands for.
TEST(FtraceText, V517ProfilesWriteTheMigrateDisableColumn) {
  machine::Machine m = testutil::flat_machine(1, 4);
  kernel::Kernel k{m, kernel::Config{kernel::make_profile("v5.17")}};
  testutil::BusyBody body;
  k.create_task(kernel::TaskAttr{.name = "worker"}, &body);  // pid 1
  metrics::FtraceTextWriter w(k);
  w.sched_switch(123456789, 1, kNoTask, SwitchState::Running, 0);
  std::vector<std::string> l = lines(w.finish());
  ASSERT_EQ(l.size(), 13u);
  EXPECT_EQ(l[4], "#                                _-----=> irqs-off/BH-disabled");
  EXPECT_EQ(l[8], "#                              ||| / _-=> migrate-disable");
  EXPECT_EQ(l[10], "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION");
  EXPECT_EQ(l[11], "#              | |         |   |||||     |         |");
  EXPECT_EQ(l[12],
            "          <idle>-0       [001] d..2.     0.123457: sched_switch: "
            "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=worker "
            "next_pid=1 next_prio=120");
}

TEST(FtraceText, EventLinesInTheKernelLayout) {
  Fixture f;
  metrics::FtraceTextWriter w(f.k);
  // 123456789 ns: ns2usecs rounds to 123457 us.
  w.sched_switch(123456789, 1, kNoTask, SwitchState::Running, 0);
  // The waker is the task now current on CPU 1: worker, pid 1.
  w.sched_waking(123500000, 1, 1, 2);
  w.sched_wakeup_new(123600000, 1, 2, 3);
  w.sched_migrate_task(123700499, 1, 0, 1, 0);
  w.sched_switch(2000000000, 1, 0, SwitchState::Interruptible, 1);
  w.sched_process_exit(2000001000, 1, 1);
  w.sched_switch(2000001000, 1, 1, SwitchState::Dead, 2);
  w.sched_switch(2000002000, 1, 2, SwitchState::Running, kNoTask);
  w.sched_wakeup(2000003000, 0, 0, 0);
  w.pelt_cpu(2000003000, 0, 1, 2, 3);  // no ftrace event
  w.sched_switch(2000004000, 0, kNoTask, SwitchState::Running, 0);
  w.sched_switch(2000005000, 0, 0, SwitchState::Preempted, 1);
  EXPECT_EQ(w.events(), 11u);
  std::vector<std::string> l = lines(w.finish());
  ASSERT_EQ(l.size(), 22u);
  EXPECT_EQ(l[2], "# entries-in-buffer/entries-written: 11/11   #P:4");
  EXPECT_EQ(l[11],
            "          <idle>-0     [001] d..2     0.123457: sched_switch: prev_comm=swapper/1 "
            "prev_pid=0 "
            "prev_prio=120 prev_state=R ==> next_comm=worker next_pid=1 next_prio=120");
  EXPECT_EQ(
      l[12],
      "          worker-1     [001] d..3     0.123500: sched_waking: comm=a_very_long_thr pid=2 "
      "prio=125 target_cpu=002");
  EXPECT_EQ(l[13],
            "          worker-1     [001] d..3     0.123600: sched_wakeup_new: comm=idler pid=3 "
            "prio=139 target_cpu=003");
  EXPECT_EQ(l[14],
            "          worker-1     [001] d..2     0.123700: sched_migrate_task: comm=worker pid=1 "
            "prio=120 orig_cpu=1 dest_cpu=0");
  EXPECT_EQ(
      l[15],
      "          worker-1     [001] d..2     2.000000: sched_switch: prev_comm=worker prev_pid=1 "
      "prev_prio=120 prev_state=S ==> next_comm=a_very_long_thr next_pid=2 next_prio=125");
  EXPECT_EQ(
      l[16],
      " a_very_long_thr-2     [001] ...1     2.000001: sched_process_exit: comm=a_very_long_thr "
      "pid=2 prio=125");
  EXPECT_EQ(l[17],
            " a_very_long_thr-2     [001] d..2     2.000001: sched_switch: "
            "prev_comm=a_very_long_thr prev_pid=2 "
            "prev_prio=125 prev_state=X ==> next_comm=idler next_pid=3 next_prio=139");
  EXPECT_EQ(
      l[18],
      "           idler-3     [001] d..2     2.000002: sched_switch: prev_comm=idler prev_pid=3 "
      "prev_prio=139 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120");
  // ttwu_do_wakeup, under the wakee's rq lock: one preempt count above sched_waking's.
  EXPECT_EQ(l[19],
            "          <idle>-0     [000] d..4     2.000003: sched_wakeup: comm=worker pid=1 "
            "prio=120 target_cpu=000");
  // A preempted task leaves as "R+" (TASK_REPORT_MAX), as __schedule(true) traces it.
  EXPECT_EQ(
      l[21],
      "          worker-1     [000] d..2     2.000005: sched_switch: prev_comm=worker prev_pid=1 "
      "prev_prio=120 prev_state=R+ ==> next_comm=a_very_long_thr next_pid=2 next_prio=125");
}

// A run: a periodic task's timer fires in a timer interrupt (hrtimer_wakeup), so its
// sched_waking and sched_wakeup carry the hardirq flag 'h'; its fork does not.
TEST(FtraceText, TimerWakeupsShowTheHardirqFlag) {
  machine::Machine m = testutil::flat_machine(1, 4);
  kernel::Kernel k{m, kernel::Config{kernel::make_profile("v5.4")}};
  metrics::FtraceTextWriter w(k);
  k.set_trace_sink(&w);
  testutil::PeriodicBody p;
  p.k = &k;
  p.work = us(500);
  p.period = ms(4);
  k.create_task({.name = "periodic"}, &p);
  k.run_until(ms(30));
  int waking = 0;
  for (const std::string& l : lines(w.finish())) {
    if (l.find("sched_wakeup_new:") != std::string::npos) {
      EXPECT_NE(l.find(" d..3 "), std::string::npos) << l;
    }
    if (l.find("sched_waking: comm=periodic") != std::string::npos) {
      EXPECT_NE(l.find(" d.h3 "), std::string::npos) << l;
      ++waking;
    }
    if (l.find("sched_wakeup: comm=periodic") != std::string::npos) {
      EXPECT_NE(l.find(" d.h4 "), std::string::npos) << l;
    }
  }
  EXPECT_GE(waking, 5);
}

TEST(FtraceText, StopsAtTheEventLimitAndSaysSo) {
  Fixture f;
  metrics::FtraceTextWriter w(f.k, 2);
  w.sched_switch(1000, 0, kNoTask, SwitchState::Running, 0);
  w.sched_switch(2000, 0, 0, SwitchState::Interruptible, kNoTask);
  w.sched_switch(3500, 2, kNoTask, SwitchState::Running, 1);  // dropped: the first at 3.5 us
  w.sched_waking(4000, 2, 0, 0);                              // dropped, but the context...
  w.sched_switch(5000, 2, 1, SwitchState::Running, 2);        // ...is still followed
  EXPECT_TRUE(w.truncated());
  EXPECT_EQ(w.events(), 2u);
  EXPECT_EQ(w.dropped(), 3u);
  EXPECT_EQ(w.truncated_at(), 3500);
  std::vector<std::string> l = lines(w.finish());
  ASSERT_EQ(l.size(), 14u);
  EXPECT_EQ(l[2], "# entries-in-buffer/entries-written: 2/5   #P:4");
  // 3.5 us prints as 0.000004, rounded to the µs as an event line at that time would be.
  EXPECT_EQ(
      l[13],
      "# schedtwin: trace truncated at 0.000004: event limit of 2 reached, 3 later events not "
      "recorded");
}

// --trace-time 0.000002,0.000006 --trace-comm worker: only events in [2 us, 6 us) that name
// "worker" (pid 1) are written, none is counted as dropped, and the context column still
// shows the task a filtered-out switch put on the CPU.
TEST(FtraceText, FilterKeepsTheWindowAndTheCommsAndFollowsEverySwitch) {
  Fixture f;
  metrics::FtraceTextWriter w(f.k, 100, metrics::TraceFilter{2000, 6000, {"worker"}});
  w.sched_switch(1000, 0, kNoTask, SwitchState::Running, 0);        // worker, before the window
  w.sched_switch(2000, 1, kNoTask, SwitchState::Running, 1);        // not worker: left out
  w.sched_waking(3000, 1, 0, 0);                                    // worker, from pid 2's context
  w.sched_migrate_task(4000, 1, 1, 1, 2);                           // not worker: left out
  w.sched_switch(5000, 0, 0, SwitchState::Interruptible, kNoTask);  // worker
  w.sched_switch(6000, 0, kNoTask, SwitchState::Running, 0);        // at STOP: left out
  EXPECT_EQ(w.events(), 2u);
  EXPECT_EQ(w.dropped(), 0u);
  std::vector<std::string> l = lines(w.finish());
  ASSERT_EQ(l.size(), 13u);
  EXPECT_EQ(l[2], "# entries-in-buffer/entries-written: 2/2   #P:4");
  EXPECT_EQ(l[11],
            " a_very_long_thr-2     [001] d..3     0.000003: sched_waking: comm=worker pid=1 "
            "prio=120 target_cpu=000");
  EXPECT_EQ(l[12],
            "          worker-1     [000] d..2     0.000005: sched_switch: prev_comm=worker "
            "prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 "
            "next_prio=120");
}

TEST(FtraceText, SharedConventions) {
  Fixture f;
  EXPECT_EQ(metrics::trace_pid(kNoTask), 0);
  EXPECT_EQ(metrics::trace_pid(0), 1);
  EXPECT_EQ(metrics::trace_comm(f.k, kNoTask, 3), "swapper/3");
  EXPECT_EQ(metrics::trace_comm(f.k, 1, 0), "a_very_long_thr");  // 15 bytes, TASK_COMM_LEN - 1
  EXPECT_EQ(metrics::trace_prio(f.k, 2), 139);                   // SCHED_IDLE nice 19: 120 + 19
  EXPECT_EQ(metrics::trace_prev_state(SwitchState::Running), 0);
  EXPECT_EQ(metrics::trace_prev_state(SwitchState::Interruptible), 1);
  EXPECT_EQ(metrics::trace_prev_state(SwitchState::Dead), 16);
}

}  // namespace
}  // namespace schedtwin
