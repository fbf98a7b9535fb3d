// Trace writers, ftrace side: the conventions both writers share (pids, comms, prios,
// prev_state as the kernel's sched tracepoints report them) and FtraceTextWriter, which
// renders the kernel model's tracepoints as /sys/kernel/tracing/trace reads on a v5.x
// kernel (`--ftrace FILE`). Perfetto's text importer, trace-cmd-style scripts and grep
// read it.
//
// Memory is bounded: a writer records at most `max_events` events and then only counts
// the ones it drops (the file says so in a marker line, the CLI on stderr).
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "engine/time.h"
#include "kernel/kernel.h"
#include "kernel/trace.h"

namespace schedtwin::metrics {

// Default bound of a trace writer, in events (one ftrace line; for Perfetto one ftrace
// event or one counter sample). 5 M ftrace lines are about 700 MB of text.
inline constexpr std::uint64_t kDefaultTraceEventLimit = 1'000'000;

// ---- conventions shared by the ftrace and Perfetto writers ----

// pid of a task in traces: TaskId t is pid t + 1; the idle task (kNoTask) is pid 0. The tgid
// is the pid (every simulated task is shown as its own process). The stopper of CPU c is
// pid kStopperPidTop - c, counted down from the largest pid Linux hands out (PID_MAX_LIMIT - 1
// on 64-bit) so that it cannot meet a task's.
inline constexpr int kStopperPidTop = 4 * 1024 * 1024 - 1;
inline int trace_pid(kernel::TaskId t) {
  if (kernel::is_stopper(t)) return kStopperPidTop - kernel::stopper_cpu(t);
  return t == kernel::kNoTask ? 0 : t + 1;
}

// comm as the kernel stores it (TASK_COMM_LEN 16: at most 15 bytes); the idle task of
// `cpu` is "swapper/<cpu>", a stopper "migration/<its cpu>".
std::string trace_comm(const kernel::Kernel& k, kernel::TaskId t, int cpu);

// p->prio of a fair task: NICE_TO_PRIO(nice) = 120 + nice, for SCHED_OTHER, SCHED_BATCH
// and SCHED_IDLE alike (v5.4); the idle task reports 120, a stopper 0 (SCHED_FIFO at
// MAX_RT_PRIO - 1: prio MAX_RT_PRIO - 1 - 99). The task's nice at the time (Kernel::task_nice).
int trace_prio(const kernel::Kernel& k, kernel::TaskId t);

// sched_switch's prev_state as __trace_sched_switch_state (include/trace/events/sched.h,
// v4.14–v5.19) computes it for a user task: 0 (TASK_RUNNING, printed "R") for a task that
// was preempted — user tasks are preempted on the return to user mode, where __schedule
// runs with preempt=false, so no "+" — 1 (TASK_INTERRUPTIBLE, "S") for a blocked task and
// 0x10 (EXIT_DEAD, "X") for an exited one: do_task_dead's TASK_DEAD is outside TASK_REPORT,
// so the exit_state shows. A process whose parent reaps it would be EXIT_ZOMBIE ("Z",
// 0x20); the model does not tell them apart and reports every exit as autoreaped.
std::int64_t trace_prev_state(kernel::SwitchState s);
const char* trace_prev_state_text(kernel::SwitchState s);  // "R", "R+", "S", "X"

// cpu_idle's state: the idle-state index, or PWR_EVENT_EXIT ((u32)-1) for TraceSink's -1.
inline std::uint32_t trace_idle_state(int state) {
  return state < 0 ? 4294967295u : static_cast<std::uint32_t>(state);
}

// trace_comm, computed once per task and per idle task (writers look comms up millions of
// times). References stay valid while the cache grows (deque), so two may be held at once.
class TraceComms {
 public:
  explicit TraceComms(const kernel::Kernel& k) : k_(k) {}
  const std::string& of(kernel::TaskId t, int cpu);

 private:
  const kernel::Kernel& k_;
  std::deque<std::string> tasks_, idle_, stoppers_;
};

// Per-CPU current task as the sched_switch events tell it (ftrace's common_pid).
class CurrentTasks {
 public:
  explicit CurrentTasks(int nr_cpus) : curr_(static_cast<size_t>(nr_cpus), kernel::kNoTask) {}
  // Clamps a CPU id the kernel passed to a valid one (the model's "no CPU" contexts are CPU 0).
  int cpu(int c) const { return c >= 0 && c < static_cast<int>(curr_.size()) ? c : 0; }
  kernel::TaskId on(int c) const { return curr_[static_cast<size_t>(cpu(c))]; }
  void set(int c, kernel::TaskId t) { curr_[static_cast<size_t>(cpu(c))] = t; }

 private:
  std::vector<kernel::TaskId> curr_;
};

// Which events a writer records (--trace-time, --trace-comm): those at a simulated time in
// [from, to) that, when `comms` is not empty, name a task whose comm is one of them
// (sched_switch names prev and next, the other events their one task; a CPU's PELT counters
// pass on the time alone). Events left out are neither recorded nor counted against the
// event limit. The writers still follow every sched_switch, so each event's context (the
// CPU's current task: ftrace's comm-pid column, Perfetto's common_pid) stays right.
struct TraceFilter {
  Time from = 0;
  Time to = kTimeNever;
  std::vector<std::string> comms;  // exact comms, as trace_comm gives them
};

// A TraceFilter with its comm test cached per task.
class TraceSelection {
 public:
  TraceSelection(TraceFilter f, TraceComms& comms) : f_(std::move(f)), comms_(comms) {}
  bool time(Time t) const { return t >= f_.from && t < f_.to; }
  // An event that names no task (cpu_idle): in the time window, and only without --trace-comm.
  bool admits_untasked(Time t) const { return time(t) && f_.comms.empty(); }
  bool task(kernel::TaskId t, int cpu);
  bool admits(Time t, kernel::TaskId a, int cpu) { return time(t) && task(a, cpu); }
  bool admits(Time t, kernel::TaskId a, kernel::TaskId b, int cpu) {
    return time(t) && (task(a, cpu) || task(b, cpu));
  }

 private:
  TraceFilter f_;
  TraceComms& comms_;
  std::vector<std::int8_t> match_;  // per task: -1 unknown, 0 no, 1 yes
};

// ---- ftrace text ----

// Renders the tracepoints as the `nop` tracer's trace file on v5.4: the "# tracer: nop"
// header with irq-info columns, then one line per event in the kernel's layout
//   "<comm:16>-<pid:-5> [<cpu:03>] <flags> <s:5>.<us:06>: <event>: <TP_printk fields>"
// with the timestamp in µs rounded as ns2usecs does. Events: sched_switch, sched_waking,
// sched_wakeup, sched_wakeup_new, sched_migrate_task, sched_process_exit and power's
// cpu_idle (which names no task: left out under a comm selection).
// The PELT callbacks have no ftrace event and are ignored. The irq-info flags are fixed
// per event (d..2 for sched_switch), not modelled. The layout follows the kernel profile:
// v5.4's up to v5.7; from v5.13 profiles (v5.17, v6.0, v6.6) a pid column 7 wide and a fifth
// flag, migrate-disable (54357f0c9149), always '.', under v5.17's header (irqs-off/BH-disabled).
class FtraceTextWriter final : public kernel::TraceSink {
 public:
  explicit FtraceTextWriter(const kernel::Kernel& k,
                            std::uint64_t max_events = kDefaultTraceEventLimit,
                            TraceFilter filter = {});

  void sched_switch(Time t, int cpu, kernel::TaskId prev, kernel::SwitchState prev_state,
                    kernel::TaskId next) override;
  void sched_waking(Time t, int cpu, kernel::TaskId p, int target_cpu) override;
  void sched_wakeup(Time t, int cpu, kernel::TaskId p, int target_cpu) override;
  void sched_wakeup_new(Time t, int cpu, kernel::TaskId p, int target_cpu) override;
  void sched_migrate_task(Time t, int cpu, kernel::TaskId p, int orig_cpu, int dest_cpu) override;
  void sched_process_exit(Time t, int cpu, kernel::TaskId p) override;
  void cpu_idle(Time t, int cpu, int state) override;
  void pelt_task(Time, kernel::TaskId, unsigned long, unsigned long, unsigned long) override {}
  void pelt_cpu(Time, int, unsigned long, unsigned long, unsigned long) override {}

  std::uint64_t events() const { return recorded_; }  // lines recorded
  std::uint64_t limit() const { return max_events_; }
  std::uint64_t dropped() const { return dropped_; }  // events past the limit
  bool truncated() const { return dropped_ > 0; }
  Time truncated_at() const { return truncated_at_; }  // time of the first dropped event

  // The whole file: header (with entries-in-buffer/entries-written counts), the event lines
  // and, when events were dropped, a final "#" marker line. Leaves the writer empty.
  std::string finish();

 private:
  bool admit(Time t);
  void context(Time t, int cpu, const char* flags, const char* event);
  void end_line();
  void wakeup_line(Time t, int cpu, const char* flags, const char* event, kernel::TaskId p,
                   int target_cpu);

  const kernel::Kernel& k_;
  const bool wide_layout_;  // v5.13+: 7-wide pids and the migrate-disable flag
  std::uint64_t max_events_;
  std::uint64_t recorded_ = 0, dropped_ = 0;
  Time truncated_at_ = 0;
  CurrentTasks curr_;
  TraceComms comms_;
  TraceSelection select_;
  fmt::memory_buffer line_;  // the line being formatted
  std::string body_;
};

}  // namespace schedtwin::metrics
