// The boundary between workloads and the kernel model (DESIGN.md §3).
//
// A workload gives each task a TaskBody. The kernel calls TaskBody::next()
// whenever the task is on a CPU and has nothing left to do: after it was
// created, after it was woken and got the CPU (context switch already paid),
// or when its previous step finished. next() returns what the task does next
// and may call into the Kernel the way a program makes system calls (wake
// another task, arm a timer, fork).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/time.h"

namespace schedtwin::kernel {

using TaskId = std::int32_t;
inline constexpr TaskId kNoTask = -1;

enum class Policy : std::uint8_t { Normal, Batch, Idle };  // SCHED_OTHER, SCHED_BATCH, SCHED_IDLE

const char* policy_name(Policy p);  // "SCHED_OTHER", ...

struct TaskAttr {
  std::string name;  // comm, at most 15 characters shown in traces
  Policy policy = Policy::Normal;
  int nice = 0;                         // -20..19
  std::vector<int> cpus;                // allowed CPUs; empty means all
  int group = 0;                        // task group id; 0 is the root group
  Time timer_slack_ns = 50 * kNsPerUs;  // hrtimer slack (current->timer_slack_ns)
  // CLONE_THREAD (pthread_create): the new task joins this task's thread group (its tgid);
  // kNoTask: it leads a new one, as after fork(). Traces group threads by it.
  TaskId thread_group = kNoTask;
};

// One step of a task's program.
struct Step {
  enum class Kind : std::uint8_t {
    Run,       // consume `amount` ns of work, measured at capacity 1024 with a whole core
    RunUntil,  // burn CPU until the wall clock reaches `amount` (absolute ns); rt-app "runtime"
    Block,     // sleep (TASK_INTERRUPTIBLE) until woken by Kernel::wake_up or a timer
    Yield,     // sched_yield()
    Exit,      // do_exit()
  };
  Kind kind = Kind::Block;
  // Run only: after this step, up to `repeats` more Step::run(amount) whose ends nothing but
  // the body itself can observe (a receiver draining messages no writer waits on, a sender
  // whose messages wake no one). The kernel may then let those ends pass without calling
  // next() and call TaskBody::commit_repeats for them instead, in time, before anything that
  // could see them (Kernel::sync_repeats). A repeated step is an event like any other
  // (Kernel::events). Beside `kind`, so that a Step stays 16 bytes (returned in registers).
  std::int32_t repeats = 0;
  Time amount = 0;

  static Step run(Time work_ns) { return {Kind::Run, 0, work_ns}; }
  static Step run_repeated(Time work_ns, std::int32_t repeats) {
    return {Kind::Run, repeats, work_ns};
  }
  static Step run_until(Time wall_ns) { return {Kind::RunUntil, 0, wall_ns}; }
  static Step block() { return {Kind::Block, 0, 0}; }
  static Step yield() { return {Kind::Yield, 0, 0}; }
  static Step exit() { return {Kind::Exit, 0, 0}; }
};

class TaskBody {
 public:
  virtual ~TaskBody() = default;
  // Called with the task current on a CPU; `now` is the simulated time.
  virtual Step next(TaskId self, Time now) = 0;
  // The ends of `n` (>= 0) repeated steps (Step::repeats) have passed: do what next() would
  // have done at each before returning the same Step::run again. `over`: none is pending any
  // longer (all committed, the rest cut short, or the kernel did not take them): the step in
  // progress ends in a call of next(). Must not call into the kernel.
  virtual void commit_repeats(TaskId self, std::int64_t n, bool over);
};

// Wake flags (kernel WF_*).
enum WakeFlags : unsigned {
  WF_NONE = 0,
  WF_SYNC = 1u << 0,      // the waker is about to sleep (pipes, sockets)
  WF_FORK = 1u << 1,      // wake_up_new_task
  WF_MIGRATED = 1u << 2,  // internal: the wakee changed CPU
};

}  // namespace schedtwin::kernel
