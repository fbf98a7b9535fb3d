// The core scheduler around the fair class (kernel/sched/core.c, v5.4):
// try_to_wake_up and the remote wake list, schedule() and context switches,
// the tick, hrtimers, IPIs and idle entry/exit, and how a CPU makes progress on
// the running task's work (capacity, SMT sharing, kernel time owed).
//
// Execution model: each CPU is Busy (running a task), Idle (in a cpuidle
// state) or ExitingIdle (paying the IPI and the real exit cost of its state, or, with
// going_idle, the kernel time it still owed when it ran out of tasks).
// Work a task is given (Step::run) completes after work/speed of CPU time;
// kernel work done on a CPU (context switch, wakeups, idle-search probes) is a
// debt paid before the running task's work resumes.
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "engine/error.h"
#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

namespace {

int ilog2(unsigned v) {
  int r = -1;
  while (v) {
    v >>= 1;
    ++r;
  }
  return r;
}

// Guards a task program that keeps returning zero work.
constexpr int kMaxZeroSteps = 1'000'000;

}  // namespace

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::Normal:
      return "SCHED_OTHER";
    case Policy::Batch:
      return "SCHED_BATCH";
    case Policy::Idle:
      return "SCHED_IDLE";
  }
  return "?";
}

KernelImpl::KernelImpl(const machine::Machine& m, const Config& cfg)
    : m_(m), cfg_(cfg), prof_(cfg.profile), rng_(cfg.seed, 0) {
  if (m_.cpus.empty()) throw InputError("machine has no CPUs");
  const char* env_check = std::getenv("SCHEDTWIN_CHECK");
  check_ = cfg.check || (env_check && env_check[0] == '1');
  const char* env_plain = std::getenv("SCHEDTWIN_PLAIN_STEPS");
  repeats_on_ = cfg.repeats && !(env_plain && env_plain[0] == '1');
  hz_ = cfg.hz > 0 ? cfg.hz : m_.build.hz;
  if (hz_ <= 0) hz_ = 250;
  tick_ns_ = (kNsPerSec + hz_ / 2) / hz_;  // TICK_NSEC
  tick_phase_ = static_cast<Time>(rng_.below(static_cast<std::uint64_t>(tick_ns_)));
  // sched_init_granularity / get_update_sysctl_factor (SCHED_TUNABLESCALING_LOG).
  unsigned factor =
      1 + static_cast<unsigned>(ilog2(static_cast<unsigned>(std::min(m_.nr_cpus(), 8))));
  sysctl_sched_latency = 6 * kNsPerMs * factor;
  sysctl_sched_min_granularity = 750 * kNsPerUs * factor;
  sysctl_sched_wakeup_granularity = 1 * kNsPerMs * factor;
  sched_nr_latency = 8;
  sysctl_sched_base_slice = 750 * kNsPerUs * factor;  // v6.6 (update_sysctl)
  eevdf_ = prof_.version >= 606;

  const int n = m_.nr_cpus();
  smt_sib_.resize(static_cast<size_t>(n));
  for (int c = 0; c < n; ++c) smt_sib_[static_cast<size_t>(c)] = m_.smt_siblings(c);
  rq_.resize(static_cast<size_t>(n));
  q_.reserve(static_cast<size_t>(n) * 4 + 64);
  for (int c = 0; c < n; ++c) {
    Rq& rq = rq_[static_cast<size_t>(c)];
    rq.cpu = c;
    rq.cfs.cpu = c;
    rq.core = m_.cpus[c].core;
    rq.cpu_capacity = rq.cpu_capacity_orig = m_.cpus[c].capacity;
    rq.avg_idle = 2 * sysctl_sched_migration_cost;
    rq.max_idle_balance_cost = sysctl_sched_migration_cost;
    rq.tick_slot = q_.add_slot(EV_TICK, static_cast<std::uint32_t>(c), engine::Lane::Far);
    rq.step_slot = q_.add_slot(EV_STEP, static_cast<std::uint32_t>(c));
    rq.ipi_slot = q_.add_slot(EV_IPI, static_cast<std::uint32_t>(c));
    rq.idle_exit_slot = q_.add_slot(EV_IDLE_EXIT, static_cast<std::uint32_t>(c));
    rq.mode = CpuMode::Idle;
    rq.idle_state = m_.idle_states.empty() ? -1 : static_cast<int>(m_.idle_states.size()) - 1;
    update_speed(c);
  }
  smt_present_ = m_.smt_width() > 1;
  core_visited_.assign(static_cast<size_t>(n), 0);
  tgs_.push_back(TaskGroupAttr{.name = "/"});
  tg_rt_.emplace_back();
  build_sched_domains();
  // SIS_UTIL's depth starts as update_idle_cpu_scan leaves it for an idle LLC (all its
  // CPUs), as on a machine that has been up a while: a freshly booted kernel's kzalloc'd
  // sd_llc_shared gives 0 (no scan) until the LLC's first balance.
  for (int c = 0; c < n; ++c)
    llc_shared_[static_cast<size_t>(cpu_rq(c).llc_id)].nr_idle_scan = cpu_rq(c).llc_size;
  for (int c = 0; c < n; ++c) update_idle_core(c);
  // Load balancing state (sd_init, init_sched_fair_class): every CPU starts idle, and
  // tickless where the kernel is built with NO_HZ idle.
  lb_excluded_.assign(static_cast<size_t>(n), 0);
  max_load_balance_interval_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(hz_) * n / 10);
  for (int c = 0; c < n; ++c) {
    Rq& rq = cpu_rq(c);
    for (SchedDomain& sd : rq.sd) sd.next_decay_max_lb_cost = hz_;
    if (m_.build.nohz_idle) {
      rq.tick_stopped = true;
      nohz_balance_enter_idle(c);
    } else {
      q_.arm(rq.tick_slot, next_tick_time());
    }
  }
}

WakerInfo& KernelImpl::current_waker() {
  if (current_ != kNoTask) return task(current_).waker;
  return cpu_rq(this_cpu_).idle_waker;
}

bool KernelImpl::idle_cpu(int cpu) const {
  const Rq& rq = rq_[static_cast<size_t>(cpu)];
  return rq.curr == kNoTask && rq.nr_running == 0 && rq.ttwu_pending == 0 && !rq.going_idle;
}

// ---------------------------------------------------------------------------
// Progress of the running task

// Per-thread speed (work ns per wall ns, x1024): capacity, and when SMT siblings are
// busy, the core's throughput shared between them (machine smt_throughput: the speed of
// each thread with all siblings busy; linear in between).
void KernelImpl::update_speed(int cpu) {
  Rq& rq = cpu_rq(cpu);
  double speed = static_cast<double>(rq.cpu_capacity_orig) / 1024.0;
  if (smt_present_ && m_.smt_throughput < 1.0) {
    const auto& sib = smt_siblings(cpu);
    int busy = 0;
    for (int s : sib)
      if (cpu_rq(s).curr != kNoTask) ++busy;
    int w = static_cast<int>(sib.size());
    if (busy > 1 && w > 1) {
      double core = 1.0 + (busy - 1) * (w * m_.smt_throughput - 1.0) / (w - 1);
      speed *= core / busy;
    }
  }
  rq.speed_q10 = std::max<std::int64_t>(1, static_cast<std::int64_t>(speed * 1024.0 + 0.5));
}

void KernelImpl::settle(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (rq.repeats_left > 0) end_repeats(rq);
  Time elapsed = now_ - rq.seg_start;
  rq.seg_start = now_;
  if (rq.curr == kNoTask || elapsed <= 0) return;
  Time pay = std::min(rq.debt, elapsed);
  rq.debt -= pay;
  elapsed -= pay;
  Task& t = task(rq.curr);
  if (elapsed > 0 && t.step_kind == Step::Kind::Run) {
    // speed_q10 < 2^21, so 64 bits suffice below 2^42 ns (73 min) of elapsed time.
    Time done = elapsed < (Time{1} << 42)
                    ? (elapsed * rq.speed_q10) >> 10
                    : static_cast<Time>((static_cast<__int128>(elapsed) * rq.speed_q10) >> 10);
    t.remaining = std::max<Time>(0, t.remaining - done);
  }
}

void KernelImpl::rearm_step(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (rq.repeats_left > 0) end_repeats(rq);
  if (rq.curr == kNoTask) {
    q_.cancel(rq.step_slot);
    return;
  }
  Task& t = task(rq.curr);
  Time start = now_ + rq.debt;
  Time done;
  if (t.step_kind == Step::Kind::RunUntil) {
    done = std::max(start, t.run_until);
  } else {
    if (t.remaining < (Time{1} << 50)) {
      done = start + step_wall(t.remaining, rq.speed_q10);
    } else {
      __int128 wall = (static_cast<__int128>(t.remaining) * 1024 + rq.speed_q10 - 1) / rq.speed_q10;
      __int128 d = static_cast<__int128>(start) + wall;
      done = d > kTimeNever / 2 ? kTimeNever / 2 : static_cast<Time>(d);
    }
  }
  q_.arm(rq.step_slot, done);
}

void KernelImpl::smt_siblings_changed(int cpu) {
  if (!smt_present_ || m_.smt_throughput >= 1.0) return;
  for (int s : smt_siblings(cpu)) {
    settle(s);
    update_speed(s);
    if (s != cpu && cpu_rq(s).curr != kNoTask) rearm_step(s);
  }
}

void KernelImpl::charge(int cpu, Time ns) {
  if (ns <= 0) return;
  Rq& rq = cpu_rq(cpu);
  if (rq.curr != kNoTask) settle(cpu);
  rq.debt += ns;
  if (rq.curr != kNoTask && q_.armed(rq.step_slot)) rearm_step(cpu);
}

// ---------------------------------------------------------------------------
// Task creation, wakeup

// select_fallback_rq (core.c v5.4), as select_task_rq calls it when the chosen CPU is not in
// the task's mask (select_idle_sibling may return an idle target or prev without looking at
// it): the first allowed CPU of `cpu`'s node, else the first allowed CPU. Every CPU is
// active and there is no cpuset, so its later fallbacks never run.
int KernelImpl::select_fallback_rq(int cpu, const Task& t, int chosen) {
  const int node = m_.cpus[static_cast<size_t>(cpu)].node;
  int dest = -1;
  for (int c = 0; c < nr_cpus() && dest < 0; ++c)
    if (t.allowed[static_cast<size_t>(c)] && m_.cpus[static_cast<size_t>(c)].node == node) dest = c;
  if (dest < 0)
    dest =
        static_cast<int>(std::find(t.allowed.begin(), t.allowed.end(), true) - t.allowed.begin());
  if (xp())
    explain_->step(fmt::format("cpu{} not allowed: select_fallback_rq -> cpu{}", chosen, dest));
  return dest;
}

void KernelImpl::set_task_cpu(TaskId p, int new_cpu) {
  Task& t = task(p);
  if (t.cpu == new_cpu) return;
  if (trace_) trace_->sched_migrate_task(now_, this_cpu_, p, t.cpu, new_cpu);
  // migrate_task_rq_fair (fair.c v5.4) for a waking task. v6.6 keeps vruntime absolute: the
  // lag saved at dequeue places the task on its new cfs_rq.
  cfs_rq& old = *t.se.cfs;
  if (!eevdf_ && t.state == TaskState::Waking) t.se.vruntime -= old.min_vruntime;
  remove_entity_load_avg(t.se, old);
  move_to_cpu(t, new_cpu);
}

// The tail both migrations share: PELT signals attach afresh at the next enqueue, the task
// is no longer cache hot, and crossing an LLC costs the cache-cold penalty at its next
// switch-in.
void KernelImpl::move_to_cpu(Task& t, int dest) {
  t.se.avg.last_update_time = 0;
  t.se.exec_start = 0;
  if (!cpus_share_cache(t.cpu, dest)) t.migrated_cold = true;
  t.cpu = dest;
  set_task_rq(t, dest);
  t.nr_migrations++;
  migrations_++;
}

// migrate_task_rq_fair (fair.c v5.15) for a dequeued task (TASK_ON_RQ_MIGRATING), then
// set_task_cpu: its PELT signals leave with it now.
void KernelImpl::migrate_queued_task(Task& p, int dest) {
  detach_entity_cfs_rq(p.se);
  move_to_cpu(p, dest);
}

void KernelImpl::activate_task(int cpu, TaskId p, int flags) {
  Task& t = task(p);
  enqueue_task_fair(cpu_rq(cpu), t, flags);
  t.state = TaskState::Runnable;
  t.runnable_since = now_;
}

void KernelImpl::deactivate_task(int cpu, TaskId p, int flags) {
  dequeue_task_fair(cpu_rq(cpu), task(p), flags);
}

TaskId KernelImpl::create_task(const TaskAttr& attr, TaskBody* body, int parent_cpu) {
  const int n = nr_cpus();
  if (parent_cpu < 0 || parent_cpu >= n) parent_cpu = 0;
  TaskId id = static_cast<TaskId>(tasks_.size());
  tasks_.emplace_back();
  Task& t = tasks_.back();
  t.name = attr.name;
  t.timer_slack_ns = attr.timer_slack_ns;
  t.created_policy = attr.policy;
  t.body = body;
  t.policy = attr.policy;
  t.nice = attr.nice;
  t.allowed.assign(static_cast<size_t>(n), attr.cpus.empty());
  for (int c : attr.cpus) {
    if (c < 0 || c >= n)
      throw InputError(fmt::format(
          "task {}: CPU {} in its affinity does not exist (machine has {} CPUs)", attr.name, c, n));
    t.allowed[static_cast<size_t>(c)] = true;
  }
  t.nr_cpus_allowed = static_cast<int>(std::count(t.allowed.begin(), t.allowed.end(), true));
  t.se.task = id;
  if (attr.group < 0 || attr.group >= static_cast<int>(tgs_.size()))
    throw InputError(fmt::format("task {}: task group {} does not exist", attr.name, attr.group));
  // cgroup membership is inherited at fork (cgroup_post_fork); a task with no parent task
  // joins the group the front end chose for the workload being started.
  t.group = attr.group != 0       ? attr.group
            : current_ != kNoTask ? task(current_).group
                                  : spawn_group_;
  t.latency_nice = tgs_[static_cast<size_t>(t.group)].latency_nice;  // cpu_cgroup_fork
  t.parent = current_;
  if (attr.thread_group != kNoTask && (attr.thread_group < 0 || attr.thread_group >= id))
    throw std::logic_error(fmt::format("task {}: thread group of task {}, which does not exist",
                                       attr.name, attr.thread_group));
  t.tgid = attr.thread_group == kNoTask ? id : task(attr.thread_group).tgid;
  set_load_weight(t);
  t.timer_slot = q_.add_slot(EV_TIMER, static_cast<std::uint32_t>(id), engine::Lane::Far);
  t.state = TaskState::Waking;

  int saved_cpu = this_cpu_;
  TaskId saved_cur = current_;
  this_cpu_ = parent_cpu;
  current_ = cpu_rq(parent_cpu).curr;
  // sched_fork
  t.cpu = parent_cpu;
  set_task_rq(t, parent_cpu);
  init_entity_runnable_average(t.se);
  task_fork_fair(t, parent_cpu);
  // wake_up_new_task
  t.waker.recent_used_cpu = parent_cpu;
  int cpu = parent_cpu;
  if (explain_) explain_->begin("fork", now_, parent_cpu, task_label(id));
  if (t.nr_cpus_allowed > 1) {
    cpu = select_task_rq_fair(t, parent_cpu, SD_BALANCE_FORK, 0);
  }
  if (!t.allowed[static_cast<size_t>(cpu)]) cpu = select_fallback_rq(parent_cpu, t, cpu);
  if (xp()) explain_->data("target_cpu", cpu);
  const Time scan = static_cast<Time>(probes_) * m_.costs.idle_probe.ns;
  charge(parent_cpu, scan);
  probes_ = 0;
  t.cpu = cpu;
  set_task_rq(t, cpu);
  t.fork_cpu = cpu;
  post_init_entity_util_avg(t);
  activate_task(cpu, id, 0);
  check_preempt_curr(cpu, id, WF_FORK);  // its decision goes into the fork record
  if (xp()) explain_->end(fmt::format("cpu{}", cpu));
  if (trace_) trace_->sched_wakeup_new(now_, parent_cpu, id, cpu);
  kick_delay_ = scan;
  if (cpu_rq(cpu).need_resched) kick_cpu(cpu);
  kick_delay_ = 0;
  this_cpu_ = saved_cpu;
  current_ = saved_cur;
  return id;
}

// try_to_wake_up (core.c v5.4).
bool KernelImpl::try_to_wake_up(TaskId p, unsigned wake_flags) {
  Task& t = task(p);
  if (t.state != TaskState::Blocked) return false;
  t.state = TaskState::Waking;
  t.nr_wakeups++;
  if (trace_) trace_->sched_waking(now_, this_cpu_, p, t.cpu);
  if (explain_ && explain_->begin("wakeup", now_, this_cpu_, task_label(p))) {
    explain_->field("prev", t.cpu);
    explain_->flag("sync", (wake_flags & WF_SYNC) != 0, (wake_flags & WF_SYNC) != 0);
    // Who wakes: a task, or an interrupt (a timer, an IPI's queued wakeup) over whatever ran.
    explain_->field("waker",
                    in_hardirq_ || current_ == kNoTask ? std::string("irq") : task_label(current_));
  }
  int cpu = t.cpu;
  if (t.nr_cpus_allowed > 1) {
    cpu = select_task_rq_fair(t, t.cpu, SD_BALANCE_WAKE, wake_flags);
  } else if (xp()) {
    explain_->step("pinned to one CPU: no selection");
  }
  if (!t.allowed[static_cast<size_t>(cpu)]) cpu = select_fallback_rq(t.cpu, t, cpu);
  const Time scan = static_cast<Time>(probes_) * m_.costs.idle_probe.ns;
  charge(this_cpu_, m_.costs.wakeup.ns + scan);
  probes_ = 0;
  unsigned wf = wake_flags;
  if (cpu != t.cpu) {
    wf |= WF_MIGRATED;
    set_task_cpu(p, cpu);
  }
  // The record stays open through ttwu_queue, so that an enqueue done here adds its
  // preemption decision (check_preempt_wakeup) to it; a queued wakeup's comes later, as a
  // preempt record of the target CPU (check_preempt_curr).
  std::string result;
  if (xp()) {
    const bool queued = ttwu_queue_cond(cpu);
    const bool same_llc = cpus_share_cache(this_cpu_, cpu);
    explain_->data("target_cpu", cpu);
    explain_->flag("remote_wake_list", queued, false);
    result = fmt::format("cpu{}{}", cpu,
                         !queued    ? ""
                         : same_llc ? " (wake list of the idle CPU + IPI)"
                                    : " (remote wake list + IPI)");
  }
  kick_delay_ = scan;
  ttwu_queue(p, cpu, wf);
  kick_delay_ = 0;
  if (!result.empty() && xp()) explain_->end(result);
  ttwu_stat(cpu);
  return true;
}

// ttwu_stat (core.c v5.4): counted on the waker's runqueue (this_rq(), not the wakee's); a
// wakeup onto another CPU counts in the waker's lowest domain that spans that CPU. The
// per-task counters (se.statistics.nr_wakeups_*) are left out.
void KernelImpl::ttwu_stat(int cpu) {
  Rq& rq = cpu_rq(this_cpu_);
  if (cpu == this_cpu_) {
    rq.ttwu_local++;
  } else {
    for (SchedDomain& sd : rq.sd) {
      const auto& span = levels_[static_cast<size_t>(sd.level_id)].span;
      if (std::binary_search(span.begin(), span.end(), cpu)) {
        sd.ttwu_wake_remote++;
        break;
      }
    }
  }
  rq.ttwu_count++;
}

// ttwu_queue (core.c v5.4): across LLCs the wakee goes on the target's wake list and an
// IPI does the enqueue there; within an LLC the waker enqueues directly. v6.0+
// (ttwu_queue_cond with f3dd3f674555) also hands a wakeup onto an idle CPU of the same LLC
// to that CPU, "as the current CPU is likely busy".
bool KernelImpl::ttwu_queue_cond(int cpu) const {
  return feat(Feature::TTWU_QUEUE) && cpu != this_cpu_ &&
         (!cpus_share_cache(this_cpu_, cpu) ||
          (prof_.version >= 600 && rq_[static_cast<size_t>(cpu)].nr_running == 0));
}

void KernelImpl::ttwu_queue(TaskId p, int cpu, unsigned wake_flags) {
  if (ttwu_queue_cond(cpu)) {
    Rq& rq = cpu_rq(cpu);
    task(p).pending_wake_flags = wake_flags;
    rq.wake_list.push_back(p);
    rq.ttwu_pending++;
    if (rq.wake_list.size() == 1) kick_cpu(cpu);
    return;
  }
  ttwu_do_activate(cpu, p, wake_flags);
}

// ttwu_do_activate + ttwu_do_wakeup (core.c v5.4), including the avg_idle update.
void KernelImpl::ttwu_do_activate(int cpu, TaskId p, unsigned wake_flags) {
  Rq& rq = cpu_rq(cpu);
  int en_flags = ENQUEUE_WAKEUP;
  if (wake_flags & WF_MIGRATED) en_flags |= ENQUEUE_MIGRATED;
  activate_task(cpu, p, en_flags);
  check_preempt_curr(cpu, p, wake_flags);
  if (trace_) trace_->sched_wakeup(now_, this_cpu_, p, cpu);
  if (rq.idle_stamp) {
    Time delta = now_ - rq.idle_stamp;
    Time max = 2 * rq.max_idle_balance_cost;
    rq.avg_idle += (delta - rq.avg_idle) >> 3;  // update_avg: an arithmetic shift, rounding down
    if (rq.avg_idle > max) rq.avg_idle = max;
    rq.wake_avg_idle = rq.avg_idle / 2;  // v5.13+ (94aafc3ee31d)
    rq.idle_stamp = 0;
  }
}

// check_preempt_curr (core.c v5.4): the idle task is always preempted.
void KernelImpl::check_preempt_curr(int cpu, TaskId p, unsigned wake_flags) {
  Rq& rq = cpu_rq(cpu);
  if (rq.curr == kNoTask) {
    resched_curr(cpu);
    return;
  }
  // Active balance has pushed the running task away and this CPU is picking its next: the
  // kernel's current is the stopper there, a class above fair, so nothing is preempted (and
  // the task's entities now hang in another CPU's hierarchy).
  if (task(rq.curr).cpu != cpu) return;
  // --explain: the decision joins the open wakeup, fork or balance record; an enqueue with
  // none open (a queued wakeup's, in sched_ttwu_pending) gets a record named for the wakee.
  const bool own =
      explain_ && !explain_->active() && explain_->begin("preempt", now_, cpu, task_label(p));
  check_preempt_wakeup(rq, task(p), wake_flags);
  if (own && xp()) explain_->end(rq.need_resched ? "resched" : "no resched");
}

// resched_curr (core.c v5.4): a remote CPU gets a reschedule IPI unless it polls; the
// local CPU reschedules when the current kernel path ends.
void KernelImpl::resched_curr(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (rq.need_resched) return;
  // The plain step would see need_resched at its next end.
  if (rq.repeats_left > 0) end_repeats(rq);
  rq.need_resched = true;
  if (cpu != this_cpu_ || !in_cpu_context_) kick_cpu(cpu);
}

// Make `cpu` run schedule() / its wake list: an IPI, then the real exit cost of its
// idle state when it is idle; a polling idle CPU notices at once. Inside a wakeup the
// kick leaves after the idle search (kick_delay_); the enqueue itself is not moved, so
// other CPUs see the wakee that much early.
void KernelImpl::kick_cpu(int cpu) {
  Rq& rq = cpu_rq(cpu);
  switch (rq.mode) {
    case CpuMode::Busy:
      if (!q_.armed(rq.ipi_slot)) q_.arm(rq.ipi_slot, now_ + kick_delay_ + m_.costs.ipi.ns);
      break;
    case CpuMode::Idle: {
      const machine::IdleState* s =
          rq.idle_state >= 0 ? &m_.idle_states[static_cast<size_t>(rq.idle_state)] : nullptr;
      if (s && s->polling)
        start_idle_exit(cpu, kick_delay_);
      else
        start_idle_exit(cpu, kick_delay_ + m_.costs.ipi.ns);
      break;
    }
    case CpuMode::ExitingIdle:
      // Already waking for an earlier kick; it must not pick the wakee before the search
      // that chose it has ended.
      if (kick_delay_ > 0 && q_.when(rq.idle_exit_slot) < now_ + kick_delay_)
        q_.arm(rq.idle_exit_slot, now_ + kick_delay_);
      break;
  }
}

void KernelImpl::start_idle_exit(int cpu, Time delay) {
  Rq& rq = cpu_rq(cpu);
  rq.mode = CpuMode::ExitingIdle;
  Time exit_cost = 0;
  if (rq.idle_state >= 0) {
    size_t state = static_cast<size_t>(rq.idle_state);
    // A cluster-level request while another CPU of the cluster is up left this CPU in the
    // deepest CPU-level state (PSCI platform-coordinated mode).
    if (m_.idle_states[state].cluster && !cluster_powered_down(cpu))
      while (m_.idle_states[state].cluster) --state;
    const machine::IdleState& s = m_.idle_states[state];
    if (!s.polling) exit_cost = s.real_exit_ns;
  }
  q_.arm(rq.idle_exit_slot, now_ + delay + exit_cost);
}

bool KernelImpl::cluster_powered_down(int cpu) const {
  const int cluster = m_.cpus[static_cast<size_t>(cpu)].cluster;
  for (int c = 0; c < nr_cpus(); ++c) {
    if (c == cpu || m_.cpus[static_cast<size_t>(c)].cluster != cluster) continue;
    const Rq& rq = rq_[static_cast<size_t>(c)];
    if (rq.mode != CpuMode::Idle || rq.idle_state < 0 ||
        !m_.idle_states[static_cast<size_t>(rq.idle_state)].cluster)
      return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Timers

void KernelImpl::arm_timer(TaskId t, Time expires) {
  Task& p = task(t);
  if (p.timer_cpu >= 0) {
    auto& v = cpu_rq(p.timer_cpu).armed_timers;
    v.erase(std::find(v.begin(), v.end(), t));
  }
  p.timer_cpu = p.cpu;
  p.timer_expires = expires + p.timer_slack_ns;
  cpu_rq(p.cpu).armed_timers.push_back(t);
  q_.arm(p.timer_slot, std::max(now_, p.timer_expires));
}

void KernelImpl::on_timer(TaskId t) {
  Task& p = task(t);
  int cpu = p.timer_cpu;
  auto& v = cpu_rq(cpu).armed_timers;
  v.erase(std::find(v.begin(), v.end(), t));
  p.timer_cpu = -1;
  p.timer_expires = kTimeNever;
  Rq& rq = cpu_rq(cpu);
  switch (rq.mode) {
    case CpuMode::Idle:
      // The timer interrupt itself wakes the CPU: its delivery and the exit cost, no IPI.
      rq.pending_timers.push_back(t);
      start_idle_exit(cpu, m_.costs.timer_irq.ns);
      break;
    case CpuMode::ExitingIdle:
      rq.pending_timers.push_back(t);
      break;
    case CpuMode::Busy:
      // The interrupt runs on the CPU before the wakeup: the current task loses that time,
      // and a wakee that preempts it runs after it.
      charge(cpu, m_.costs.timer_irq.ns);
      handle_timer_irq(cpu, t);
      if (rq.need_resched) schedule(cpu);
      break;
  }
}

// hrtimer_wakeup in interrupt context on `cpu`: `current` is whatever it interrupted.
void KernelImpl::handle_timer_irq(int cpu, TaskId t) {
  int saved_cpu = this_cpu_;
  TaskId saved_cur = current_;
  bool saved_ctx = in_cpu_context_;
  this_cpu_ = cpu;
  current_ = cpu_rq(cpu).curr;
  in_cpu_context_ = true;
  in_hardirq_ = true;
  try_to_wake_up(t, WF_NONE);
  in_hardirq_ = false;
  this_cpu_ = saved_cpu;
  current_ = saved_cur;
  in_cpu_context_ = saved_ctx;
}

// ---------------------------------------------------------------------------
// Events

void KernelImpl::on_idle_exit(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (rq.going_idle) {
    rq.going_idle = false;
    rq.tick_wakeup = false;  // a tick in the kernel path did not interrupt an idle period
  } else {
    cpuidle_reflect(cpu, now_ - rq.idle_entered);
  }
  if (trace_ && rq.idle_state >= 0) trace_->cpu_idle(now_, cpu, -1);
  rq.mode = CpuMode::Busy;  // in the kernel, not yet running a task
  rq.idle_state = -1;
  rq.seg_start = now_;
  std::vector<TaskId> timers;
  timers.swap(rq.pending_timers);
  for (TaskId t : timers) handle_timer_irq(cpu, t);
  process_wake_list(cpu);
  const bool tick = rq.idle_tick_pending;
  rq.idle_tick_pending = false;
  if (tick || (rq.nohz_flags & NOHZ_KICK_MASK)) {
    // Kicked as the idle load balancer, or the tick's trigger_load_balance: SCHED_SOFTIRQ on
    // the way out of the interrupt; one softirq run serves both.
    int saved_cpu = this_cpu_;
    TaskId saved_cur = current_;
    bool saved_ctx = in_cpu_context_;
    this_cpu_ = cpu;
    current_ = kNoTask;
    in_cpu_context_ = true;
    if (rq.nohz_flags & NOHZ_KICK_MASK)
      run_rebalance_domains(cpu, CPU_IDLE);
    else
      trigger_load_balance(cpu, idle_cpu(cpu) ? CPU_IDLE : CPU_NOT_IDLE);
    this_cpu_ = saved_cpu;
    current_ = saved_cur;
    in_cpu_context_ = saved_ctx;
  }
  // The stopper woken for an active balance runs and finds its CPU's task gone (the model
  // moves nothing here, and charges no cost).
  if (rq.active_balance) trace_stopper_in(cpu);
  rq.active_balance = false;
  if (rq.nr_running == 0 && !rq.need_resched) {
    enter_idle(cpu);  // the idle loop goes back to sleep without calling schedule()
    trace_stopper_out(cpu);
    return;
  }
  schedule(cpu);
  trace_stopper_out(cpu);
}

void KernelImpl::process_wake_list(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (rq.wake_list.empty()) return;
  int saved_cpu = this_cpu_;
  TaskId saved_cur = current_;
  bool saved_ctx = in_cpu_context_;
  this_cpu_ = cpu;
  current_ = rq.curr;
  in_cpu_context_ = true;
  std::vector<TaskId> list;
  list.swap(rq.wake_list);
  // sched_ttwu_pending up to v5.7 walks the llist as llist_add built it, newest first;
  // v5.8+ (flush_smp_call_function_queue) reverses it into arrival order.
  if (prof_.version < 508) std::reverse(list.begin(), list.end());
  in_hardirq_ = true;  // the IPI's smp-call-function handler
  for (TaskId p : list) {
    rq.ttwu_pending--;
    ttwu_do_activate(cpu, p, task(p).pending_wake_flags);
  }
  in_hardirq_ = false;
  this_cpu_ = saved_cpu;
  current_ = saved_cur;
  in_cpu_context_ = saved_ctx;
}

void KernelImpl::on_ipi(int cpu) {
  Rq& rq = cpu_rq(cpu);
  // Sent while the CPU was busy (kick_cpu wakes an idle CPU directly), arriving after it went
  // idle: the interrupt was pending as the CPU entered its state, so MWAIT / WFI return at
  // once and no exit latency is paid; the way out of idle handles the wake list and any ILB
  // kick.
  if (rq.mode == CpuMode::Idle) {
    on_idle_exit(cpu);
    return;
  }
  if (rq.mode == CpuMode::ExitingIdle) return;
  process_wake_list(cpu);
  rq.nohz_flags = 0;  // an ILB kick that found this CPU busy is dropped (got_nohz_idle_kick)
  if (rq.active_balance) {
    active_load_balance_cpu_stop(cpu);
    if (rq.curr != kNoTask && !rq.need_resched) rearm_step(cpu);
  }
  if (rq.need_resched) schedule(cpu);
  trace_stopper_out(cpu);
}

// scheduler_tick → task_tick_fair (core.c / fair.c v5.4). An idle CPU takes the tick only
// while the idle governor keeps it running: the interrupt wakes the CPU from its idle state
// (menu's tick_wakeup) and is handled on the way out (on_idle_exit).
void KernelImpl::on_tick(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (rq.curr == kNoTask) {
    q_.arm(rq.tick_slot, next_tick_time());
    rq.tick_wakeup = true;
    rq.idle_tick_pending = true;
    if (rq.mode == CpuMode::Idle) start_idle_exit(cpu, 0);
    return;
  }
  settle(cpu);
  int saved_cpu = this_cpu_;
  TaskId saved_cur = current_;
  this_cpu_ = cpu;
  current_ = rq.curr;
  in_cpu_context_ = true;
  // task_tick_fair: every level of the running task's hierarchy.
  for (sched_entity* se = &task(rq.curr).se; se; se = se->parent) entity_tick(*se->cfs, *se);
  update_overload_status(cpu);  // series 4: task_tick_fair
  trigger_load_balance(cpu, CPU_NOT_IDLE);
  in_cpu_context_ = false;
  this_cpu_ = saved_cpu;
  current_ = saved_cur;
  q_.arm(rq.tick_slot, next_tick_time());
  if (rq.need_resched) schedule(cpu);
}

void KernelImpl::on_step_done(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (rq.repeats_left > 0) end_repeats(rq);  // the lazy ends all came before this one
  // What settle() would account is overwritten here: the step and any debt are over.
  rq.seg_start = now_;
  if (rq.curr == kNoTask) return;
  Task& t = task(rq.curr);
  t.remaining = 0;
  rq.debt = 0;
  run_task_program(cpu);
}

// The running task's previous step is done: ask its program what it does next.
void KernelImpl::run_task_program(int cpu) {
  Rq& rq = cpu_rq(cpu);
  TaskId id = rq.curr;
  int saved_cpu = this_cpu_;
  TaskId saved_cur = current_;
  Step s;
  for (int guard = 0;; ++guard) {
    if (guard > kMaxZeroSteps)
      throw InputError(
          fmt::format("task {} keeps returning zero work (a program that never blocks "
                      "or runs)",
                      task(id).name));
    Task& t = task(id);
    this_cpu_ = cpu;
    current_ = id;
    in_cpu_context_ = true;
    s = t.body->next(id, now_);
    in_cpu_context_ = false;
    this_cpu_ = saved_cpu;
    current_ = saved_cur;
    Task& t2 = task(id);  // tasks_ may have grown inside next()
    switch (s.kind) {
      case Step::Kind::Run:
        t2.step_kind = Step::Kind::Run;
        t2.remaining = std::max<Time>(0, s.amount);
        if (t2.remaining == 0 && rq.debt == 0 && !rq.need_resched) {
          if (s.repeats > 0) t2.body->commit_repeats(id, 0, true);  // not taken
          continue;
        }
        break;
      case Step::Kind::RunUntil:
        t2.step_kind = Step::Kind::RunUntil;
        t2.run_until = s.amount;
        t2.remaining = 0;
        if (s.amount <= now_ && rq.debt == 0 && !rq.need_resched) continue;
        break;
      case Step::Kind::Block:
        t2.state = TaskState::Blocked;
        t2.step_kind = Step::Kind::Run;
        t2.remaining = 0;
        schedule(cpu);
        return;
      case Step::Kind::Yield:
        t2.step_kind = Step::Kind::Run;
        t2.remaining = 0;
        yield_task_fair(rq);
        schedule(cpu);
        return;
      case Step::Kind::Exit:
        t2.state = TaskState::Exited;
        t2.remaining = 0;
        schedule(cpu);
        return;
    }
    break;
  }
  Task& t3 = task(id);
  const bool repeating = s.kind == Step::Kind::Run && s.repeats > 0 && start_repeats(cpu, s);
  if (s.repeats > 0 && !repeating) t3.body->commit_repeats(id, 0, true);  // not taken
  if (t3.pending_move >= 0) {
    int dest = t3.pending_move;
    t3.pending_move = -1;
    settle(cpu);
    move_task(id, dest);
    schedule(cpu);
    return;
  }
  if (rq.need_resched)
    schedule(cpu);
  else if (!repeating)
    rearm_step(cpu);
}

// move_queued_task (core.c v5.4) as __set_cpus_allowed_ptr uses it: dequeue, migrate
// PELT (detach/attach), enqueue on the destination, which then preempts if it should.
void KernelImpl::move_task(TaskId id, int dest) {
  Task& t = task(id);
  int src = t.cpu;
  if (src == dest) return;
  Rq& srq = cpu_rq(src);
  if (trace_) trace_->sched_migrate_task(now_, src, id, src, dest);
  update_curr(*t.se.cfs);
  dequeue_task_fair(srq, t, DEQUEUE_SAVE | DEQUEUE_MOVE);
  put_prev_task_fair(t);  // it no longer runs here
  migrate_queued_task(t, dest);
  TaskState st = t.state;
  activate_task(dest, id, 0);
  if (st == TaskState::Running) {
    t.state = TaskState::Runnable;
    t.runnable_since = now_;  // its run delay on the new CPU starts now
  }
  int saved_cpu = this_cpu_;
  bool saved_ctx = in_cpu_context_;
  this_cpu_ = src;
  in_cpu_context_ = false;
  check_preempt_curr(dest, id, 0);
  this_cpu_ = saved_cpu;
  in_cpu_context_ = saved_ctx;
}

void KernelImpl::set_affinity(TaskId id, const std::vector<int>& cpus) {
  Task& t = task(id);
  const int n = nr_cpus();
  std::vector<bool> allowed(static_cast<size_t>(n), cpus.empty());
  for (int c : cpus) {
    if (c < 0 || c >= n)
      throw InputError(fmt::format(
          "task {}: CPU {} in its affinity does not exist (machine has {} CPUs)", t.name, c, n));
    allowed[static_cast<size_t>(c)] = true;
  }
  t.allowed = allowed;
  t.nr_cpus_allowed = static_cast<int>(std::count(allowed.begin(), allowed.end(), true));
  if (allowed[static_cast<size_t>(t.cpu)]) return;
  int dest = static_cast<int>(std::find(allowed.begin(), allowed.end(), true) - allowed.begin());
  if (t.state == TaskState::Running) {
    end_repeats(id);
    t.pending_move = dest;  // the stopper moves it once its current kernel path ends
  } else if (t.state == TaskState::Runnable) {
    move_task(id, dest);
  }
}

// sched_move_task (core.c v5.15) with task_move_group_fair (fair.c): dequeue and put the
// task, detach its PELT signals from the old group's cfs_rq, attach them to the new one,
// requeue and set it running again. A task that has not run yet or is queued has its
// vruntime already relative (vruntime_normalized); a sleeping one is placed as at a wakeup.
void KernelImpl::sched_move_task(TaskId id, int group) {
  Task& t = task(id);
  if (t.group == group) return;
  Rq& rq = cpu_rq(t.cpu);
  const bool queued = t.se.on_rq, running = rq.curr == id;
  if (queued) {
    update_curr(*t.se.cfs);
    dequeue_task_fair(rq, t, DEQUEUE_SAVE | DEQUEUE_MOVE);
  }
  if (running) put_prev_task_fair(t);
  // v6.6 (detach_task_cfs_rq) keeps vruntime absolute: there is nothing to normalise.
  const bool normalized = eevdf_ || queued || t.se.sum_exec_runtime == 0;
  cfs_rq& old = *t.se.cfs;
  if (!normalized) {
    place_entity(old, t.se, false);
    t.se.vruntime -= old.min_vruntime;
  }
  detach_entity_cfs_rq(t.se);
  t.group = group;
  t.h_idle = t.policy == Policy::Idle || group_is_idle(group);
  set_task_rq(t, t.cpu);
  t.se.avg.last_update_time = 0;
  attach_entity_cfs_rq(t.se);
  if (!normalized) t.se.vruntime += t.se.cfs->min_vruntime;
  if (queued) enqueue_task_fair(rq, t, 0);
  if (running)  // set_next_task_fair
    for (sched_entity* se = &t.se; se; se = se->parent) set_next_entity(*se->cfs, *se);
}

// __sched_setscheduler (core.c v5.4): requeue with the new weight and policy.
void KernelImpl::set_scheduler(TaskId id, Policy policy, int nice) {
  Task& t = task(id);
  if (t.policy == policy && t.nice == nice) return;
  requeue_reweighted(t, policy, nice);
  if (t.se.on_rq && cpu_rq(t.cpu).curr != id) check_preempt_curr(t.cpu, id, 0);
}

// set_user_nice (core.c v5.4), as setpriority() reaches it: requeue with the weight of the
// new nice (SCHED_IDLE keeps its weight), then v5.4 reschedules the CPU of a queued task
// whose priority rose or of the running task whose priority fell; from v5.6 (5443a0be6121)
// it calls prio_changed_fair instead. Left out: priority inheritance (no RT tasks), the
// permission checks of setpriority.
void KernelImpl::set_user_nice(TaskId id, int nice) {
  Task& t = task(id);
  if (t.nice == nice || nice < -20 || nice > 19) return;
  const int old_prio = 120 + t.nice;  // p->prio of a fair task: NICE_TO_PRIO(nice)
  requeue_reweighted(t, t.policy, nice);
  if (prof_.version >= 506) {
    prio_changed_fair(id, old_prio);
    return;
  }
  if (t.se.on_rq && (120 + nice < old_prio || cpu_rq(t.cpu).curr == id)) resched_curr(t.cpu);
}

// prio_changed_fair (fair.c v5.6, with 7c2e8bbd87d5's spared IPI for a lone task): a queued
// task's CPU is rescheduled when the running task's priority fell; another queued task is
// checked as a wakeup would be.
void KernelImpl::prio_changed_fair(TaskId id, int old_prio) {
  const Task& t = task(id);
  if (!t.se.on_rq) return;
  const Rq& rq = cpu_rq(t.cpu);
  if (rq.cfs.nr_running == 1) return;
  if (rq.curr == id) {
    if (120 + t.nice > old_prio) resched_curr(t.cpu);
  } else {
    check_preempt_curr(t.cpu, id, 0);
  }
}

// What __sched_setscheduler and set_user_nice share: dequeue (DEQUEUE_SAVE), set_load_weight
// with reweight_task, enqueue again.
void KernelImpl::requeue_reweighted(Task& t, Policy policy, int nice) {
  Rq& rq = cpu_rq(t.cpu);
  bool queued = t.se.on_rq;
  if (queued) {
    update_curr(*t.se.cfs);
    dequeue_task_fair(rq, t, DEQUEUE_SAVE);
  }
  t.policy = policy;
  t.nice = nice;
  const load_weight old = t.se.load;
  set_load_weight(t);
  // set_load_weight(p, true) -> reweight_task (core.c, since v5.1's 9059393e4ec1):
  // reweight_entity on the dequeued entity rescales its load_avg (and on v6.6 its vlag, so
  // that the lag w_i * vlag is kept), then the inverse weight comes from the table.
  // SCHED_IDLE gets its weight without reweight_task.
  if (policy != Policy::Idle && t.se.load.weight != old.weight) {
    const load_weight now = t.se.load;
    t.se.load = old;
    reweight_entity(*t.se.cfs, t.se, now.weight);
    t.se.load.inv_weight = now.inv_weight;
  }
  if (queued) enqueue_task_fair(rq, t, 0);
}

const TaskStats& KernelImpl::task_stats(TaskId id) const {
  const Task& t = tasks_[static_cast<size_t>(id)];
  stats_scratch_.fork_cpu = t.fork_cpu;
  stats_scratch_.parent = t.parent;
  stats_scratch_.tgid = t.tgid;
  stats_scratch_.nr_wakeups = t.nr_wakeups;
  stats_scratch_.nr_migrations = t.nr_migrations;
  stats_scratch_.nr_switches = t.nr_switches;
  stats_scratch_.run_delay = t.run_delay;
  stats_scratch_.sum_exec_runtime = t.se.sum_exec_runtime;
  return stats_scratch_;
}

// __schedule (core.c v5.4) on `cpu`.
void KernelImpl::schedule(int cpu) {
  Rq& rq = cpu_rq(cpu);
  settle(cpu);
  rq.need_resched = false;
  rq.sched_count++;
  TaskId prev = rq.curr;
  picking_cpu_ = cpu;
  // A preempted task leaves "R", as one preempted in user space does: the interrupt's return
  // to user mode calls schedule(), __schedule(false) (exit_to_user_mode_loop); the model's
  // tasks run user code (syscalls are costs, not preemption points), so its preemptions are
  // those, not the in-kernel ones (preempt_schedule*, cond_resched) that trace "R+". The idle
  // task leaves through schedule_idle(), also "R".
  SwitchState prev_state = SwitchState::Running;
  if (prev != kNoTask) {
    Task& pt = task(prev);
    if (pt.state == TaskState::Blocked) prev_state = SwitchState::Interruptible;
    if (pt.state == TaskState::Exited) {
      // exit_notify: a thread that does not lead its group reaps itself (EXIT_DEAD); a
      // group leader stays a zombie for its parent's wait() (EXIT_ZOMBIE).
      prev_state = pt.tgid == prev ? SwitchState::Zombie : SwitchState::Dead;
      if (trace_ && !pt.exit_traced) trace_->sched_process_exit(now_, cpu, prev);
    }
    if (pt.state == TaskState::Blocked || pt.state == TaskState::Exited) {
      deactivate_task(cpu, prev, DEQUEUE_SLEEP);
      if (pt.state == TaskState::Exited) remove_entity_load_avg(pt.se, *pt.se.cfs);
    }
  }
  // Active balance pushed prev to another CPU (the kernel's prev is the stopper): whatever is
  // picked is switched in, even prev itself, pulled back by newly idle balance.
  const bool prev_left = prev != kNoTask && task(prev).cpu != cpu;
  TaskId next = pick_next_task_fair(rq, prev);
  picking_cpu_ = -1;
  if (next == kNoTask) {
    if (prev != kNoTask) {
      Task& pt = task(prev);
      if (pt.state == TaskState::Running) pt.state = TaskState::Runnable;
      rq.curr = kNoTask;
      smt_siblings_changed(cpu);
    }
    rq.sched_goidle++;
    if (trace_ && prev != kNoTask) trace_switch(cpu, prev, prev_state, kNoTask);
    enter_idle(cpu);
    return;
  }
  if (next != prev || prev_left) {
    if (prev != kNoTask) {
      Task& pt = task(prev);
      if (pt.state == TaskState::Running) {
        pt.state = TaskState::Runnable;
        pt.runnable_since = now_;
      }
    }
    Task& nt = task(next);
    nt.run_delay += now_ - nt.runnable_since;
    rq.run_delay += now_ - nt.runnable_since;
    nt.nr_switches++;
    nt.state = TaskState::Running;
    rq.nr_switches++;
    switches_++;
    rq.debt += m_.costs.context_switch.ns;
    if (nt.migrated_cold) {
      rq.debt += m_.costs.cache_cold.ns;
      nt.migrated_cold = false;
    }
    bool was_idle = prev == kNoTask;
    rq.curr = next;
    rq.mode = CpuMode::Busy;
    rq.seg_start = now_;
    if (was_idle) {
      rq.tick_stopped = false;  // tick_nohz_idle_exit restarts a stopped tick
      smt_siblings_changed(cpu);
      if (!q_.armed(rq.tick_slot)) q_.arm(rq.tick_slot, next_tick_time());
    }
    if (trace_) trace_switch(cpu, prev, prev_state, next);
  }
  rearm_step(cpu);
}

void KernelImpl::trace_switch(int cpu, TaskId prev, SwitchState prev_state, TaskId next) {
  Rq& rq = cpu_rq(cpu);
  if (rq.stopper_trace == Rq::StopperTrace::Running) {
    // The stopper was on the CPU in between: it sleeps, and the pick follows it.
    rq.stopper_trace = Rq::StopperTrace::None;
    prev = stopper_task(cpu);
    prev_state = SwitchState::Interruptible;
  }
  trace_->sched_switch(now_, cpu, prev, prev_state, next);
  for (TaskId t : {prev, next}) {
    if (t < 0) continue;
    const sched_avg& a = task(t).se.avg;
    trace_->pelt_task(now_, t, a.util_avg, a.runnable_avg, a.load_avg);
  }
  const sched_avg& c = rq.cfs.avg;
  trace_->pelt_cpu(now_, cpu, c.util_avg, c.runnable_avg, c.load_avg);
}

// stop_one_cpu_nowait wakes the stopper of `cpu` (cpu_stop_queue_work → wake_up_q, v5.4)
// from the executing CPU — for a NOHZ idle balance the idle load balancer, not the idle CPU
// it balances for: sched_waking there; sched_wakeup there too when the two CPUs share the
// LLC, else when the IPI of ttwu_queue's wake list arrives (trace_stopper_in).
void KernelImpl::trace_stopper_wakeup(int cpu) {
  if (!trace_) return;
  const int this_cpu = this_cpu_;
  const TaskId stopper = stopper_task(cpu);
  trace_->sched_waking(now_, this_cpu, stopper, cpu);
  if (!cpus_share_cache(this_cpu, cpu)) return;
  trace_->sched_wakeup(now_, this_cpu, stopper, cpu);
  cpu_rq(cpu).stopper_trace = Rq::StopperTrace::Woken;
}

// The stopper preempts what runs on `cpu` ("R+"; the idle task leaves in "R"). The switch
// out of it is the CPU's next traced sched_switch, or trace_stopper_out.
void KernelImpl::trace_stopper_in(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (!trace_ || rq.stopper_trace == Rq::StopperTrace::Running) return;
  const TaskId stopper = stopper_task(cpu);
  if (rq.stopper_trace != Rq::StopperTrace::Woken) {
    const bool saved = in_hardirq_;
    in_hardirq_ = true;  // sched_ttwu_pending in the IPI
    trace_->sched_wakeup(now_, cpu, stopper, cpu);
    in_hardirq_ = saved;
  }
  rq.stopper_trace = Rq::StopperTrace::None;
  const TaskId prev = rq.curr;
  trace_switch(cpu, prev, SwitchState::Running, stopper);  // preempted on its way to user mode
  rq.stopper_trace = Rq::StopperTrace::Running;
}

// The stopper is done and nothing was picked after it: the CPU goes back to what it ran.
void KernelImpl::trace_stopper_out(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (trace_ && rq.stopper_trace == Rq::StopperTrace::Running)
    trace_switch(cpu, stopper_task(cpu), SwitchState::Interruptible, rq.curr);
}

void KernelImpl::enter_idle(int cpu) {
  Rq& rq = cpu_rq(cpu);
  rq.curr = kNoTask;
  if (rq.debt > 0) {
    // The kernel time still owed (a newly-idle balance that pulled nothing runs inside
    // __schedule with interrupts off) comes first: interrupts, IPIs and wakeups wait for
    // it, as for an idle exit, and the CPU then enters idle or runs what arrived.
    rq.mode = CpuMode::ExitingIdle;
    rq.going_idle = true;
    rq.idle_state = -1;
    q_.cancel(rq.step_slot);
    q_.arm(rq.idle_exit_slot, now_ + rq.debt);
    rq.debt = 0;
    return;
  }
  rq.mode = CpuMode::Idle;
  // idle_stamp is newidle_balance's: the idle loop going back to sleep after an interrupt
  // keeps the stamp of the schedule() that first went idle, so avg_idle sees the whole idle.
  q_.cancel(rq.step_slot);
  bool stop_tick = true;
  rq.idle_state = cpuidle_select(cpu, stop_tick);
  rq.idle_entered = now_;
  if (trace_ && rq.idle_state >= 0) trace_->cpu_idle(now_, cpu, rq.idle_state);
  update_idle_core(cpu);
  if (rq.nohz_flags & NOHZ_NEWILB_KICK) nohz_run_idle_balance(cpu);
  tick_nohz_idle_stop_tick(cpu, stop_tick);
  // A wakeup may have raced with going idle; an IPI already in flight will wake the CPU.
  if ((!rq.wake_list.empty() || rq.nr_running > 0) && !q_.armed(rq.ipi_slot)) kick_cpu(cpu);
}

// cpuidle_idle_call's tick decision (kernel/sched/idle.c, kernel/time/tick-sched.c v5.4):
// tick_nohz_idle_stop_tick when the governor says so or the tick is already stopped, else
// tick_nohz_idle_retain_tick. tick_nohz_next_event keeps a running tick when a timer is due
// within a tick of the last jiffy (the sleep length cpuidle_select has just read). Only a
// tick that really stops enters the NOHZ idle mask
// (nohz_balance_enter_idle); an idle CPU whose tick runs balances itself from that tick.
// Without NO_HZ idle in the kernel build the tick never stops.
void KernelImpl::tick_nohz_idle_stop_tick(int cpu, bool stop_tick) {
  Rq& rq = cpu_rq(cpu);
  if (!m_.build.nohz_idle) stop_tick = false;
  if (stop_tick && !rq.tick_stopped && rq.menu_next_timer != kTimeNever) {
    const Time last_jiffy = jiffies() * tick_ns_ - tick_phase_;
    if (now_ + rq.menu_next_timer - last_jiffy <= tick_ns_) stop_tick = false;
  }
  if (!stop_tick && !rq.tick_stopped) {
    if (!q_.armed(rq.tick_slot)) q_.arm(rq.tick_slot, next_tick_time());
    return;
  }
  q_.cancel(rq.tick_slot);
  if (rq.tick_stopped) return;
  rq.tick_stopped = true;
  nohz_balance_enter_idle(cpu);
}

void KernelImpl::dispatch(engine::SlotId slot) {
  const engine::Slot& s = q_.slot(slot);
  switch (static_cast<EventKind>(s.kind)) {
    case EV_TICK:
      on_tick(static_cast<int>(s.target));
      break;
    case EV_STEP:
      on_step_done(static_cast<int>(s.target));
      break;
    case EV_IPI:
      on_ipi(static_cast<int>(s.target));
      break;
    case EV_IDLE_EXIT:
      on_idle_exit(static_cast<int>(s.target));
      break;
    case EV_TIMER:
      on_timer(static_cast<TaskId>(s.target));
      break;
  }
}

// Most events end a running task's step, and the CPU's rq and task are seldom still in the L1
// cache by then: start loading the next event's while this one is handled. Only a hint; it
// changes nothing the simulation computes.
void KernelImpl::prefetch_next_step() const {
  if (q_.empty()) return;
  const engine::Slot& n = q_.slot(q_.peek());
  if (n.kind != EV_STEP) return;
  const Rq& r = rq_[n.target];
  __builtin_prefetch(&r);
  if (r.curr != kNoTask) __builtin_prefetch(&tasks_[static_cast<size_t>(r.curr)]);
}

void KernelImpl::run_until(Time end) {
  while (!q_.empty() && q_.next_time() < end) {
    Time t = q_.next_time();
    engine::SlotId slot = q_.pop();
    now_ = t;
    ++events_;
    prefetch_next_step();
    // Equal times pop in slot order, but an event armed for `now` may have a lower slot than
    // one already handled: what came before is everything below the highest slot so far.
    if (t != passed_time_ || slot > passed_slot_) {
      passed_time_ = t;
      passed_slot_ = slot;
    }
    dispatch(slot);
    if (check_) check_invariants();
  }
  commit_repeats_until(end);
  if (now_ < end) now_ = end;
}

// ---------------------------------------------------------------------------
// Kernel facade

Kernel::Kernel(const machine::Machine& m, const Config& cfg)
    : impl_(std::make_unique<KernelImpl>(m, cfg)) {}
Kernel::~Kernel() = default;
Time Kernel::now() const { return impl_->now_; }
const machine::Machine& Kernel::machine() const { return impl_->m_; }
const Profile& Kernel::profile() const { return impl_->prof_; }
TaskId Kernel::create_task(const TaskAttr& attr, TaskBody* body, int parent_cpu) {
  return impl_->create_task(attr, body, parent_cpu);
}
bool Kernel::wake_up(TaskId wakee, unsigned wake_flags) {
  if (wakee < 0 || wakee >= impl_->nr_tasks_i()) return false;
  return impl_->try_to_wake_up(wakee, wake_flags);
}
void Kernel::arm_timer(TaskId self, Time expires) { impl_->arm_timer(self, expires); }
void Kernel::set_affinity(TaskId t, const std::vector<int>& cpus) { impl_->set_affinity(t, cpus); }
void Kernel::set_scheduler(TaskId t, Policy policy, int nice) {
  impl_->set_scheduler(t, policy, nice);
}
void Kernel::set_user_nice(TaskId t, int nice) { impl_->set_user_nice(t, nice); }
void Kernel::set_task_group(TaskId t, int group) {
  if (group < 0 || group >= nr_task_groups())
    throw InputError(fmt::format("task group {} does not exist", group));
  impl_->sched_move_task(t, group);
}
int Kernel::task_cpu(TaskId t) const { return impl_->tasks_[static_cast<size_t>(t)].cpu; }
const std::string& Kernel::task_name(TaskId t) const {
  return impl_->tasks_[static_cast<size_t>(t)].name;
}
Policy Kernel::task_created_policy(TaskId t) const {
  return impl_->tasks_[static_cast<size_t>(t)].created_policy;
}
int Kernel::task_nice(TaskId t) const { return impl_->tasks_[static_cast<size_t>(t)].nice; }
const TaskStats& Kernel::task_stats(TaskId t) const { return impl_->task_stats(t); }
int Kernel::nr_tasks() const { return impl_->nr_tasks_i(); }
void Kernel::run_until(Time end) { impl_->run_until(end); }
std::uint64_t Kernel::events() const { return impl_->events_; }
bool Kernel::in_hardirq() const { return impl_->in_hardirq_; }
std::uint64_t Kernel::context_switches() const { return impl_->switches_; }
std::uint64_t Kernel::migrations() const { return impl_->migrations_; }
const LbStats& Kernel::lb_stats() const { return impl_->lb_stats_; }
const CheckStats& Kernel::check_stats() const { return impl_->check_stats_; }
void Kernel::set_trace_sink(TraceSink* sink) { impl_->trace_ = sink; }
void Kernel::set_explain(Explain* explain) { impl_->explain_ = explain; }

std::string KernelImpl::task_label(TaskId t) const {
  return fmt::format("{}[{}]", tasks_[static_cast<size_t>(t)].name, t + 1);
}

void KernelImpl::explain_step(int cpu, std::string_view text) {
  if (!explain_) return;
  if (explain_->active()) {
    explain_->step(std::string(text));
    return;
  }
  const TaskId curr = rq_[static_cast<size_t>(cpu)].curr;
  if (!explain_->begin("note", now_, cpu, curr == kNoTask ? "" : task_label(curr))) return;
  explain_->step(std::string(text));
  explain_->end("noted");
}

std::string KernelImpl::cpu_state(int cpu) const {
  const Rq& rq = rq_[static_cast<size_t>(cpu)];
  if (idle_cpu(cpu)) return "idle";
  if (sched_idle_rq(rq)) return "sched-idle";
  if (rq.curr == kNoTask && rq.nr_running == 0) return "idle, wakeup pending";
  // idle_cpu() counts the queued task: the CPU is busy though the task has not run yet.
  if (rq.curr == kNoTask)
    return fmt::format("busy (nr_running={}, still leaving idle)", rq.nr_running);
  return fmt::format("busy (nr_running={})", rq.nr_running);
}
int Kernel::create_task_group(const TaskGroupAttr& g) { return impl_->create_task_group(g); }

// sched_create_group + alloc_fair_sched_group / init_tg_cfs_entry (core.c, fair.c v5.15),
// then the cgroup writes: cpu.weight (sched_weight_from_cgroup: weight × 1024 / 100,
// rounded) and cpu.idle (sched_group_set_idle: shares of WEIGHT_IDLEPRIO).
int KernelImpl::create_task_group(const TaskGroupAttr& g) {
  auto& tgs = tgs_;
  if (g.parent < 0 || g.parent >= static_cast<int>(tgs.size()))
    throw InputError(
        fmt::format("task group {}: parent group {} does not exist", g.name, g.parent));
  if (g.weight < 1 || g.weight > 10000)
    throw InputError(
        fmt::format("task group {}: cpu.weight {} is outside 1..10000", g.name, g.weight));
  if (g.latency_nice < kLatencyNiceMin || g.latency_nice > kLatencyNiceMax)
    throw InputError(fmt::format("task group {}: cpu.latency-nice {} is outside {}..{}", g.name,
                                 g.latency_nice, kLatencyNiceMin, kLatencyNiceMax));
  if (tgs.size() >= 100000)
    throw InputError(fmt::format("task group {}: more than 100000 task groups", g.name));
  const size_t n = static_cast<size_t>(nr_cpus());
  // Each group costs a cfs_rq and an entity per CPU.
  if (n > kMaxGroupCpus || (tgs.size() + 1) * n > kMaxGroupCpus)
    throw InputError(
        fmt::format("task group {}: {} groups x {} CPUs is more than {} per-CPU group queues",
                    g.name, tgs.size() + 1, n, kMaxGroupCpus));
  const int id = static_cast<int>(tgs.size());
  tgs.push_back(g);
  TaskGroupRt rt;
  rt.idle = g.idle;
  rt.shares = g.idle ? WEIGHT_IDLEPRIO : (static_cast<unsigned long>(g.weight) * 1024 + 50) / 100;
  rt.cpu = std::make_unique<GroupCpu[]>(n);
  for (int c = 0; c < static_cast<int>(n); ++c) {
    GroupCpu& gc = rt.cpu[static_cast<size_t>(c)];
    gc.cfs.cpu = c;
    gc.cfs.tg = id;
    gc.cfs.idle = g.idle;
    gc.se.my_q = &gc.cfs;
    gc.se.cfs = &tg_cfs_rq(g.parent, c);
    gc.se.parent = tg_se(g.parent, c);
    gc.se.depth = gc.se.parent ? gc.se.parent->depth + 1 : 0;
    gc.se.load.weight = NICE_0_LOAD;  // init_tg_cfs_entry; reweighted at first enqueue
  }
  tg_rt_.push_back(std::move(rt));
  // alloc_fair_sched_group, then online_fair_sched_group: each group entity is attached to
  // its parent's cfs_rq at once, so its first enqueue does not attach it a second time
  // after a forked task's propagation already brought its averages up.
  for (int c = 0; c < static_cast<int>(n); ++c) {
    sched_entity& se = tg_rt_.back().cpu[static_cast<size_t>(c)].se;
    init_entity_runnable_average(se);
    attach_entity_cfs_rq(se);
  }
  return id;
}

// set_task_rq (sched.h v5.15): the task's entity hangs below its group's entity on `cpu`.
void KernelImpl::set_task_rq(Task& p, int cpu) {
  p.se.cfs = &tg_cfs_rq(p.group, cpu);
  p.se.parent = tg_se(p.group, cpu);
  p.se.depth = p.se.parent ? p.se.parent->depth + 1 : 0;
}
const TaskGroupAttr& Kernel::task_group(int id) const {
  return impl_->tgs_.at(static_cast<size_t>(id));
}
int Kernel::nr_task_groups() const { return static_cast<int>(impl_->tgs_.size()); }
void Kernel::trace_process_exit(TaskId self) {
  Task& t = impl_->task(self);
  if (t.exit_traced) return;
  t.exit_traced = true;
  if (impl_->trace_) impl_->trace_->sched_process_exit(impl_->now_, t.cpu, self);
}
int Kernel::find_task_group(const std::string& name) const {
  for (int g = 0; g < nr_task_groups(); ++g)
    if (impl_->tgs_[static_cast<size_t>(g)].name == name) return g;
  return -1;
}
int Kernel::task_group_of(TaskId t) const {
  if (t < 0 || t >= nr_tasks()) return -1;
  return impl_->tasks_[static_cast<size_t>(t)].group;
}
void Kernel::set_spawn_group(int group) {
  if (group < 0 || group >= nr_task_groups())
    throw InputError(fmt::format("task group {} does not exist", group));
  impl_->spawn_group_ = group;
}

bool KernelImpl::group_is_idle(int g) const {
  for (int depth = 0; g > 0 && depth < 1000; ++depth) {
    const TaskGroupAttr& tg = tgs_[static_cast<size_t>(g)];
    if (tg.idle) return true;
    g = tg.parent;
  }
  return false;
}
std::string Kernel::schedstat() const { return impl_->schedstat_text(); }

}  // namespace schedtwin::kernel
