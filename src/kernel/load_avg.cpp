// PELT bookkeeping of entities and cfs_rqs (kernel/sched/fair.c, v5.7 with the
// 5.7.14 runnable_avg init fix): update_load_avg, attach/detach/remove on
// migration, new-task initial values, util_est, and with task groups the propagation of
// group entities' signals (v5.15 shapes), tg->load_avg and task_h_load. The PELT
// arithmetic itself is in pelt.cpp. Left out: frequency/capacity invariance of clock_pelt (every
// CPU runs at its maximum frequency, so PELT time is the task clock).
#include <algorithm>
#include <cstdlib>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

namespace {

template <class T>
void add_positive(T& var, long delta) {
  long res = static_cast<long>(var) + delta;
  if (delta < 0 && res > static_cast<long>(var)) res = 0;
  var = res < 0 ? 0 : static_cast<T>(res);
}

// The lower bound v5.17 keeps instead of syncing a *_sum to its *_avg (2d02fa8cc21a,
// 98b0d890220d, 7ceb77103001, 95246d1ec80b): sum = max_t(u32, sum, avg * PELT_MIN_DIVIDER).
// max_t(u32, ...) casts both sides to 32 bits, so the u64 load_sum and runnable_sum of a
// cfs_rq beyond 2^32 (about 88 always-runnable nice-0 tasks) are truncated, as they are in
// every kernel up to v6.6.
template <class T>
void clamp_sum_to_min_divider(T& sum, unsigned long avg) {
  sum = std::max(static_cast<std::uint32_t>(sum),
                 static_cast<std::uint32_t>(static_cast<std::uint64_t>(avg) * PELT_MIN_DIVIDER));
}

void add_tg_cfs_propagate(cfs_rq& cfs, long runnable_sum) {
  cfs.propagate = true;
  cfs.prop_runnable_sum += runnable_sum;
}

}  // namespace

// update_cfs_rq_load_avg (fair.c v5.7; from v5.17 each *_sum keeps its lower bound): fold in
// removed averages, then age the cfs_rq.
bool KernelImpl::update_cfs_rq_load_avg(std::uint64_t now, cfs_rq& cfs) {
  bool decayed = false;
  sched_avg& sa = cfs.avg;
  if (cfs.removed.nr) {
    std::uint32_t divider = get_pelt_divider(sa);
    unsigned long r = cfs.removed.load_avg;
    sub_positive(sa.load_avg, r);
    sub_positive(sa.load_sum, static_cast<std::uint64_t>(r) * divider);
    r = cfs.removed.util_avg;
    sub_positive(sa.util_avg, r);
    sub_positive(sa.util_sum, static_cast<std::uint64_t>(r) * divider);
    r = cfs.removed.runnable_avg;
    sub_positive(sa.runnable_avg, r);
    sub_positive(sa.runnable_sum, static_cast<std::uint64_t>(r) * divider);
    if (pelt_sum_lower_bound()) {
      clamp_sum_to_min_divider(sa.load_sum, sa.load_avg);
      clamp_sum_to_min_divider(sa.util_sum, sa.util_avg);
      clamp_sum_to_min_divider(sa.runnable_sum, sa.runnable_avg);
    }
    // -(long)(removed_runnable * divider) >> SCHED_CAPACITY_SHIFT: the shift of the negated
    // value rounds toward minus infinity.
    if (cfs.tg)
      add_tg_cfs_propagate(
          cfs, -static_cast<long>(static_cast<std::uint64_t>(r) * divider) >> PELT_CAPACITY_SHIFT);
    cfs.removed = {};
    decayed = true;
  }
  decayed |= update_pelt(now, sa, 1, cfs.load.weight, cfs.h_nr_running, cfs.curr != nullptr);
  return decayed;
}

// update_load_avg (fair.c v5.15). A group entity's runnable input is its cfs_rq's
// h_nr_running (se_runnable).
void KernelImpl::update_load_avg(cfs_rq& cfs, sched_entity& se, int flags) {
  if (se.avg.last_update_time && !(flags & SKIP_AGE_LOAD) &&
      update_pelt(clock_pelt(), se.avg, se.load.weight, se.on_rq ? 1 : 0,
                  se.my_q ? se.runnable_weight : (se.on_rq ? 1 : 0), cfs.curr == &se))
    cfs_se_util_change(se);
  bool decayed = update_cfs_rq_load_avg(clock_pelt(), cfs);
  decayed |= propagate_entity_load_avg(se);
  if (!se.avg.last_update_time && (flags & DO_ATTACH)) {
    attach_entity_load_avg(cfs, se);
    update_tg_load_avg(cfs);
  } else if (decayed && (flags & UPDATE_TG)) {
    update_tg_load_avg(cfs);
  }
  sync_runnable_load(cfs, se);
}

// v5.4 keeps cfs_rq->avg.runnable_load_avg as a PELT signal of its own, fed by
// enqueue_runnable_load_avg / dequeue_runnable_load_avg. The model keeps the sum of the queued
// entities' load_avg instead (a task's runnable_load_avg is its load_avg; a group entity's is
// its runnable share): each entity's change since it was last added is applied here.
void KernelImpl::sync_runnable_load(cfs_rq& cfs, sched_entity& se) {
  if (!se.on_rq) return;
  cfs.runnable_load += se.avg.load_avg - se.runnable_load_contrib;  // unsigned: exact modulo 2^64
  se.runnable_load_contrib = se.avg.load_avg;
}

// update_tg_load_avg (fair.c v5.15): publish this cfs_rq's load in tg->load_avg when it
// moved by more than 1/64.
void KernelImpl::update_tg_load_avg(cfs_rq& cfs) {
  if (cfs.tg == 0) return;
  long delta = static_cast<long>(cfs.avg.load_avg) - static_cast<long>(cfs.tg_load_avg_contrib);
  if (std::labs(delta) > static_cast<long>(cfs.tg_load_avg_contrib / 64)) {
    tg_rt_[static_cast<size_t>(cfs.tg)].load_avg += delta;
    cfs.tg_load_avg_contrib = cfs.avg.load_avg;
  }
}

// propagate_entity_load_avg (fair.c v5.15): a group entity takes its cfs_rq's util and
// runnable, and re-estimates its load from the runnable time propagated from below.
bool KernelImpl::propagate_entity_load_avg(sched_entity& se) {
  if (!se.my_q) return false;
  cfs_rq& gcfs = *se.my_q;
  if (!gcfs.propagate) return false;
  gcfs.propagate = false;
  cfs_rq& cfs = *se.cfs;
  add_tg_cfs_propagate(cfs, gcfs.prop_runnable_sum);
  const std::uint32_t divider = get_pelt_divider(cfs.avg);
  update_tg_cfs_util(cfs, se, gcfs, divider);
  update_tg_cfs_runnable(cfs, se, gcfs, divider);
  update_tg_cfs_load(cfs, se, gcfs, divider);
  return true;
}

// update_tg_cfs_util (fair.c v5.15; v5.17's 7ceb77103001). Up to v5.16 the parent's util_sum
// is synced to util_avg * divider, which drops what accumulated since the last period
// boundary; from v5.17 the entity's change of sum is passed on and only the lower bound kept.
void KernelImpl::update_tg_cfs_util(cfs_rq& cfs, sched_entity& se, const cfs_rq& gcfs,
                                    std::uint32_t divider) {
  const long delta_avg = static_cast<long>(gcfs.avg.util_avg) - static_cast<long>(se.avg.util_avg);
  if (!delta_avg) return;
  se.avg.util_avg = gcfs.avg.util_avg;
  const auto new_sum = static_cast<std::uint32_t>(se.avg.util_avg * divider);
  const long delta_sum = static_cast<long>(new_sum) - static_cast<long>(se.avg.util_sum);
  se.avg.util_sum = new_sum;
  add_positive(cfs.avg.util_avg, delta_avg);
  if (pelt_sum_lower_bound()) {
    add_positive(cfs.avg.util_sum, delta_sum);
    clamp_sum_to_min_divider(cfs.avg.util_sum, cfs.avg.util_avg);
  } else {
    cfs.avg.util_sum = static_cast<std::uint32_t>(cfs.avg.util_avg * divider);
  }
}

// update_tg_cfs_runnable (fair.c v5.15; v5.17's 95246d1ec80b), as update_tg_cfs_util. From
// v5.17 the entity's new sum is a u32, as the kernel declares it.
void KernelImpl::update_tg_cfs_runnable(cfs_rq& cfs, sched_entity& se, const cfs_rq& gcfs,
                                        std::uint32_t divider) {
  const long delta_avg =
      static_cast<long>(gcfs.avg.runnable_avg) - static_cast<long>(se.avg.runnable_avg);
  if (!delta_avg) return;
  se.avg.runnable_avg = gcfs.avg.runnable_avg;
  add_positive(cfs.avg.runnable_avg, delta_avg);
  if (pelt_sum_lower_bound()) {
    const auto new_sum = static_cast<std::uint32_t>(se.avg.runnable_avg * divider);
    const long delta_sum = static_cast<long>(new_sum) - static_cast<long>(se.avg.runnable_sum);
    se.avg.runnable_sum = new_sum;
    add_positive(cfs.avg.runnable_sum, delta_sum);
    clamp_sum_to_min_divider(cfs.avg.runnable_sum, cfs.avg.runnable_avg);
  } else {
    se.avg.runnable_sum = static_cast<std::uint64_t>(se.avg.runnable_avg) * divider;
    cfs.avg.runnable_sum = static_cast<std::uint64_t>(cfs.avg.runnable_avg) * divider;
  }
}

// update_tg_cfs_load (fair.c v5.15; v5.17's 2d02fa8cc21a). From v5.17 an unchanged load_avg
// leaves the entity's load_sum alone, and the parent gets the change of weighted sum.
void KernelImpl::update_tg_cfs_load(cfs_rq& cfs, sched_entity& se, cfs_rq& gcfs,
                                    std::uint32_t divider) {
  long runnable_sum = gcfs.prop_runnable_sum;
  if (!runnable_sum) return;
  gcfs.prop_runnable_sum = 0;
  if (runnable_sum >= 0) {
    runnable_sum += static_cast<long>(se.avg.load_sum);
    runnable_sum = std::min<long>(runnable_sum, divider);
  } else {
    std::uint64_t load_sum = 0;
    if (gcfs.load.weight) load_sum = gcfs.avg.load_sum / gcfs.load.weight;
    runnable_sum = static_cast<long>(std::min<std::uint64_t>(se.avg.load_sum, load_sum));
  }
  const long running_sum = static_cast<long>(se.avg.util_sum >> PELT_CAPACITY_SHIFT);
  runnable_sum = std::max(runnable_sum, running_sum);
  const std::uint64_t load_sum =
      static_cast<std::uint64_t>(se.load.weight) * static_cast<std::uint64_t>(runnable_sum);
  const auto load_avg = static_cast<unsigned long>(load_sum / divider);
  const long delta_avg = static_cast<long>(load_avg) - static_cast<long>(se.avg.load_avg);
  if (!pelt_sum_lower_bound()) se.avg.load_sum = static_cast<std::uint64_t>(runnable_sum);
  if (!delta_avg) return;
  const long delta_sum =
      static_cast<long>(load_sum) - static_cast<long>(se.load.weight * se.avg.load_sum);
  se.avg.load_sum = static_cast<std::uint64_t>(runnable_sum);
  se.avg.load_avg = load_avg;
  add_positive(cfs.avg.load_avg, delta_avg);
  if (pelt_sum_lower_bound()) {
    add_positive(cfs.avg.load_sum, delta_sum);
    clamp_sum_to_min_divider(cfs.avg.load_sum, cfs.avg.load_avg);
  } else {
    cfs.avg.load_sum = static_cast<std::uint64_t>(cfs.avg.load_avg) * divider;
  }
}

// detach_entity_cfs_rq (fair.c v5.15): a runnable task leaving by migration takes its
// averages with it at once; the groups above learn it by propagation.
void KernelImpl::detach_entity_cfs_rq(sched_entity& se) {
  cfs_rq& cfs = *se.cfs;
  update_load_avg(cfs, se, 0);
  detach_entity_load_avg(cfs, se);
  update_tg_load_avg(cfs);
  propagate_entity_cfs_rq(se);
}

// attach_entity_cfs_rq (fair.c v5.15, ATTACH_AGE_LOAD): the entity's averages join its
// cfs_rq's window now and the groups above learn them by propagation.
void KernelImpl::attach_entity_cfs_rq(sched_entity& se) {
  cfs_rq& cfs = *se.cfs;
  update_load_avg(cfs, se, 0);
  attach_entity_load_avg(cfs, se);
  update_tg_load_avg(cfs);
  propagate_entity_cfs_rq(se);
}

// propagate_entity_cfs_rq (fair.c v5.15): update every ancestor group entity.
void KernelImpl::propagate_entity_cfs_rq(sched_entity& se) {
  for (sched_entity* s = se.parent; s; s = s->parent) update_load_avg(*s->cfs, *s, UPDATE_TG);
}

// update_cfs_rq_h_load (fair.c v5.15): the cfs_rq's share of the root's load, computed
// top-down at most once per jiffy.
void KernelImpl::update_cfs_rq_h_load(cfs_rq& cfs_in) {
  const std::int64_t now = jiffies();
  cfs_rq* cfs = &cfs_in;
  if (cfs->last_h_load_update == now) return;
  cfs->h_load_next = nullptr;
  sched_entity* se = tg_se(cfs->tg, cfs->cpu);
  for (; se; se = se->parent) {
    cfs = se->cfs;
    cfs->h_load_next = se;
    if (cfs->last_h_load_update == now) break;
  }
  if (!se) {
    cfs->h_load = cfs->avg.load_avg;
    cfs->last_h_load_update = now;
  }
  while ((se = cfs->h_load_next) != nullptr) {
    unsigned long load = cfs->h_load;
    load = static_cast<unsigned long>(static_cast<std::uint64_t>(load) * se->avg.load_avg /
                                      (cfs->avg.load_avg + 1));
    cfs = se->my_q;
    cfs->h_load = load;
    cfs->last_h_load_update = now;
  }
}

// task_h_load (fair.c v5.15, CONFIG_FAIR_GROUP_SCHED as distribution kernels build it):
// the task's load as the root cfs_rq sees it.
unsigned long KernelImpl::task_h_load(Task& p) {
  cfs_rq& cfs = *p.se.cfs;
  update_cfs_rq_h_load(cfs);
  return static_cast<unsigned long>(static_cast<std::uint64_t>(p.se.avg.load_avg) * cfs.h_load /
                                    (cfs.avg.load_avg + 1));
}

// attach_entity_load_avg (fair.c v5.7, v5.18): align the entity's window with the cfs_rq's.
void KernelImpl::attach_entity_load_avg(cfs_rq& cfs, sched_entity& se) {
  std::uint32_t divider = get_pelt_divider(cfs.avg);
  se.avg.last_update_time = cfs.avg.last_update_time;
  se.avg.period_contrib = cfs.avg.period_contrib;
  se.avg.util_sum = static_cast<std::uint32_t>(se.avg.util_avg * divider);
  se.avg.runnable_sum = static_cast<std::uint64_t>(se.avg.runnable_avg) * divider;
  if (prof_.version >= 518) {
    // 40f5aa4c5eae (v5.18): a load_avg too small for the weight still leaves load_sum 1,
    // so the cfs_rq's load_sum is not 0 under a non-zero load_avg.
    se.avg.load_sum = se.avg.load_avg * divider;
    se.avg.load_sum = se.load.weight < se.avg.load_sum ? se.avg.load_sum / se.load.weight : 1;
  } else {
    se.avg.load_sum = divider;
    if (se.load.weight) se.avg.load_sum = se.avg.load_avg * se.avg.load_sum / se.load.weight;
  }
  enqueue_load_avg(cfs, se);
  cfs.avg.util_avg += se.avg.util_avg;
  cfs.avg.util_sum += se.avg.util_sum;
  cfs.avg.runnable_avg += se.avg.runnable_avg;
  cfs.avg.runnable_sum += se.avg.runnable_sum;
  if (cfs.tg) add_tg_cfs_propagate(cfs, static_cast<long>(se.avg.load_sum));
}

// enqueue_load_avg / dequeue_load_avg (fair.c v5.15, v5.17): the entity's load in its cfs_rq's.
void KernelImpl::enqueue_load_avg(cfs_rq& cfs, sched_entity& se) {
  cfs.avg.load_avg += se.avg.load_avg;
  cfs.avg.load_sum += se.load.weight * se.avg.load_sum;
}
void KernelImpl::dequeue_load_avg(cfs_rq& cfs, sched_entity& se) {
  sub_positive(cfs.avg.load_avg, se.avg.load_avg);
  sub_positive(cfs.avg.load_sum, se.load.weight * se.avg.load_sum);
  if (pelt_sum_lower_bound()) clamp_sum_to_min_divider(cfs.avg.load_sum, cfs.avg.load_avg);
}

// detach_entity_load_avg (fair.c v5.7, v5.17).
void KernelImpl::detach_entity_load_avg(cfs_rq& cfs, sched_entity& se) {
  dequeue_load_avg(cfs, se);
  sub_positive(cfs.avg.util_avg, se.avg.util_avg);
  sub_positive(cfs.avg.util_sum, se.avg.util_sum);
  sub_positive(cfs.avg.runnable_avg, se.avg.runnable_avg);
  sub_positive(cfs.avg.runnable_sum, se.avg.runnable_sum);
  if (pelt_sum_lower_bound()) {
    clamp_sum_to_min_divider(cfs.avg.util_sum, cfs.avg.util_avg);
    clamp_sum_to_min_divider(cfs.avg.runnable_sum, cfs.avg.runnable_avg);
  }
  if (cfs.tg) add_tg_cfs_propagate(cfs, -static_cast<long>(se.avg.load_sum));
}

// sync_entity_load_avg (fair.c v5.7): age a blocked entity to its cfs_rq's last update.
void KernelImpl::sync_entity_load_avg(sched_entity& se, cfs_rq& cfs) {
  update_pelt(cfs.avg.last_update_time, se.avg, se.load.weight, 0, 0, false);
}

// remove_entity_load_avg (fair.c v5.7): the old cfs_rq subtracts these at its next update.
void KernelImpl::remove_entity_load_avg(sched_entity& se, cfs_rq& cfs) {
  sync_entity_load_avg(se, cfs);
  cfs.removed.nr++;
  cfs.removed.util_avg += se.avg.util_avg;
  cfs.removed.load_avg += se.avg.load_avg;
  cfs.removed.runnable_avg += se.avg.runnable_avg;
}

// init_entity_runnable_average (fair.c v5.7): a new task looks fully loaded; a group
// entity starts empty, as nothing is attached to its group yet.
void KernelImpl::init_entity_runnable_average(sched_entity& se) {
  se.avg = sched_avg{};
  if (!se.my_q) se.avg.load_avg = se.load.weight;
}

// post_init_entity_util_avg (fair.c v5.7.14, with e21cf43406a1: runnable_avg = util_avg),
// followed by attach_entity_cfs_rq as in wake_up_new_task. The kernel multiplies by
// se->load.weight, which 64-bit kernels keep scaled up by 1024 (scale_load) while
// cfs_rq->avg.load_avg is not, so the share is 1024 times too large and nearly always
// clamps to cap; every profile here has that (72bffbf57c52, v6.10, changed it to
// se_weight).
void KernelImpl::post_init_entity_util_avg(Task& p) {
  cfs_rq& cfs = *p.se.cfs;
  sched_avg& sa = p.se.avg;
  long cpu_scale = static_cast<long>(capacity_orig_of(p.cpu));
  long cap = (cpu_scale - static_cast<long>(cfs.avg.util_avg)) / 2;
  if (cap > 0) {
    if (cfs.avg.util_avg != 0) {
      sa.util_avg =
          cfs.avg.util_avg * (p.se.load.weight << SCHED_FIXEDPOINT_SHIFT) / (cfs.avg.load_avg + 1);
      if (static_cast<long>(sa.util_avg) > cap) sa.util_avg = static_cast<unsigned long>(cap);
    } else {
      sa.util_avg = static_cast<unsigned long>(cap);
    }
  }
  sa.runnable_avg = sa.util_avg;
  attach_entity_cfs_rq(p.se);
}

// UTIL_AVG_UNCHANGED, util_est's "PELT has not moved since the last sample" flag kept in
// util_est.enqueued: bit 0 up to v5.12, where _task_util_est lets it show (every estimate is
// odd); 68d7a190682a (v5.13) moved it to the top bit and masks it out.
unsigned int KernelImpl::util_avg_unchanged() const {
  return prof_.version >= 513 ? 0x80000000u : 1u;
}

// cfs_se_util_change (pelt.h v5.7): PELT crossed a period boundary, the next sleep samples.
void KernelImpl::cfs_se_util_change(sched_entity& se) {
  if (feat(Feature::UTIL_EST)) se.ue.enqueued &= ~util_avg_unchanged();
}

// _task_util_est / task_util_est (fair.c v5.7; v5.13's masking).
unsigned long KernelImpl::_task_util_est(const Task& p) const {
  const util_est ue = p.se.ue;
  if (prof_.version >= 513) return std::max(ue.ewma, ue.enqueued & ~util_avg_unchanged());
  return std::max(ue.ewma, ue.enqueued) | util_avg_unchanged();
}
unsigned long KernelImpl::task_util_est(const Task& p) const {
  return std::max(task_util(p), _task_util_est(p));
}

// util_est_enqueue (fair.c v5.7).
void KernelImpl::util_est_enqueue(cfs_rq& cfs, Task& p) {
  cfs.util_est_enqueued += static_cast<unsigned int>(_task_util_est(p));
}

// util_est_dequeue (fair.c v5.7) with its sample taken as util_est_update does from v5.12
// (same order of events for the model). UTIL_EST_FASTUP (v5.5+) follows increases at once;
// v5.13's b89997aa88f0 also writes a sample whose ewma is within the margin but whose
// enqueued value moved by more.
void KernelImpl::util_est_dequeue(cfs_rq& cfs, Task& p, bool task_sleep) {
  sub_positive(cfs.util_est_enqueued, static_cast<unsigned int>(_task_util_est(p)));
  if (!task_sleep) return;
  const unsigned int unchanged = util_avg_unchanged();
  util_est ue = p.se.ue;
  if (ue.enqueued & unchanged) return;  // PELT has not moved since the last sample
  const bool v513 = prof_.version >= 513;
  const int last_enqueued = static_cast<int>(ue.enqueued);
  ue.enqueued = static_cast<unsigned int>(task_util(p));
  if (!v513) ue.enqueued |= unchanged;
  auto done = [&] {
    if (v513) ue.enqueued |= unchanged;
    p.se.ue = ue;
  };
  if (feat(Feature::UTIL_EST_FASTUP) && ue.ewma < ue.enqueued) {
    ue.ewma = ue.enqueued;
    return done();
  }
  // within_margin(x, UTIL_EST_MARGIN): |x| < SCHED_CAPACITY_SCALE / 100
  auto within_margin = [](int x) { return std::abs(x) < SCHED_CAPACITY_SCALE / 100; };
  const int last_ewma_diff = static_cast<int>(ue.enqueued) - static_cast<int>(ue.ewma);
  if (within_margin(last_ewma_diff)) {
    if (v513 && !within_margin(last_enqueued - static_cast<int>(ue.enqueued))) return done();
    return;
  }
  if (task_util(p) > capacity_orig_of(p.cpu)) return;
  // ewma = w * task_util + (1 - w) * ewma, w = 1/4
  int ewma = static_cast<int>(ue.ewma) << 2;
  ewma += last_ewma_diff;
  ue.ewma = static_cast<unsigned int>(ewma >> 2);
  done();
}

// cpu_util (fair.c v5.7): max of util_avg and util_est, capped at capacity_orig.
unsigned long KernelImpl::cpu_util(int cpu) const {
  const cfs_rq& cfs = rq_[cpu].cfs;
  unsigned long util = cfs.avg.util_avg;
  if (feat(Feature::UTIL_EST)) util = std::max<unsigned long>(util, cfs.util_est_enqueued);
  return std::min(util, capacity_orig_of(cpu));
}

// cpu_load_without (fair.c v5.7).
unsigned long KernelImpl::cpu_load_without(int cpu, Task& p) {
  if (cpu != p.cpu || !p.se.avg.last_update_time) return cpu_load(cpu);
  unsigned long load = rq_[cpu].cfs.avg.load_avg;
  sub_positive(load, task_h_load(p));
  return load;
}

// cpu_runnable_without (fair.c v5.7).
unsigned long KernelImpl::cpu_runnable_without(int cpu, const Task& p) const {
  if (cpu != p.cpu || !p.se.avg.last_update_time) return cpu_runnable(cpu);
  unsigned long runnable = rq_[cpu].cfs.avg.runnable_avg;
  sub_positive(runnable, p.se.avg.runnable_avg);
  return runnable;
}

// cpu_util_without (fair.c v5.7).
unsigned long KernelImpl::cpu_util_without(int cpu, const Task& p) const {
  if (cpu != p.cpu || !p.se.avg.last_update_time) return cpu_util(cpu);
  const cfs_rq& cfs = rq_[cpu].cfs;
  unsigned long util = cfs.avg.util_avg;
  sub_positive(util, task_util(p));
  if (feat(Feature::UTIL_EST)) {
    unsigned long estimated = cfs.util_est_enqueued;
    if (p.se.on_rq || p.state == TaskState::Running) sub_positive(estimated, _task_util_est(p));
    util = std::max(util, estimated);
  }
  return std::min(util, capacity_orig_of(cpu));
}

}  // namespace schedtwin::kernel
