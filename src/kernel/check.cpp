// --check: the kernel model's invariants, verified after every event (issue 8). A
// violation stops the run with a CheckError that names the invariant and dumps the
// run queues; the wasted-cores condition is only counted.
//
// Checked: per CPU, nr_running / h_nr_running / idle_h_nr_running / load.weight agree
// with the queued entities and cfs_tasks; the timeline is in vruntime order; the running
// task is the rq's curr, on this CPU, and current nowhere else; every task is in exactly
// one state consistent with where it is queued; PELT averages of tasks within their
// bounds (util and runnable <= 1024, load <= weight).
#include <fmt/core.h>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

std::string KernelImpl::dump_state() const {
  std::string out = fmt::format("state at {} ns:\n", now_);
  for (int c = 0; c < nr_cpus(); ++c) {
    const Rq& rq = rq_[static_cast<size_t>(c)];
    out += fmt::format("  cpu{} curr={} nr_running={} h_nr_running={} idle_h={} queued=[", c,
                       rq.curr == kNoTask ? std::string("idle") : task_label(rq.curr),
                       rq.nr_running, rq.cfs.h_nr_running, rq.cfs.idle_h_nr_running);
    for (const sched_entity& se : rq.cfs.timeline) out += fmt::format(" {}", task_label(se.task));
    out += " ]\n";
  }
  return out;
}

void KernelImpl::check_invariants() {
  auto fail = [&](const std::string& what) {
    throw CheckError(
        fmt::format("--check: {} (at {} ns, event {})\n{}", what, now_, events_, dump_state()));
  };
  check_running_.assign(tasks_.size(), -1);
  std::size_t queued_total = 0;
  for (int c = 0; c < nr_cpus(); ++c) {
    const Rq& rq = rq_[static_cast<size_t>(c)];
    const cfs_rq& cfs = rq.cfs;
    unsigned queued = 0, idle = 0;
    unsigned long weight = 0;
    const sched_entity* prev = nullptr;
    for (const sched_entity& se : cfs.timeline) {
      if (prev && static_cast<std::int64_t>(se.vruntime - prev->vruntime) < 0)
        fail(fmt::format("cpu{}: timeline out of vruntime order at {}", c, task_label(se.task)));
      prev = &se;
      const Task& t = tasks_[static_cast<size_t>(se.task)];
      if (t.cpu != c)
        fail(
            fmt::format("{} is queued on cpu{} but task_cpu is {}", task_label(se.task), c, t.cpu));
      if (!se.on_rq)
        fail(fmt::format("{} is in cpu{}'s timeline but not on_rq", task_label(se.task), c));
      if (t.state != TaskState::Runnable)
        fail(fmt::format("{} is queued on cpu{} in state {}", task_label(se.task), c,
                         static_cast<int>(t.state)));
      ++queued;
      idle += t.h_idle;
      weight += se.load.weight;
    }
    if (cfs.curr && cfs.curr->on_rq) {
      ++queued;
      idle += tasks_[static_cast<size_t>(cfs.curr->task)].h_idle;
      weight += cfs.curr->load.weight;
    }
    if (queued != cfs.nr_running)
      fail(fmt::format("cpu{}: cfs nr_running={} but {} entities queued", c, cfs.nr_running,
                       queued));
    if (cfs.h_nr_running != cfs.nr_running)
      fail(fmt::format("cpu{}: h_nr_running={} != nr_running={} without task groups", c,
                       cfs.h_nr_running, cfs.nr_running));
    if (idle != cfs.idle_h_nr_running)
      fail(fmt::format("cpu{}: idle_h_nr_running={} but {} SCHED_IDLE tasks queued", c,
                       cfs.idle_h_nr_running, idle));
    if (rq.nr_running != cfs.h_nr_running)
      fail(fmt::format("cpu{}: rq nr_running={} != cfs h_nr_running={}", c, rq.nr_running,
                       cfs.h_nr_running));
    if (weight != cfs.load.weight)
      fail(fmt::format("cpu{}: load.weight={} but queued weights sum to {}", c, cfs.load.weight,
                       weight));
    if (rq.cfs_tasks.size() != cfs.h_nr_running)
      fail(fmt::format("cpu{}: cfs_tasks holds {} tasks, h_nr_running={}", c, rq.cfs_tasks.size(),
                       cfs.h_nr_running));
    queued_total += queued;
    if (rq.curr != kNoTask) {
      const Task& t = tasks_[static_cast<size_t>(rq.curr)];
      if (check_running_[static_cast<size_t>(rq.curr)] >= 0)
        fail(fmt::format("{} is current on cpu{} and cpu{}", task_label(rq.curr),
                         check_running_[static_cast<size_t>(rq.curr)], c));
      check_running_[static_cast<size_t>(rq.curr)] = c;
      if (t.cpu != c)
        fail(fmt::format("{} runs on cpu{} but task_cpu is {}", task_label(rq.curr), c, t.cpu));
      if (cfs.curr != &t.se)
        fail(fmt::format("cpu{}: curr {} is not the cfs_rq's curr", c, task_label(rq.curr)));
      if (t.state != TaskState::Running && t.state != TaskState::Blocked &&
          t.state != TaskState::Exited)
        fail(fmt::format("{} is current on cpu{} in state {}", task_label(rq.curr), c,
                         static_cast<int>(t.state)));
    }
  }
  std::size_t runnable = 0;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    TaskId id = static_cast<TaskId>(i);
    if (t.state == TaskState::Running && check_running_[i] < 0)
      fail(fmt::format("{} is Running but current on no CPU", task_label(id)));
    if ((t.state == TaskState::Blocked || t.state == TaskState::Exited) && t.se.on_rq &&
        check_running_[i] < 0)
      fail(fmt::format("{} sleeps or exited but is still queued", task_label(id)));
    if (t.state == TaskState::Runnable || (t.state == TaskState::Running && t.se.on_rq)) ++runnable;
    if (t.state == TaskState::Running && !t.se.on_rq)
      fail(fmt::format("{} is Running but not on its run queue", task_label(id)));
    if (t.se.avg.util_avg > 1024 || t.se.avg.runnable_avg > 1024)
      fail(fmt::format("{}: util_avg={} runnable_avg={} above 1024", task_label(id),
                       t.se.avg.util_avg, t.se.avg.runnable_avg));
    if (t.se.avg.load_avg > t.se.load.weight)
      fail(fmt::format("{}: load_avg={} above its weight {}", task_label(id), t.se.avg.load_avg,
                       t.se.load.weight));
  }
  if (runnable != queued_total)
    fail(fmt::format("{} tasks are runnable or running but {} are queued", runnable, queued_total));

  // Wasted cores (Lozi et al., EuroSys 2016): an idle CPU while a task that may run on it
  // waits in its LLC. Counted when it lasts longer than kWastedThreshold.
  for (int c = 0; c < nr_cpus(); ++c) {
    Rq& rq = cpu_rq(c);
    bool wasted = false;
    if (idle_cpu(c)) {
      for (int o = 0; o < nr_cpus() && !wasted; ++o) {
        if (o == c || !cpus_share_cache(o, c)) continue;
        const Rq& orq = rq_[static_cast<size_t>(o)];
        if (orq.cfs.h_nr_running < 2) continue;
        for (const sched_entity& se : orq.cfs.timeline)
          if (tasks_[static_cast<size_t>(se.task)].allowed[static_cast<size_t>(c)]) {
            wasted = true;
            break;
          }
      }
    }
    if (!wasted) {
      if (rq.wasted_since >= 0 && now_ - rq.wasted_since > kWastedThreshold) {
        check_stats_.wasted_episodes++;
        check_stats_.wasted_ns += now_ - rq.wasted_since;
      }
      rq.wasted_since = -1;
    } else if (rq.wasted_since < 0) {
      rq.wasted_since = now_;
    }
  }
  check_stats_.checks++;
}

}  // namespace schedtwin::kernel
