// Repeated steps: a task whose next steps are the same Step::run, with ends nobody but its
// own program can observe (a receiver draining a socket no writer waits on, a sender filling
// sockets whose receivers do not wait), runs them without an event each. Only the last end
// is armed in the queue; the ones before it are committed lazily (TaskBody::commit_repeats), when
// the first thing that could see them happens:
// - anything that settles, re-arms or preempts the CPU's step (a tick, an IPI, a wakeup's
//   preemption, an SMT sibling's change of speed, charged kernel time, set_affinity), which
//   ends the repeats and leaves the CPU exactly as the plain steps would have left it;
// - the body's own observers (a writer to the receiver's socket, a reader of the sender's),
//   through sync_repeats;
// - the end of run_until.
// The queue orders events by (time, slot id), so where a lazy end stands among the events
// that were dispatched follows from its time and the CPU's step slot (at the current time:
// whether a higher slot was dispatched at it, passed_bound()): the results are the plain
// steps' byte for byte (tests/cli_golden_test.cpp runs both ways). Nothing of the
// kernel's scheduling is left out: a step end in the model calls the task's program and
// nothing else.
#include <stdexcept>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

void TaskBody::commit_repeats(TaskId, std::int64_t, bool) {
  throw std::logic_error("a task body returned Step::repeats without commit_repeats");
}

// Called by run_task_program once next() returned `s`, a Step::run whose work is in
// t.remaining: arms the last of the repeated ends instead of the first. Declines (returns
// false) whenever the plain step would not start cleanly now.
bool KernelImpl::start_repeats(int cpu, const Step& s) {
  Rq& rq = cpu_rq(cpu);
  Task& t = task(rq.curr);
  if (!repeats_on_ || rq.debt != 0 || rq.need_resched || t.pending_move >= 0 ||
      rq.seg_start != now_ || t.remaining <= 0 || t.remaining >= (Time{1} << 40))
    return false;
  // rearm_step's wall time of the step, from a clean start; n keeps the last end's time far
  // from overflowing.
  const Time wall = step_wall(t.remaining, rq.speed_q10);
  const std::int64_t n = std::min<std::int64_t>(s.repeats, (Time{1} << 60) / wall);
  rq.repeats_left = n;
  rq.repeat_wall = wall;
  rq.repeat_next = now_ + wall;
  ++repeating_cpus_;
  q_.arm(rq.step_slot, now_ + (n + 1) * wall);
  return true;
}

// Commits the lazy ends at times before `at`, and those at `at` whose slot is below `slot`
// (at now_: passed_bound(), what the queue has dispatched at this time so far).
void KernelImpl::commit_repeats_before(Rq& rq, Time at, engine::SlotId slot) {
  const Time d = at - rq.repeat_next;
  if (d < 0) return;
  std::int64_t j = d / rq.repeat_wall + 1;
  if (d % rq.repeat_wall == 0 && rq.step_slot >= slot) --j;  // the end at `at` comes after
  j = std::min(j, rq.repeats_left);
  if (j <= 0) return;
  rq.repeat_next += j * rq.repeat_wall;
  rq.repeats_left -= j;
  if (rq.repeats_left == 0) --repeating_cpus_;
  // As on_step_done leaves it at the last of them: the same step begins again.
  rq.seg_start = rq.repeat_next - rq.repeat_wall;
  events_ += static_cast<std::uint64_t>(j);
  lazy_events_ += static_cast<std::uint64_t>(j);
  if (check_) check_stats_.checks += static_cast<std::uint64_t>(j);  // no kernel state moved
  task(rq.curr).body->commit_repeats(rq.curr, j, rq.repeats_left == 0);
}

// Commits what is due and makes the step in progress a plain one, ending at its own time.
void KernelImpl::end_repeats(Rq& rq) {
  commit_repeats_before(rq, now_, passed_bound());
  if (rq.repeats_left == 0) return;
  rq.repeats_left = 0;
  --repeating_cpus_;
  q_.arm(rq.step_slot, rq.repeat_next);
  task(rq.curr).body->commit_repeats(rq.curr, 0, true);
}

Rq* KernelImpl::repeating_rq(TaskId id) {
  if (id < 0 || id >= nr_tasks_i()) return nullptr;
  const Task& t = task(id);
  if (t.state != TaskState::Running) return nullptr;
  Rq& rq = cpu_rq(t.cpu);
  return rq.curr == id && rq.repeats_left > 0 ? &rq : nullptr;
}

void KernelImpl::sync_repeats(TaskId id) {
  if (Rq* rq = repeating_rq(id)) commit_repeats_before(*rq, now_, passed_bound());
}

void KernelImpl::end_repeats(TaskId id) {
  if (Rq* rq = repeating_rq(id)) end_repeats(*rq);
}

// run_until's end: the ends before `end` have happened.
void KernelImpl::commit_repeats_until(Time end) {
  if (repeating_cpus_ == 0) return;
  for (Rq& rq : rq_)
    if (rq.repeats_left > 0) commit_repeats_before(rq, end, 0);
}

void Kernel::sync_repeats(TaskId t) { impl_->sync_repeats(t); }
std::uint64_t Kernel::lazy_events() const { return impl_->lazy_events_; }
bool Kernel::repeats_taken() const { return impl_->repeats_on_; }
void Kernel::end_repeats(TaskId t) { impl_->end_repeats(t); }

}  // namespace schedtwin::kernel
