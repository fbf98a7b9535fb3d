// Tracepoints of the kernel model: the scheduler events the kernel's own tracepoints
// (include/trace/events/sched.h, v5.4–v5.19) report, delivered to a TraceSink that a
// front end installs with Kernel::set_trace_sink. Sinks only observe: a run with a sink
// gives the same results as one without. Times are simulated ns; task ids are the
// kernel model's TaskId (a writer maps them to pids); CPUs are machine CPU ids.
#pragma once
#include <cstdint>

#include "engine/time.h"
#include "kernel/task_api.h"

namespace schedtwin::kernel {

// prev_state of sched_switch, as the kernel's __trace_sched_switch_state reports it.
enum class SwitchState : std::uint8_t {
  Running,        // runnable, switched out voluntarily (sched_yield, or the idle task): "R"
  Preempted,      // runnable, preempted in the kernel (__schedule(true): TASK_REPORT_MAX): "R+";
                  // not emitted today, the model's tasks being preempted in user mode
  Interruptible,  // blocked: "S"
  Zombie,         // exited, a thread group leader its parent has yet to reap: "Z"
  Dead,           // exited, a thread that reaped itself (EXIT_DEAD): "X"
};

// The stopper thread of a CPU (migration/<cpu>, the stop class that runs an active
// balance), as the events below name it: task ids below kNoTask, one per CPU.
inline constexpr TaskId stopper_task(int cpu) { return -2 - cpu; }
inline constexpr bool is_stopper(TaskId t) { return t < kNoTask; }
inline constexpr int stopper_cpu(TaskId t) { return -2 - t; }

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // sched_switch on `cpu`: prev (kNoTask: the idle task, pid 0) leaves in `prev_state`,
  // next (kNoTask: idle) runs. Either may be the CPU's stopper (stopper_task(cpu)); the
  // wakeup events below name a stopper as they name a task.
  virtual void sched_switch(Time t, int cpu, TaskId prev, SwitchState prev_state, TaskId next) = 0;
  // sched_waking, from the waker's CPU (`cpu`), before the wakee's CPU is chosen;
  // `target_cpu` is the wakee's task_cpu at that moment.
  virtual void sched_waking(Time t, int cpu, TaskId p, int target_cpu) = 0;
  // sched_wakeup: the wakee is on `target_cpu`'s run queue (ttwu_do_wakeup), traced on `cpu`.
  virtual void sched_wakeup(Time t, int cpu, TaskId p, int target_cpu) = 0;
  // sched_wakeup_new: a forked task is on `target_cpu`'s run queue; `cpu` is the parent's.
  virtual void sched_wakeup_new(Time t, int cpu, TaskId p, int target_cpu) = 0;
  // sched_migrate_task: p moves from orig_cpu to dest_cpu (wakeup, balancing, affinity);
  // traced on `cpu`, the CPU doing the move.
  virtual void sched_migrate_task(Time t, int cpu, TaskId p, int orig_cpu, int dest_cpu) = 0;
  // sched_process_exit of p on `cpu`.
  virtual void sched_process_exit(Time t, int cpu, TaskId p) = 0;
  // power:cpu_idle (cpuidle_enter_state, v5.4): `cpu` enters cpuidle state `state` (its index
  // in the machine's idle states), or leaves it (state -1: PWR_EVENT_EXIT) once the state's
  // exit latency has passed, before the interrupt that woke it is handled.
  virtual void cpu_idle(Time t, int cpu, int state) = 0;
  // PELT signals after a context switch on `cpu`: of the task switched in or out (p) and
  // of the CPU's root cfs_rq (not kernel tracepoints; counter tracks for Perfetto).
  virtual void pelt_task(Time t, TaskId p, unsigned long util_avg, unsigned long runnable_avg,
                         unsigned long load_avg) = 0;
  virtual void pelt_cpu(Time t, int cpu, unsigned long util_avg, unsigned long runnable_avg,
                        unsigned long load_avg) = 0;
};

}  // namespace schedtwin::kernel
