// The fair class: vruntime accounting, placement, the run queue, picking and
// preemption (kernel/sched/fair.c, v5.4; v5.7 where noted), with group scheduling
// (CONFIG_FAIR_GROUP_SCHED, v5.15 shapes: for_each_sched_entity walks a task's entity
// and its group entities up to the root cfs_rq). CFS bandwidth is not modelled.
// Profiles v6.6+ run v6.6's EEVDF instead (fair-class.md §3.10): the functions marked v6.6
// and the *_v66 variants, chosen by eevdf_; the CFS paths are untouched by it.
#include <fmt/core.h>

#include <algorithm>
#include <array>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

namespace {

// sched_prio_to_weight / sched_prio_to_wmult (kernel/sched/core.c).
constexpr std::array<unsigned long, 40> kPrioToWeight = {
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906,  3121,  2501,  1991,  1586,  1277,  1024,  820,   655,   526,   423,  335,  272,  215,
    172,   137,   110,   87,    70,    56,    45,    36,    29,    23,    18,   15};
constexpr std::array<std::uint32_t, 40> kPrioToWmult = {
    48388,    59856,    76040,    92818,     118348,    147320,    184698,    229616,
    287308,   360437,   449829,   563644,    704093,    875809,    1099582,   1376151,
    1717300,  2157191,  2708050,  3363326,   4194304,   5237765,   6557202,   8165337,
    10153587, 12820798, 15790321, 19976592,  24970740,  31350126,  39045157,  49367440,
    61356676, 76695844, 95443717, 119304647, 148102320, 186737708, 238609294, 286331153};

constexpr std::uint32_t WMULT_CONST = ~0u;
constexpr int WMULT_SHIFT = 32;

void update_inv_weight(load_weight& lw) {
  if (lw.inv_weight) return;
  unsigned long w = lw.weight;  // scale_load_down is the identity for user-visible weights
  if (w >= WMULT_CONST)
    lw.inv_weight = 1;
  else if (!w)
    lw.inv_weight = WMULT_CONST;
  else
    lw.inv_weight = WMULT_CONST / static_cast<std::uint32_t>(w);
}

// __calc_delta (kernel/sched/fair.c): delta_exec * weight / lw->weight in 32.32 fixed point.
std::uint64_t __calc_delta(std::uint64_t delta_exec, unsigned long weight, load_weight& lw) {
  std::uint64_t fact = weight;
  int shift = WMULT_SHIFT;
  update_inv_weight(lw);
  while (fact >> 32) {
    fact >>= 1;
    shift--;
  }
  fact = static_cast<std::uint64_t>(static_cast<std::uint32_t>(fact)) * lw.inv_weight;
  while (fact >> 32) {
    fact >>= 1;
    shift--;
  }
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(delta_exec) * fact) >> shift);
}

void update_load_add(load_weight& lw, unsigned long inc) {
  lw.weight += inc;
  lw.inv_weight = 0;
}
void update_load_sub(load_weight& lw, unsigned long dec) {
  lw.weight -= dec;
  lw.inv_weight = 0;
}

bool entity_before(const sched_entity& a, const sched_entity& b) {
  return static_cast<std::int64_t>(a.vruntime - b.vruntime) < 0;
}

std::uint64_t max_vruntime(std::uint64_t max_v, std::uint64_t v) {
  return static_cast<std::int64_t>(v - max_v) > 0 ? v : max_v;
}
std::uint64_t min_vruntime(std::uint64_t min_v, std::uint64_t v) {
  return static_cast<std::int64_t>(v - min_v) < 0 ? v : min_v;
}

sched_entity* pick_first(cfs_rq& cfs) {
  return cfs.timeline.empty() ? nullptr : &*cfs.timeline.begin();
}

sched_entity* pick_next_after(cfs_rq& cfs, sched_entity& se) {
  auto it = cfs.timeline.iterator_to(se);
  ++it;
  return it == cfs.timeline.end() ? nullptr : &*it;
}

// entity_key (fair.c v6.6): vruntime relative to min_vruntime keeps the weighted sums small.
std::int64_t entity_key(const cfs_rq& cfs, const sched_entity& se) {
  return static_cast<std::int64_t>(se.vruntime - cfs.min_vruntime);
}

// avg_vruntime_add / avg_vruntime_sub (fair.c v6.6). Weights are the user-visible ones, as the
// kernel's scale_load_down gives them.
void avg_vruntime_add(cfs_rq& cfs, const sched_entity& se) {
  const long weight = static_cast<long>(se.load.weight);
  cfs.avg_vruntime += entity_key(cfs, se) * weight;
  cfs.avg_load += weight;
}
void avg_vruntime_sub(cfs_rq& cfs, const sched_entity& se) {
  const long weight = static_cast<long>(se.load.weight);
  cfs.avg_vruntime -= entity_key(cfs, se) * weight;
  cfs.avg_load -= weight;
}

// avg_vruntime_update (fair.c v6.6): min_vruntime moves by delta, every key by -delta.
void avg_vruntime_update(cfs_rq& cfs, std::int64_t delta) {
  cfs.avg_vruntime -= cfs.avg_load * delta;
}

// find_matching_se (fair.c v5.15): walks both entities up until they are siblings in one
// cfs_rq, where wakeup preemption compares them.
void find_matching_se(sched_entity*& se, sched_entity*& pse) {
  while (se->depth > pse->depth) se = se->parent;
  while (pse->depth > se->depth) pse = pse->parent;
  while (se->cfs != pse->cfs) {
    se = se->parent;
    pse = pse->parent;
  }
}

}  // namespace

// set_load_weight (kernel/sched/core.c): SCHED_IDLE tasks get WEIGHT_IDLEPRIO whatever their nice.
// A task of a cpu.idle group keeps its own weight: its group entity has the shares of 3.
void KernelImpl::set_load_weight(Task& p) {
  p.h_idle = p.policy == Policy::Idle || group_is_idle(p.group);
  if (p.policy == Policy::Idle) {
    p.se.load.weight = WEIGHT_IDLEPRIO;
    p.se.load.inv_weight = WMULT_IDLEPRIO;
    return;
  }
  int prio = std::clamp(p.nice, -20, 19) + 20;
  p.se.load.weight = kPrioToWeight[prio];
  p.se.load.inv_weight = kPrioToWmult[prio];
}

// calc_delta_fair: delta in the entity's virtual time.
Time KernelImpl::calc_delta_fair(Time delta, const sched_entity& se) const {
  if (se.load.weight != NICE_0_LOAD) {
    load_weight lw = se.load;
    return static_cast<Time>(__calc_delta(static_cast<std::uint64_t>(delta), NICE_0_LOAD, lw));
  }
  return delta;
}

namespace {

// The sums avg_vruntime and entity_eligible both read: the queue's, plus curr's (curr is
// kept out of the timeline and its sums while it runs).
struct VruntimeSums {
  std::int64_t avg;
  long load;
};

VruntimeSums with_curr(const cfs_rq& cfs) {
  VruntimeSums s{cfs.avg_vruntime, cfs.avg_load};
  if (const sched_entity* curr = cfs.curr; curr && curr->on_rq) {
    const long weight = static_cast<long>(curr->load.weight);
    s.avg += entity_key(cfs, *curr) * weight;
    s.load += weight;
  }
  return s;
}

}  // namespace

// avg_vruntime (fair.c v6.6): V, the load-weighted average vruntime of the queued entities
// and curr, rounded down (towards -inf, so that an entity placed at V is eligible).
std::uint64_t KernelImpl::avg_vruntime(const cfs_rq& cfs) const {
  auto [avg, load] = with_curr(cfs);
  if (load) {
    if (avg < 0) avg -= load - 1;  // sign flips effective floor / ceil
    avg /= load;
  }
  return cfs.min_vruntime + static_cast<std::uint64_t>(avg);
}

// entity_eligible (fair.c v6.6): lag >= 0, i.e. V >= v_i, compared without the division.
bool KernelImpl::entity_eligible(const cfs_rq& cfs, const sched_entity& se) const {
  const auto [avg, load] = with_curr(cfs);
  return avg >= entity_key(cfs, se) * load;
}

// update_entity_lag (fair.c v6.6): vlag = V - v_i at dequeue, clamped to the virtual time of
// max(2 slices, one tick): V is only an approximation and may move with the queue.
void KernelImpl::update_entity_lag(cfs_rq& cfs, sched_entity& se) {
  const std::int64_t lag = static_cast<std::int64_t>(avg_vruntime(cfs) - se.vruntime);
  const std::int64_t limit = calc_delta_fair(std::max<Time>(2 * se.slice, tick_ns_), se);
  se.vlag = std::clamp(lag, -limit, limit);
}

// __enqueue_entity / __dequeue_entity (fair.c): into and out of the timeline; v6.6 keeps the
// avg_vruntime sums with it. The kernel's tree is augmented with min_deadline for pick_eevdf;
// this one is not (pick_eevdf walks it).
void KernelImpl::__enqueue_entity(cfs_rq& cfs, sched_entity& se) {
  if (eevdf_) avg_vruntime_add(cfs, se);
  cfs.timeline.insert(se);
}
void KernelImpl::__dequeue_entity(cfs_rq& cfs, sched_entity& se) {
  cfs.timeline.erase(cfs.timeline.iterator_to(se));
  if (eevdf_) avg_vruntime_sub(cfs, se);
}

// update_min_vruntime (fair.c v5.4; v6.6's __update_min_vruntime also shifts the
// avg_vruntime sum when min_vruntime advances).
void KernelImpl::update_min_vruntime(cfs_rq& cfs) {
  sched_entity* curr = cfs.curr;
  sched_entity* leftmost = pick_first(cfs);
  std::uint64_t vruntime = cfs.min_vruntime;
  if (curr) {
    if (curr->on_rq)
      vruntime = curr->vruntime;
    else
      curr = nullptr;
  }
  if (leftmost) {
    if (!curr)
      vruntime = leftmost->vruntime;
    else
      vruntime = min_vruntime(vruntime, leftmost->vruntime);
  }
  if (eevdf_) {
    const std::int64_t delta = static_cast<std::int64_t>(vruntime - cfs.min_vruntime);
    if (delta > 0) {
      avg_vruntime_update(cfs, delta);
      cfs.min_vruntime = vruntime;
    }
    return;
  }
  cfs.min_vruntime = max_vruntime(cfs.min_vruntime, vruntime);
}

// update_curr (fair.c v5.4; v6.6 adds update_deadline); CFS bandwidth is not modelled.
void KernelImpl::update_curr(cfs_rq& cfs) {
  sched_entity* curr = cfs.curr;
  if (!curr) return;
  Time delta_exec = clock_task() - curr->exec_start;
  if (delta_exec <= 0) return;
  curr->exec_start = clock_task();
  curr->sum_exec_runtime += delta_exec;
  cfs.exec_clock += delta_exec;
  curr->vruntime += static_cast<std::uint64_t>(calc_delta_fair(delta_exec, *curr));
  if (eevdf_) update_deadline(cfs, *curr);
  update_min_vruntime(cfs);
}

// update_deadline (fair.c v6.6): once curr's vruntime reaches its deadline it has used its
// request; a new one (vd_i = v_i + r_i / w_i) starts and, with others queued, curr is
// rescheduled. This replaces check_preempt_tick.
void KernelImpl::update_deadline(cfs_rq& cfs, sched_entity& se) {
  if (static_cast<std::int64_t>(se.vruntime - se.deadline) < 0) return;
  se.slice = sysctl_sched_base_slice;
  se.deadline = se.vruntime + static_cast<std::uint64_t>(calc_delta_fair(se.slice, se));
  if (cfs.nr_running > 1) {
    if (cfs.cpu != picking_cpu_) resched_curr(cfs.cpu);
    clear_buddies(cfs, se);
  }
}

// __sched_period (fair.c v5.4).
Time KernelImpl::__sched_period(unsigned long nr_running) const {
  if (nr_running > sched_nr_latency)
    return static_cast<Time>(nr_running) * sysctl_sched_min_granularity;
  return sysctl_sched_latency;
}

// sched_slice (fair.c v5.4): the period shared out by weight at every level up to the root.
// v5.13+ (0c2de3f054a5): ALT_PERIOD sizes the period by all the CPU's tasks (the root's
// h_nr_running), and BASE_SLICE never gives less than min_granularity. v5.15+ (51ce83ed523b):
// an idle entity (SCHED_IDLE task or cpu.idle group) on a cfs_rq that also holds non-idle
// ones gets the floor sysctl_sched_idle_min_granularity, 0.75 ms on any machine, where
// min_granularity is 0.75 ms x (1 + ilog2(min(CPUs, 8))): 3 ms on 8 CPUs.
Time KernelImpl::sched_slice(cfs_rq& cfs, sched_entity& se) {
  unsigned nr_running = cfs.nr_running;
  if (feat(Feature::ALT_PERIOD)) nr_running = rq_of(cfs).cfs.h_nr_running;
  std::uint64_t slice = static_cast<std::uint64_t>(__sched_period(nr_running + !se.on_rq));
  for (sched_entity* s = &se; s; s = s->parent) {
    load_weight lw = s->cfs->load;
    if (!s->on_rq) update_load_add(lw, s->load.weight);
    slice = __calc_delta(slice, s->load.weight, lw);
  }
  if (feat(Feature::BASE_SLICE)) {
    const bool sched_idle_cfs_rq = cfs.nr_running && cfs.nr_running == cfs.idle_nr_running;
    const Time min_gran = prof_.version >= 515 && se_is_idle(se) && !sched_idle_cfs_rq
                              ? sysctl_sched_idle_min_granularity
                              : sysctl_sched_min_granularity;
    slice = std::max(slice, static_cast<std::uint64_t>(min_gran));
  }
  return static_cast<Time>(slice);
}

Time KernelImpl::sched_vslice(cfs_rq& cfs, sched_entity& se) {
  return calc_delta_fair(sched_slice(cfs, se), se);
}

// place_entity (fair.c v5.4): START_DEBIT for new tasks, half-latency sleeper credit
// with GENTLE_FAIR_SLEEPERS; never moves an entity backwards. v5.15+ (51ce83ed523b) credits
// an idle entity (SCHED_IDLE task or cpu.idle group) with min_granularity instead.
void KernelImpl::place_entity(cfs_rq& cfs, sched_entity& se, bool initial) {
  if (eevdf_) return place_entity_v66(cfs, se, initial);
  std::uint64_t vruntime = cfs.min_vruntime;
  if (initial && feat(Feature::START_DEBIT))
    vruntime += static_cast<std::uint64_t>(sched_vslice(cfs, se));
  if (!initial) {
    Time thresh = prof_.version >= 515 && se_is_idle(se) ? sysctl_sched_min_granularity
                                                         : sysctl_sched_latency;
    if (feat(Feature::GENTLE_FAIR_SLEEPERS)) thresh >>= 1;
    vruntime -= static_cast<std::uint64_t>(thresh);
  }
  se.vruntime = max_vruntime(se.vruntime, vruntime);
}

// place_entity (fair.c v6.6): v = V - lag, with the saved lag inflated by (W + w_i) / W so
// that adding the entity to the average does not shrink it (PLACE_LAG; W counts curr); the
// deadline is one slice on, half a slice for a new task (PLACE_DEADLINE_INITIAL).
void KernelImpl::place_entity_v66(cfs_rq& cfs, sched_entity& se, bool initial) {
  const std::uint64_t vruntime = avg_vruntime(cfs);
  std::int64_t lag = 0;
  se.slice = sysctl_sched_base_slice;
  std::uint64_t vslice = static_cast<std::uint64_t>(calc_delta_fair(se.slice, se));
  if (feat(Feature::PLACE_LAG) && cfs.nr_running) {
    const sched_entity* curr = cfs.curr;
    long load = cfs.avg_load;
    if (curr && curr->on_rq) load += static_cast<long>(curr->load.weight);
    lag = se.vlag * (load + static_cast<long>(se.load.weight));
    if (!load) load = 1;
    lag /= load;  // div_s64: truncates towards zero
  }
  se.vruntime = vruntime - static_cast<std::uint64_t>(lag);
  if (feat(Feature::PLACE_DEADLINE_INITIAL) && initial) vslice /= 2;
  se.deadline = se.vruntime + vslice;
}

// enqueue_entity (fair.c v5.4): vruntime renormalisation, PELT attach, placement.
void KernelImpl::enqueue_entity(cfs_rq& cfs, sched_entity& se, int flags) {
  if (eevdf_) return enqueue_entity_v66(cfs, se, flags);
  bool renorm = !(flags & ENQUEUE_WAKEUP) || (flags & ENQUEUE_MIGRATED);
  bool curr = cfs.curr == &se;
  if (renorm && curr) se.vruntime += cfs.min_vruntime;
  update_curr(cfs);
  if (renorm && !curr) se.vruntime += cfs.min_vruntime;
  update_load_avg(cfs, se, UPDATE_TG | DO_ATTACH);
  if (se.my_q) se.runnable_weight = se.my_q->h_nr_running;  // se_update_runnable
  update_cfs_group(se);
  // account_entity_enqueue
  update_load_add(cfs.load, se.load.weight);
  if (!se.my_q) rq_of(cfs).cfs_tasks.push_front(se);
  cfs.nr_running++;
  if (se_is_idle(se)) cfs.idle_nr_running++;
  if (flags & ENQUEUE_WAKEUP) place_entity(cfs, se, false);
  if (!curr) __enqueue_entity(cfs, se);
  se.on_rq = true;
  sync_runnable_load(cfs, se);
}

// enqueue_entity (fair.c v6.6): vruntime stays absolute (no renormalisation); every enqueue is
// placed, curr before update_curr, the others after the group reweight. ENQUEUE_MIGRATED's
// exec_start reset is move_to_cpu's. Left out: schedstats, the leaf-list and bandwidth
// throttling.
void KernelImpl::enqueue_entity_v66(cfs_rq& cfs, sched_entity& se, int flags) {
  const bool curr = cfs.curr == &se;
  const bool initial = flags & ENQUEUE_INITIAL;
  if (curr) place_entity_v66(cfs, se, initial);
  update_curr(cfs);
  update_load_avg(cfs, se, UPDATE_TG | DO_ATTACH);
  if (se.my_q) se.runnable_weight = se.my_q->h_nr_running;  // se_update_runnable
  update_cfs_group(se);
  if (!curr) place_entity_v66(cfs, se, initial);
  // account_entity_enqueue
  update_load_add(cfs.load, se.load.weight);
  if (!se.my_q) rq_of(cfs).cfs_tasks.push_front(se);
  cfs.nr_running++;
  if (se_is_idle(se)) cfs.idle_nr_running++;
  if (!curr) __enqueue_entity(cfs, se);
  se.on_rq = true;
  sync_runnable_load(cfs, se);
}

// dequeue_entity (fair.c v5.15; v6.6 saves the lag and leaves vruntime absolute).
void KernelImpl::dequeue_entity(cfs_rq& cfs, sched_entity& se, int flags) {
  update_curr(cfs);
  update_load_avg(cfs, se, UPDATE_TG);
  if (se.my_q) se.runnable_weight = se.my_q->h_nr_running;
  clear_buddies(cfs, se);
  if (eevdf_) update_entity_lag(cfs, se);
  if (&se != cfs.curr) __dequeue_entity(cfs, se);
  cfs.runnable_load -= se.runnable_load_contrib;  // dequeue_runnable_load_avg (v5.4)
  se.runnable_load_contrib = 0;
  se.on_rq = false;
  update_load_sub(cfs.load, se.load.weight);
  if (!se.my_q) {
    TaskList& l = rq_of(cfs).cfs_tasks;
    l.erase(l.iterator_to(se));
  }
  cfs.nr_running--;
  if (se_is_idle(se)) cfs.idle_nr_running--;
  if (!eevdf_ && !(flags & DEQUEUE_SLEEP)) se.vruntime -= cfs.min_vruntime;
  update_cfs_group(se);
  if ((flags & (DEQUEUE_SAVE | DEQUEUE_MOVE)) != DEQUEUE_SAVE) update_min_vruntime(cfs);
}

// enqueue_task_fair (fair.c v5.15): enqueue the entities that are not queued yet, then
// update the rest of the hierarchy. A task counts in idle_h_nr_running if it is
// SCHED_IDLE, and at every level above an idle group's cfs_rq.
void KernelImpl::enqueue_task_fair(Rq& rq, Task& p, int flags) {
  if (feat(Feature::UTIL_EST)) util_est_enqueue(rq.cfs, p);
  unsigned idle_h = p.policy == Policy::Idle ? 1 : 0;
  sched_entity* se = &p.se;
  for (; se; se = se->parent) {
    if (se->on_rq) break;
    cfs_rq& cfs = *se->cfs;
    enqueue_entity(cfs, *se, flags);
    cfs.h_nr_running++;
    cfs.idle_h_nr_running += idle_h;
    if (cfs.idle) idle_h = 1;
    flags = ENQUEUE_WAKEUP;
  }
  for (; se; se = se->parent) {
    cfs_rq& cfs = *se->cfs;
    update_load_avg(cfs, *se, UPDATE_TG);
    se->runnable_weight = se->my_q->h_nr_running;
    update_cfs_group(*se);
    cfs.h_nr_running++;
    cfs.idle_h_nr_running += idle_h;
    if (cfs.idle) idle_h = 1;
  }
  rq.nr_running++;
  if (rq.nr_running >= 2) rd_overload_ = true;  // add_nr_running
}

// dequeue_task_fair (fair.c v5.15): a group entity leaves its parent only when its own
// cfs_rq is empty; a sleeping task's parent becomes the next buddy.
void KernelImpl::dequeue_task_fair(Rq& rq, Task& p, int flags) {
  bool was_sched_idle = sched_idle_rq(rq);
  const bool task_sleep = flags & DEQUEUE_SLEEP;
  unsigned idle_h = p.policy == Policy::Idle ? 1 : 0;
  sched_entity* se = &p.se;
  for (; se; se = se->parent) {
    cfs_rq& cfs = *se->cfs;
    dequeue_entity(cfs, *se, flags);
    cfs.h_nr_running--;
    cfs.idle_h_nr_running -= idle_h;
    if (cfs.idle) idle_h = 1;
    if (cfs.load.weight) {
      se = se->parent;
      if (task_sleep && se) set_next_buddy(se);
      break;
    }
    flags |= DEQUEUE_SLEEP;
  }
  for (; se; se = se->parent) {
    cfs_rq& cfs = *se->cfs;
    update_load_avg(cfs, *se, UPDATE_TG);
    se->runnable_weight = se->my_q->h_nr_running;
    update_cfs_group(*se);
    cfs.h_nr_running--;
    cfs.idle_h_nr_running -= idle_h;
    if (cfs.idle) idle_h = 1;
  }
  rq.nr_running--;
  if (feat(Feature::UTIL_EST)) util_est_dequeue(rq.cfs, p, task_sleep);
  // 323af6deaf70 (v5.6): balance early to pull work to a CPU left with SCHED_IDLE tasks.
  if (feat(Feature::SCHED_IDLE_CONSISTENT) && !was_sched_idle && sched_idle_rq(rq))
    rq.next_balance = jiffies();
}

// clear_buddies (fair.c v5.15): each buddy is cleared up the hierarchy as far as it
// points at the entity's ancestors.
void KernelImpl::clear_buddies(cfs_rq& cfs, sched_entity& se) {
  if (cfs.last == &se)
    for (sched_entity* s = &se; s && s->cfs->last == s; s = s->parent) s->cfs->last = nullptr;
  if (cfs.next == &se)
    for (sched_entity* s = &se; s && s->cfs->next == s; s = s->parent) s->cfs->next = nullptr;
  if (cfs.skip == &se)
    for (sched_entity* s = &se; s && s->cfs->skip == s; s = s->parent) s->cfs->skip = nullptr;
}

// set_next_buddy (fair.c v5.15): idle entities are never buddies.
void KernelImpl::set_next_buddy(sched_entity* se) {
  for (; se; se = se->parent) {
    if (!se->on_rq || se_is_idle(*se)) return;
    se->cfs->next = se;
  }
}

// calc_group_shares (fair.c v5.15): the group's shares in proportion to this CPU's part of
// the group's load. Works in user-visible weights (the kernel's are scaled by 1024 on
// 64-bit), so a share may differ from the kernel's by one unit in 1024.
unsigned long KernelImpl::calc_group_shares(cfs_rq& gcfs) {
  const TaskGroupRt& tg = tg_rt_[static_cast<size_t>(gcfs.tg)];
  const long tg_shares = static_cast<long>(tg.shares);
  const long load = static_cast<long>(std::max(gcfs.load.weight, gcfs.avg.load_avg));
  long tg_weight = tg.load_avg - static_cast<long>(gcfs.tg_load_avg_contrib) + load;
  long shares = tg_shares * load;
  if (tg_weight) shares /= tg_weight;
  constexpr long MIN_SHARES = 2;
  return static_cast<unsigned long>(
      std::clamp(shares, MIN_SHARES, std::max(tg_shares, MIN_SHARES)));
}

// reweight_entity (fair.c v5.15; v6.6 also keeps the avg_vruntime sums and scales the lag of
// a dequeued entity, or the relative deadline of a queued one, by old/new weight. Its
// vruntime is left alone, as v6.6 does; 6.7's reweight_eevdf is not modelled).
void KernelImpl::reweight_entity(cfs_rq& cfs, sched_entity& se, unsigned long weight) {
  const unsigned long old_weight = se.load.weight;
  if (se.on_rq) {
    if (cfs.curr == &se)
      update_curr(cfs);
    else if (eevdf_)
      avg_vruntime_sub(cfs, se);
    update_load_sub(cfs.load, se.load.weight);
  }
  dequeue_load_avg(cfs, se);
  se.load.weight = weight;
  se.load.inv_weight = 0;
  if (eevdf_) {
    const auto w_old = static_cast<std::int64_t>(old_weight), w = static_cast<std::int64_t>(weight);
    if (!se.on_rq) {
      se.vlag = se.vlag * w_old / w;
    } else {
      const std::int64_t deadline = static_cast<std::int64_t>(se.deadline - se.vruntime);
      se.deadline = se.vruntime + static_cast<std::uint64_t>(deadline * w_old / w);
    }
  }
  se.avg.load_avg = static_cast<unsigned long>(static_cast<std::uint64_t>(weight) *
                                               se.avg.load_sum / get_pelt_divider(se.avg));
  sync_runnable_load(cfs, se);
  enqueue_load_avg(cfs, se);
  if (se.on_rq) {
    update_load_add(cfs.load, se.load.weight);
    if (eevdf_ && cfs.curr != &se) avg_vruntime_add(cfs, se);
  }
}

// update_cfs_group (fair.c v5.15): a group entity's weight follows calc_group_shares. SMP
// kernels reweight even when the shares are unchanged (only !CONFIG_SMP skips, until v6.7),
// and reweight_entity recomputes the entity's load_avg from its load_sum each time.
void KernelImpl::update_cfs_group(sched_entity& se) {
  if (!se.my_q) return;
  reweight_entity(*se.cfs, se, calc_group_shares(*se.my_q));
}

// put_prev_entity (fair.c v5.4).
void KernelImpl::put_prev_entity(cfs_rq& cfs, sched_entity& prev) {
  if (prev.on_rq) update_curr(cfs);
  if (prev.on_rq) {
    __enqueue_entity(cfs, prev);
    update_load_avg(cfs, prev, 0);
  }
  cfs.curr = nullptr;
}

// put_prev_task_fair (fair.c v5.15): every level at which the task's hierarchy is current;
// entities still queued go back into their timelines.
void KernelImpl::put_prev_task_fair(Task& p) {
  for (sched_entity* se = &p.se; se && se->cfs->curr == se; se = se->parent)
    put_prev_entity(*se->cfs, *se);
}

// set_next_entity (fair.c v5.4; v6.6 clears the buddies here, not in pick_next_entity, and
// stashes the deadline at pick time in vlag: RUN_TO_PARITY's marker).
void KernelImpl::set_next_entity(cfs_rq& cfs, sched_entity& se) {
  if (eevdf_) clear_buddies(cfs, se);
  if (se.on_rq) {
    __dequeue_entity(cfs, se);
    update_load_avg(cfs, se, UPDATE_TG);
    if (eevdf_) se.vlag = static_cast<std::int64_t>(se.deadline);
  }
  se.exec_start = clock_task();
  cfs.curr = &se;
  se.prev_sum_exec_runtime = se.sum_exec_runtime;
}

// wakeup_preempt_entity (fair.c v5.4): should `se` preempt `curr`? The granularity is
// converted to the virtual time of `se` (wakeup_gran).
int KernelImpl::wakeup_preempt_entity(sched_entity& curr, sched_entity& se) {
  std::int64_t vdiff = static_cast<std::int64_t>(curr.vruntime - se.vruntime);
  if (vdiff <= 0) return -1;
  Time gran = calc_delta_fair(sysctl_sched_wakeup_granularity, se);
  if (vdiff > gran) return 1;
  return 0;
}

// pick_eevdf (fair.c v6.6): among the eligible entities, curr included, the one with the
// earliest virtual deadline; with RUN_TO_PARITY curr stays while it is eligible and has not
// started a new request since it was picked (vlag still holds its deadline). The kernel finds
// it in O(log n) through the min_deadline augmented tree; this walks the vruntime-ordered
// timeline instead, stopping at the first ineligible entity (eligibility is v_i <= V, so the
// eligible ones come first). Ties: curr, then the lower vruntime (the kernel's heap search may
// break a tie between two queued entities the other way).
sched_entity* KernelImpl::pick_eevdf(cfs_rq& cfs) {
  sched_entity* curr = cfs.curr;
  if (curr && (!curr->on_rq || !entity_eligible(cfs, *curr))) curr = nullptr;
  if (feat(Feature::RUN_TO_PARITY) && curr &&
      static_cast<std::uint64_t>(curr->vlag) == curr->deadline)
    return curr;
  sched_entity* best = curr;
  for (sched_entity& se : cfs.timeline) {
    if (!entity_eligible(cfs, se)) break;
    if (!best || static_cast<std::int64_t>(best->deadline - se.deadline) > 0) best = &se;
  }
  if (!best) best = pick_first(cfs);  // "EEVDF scheduling fail, picking leftmost"
  return best;
}

// pick_next_entity (fair.c v6.6): the next buddy if NEXT_BUDDY and it is eligible, else
// pick_eevdf. There are no skip or last buddies any more.
sched_entity* KernelImpl::pick_next_entity_v66(cfs_rq& cfs) {
  if (feat(Feature::NEXT_BUDDY) && cfs.next && entity_eligible(cfs, *cfs.next)) return cfs.next;
  return pick_eevdf(cfs);
}

// pick_next_entity (fair.c v5.4): leftmost, then the skip, last and next buddies.
sched_entity* KernelImpl::pick_next_entity(cfs_rq& cfs, sched_entity* curr) {
  if (eevdf_) return pick_next_entity_v66(cfs);
  sched_entity* left = pick_first(cfs);
  if (!left || (curr && entity_before(*curr, *left))) left = curr;
  sched_entity* se = left;
  if (cfs.skip == se) {
    sched_entity* second;
    if (se == curr)
      second = pick_first(cfs);
    else
      second = pick_next_after(cfs, *se);
    if (!second || (curr && entity_before(*curr, *second))) second = curr;
    if (second && wakeup_preempt_entity(*second, *left) < 1) se = second;
  }
  if (cfs.last && wakeup_preempt_entity(*cfs.last, *left) < 1) se = cfs.last;
  if (cfs.next && wakeup_preempt_entity(*cfs.next, *left) < 1) se = cfs.next;
  clear_buddies(cfs, *se);
  return se;
}

// pick_next_task_fair (fair.c v5.7, the !CONFIG_FAIR_GROUP_SCHED path): with nothing to
// run, newidle_balance tries to pull work first. The picked task moves to the front of
// cfs_tasks so that load balancing considers it last.
// With task groups this is the kernel's "simple" path: put every level of prev, then pick
// down from the root (the FAIR_GROUP_SCHED fast path reaches the same pick while skipping
// put/set of the levels prev and next share).
TaskId KernelImpl::pick_next_task_fair(Rq& rq, TaskId prev) {
  cfs_rq& cfs = rq.cfs;
  // v6.6's fast path needs prev still current here (a task moved away by set_affinity is not).
  if (eevdf_ && prev != kNoTask && cfs.nr_running && task(prev).se.cfs->curr == &task(prev).se)
    return pick_next_task_fair_v66(rq, prev);
  if (prev != kNoTask) put_prev_task_fair(task(prev));
  if (!cfs.nr_running) {
    int saved_cpu = this_cpu_;
    TaskId saved_cur = current_;
    bool saved_ctx = in_cpu_context_;
    this_cpu_ = rq.cpu;
    current_ = prev;
    in_cpu_context_ = true;
    int pulled = newidle_balance(rq.cpu);
    this_cpu_ = saved_cpu;
    current_ = saved_cur;
    in_cpu_context_ = saved_ctx;
    rq.need_resched = false;  // we are picking now
    if (pulled <= 0 || !cfs.nr_running) {
      update_overload_status(rq.cpu);  // series 4: the CPU goes idle
      return kNoTask;
    }
  }
  sched_entity* se = nullptr;
  for (cfs_rq* c = &cfs; c; c = se->my_q) {
    se = pick_next_entity(*c, nullptr);
    set_next_entity(*c, *se);
  }
  rq.cfs_tasks.splice(rq.cfs_tasks.begin(), rq.cfs_tasks, rq.cfs_tasks.iterator_to(*se));
  return se->task;
}

// pick_next_task_fair (fair.c v6.6, the CONFIG_FAIR_GROUP_SCHED path when prev is a fair task):
// pick down from the root with every level's curr still in place, so that RUN_TO_PARITY sees
// it, then put and set only the levels where prev and next differ. If prev is picked again
// nothing is put or set: its RUN_TO_PARITY marker and slice accounting carry on. Used when
// the root has queued entities; otherwise the simple path above (and newidle_balance) runs.
// Left out: check_cfs_rq_runtime (no CFS bandwidth) and hrtick.
TaskId KernelImpl::pick_next_task_fair_v66(Rq& rq, TaskId prev) {
  sched_entity* se = nullptr;
  for (cfs_rq* c = &rq.cfs; c; c = se->my_q) {
    sched_entity* curr = c->curr;
    if (curr && curr->on_rq) update_curr(*c);
    se = pick_next_entity_v66(*c);
  }
  sched_entity& next = *se;
  if (next.task != prev) {
    sched_entity* pse = &task(prev).se;
    while (se->cfs != pse->cfs) {  // is_same_group
      const int se_depth = se->depth, pse_depth = pse->depth;
      if (se_depth <= pse_depth) {
        put_prev_entity(*pse->cfs, *pse);
        pse = pse->parent;
      }
      if (se_depth >= pse_depth) {
        set_next_entity(*se->cfs, *se);
        se = se->parent;
      }
    }
    put_prev_entity(*se->cfs, *pse);
    set_next_entity(*se->cfs, *se);
  }
  rq.cfs_tasks.splice(rq.cfs_tasks.begin(), rq.cfs_tasks, rq.cfs_tasks.iterator_to(next));
  return next.task;
}

// check_preempt_tick (fair.c v5.4).
void KernelImpl::check_preempt_tick(cfs_rq& cfs, sched_entity& curr) {
  Time ideal_runtime = sched_slice(cfs, curr);
  Time delta_exec = curr.sum_exec_runtime - curr.prev_sum_exec_runtime;
  if (delta_exec > ideal_runtime) {
    resched_curr(cfs.cpu);
    clear_buddies(cfs, curr);
    return;
  }
  if (delta_exec < sysctl_sched_min_granularity) return;
  sched_entity* se = pick_first(cfs);
  if (!se) return;
  std::int64_t delta = static_cast<std::int64_t>(curr.vruntime - se->vruntime);
  if (delta < 0) return;
  if (delta > ideal_runtime) resched_curr(cfs.cpu);
}

// entity_tick (fair.c v5.15; v6.6 has no check_preempt_tick: update_curr's update_deadline
// reschedules).
void KernelImpl::entity_tick(cfs_rq& cfs, sched_entity& curr) {
  update_curr(cfs);
  update_load_avg(cfs, curr, UPDATE_TG);
  update_cfs_group(curr);
  if (!eevdf_ && cfs.nr_running > 1) check_preempt_tick(cfs, curr);
}

// --explain: one step of check_preempt_wakeup's decision on rq (verdict "preempt", "no
// preemption" or "no new decision") and the reason, with its JSON fields.
void KernelImpl::explain_preempt(Rq& rq, std::string_view verdict, const std::string& reason) {
  if (!xp()) return;
  explain_->step(fmt::format("check_preempt_wakeup on cpu{} (curr {}): {}: {}", rq.cpu,
                             task_label(rq.curr), reason, verdict));
  explain_->flag("preempt", verdict == "preempt", false);
  explain_->data("preempt_curr", task_label(rq.curr));
}

// check_preempt_wakeup (fair.c v5.4 with the v5.15 idle-entity rules): decision order of
// fair-class.md §3.8.
void KernelImpl::check_preempt_wakeup(Rq& rq, Task& p, unsigned wake_flags) {
  if (eevdf_) return check_preempt_wakeup_v66(rq, p, wake_flags);
  Task& curr = task(rq.curr);
  sched_entity* se = &curr.se;
  sched_entity* pse = &p.se;
  cfs_rq& cfs = *curr.se.cfs;  // task_cfs_rq(curr)
  bool scale = cfs.nr_running >= sched_nr_latency;
  bool next_buddy_marked = false;
  if (se == pse) return;
  if (feat(Feature::NEXT_BUDDY) && scale && !(wake_flags & WF_FORK)) {
    set_next_buddy(pse);
    next_buddy_marked = true;
  }
  // --explain (explain_preempt): the decision and what took it, in the order the kernel tests.
  if (rq.need_resched)
    return explain_preempt(rq, "no new decision", "a reschedule is already pending");
  bool preempt = false;
  if (curr.policy == Policy::Idle && p.policy != Policy::Idle) {
    explain_preempt(rq, "preempt", "curr is SCHED_IDLE, the wakee is not");
    preempt = true;
  } else {
    if (p.policy != Policy::Normal)
      return explain_preempt(rq, "no preemption",
                             fmt::format("the wakee is {}", policy_name(p.policy)));
    if (!feat(Feature::WAKEUP_PREEMPTION))
      return explain_preempt(rq, "no preemption", "WAKEUP_PREEMPTION is off");
    find_matching_se(se, pse);
    const bool cse_is_idle = se_is_idle(*se), pse_is_idle = se_is_idle(*pse);
    if (cse_is_idle && !pse_is_idle) {
      explain_preempt(rq, "preempt", "curr's entity is idle (an idle group), the wakee's is not");
      preempt = true;
    } else if (cse_is_idle != pse_is_idle) {
      // an idle entity never preempts a non-idle one (v5.15)
      return explain_preempt(rq, "no preemption",
                             "the wakee's entity is idle (an idle group), curr's is not");
    } else {
      update_curr(*se->cfs);  // v5.15: only once the idle rules have not decided
      const int verdict = wakeup_preempt_entity(*se, *pse);
      if (xp()) {
        const std::int64_t vdiff = static_cast<std::int64_t>(se->vruntime - pse->vruntime);
        const Time gran = calc_delta_fair(sysctl_sched_wakeup_granularity, *pse);
        explain_preempt(rq, verdict == 1 ? "preempt" : "no preemption",
                        fmt::format("wakeup_preempt_entity: curr's vruntime - wakee's = {} ns {} "
                                    "wakeup_gran {} ns",
                                    vdiff, verdict == 1 ? ">" : "<=", gran));
        explain_->data("preempt_vdiff_ns", vdiff);
        explain_->data("preempt_wakeup_gran_ns", static_cast<long long>(gran));
      }
      if (verdict == 1) {
        if (!next_buddy_marked) set_next_buddy(pse);
        preempt = true;
      }
    }
  }
  if (!preempt) return;
  resched_curr(rq.cpu);
  if (!se->on_rq) return;
  // set_last_buddy, only for a task entity (the matched level may be a group's)
  if (feat(Feature::LAST_BUDDY) && scale && !se->my_q)
    for (sched_entity* s = se; s && !se_is_idle(*s); s = s->parent) s->cfs->last = s;
}

// check_preempt_wakeup (fair.c v6.6): the idle-entity rules as before; otherwise the wakee
// preempts iff pick_eevdf at the level where both hierarchies meet picks it. No wakeup
// granularity and no last buddy; the next buddy only with NEXT_BUDDY, not for a fork. Left
// out: the throttled-hierarchy check (no CFS bandwidth).
void KernelImpl::check_preempt_wakeup_v66(Rq& rq, Task& p, unsigned wake_flags) {
  Task& curr = task(rq.curr);
  sched_entity* se = &curr.se;
  sched_entity* pse = &p.se;
  if (se == pse) return;
  if (feat(Feature::NEXT_BUDDY) && !(wake_flags & WF_FORK)) set_next_buddy(pse);
  if (rq.need_resched)
    return explain_preempt(rq, "no new decision", "a reschedule is already pending");
  if (curr.policy == Policy::Idle && p.policy != Policy::Idle) {
    explain_preempt(rq, "preempt", "curr is SCHED_IDLE, the wakee is not");
    resched_curr(rq.cpu);
    return;
  }
  if (p.policy != Policy::Normal)
    return explain_preempt(rq, "no preemption",
                           fmt::format("the wakee is {}", policy_name(p.policy)));
  if (!feat(Feature::WAKEUP_PREEMPTION))
    return explain_preempt(rq, "no preemption", "WAKEUP_PREEMPTION is off");
  find_matching_se(se, pse);
  const bool cse_is_idle = se_is_idle(*se), pse_is_idle = se_is_idle(*pse);
  if (cse_is_idle && !pse_is_idle) {
    explain_preempt(rq, "preempt", "curr's entity is idle (an idle group), the wakee's is not");
    resched_curr(rq.cpu);
    return;
  }
  if (cse_is_idle != pse_is_idle)  // an idle entity never preempts a non-idle one
    return explain_preempt(rq, "no preemption",
                           "the wakee's entity is idle (an idle group), curr's is not");
  cfs_rq& cfs = *se->cfs;
  update_curr(cfs);
  const bool preempt = pick_eevdf(cfs) == pse;
  explain_preempt(rq, preempt ? "preempt" : "no preemption",
                  preempt ? std::string("pick_eevdf picks the wakee (earliest eligible deadline)")
                          : "pick_eevdf does not pick the wakee");
  if (preempt) resched_curr(rq.cpu);
}

// yield_task_fair (fair.c v5.4).
void KernelImpl::yield_task_fair(Rq& rq) {
  if (eevdf_) return yield_task_fair_v66(rq);
  rq.yld_count++;
  if (rq.nr_running == 1) return;
  Task& curr = task(rq.curr);
  cfs_rq& cfs = *curr.se.cfs;
  clear_buddies(cfs, curr.se);
  if (curr.policy != Policy::Batch) update_curr(cfs);
  // set_skip_buddy: unlike the next and last buddies, also for a SCHED_IDLE task.
  for (sched_entity* s = &curr.se; s; s = s->parent) s->cfs->skip = s;
}

// yield_task_fair (fair.c v6.6): the yielding task's deadline moves one request on.
void KernelImpl::yield_task_fair_v66(Rq& rq) {
  rq.yld_count++;
  if (rq.nr_running == 1) return;
  Task& curr = task(rq.curr);
  cfs_rq& cfs = *curr.se.cfs;
  clear_buddies(cfs, curr.se);
  update_curr(cfs);
  curr.se.deadline += static_cast<std::uint64_t>(calc_delta_fair(curr.se.slice, curr.se));
}

// task_fork_fair (fair.c v5.4): the child starts at the parent's vruntime, placed with
// START_DEBIT, stored relative to the min_vruntime of its cfs_rq until it is enqueued.
// v6.6: placed as a new entity (ENQUEUE_INITIAL: half a slice) with absolute vruntime. v6.6's
// wake_up_new_task then enqueues it without ENQUEUE_INITIAL (c40dd90ac045 added it in 6.12),
// and enqueue_entity places it again, at V with a whole slice: the half slice does not last.
void KernelImpl::task_fork_fair(Task& p, int this_cpu) {
  cfs_rq& cfs = *p.se.cfs;
  sched_entity* curr = cfs.curr;
  if (eevdf_) {
    if (curr) update_curr(cfs);
    place_entity_v66(cfs, p.se, true);
    return;
  }
  if (curr) {
    update_curr(cfs);
    p.se.vruntime = curr->vruntime;
  }
  place_entity(cfs, p.se, true);
  p.se.vruntime -= cfs.min_vruntime;
}

}  // namespace schedtwin::kernel
