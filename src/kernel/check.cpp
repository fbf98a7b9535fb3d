// --check: the kernel model's invariants, verified after every event (issue 8). A
// violation stops the run with a CheckError that names the invariant and dumps the
// run queues; the wasted-cores condition is only counted.
//
// Checked: per CPU and per cfs_rq of the hierarchy, nr_running / h_nr_running /
// idle_h_nr_running / load.weight agree with the queued entities and cfs_tasks; the timeline is in
// vruntime order; the running task is the rq's curr, on this CPU, and current nowhere else; every
// task is in exactly one state consistent with where it is queued; PELT averages of tasks within
// their bounds (util and runnable <= 1024, load <= weight); on v6.6 profiles, each cfs_rq's
// avg_vruntime / avg_load sums agree with its timeline.
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
    for (const sched_entity& se : rq.cfs_tasks) out += fmt::format(" {}", task_label(se.task));
    out += " ]\n";
  }
  return out;
}

namespace {
struct LevelCount {
  unsigned h = 0, idle_h = 0;
};
}  // namespace

void KernelImpl::check_invariants() {
  auto fail = [&](const std::string& what) {
    throw CheckError(
        fmt::format("--check: {} (at {} ns, event {})\n{}", what, now_, events_, dump_state()));
  };
  check_running_.assign(tasks_.size(), -1);
  std::size_t queued_total = 0;
  // One cfs_rq and, through group entities, the queues below it: counts agree with the
  // entities, the timeline is in vruntime order, tasks are where task_cpu says.
  auto check_cfs = [&](auto& self, const cfs_rq& cfs, int c) -> LevelCount {
    LevelCount n;
    unsigned queued = 0;
    unsigned long weight = 0;
    // Formatted only when an invariant fails: this runs for every cfs_rq after every event.
    auto where = [&] {
      return cfs.tg ? fmt::format("cpu{} group {}", c, tgs_[static_cast<size_t>(cfs.tg)].name)
                    : fmt::format("cpu{}", c);
    };
    unsigned idle_queued = 0;
    unsigned long runnable_load = 0;
    auto visit = [&](const sched_entity& se) {
      if (se.cfs != &cfs)
        fail(fmt::format("{}: an entity queued here names another cfs_rq", where()));
      ++queued;
      runnable_load += se.avg.load_avg;
      idle_queued += se_is_idle(se);
      weight += se.load.weight;
      if (se.my_q) {
        LevelCount sub = self(self, *se.my_q, c);
        if (!sub.h) fail(fmt::format("{}: a group entity is queued with an empty cfs_rq", where()));
        n.h += sub.h;
        n.idle_h += se.my_q->idle ? sub.h : sub.idle_h;
        return;
      }
      const Task& t = tasks_[static_cast<size_t>(se.task)];
      if (t.cpu != c)
        fail(
            fmt::format("{} is queued on cpu{} but task_cpu is {}", task_label(se.task), c, t.cpu));
      if (&se != cfs.curr && t.state != TaskState::Runnable)
        fail(fmt::format("{} is queued on cpu{} in state {}", task_label(se.task), c,
                         static_cast<int>(t.state)));
      ++queued_total;
      n.h++;
      n.idle_h += t.policy == Policy::Idle;
    };
    const sched_entity* prev = nullptr;
    for (const sched_entity& se : cfs.timeline) {
      if (prev && static_cast<std::int64_t>(se.vruntime - prev->vruntime) < 0)
        fail(fmt::format("{}: timeline out of vruntime order", where()));
      prev = &se;
      if (!se.on_rq) fail(fmt::format("{}: an entity in the timeline is not on_rq", where()));
      visit(se);
    }
    if (eevdf_) {  // v6.6: the avg_vruntime sums are those of the timeline
      std::int64_t avg = 0;
      long load = 0;
      for (const sched_entity& se : cfs.timeline) {
        avg += static_cast<std::int64_t>(se.vruntime - cfs.min_vruntime) *
               static_cast<long>(se.load.weight);
        load += static_cast<long>(se.load.weight);
      }
      if (avg != cfs.avg_vruntime || load != cfs.avg_load)
        fail(fmt::format("{}: avg_vruntime={} avg_load={} but the timeline sums to {} and {}",
                         where(), cfs.avg_vruntime, cfs.avg_load, avg, load));
    }
    if (cfs.curr && cfs.curr->on_rq) visit(*cfs.curr);
    if (queued != cfs.nr_running)
      fail(
          fmt::format("{}: nr_running={} but {} entities queued", where(), cfs.nr_running, queued));
    if (runnable_load != cfs.runnable_load)
      fail(fmt::format("{}: runnable_load={} but the queued entities' load_avg sums to {}", where(),
                       cfs.runnable_load, runnable_load));
    if (idle_queued != cfs.idle_nr_running)
      fail(fmt::format("{}: idle_nr_running={} but {} idle entities queued", where(),
                       cfs.idle_nr_running, idle_queued));
    if (n.h != cfs.h_nr_running)
      fail(fmt::format("{}: h_nr_running={} but {} tasks queued below", where(), cfs.h_nr_running,
                       n.h));
    if (n.idle_h != cfs.idle_h_nr_running)
      fail(fmt::format("{}: idle_h_nr_running={} but {} idle tasks queued below", where(),
                       cfs.idle_h_nr_running, n.idle_h));
    if (weight != cfs.load.weight)
      fail(fmt::format("{}: load.weight={} but queued weights sum to {}", where(), cfs.load.weight,
                       weight));
    return n;
  };
  for (int c = 0; c < nr_cpus(); ++c) {
    const Rq& rq = rq_[static_cast<size_t>(c)];
    const cfs_rq& cfs = rq.cfs;
    check_cfs(check_cfs, cfs, c);
    for (size_t g = 1; g < tg_rt_.size(); ++g) {
      const GroupCpu& gc = tg_rt_[g].cpu[static_cast<size_t>(c)];
      if (!gc.se.on_rq && gc.cfs.nr_running)
        fail(fmt::format("cpu{} group {}: {} entities queued but the group entity is not", c,
                         tgs_[g].name, gc.cfs.nr_running));
    }
    if (rq.nr_running != cfs.h_nr_running)
      fail(fmt::format("cpu{}: rq nr_running={} != cfs h_nr_running={}", c, rq.nr_running,
                       cfs.h_nr_running));
    if (rq.cfs_tasks.size() != cfs.h_nr_running)
      fail(fmt::format("cpu{}: cfs_tasks holds {} tasks, h_nr_running={}", c, rq.cfs_tasks.size(),
                       cfs.h_nr_running));
    if (rq.curr != kNoTask) {
      const Task& t = tasks_[static_cast<size_t>(rq.curr)];
      if (check_running_[static_cast<size_t>(rq.curr)] >= 0)
        fail(fmt::format("{} is current on cpu{} and cpu{}", task_label(rq.curr),
                         check_running_[static_cast<size_t>(rq.curr)], c));
      check_running_[static_cast<size_t>(rq.curr)] = c;
      if (t.cpu != c)
        fail(fmt::format("{} runs on cpu{} but task_cpu is {}", task_label(rq.curr), c, t.cpu));
      for (const sched_entity* se = &t.se; se; se = se->parent)
        if (se->cfs->curr != se)
          fail(fmt::format("cpu{}: curr {} is not its cfs_rq's curr at depth {}", c,
                           task_label(rq.curr), se->depth));
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
    // A task switched to SCHED_IDLE keeps the load_avg of its old weight (set_load_weight
    // skips reweight_task for it) until PELT decays it.
    if (t.policy != Policy::Idle && t.se.avg.load_avg > t.se.load.weight)
      fail(fmt::format("{}: load_avg={} above its weight {}", task_label(id), t.se.avg.load_avg,
                       t.se.load.weight));
  }
  if (runnable != queued_total)
    fail(fmt::format("{} tasks are runnable or running but {} are queued", runnable, queued_total));

  // Wasted cores (Lozi et al., EuroSys 2016): an idle CPU while a task that may run on it
  // waits in its LLC. Counted when it lasts longer than kWastedThreshold. Only CPUs with a
  // waiting task are looked at, so the check stays O(CPUs) while nothing waits.
  check_waiting_cpus_.clear();
  for (int o = 0; o < nr_cpus(); ++o)
    if (rq_[static_cast<size_t>(o)].cfs.h_nr_running >= 2) check_waiting_cpus_.push_back(o);
  for (int c = 0; c < nr_cpus(); ++c) {
    Rq& rq = cpu_rq(c);
    bool wasted = false;
    if (idle_cpu(c)) {
      for (const int o : check_waiting_cpus_) {
        if (wasted) break;
        if (o == c || !cpus_share_cache(o, c)) continue;
        const Rq& orq = rq_[static_cast<size_t>(o)];
        for (const sched_entity& se : orq.cfs_tasks)
          if (se.task != orq.curr &&
              tasks_[static_cast<size_t>(se.task)].allowed[static_cast<size_t>(c)]) {
            wasted = true;
            break;
          }
      }
    }
    if (!wasted) {
      if (rq.wasted_since >= 0 && now_ - rq.wasted_since > kWastedThreshold) {
        const Time length = now_ - rq.wasted_since;
        check_stats_.wasted_episodes++;
        check_stats_.wasted_ns += length;
        if (length > check_stats_.longest_wasted_ns) {
          check_stats_.longest_wasted_cpu = c;
          check_stats_.longest_wasted_start = rq.wasted_since;
          check_stats_.longest_wasted_ns = length;
        }
      }
      rq.wasted_since = -1;
    } else if (rq.wasted_since < 0) {
      rq.wasted_since = now_;
    }
  }
  check_stats_.checks++;
}

}  // namespace schedtwin::kernel
