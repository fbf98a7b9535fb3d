// Load balancing (kernel/sched/fair.c, v5.7 — the balancer rewritten in v5.5 by
// 0b0695f2b34a, with the runnable_avg classification of series 3 behind
// RUNNABLE_AVG_CLASSIFY and the v5.6 sched-idle follow-ups behind
// SCHED_IDLE_CONSISTENT; fair-class.md §5):
//   periodic:   trigger_load_balance → run_rebalance_domains → rebalance_domains, from
//               the tick of a busy CPU or of an idle one whose tick the governor kept
//   newly idle: newidle_balance from schedule() when the CPU has nothing to run
//   NOHZ idle:  nohz_balancer_kick from a busy CPU's tick → kick_ilb → the idle
//               load balancer balances on behalf of every tickless CPU
//   active:     the stopper of the busiest CPU pushes its running task
// Left out: asym packing and misfit (symmetric machines only), NUMA balancing's fbq
// types and migrate_degrades_locality, CFS bandwidth, the pre-5.5 balancer.
//
// Cost: a balance pass costs the balancing CPU one idle-search probe (a remote rq
// cache line) per CPU whose statistics it reads; that time is what max_newidle_lb_cost
// learns.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

namespace {

constexpr unsigned sched_nr_migrate_break = 32;
constexpr unsigned sysctl_sched_nr_migrate = 32;
constexpr unsigned MAX_PINNED_INTERVAL = 512;  // ms
constexpr int LOAD_AVG_PERIOD_MS = 32;

std::int64_t msecs_to_jiffies(std::int64_t ms, int hz) { return (ms * hz + 999) / 1000; }

bool time_after(std::int64_t a, std::int64_t b) { return b - a < 0; }
bool time_after_eq(std::int64_t a, std::int64_t b) { return a - b >= 0; }
bool time_before(std::int64_t a, std::int64_t b) { return time_after(b, a); }

}  // namespace

const char* group_type_name(int type) {
  static constexpr const char* names[] = {"has_spare",    "fully_busy", "misfit_task",
                                          "asym_packing", "imbalanced", "overloaded"};
  return type >= 0 && type < 6 ? names[type] : "?";
}

void KernelImpl::group_stats_data(const char* what, int group, const sg_lb_stats& s) {
  auto key = [what](const char* k) { return fmt::format("{}_{}", what, k); };
  explain_->data(key("cpus"), machine::format_cpu_list(groups_[static_cast<size_t>(group)].cpus));
  explain_->data(key("type"), group_type_name(static_cast<int>(s.group_type)));
  explain_->data(key("nr_running"), static_cast<long long>(s.sum_nr_running));
  explain_->data(key("idle_cpus"), static_cast<long long>(s.idle_cpus));
  explain_->data(key("load"), static_cast<long long>(s.group_load));
  explain_->data(key("util"), static_cast<long long>(s.group_util));
  explain_->data(key("runnable"), static_cast<long long>(s.group_runnable));
  explain_->data(key("capacity"), static_cast<long long>(s.group_capacity));
  if (s.avg_load) explain_->data(key("avg_load"), static_cast<long long>(s.avg_load));
}

std::string KernelImpl::group_stats_text(const char* what, int group, const sg_lb_stats& s) const {
  std::string out =
      fmt::format("{} {}: {} nr_running={} idle_cpus={} load={} util={} runnable={} capacity={}",
                  what, machine::format_cpu_list(groups_[static_cast<size_t>(group)].cpus),
                  group_type_name(static_cast<int>(s.group_type)), s.sum_nr_running, s.idle_cpus,
                  s.group_load, s.group_util, s.group_runnable, s.group_capacity);
  if (s.avg_load) out += fmt::format(" avg_load={}", s.avg_load);
  return out;
}

const char* balance_type_name(int idle) {
  static constexpr const char* names[] = {"idle", "busy", "newly_idle"};
  return idle >= 0 && idle < 3 ? names[idle] : "?";
}

// update_blocked_averages (__update_blocked_fair, fair.c v5.7): decay the load the CPU's
// cfs_rqs still carry from tasks that slept or left, children before parents (a group is
// created after its parent, so descending ids are a bottom-up order), and propagate each
// group's change into its entity. Groups whose cfs_rq has fully decayed are skipped, as
// the kernel drops them from its leaf list.
void KernelImpl::update_blocked_averages(int cpu) {
  Rq& rq = cpu_rq(cpu);
  bool others_have_blocked = false;
  for (size_t g = tg_rt_.size(); g-- > 1;) {
    GroupCpu& gc = tg_rt_[g].cpu[static_cast<size_t>(cpu)];
    cfs_rq& cfs = gc.cfs;
    if (!cfs.nr_running && !cfs.avg.load_sum && !cfs.avg.util_sum && !cfs.avg.runnable_sum &&
        !cfs.propagate && !cfs.removed.nr && !cfs.tg_load_avg_contrib)
      continue;
    if (update_cfs_rq_load_avg(clock_pelt(), cfs)) update_tg_load_avg(cfs);
    // skip_blocked_update
    if (gc.se.avg.load_avg || gc.se.avg.util_avg || cfs.propagate)
      update_load_avg(*gc.se.cfs, gc.se, 0);
    // cfs_rq_has_blocked: load_avg and util_avg only, runnable_avg is not looked at.
    others_have_blocked |= cfs.avg.load_avg || cfs.avg.util_avg;
  }
  update_cfs_rq_load_avg(clock_pelt(), rq.cfs);
  rq.has_blocked_load = others_have_blocked || rq.cfs.avg.load_avg || rq.cfs.avg.util_avg;
  rq.last_blocked_load_update_tick = jiffies();
}

// get_sd_balance_interval (fair.c v5.7), in jiffies. From v5.10 (e4d32e4d5444) a busy
// interval is one jiffy shorter, so that the levels' busy periods are not multiples of each
// other.
std::int64_t KernelImpl::get_sd_balance_interval(const SchedDomain& sd, bool cpu_busy) const {
  std::int64_t interval = sd.balance_interval;
  if (cpu_busy) interval *= levels_[static_cast<size_t>(sd.level_id)].busy_factor;
  interval = msecs_to_jiffies(interval, hz_);
  if (cpu_busy && prof_.version >= 510) interval -= 1;
  return std::clamp<std::int64_t>(interval, 1, max_load_balance_interval_);
}

// update_next_balance (fair.c v5.7).
void KernelImpl::update_next_balance(const SchedDomain& sd, std::int64_t& next_balance) const {
  std::int64_t next = sd.last_balance + get_sd_balance_interval(sd, false);
  if (time_after(next_balance, next)) next_balance = next;
}

// trigger_load_balance (fair.c v5.7), from the tick. `idle` is scheduler_tick's
// rq->idle_balance: CPU_IDLE for an idle CPU whose tick still runs, which balances at the
// idle interval and never kicks an idle load balancer (nohz_balancer_kick returns at once).
void KernelImpl::trigger_load_balance(int cpu, cpu_idle_type idle) {
  Rq& rq = cpu_rq(cpu);
  if (time_after_eq(jiffies(), rq.next_balance)) run_rebalance_domains(cpu, idle);
  if (idle != CPU_IDLE) nohz_balancer_kick(cpu);
}

// run_rebalance_domains (fair.c v5.7): the SCHED_SOFTIRQ handler.
// The caller has made `cpu` the executing CPU (this_cpu_); the pass's cost is charged to it.
void KernelImpl::run_rebalance_domains(int cpu, cpu_idle_type idle) {
  if (!nohz_idle_balance(cpu)) {
    update_blocked_averages(cpu);
    rebalance_domains(cpu, idle);
  }
  charge(cpu, static_cast<Time>(lb_probes_) * m_.costs.idle_probe.ns);
  lb_probes_ = 0;
}

// rebalance_domains (fair.c v5.7). v5.6's 323af6deaf70 (SCHED_IDLE_CONSISTENT): a CPU
// running only SCHED_IDLE tasks balances at the idle interval.
void KernelImpl::rebalance_domains(int cpu, cpu_idle_type idle) {
  Rq& rq = cpu_rq(cpu);
  auto is_busy = [&](cpu_idle_type it) {
    return it != CPU_IDLE && !(feat(Feature::SCHED_IDLE_CONSISTENT) && sched_idle_cpu(cpu));
  };
  bool busy = is_busy(idle);
  bool continue_balancing = true;
  std::int64_t next_balance = jiffies() + 60 * hz_;
  bool update_next = false, need_decay = false;
  Time max_cost = 0;
  // The RFC's hook, before the domain walk; `idle` and `busy` keep the values they had.
  if (feat(Feature::SIB_BALANCE) && need_pull_cfs_task(rq)) sched_idle_balance(cpu);
  for (size_t k = 0; k < rq.sd.size(); ++k) {
    SchedDomain& sd = rq.sd[k];
    const DomainLevel& lvl = levels_[static_cast<size_t>(sd.level_id)];
    bool decayed = false;
    if (time_after(jiffies(), sd.next_decay_max_lb_cost)) {
      sd.max_newidle_lb_cost = sd.max_newidle_lb_cost * 253 / 256;
      sd.next_decay_max_lb_cost = jiffies() + hz_;
      decayed = true;
    }
    // v5.16 (e60b56e46b38): need_decay = update_newidle_cost(sd, 0), the last domain's.
    need_decay = prof_.version >= 516 ? decayed : need_decay || decayed;
    max_cost += sd.max_newidle_lb_cost;
    if (!(lvl.flags & SD_LOAD_BALANCE)) continue;
    if (!continue_balancing) {
      if (need_decay) continue;
      break;
    }
    std::int64_t interval = get_sd_balance_interval(sd, busy);
    // SD_SERIALIZE's global trylock never fails here: one CPU balances at a time.
    if (time_after_eq(jiffies(), sd.last_balance + interval)) {
      if (load_balance(cpu, static_cast<int>(k), idle, continue_balancing)) {
        idle = idle_cpu(cpu) ? CPU_IDLE : CPU_NOT_IDLE;
        busy = is_busy(idle);
      }
      sd.last_balance = jiffies();
      interval = get_sd_balance_interval(sd, busy);
    }
    if (time_after(next_balance, sd.last_balance + interval)) {
      next_balance = sd.last_balance + interval;
      update_next = true;
    }
  }
  if (need_decay) rq.max_idle_balance_cost = std::max(sysctl_sched_migration_cost, max_cost);
  if (update_next) {
    rq.next_balance = next_balance;
    // Up to v5.12 the idle load balancer's own pass lowers nohz.next_balance here; from v5.13
    // (7a82e5f52a35) its walk over the idle CPUs, which now ends with itself, does.
    if (prof_.version < 513 && idle == CPU_IDLE && time_after(nohz_.next_balance, rq.next_balance))
      nohz_.next_balance = rq.next_balance;
  }
}

// should_we_balance (fair.c v5.7): only the first idle CPU of the local group, or its
// first CPU when none is idle, balances this domain (newly idle CPUs always may). v6.6
// (b1bfeab9b002, f8858d96061f): above the SMT level the first idle CPU of a wholly idle
// core is preferred, then the first idle CPU with busy siblings.
bool KernelImpl::should_we_balance(const lb_env& env) {
  if (!lb_cpu_allowed(env.dst_cpu)) return false;
  if (env.idle == CPU_NEWLY_IDLE) {
    // v6.0 (792b9f65a568): a newly idle CPU that got a task or a queued wakeup bails out.
    const Rq& dst = cpu_rq(env.dst_cpu);
    return prof_.version < 600 || (dst.nr_running == 0 && dst.ttwu_pending == 0);
  }
  const SchedDomain& sd = cpu_rq(env.dst_cpu).sd[static_cast<size_t>(env.sd_idx)];
  const SchedGroup& sg = groups_[static_cast<size_t>(sd.groups.front())];
  const bool prefer_idle_core =
      prof_.version >= 606 && !(level_of(env.dst_cpu, env.sd_idx).flags & SD_SHARE_CPUCAPACITY);
  auto core_idle = [&](int cpu) {
    for (int sib : smt_siblings(cpu))
      if (sib != cpu && !idle_cpu(sib)) return false;
    return true;
  };
  int balance_cpu = -1, idle_smt = -1;
  for (int c : sg.cpus) {
    if (!lb_cpu_allowed(c) || !idle_cpu(c)) continue;
    if (prefer_idle_core && !core_idle(c)) {
      if (idle_smt == -1) idle_smt = c;
      continue;
    }
    balance_cpu = c;
    break;
  }
  if (balance_cpu == -1) balance_cpu = idle_smt != -1 ? idle_smt : sg.balance_cpu;
  return balance_cpu == env.dst_cpu;
}

// update_sg_lb_stats (fair.c v5.7), without misfit and NUMA counters.
void KernelImpl::update_sg_lb_stats(lb_env& env, int group, sg_lb_stats& sgs, bool& sg_overload) {
  sgs = sg_lb_stats{};
  const SchedGroup& g = groups_[static_cast<size_t>(group)];
  for (int i : g.cpus) {
    if (!lb_cpu_allowed(i)) continue;
    const Rq& rq = cpu_rq(i);
    ++lb_probes_;
    if ((env.flags & LBF_NOHZ_STATS) && update_nohz_stats(i, false)) env.flags |= LBF_NOHZ_AGAIN;
    sgs.group_load += cpu_load(i);
    sgs.group_util += cpu_util(i);
    sgs.group_runnable += cpu_runnable(i);
    sgs.sum_h_nr_running += rq.cfs.h_nr_running;
    unsigned nr_running = rq.nr_running;
    sgs.sum_nr_running += nr_running;
    if (nr_running > 1) sg_overload = true;
    if (!nr_running && idle_cpu(i)) sgs.idle_cpus++;
  }
  sgs.group_capacity = static_cast<unsigned long>(g.capacity);
  sgs.group_weight = static_cast<unsigned>(g.cpus.size());
  const DomainLevel& lvl = level_of(env.dst_cpu, env.sd_idx);
  sgs.group_type = group_classify(lvl.imbalance_pct, group, sgs);
  if (sgs.group_type == sg_type::group_overloaded)
    sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity;
  const int type = static_cast<int>(sgs.group_type),
            nr = static_cast<int>(std::min(sgs.sum_nr_running, 4u));
  lb_stats_.classified[env.idle][type][nr]++;
  lb_stats_.by_domain[static_cast<size_t>(env.sd_idx)].classified[type][nr]++;
}

// update_sd_pick_busiest (fair.c v5.7) for symmetric capacity.
bool KernelImpl::update_sd_pick_busiest(sd_lb_stats& sds, sg_lb_stats& sgs) {
  sg_lb_stats& busiest = sds.busiest_stat;
  if (!sgs.sum_h_nr_running) return false;
  if (sgs.group_type > busiest.group_type) return true;
  if (sgs.group_type < busiest.group_type) return false;
  switch (sgs.group_type) {
    case sg_type::group_overloaded:
    case sg_type::group_fully_busy:
      if (sgs.avg_load <= busiest.avg_load) return false;
      break;
    case sg_type::group_imbalanced:
      return false;  // keep the first one
    case sg_type::group_asym_packing:
    case sg_type::group_misfit_task:
      return false;  // not produced on symmetric machines
    case sg_type::group_has_spare:
      if (sgs.idle_cpus > busiest.idle_cpus) return false;
      if (sgs.idle_cpus == busiest.idle_cpus && sgs.sum_nr_running <= busiest.sum_nr_running)
        return false;
      break;
  }
  return true;
}

// update_sd_lb_stats (fair.c v5.7).
void KernelImpl::update_sd_lb_stats(lb_env& env, sd_lb_stats& sds) {
  const Rq& dst = cpu_rq(env.dst_cpu);
  const SchedDomain& sd = dst.sd[static_cast<size_t>(env.sd_idx)];
  if (sd.child >= 0 &&
      (levels_[static_cast<size_t>(dst.sd[static_cast<size_t>(sd.child)].level_id)].flags &
       SD_PREFER_SIBLING))
    sds.prefer_sibling = true;
  bool sg_overload = false;
  unsigned long sum_util = 0;
  sg_lb_stats sgs;
  // v4.17-v5.12 (e022e0d38ad4; removed by 0826530de3cb): newly idle balancing refreshes the
  // blocked load of the tickless idle CPUs it reads.
  if (prof_.version < 513 && env.idle == CPU_NEWLY_IDLE && nohz_.has_blocked)
    env.flags |= LBF_NOHZ_STATS;
  for (size_t gi = 0; gi < sd.groups.size(); ++gi) {
    int g = sd.groups[gi];
    bool local_group = gi == 0;  // the group holding dst_cpu is listed first
    if (local_group) {
      sds.local = g;
      update_sg_lb_stats(env, g, sds.local_stat, sg_overload);
      sds.total_load += sds.local_stat.group_load;
      sds.total_capacity += sds.local_stat.group_capacity;
      continue;
    }
    update_sg_lb_stats(env, g, sgs, sg_overload);
    if (update_sd_pick_busiest(sds, sgs)) {
      sds.busiest = g;
      sds.busiest_stat = sgs;
    }
    sds.total_load += sgs.group_load;
    sds.total_capacity += sgs.group_capacity;
    sum_util += sgs.group_util;
  }
  sum_util += sds.local_stat.group_util;
  if (env.flags & LBF_NOHZ_AGAIN) {
    // Every tickless idle CPU is in this domain (cpumask_subset of nohz.idle_cpus_mask): the
    // pass stands for a NOHZ_STATS_KICK.
    int tickless_in_span = 0;
    for (int c : levels_[static_cast<size_t>(sd.level_id)].span)
      tickless_in_span += cpu_rq(c).nohz_tick_stopped ? 1 : 0;
    if (tickless_in_span == nohz_.nr_cpus)
      nohz_.next_blocked = jiffies() + msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz_);
  }
  if (sd.parent < 0) rd_overload_ = sg_overload;  // the root domain's overload flag
  update_idle_cpu_scan(env, sum_util);
}

// update_idle_cpu_scan (fair.c v6.0, SIS_UTIL): the number of CPUs select_idle_cpu may scan
// in this LLC falls with the square of its utilization and reaches 0 at 1/imbalance_pct
// (85 % for 117); written by periodic balancing of the LLC domain only.
void KernelImpl::update_idle_cpu_scan(const lb_env& env, unsigned long sum_util) {
  if (!feat(Feature::SIS_UTIL) || env.idle == CPU_NEWLY_IDLE) return;
  const Rq& rq = cpu_rq(env.dst_cpu);
  if (env.sd_idx != rq.sd_llc) return;
  const std::uint64_t llc_weight = static_cast<std::uint64_t>(rq.llc_size);
  std::uint64_t x = sum_util / llc_weight;
  std::uint64_t pct = static_cast<std::uint64_t>(level_of(env.dst_cpu, env.sd_idx).imbalance_pct);
  std::uint64_t tmp = x * x * pct * pct / (10000 * SCHED_CAPACITY_SCALE);
  tmp = std::min<std::uint64_t>(tmp, SCHED_CAPACITY_SCALE);
  std::uint64_t y = (SCHED_CAPACITY_SCALE - tmp) * llc_weight / SCHED_CAPACITY_SCALE;
  llc_shared_[static_cast<size_t>(rq.llc_id)].nr_idle_scan = static_cast<int>(y);
}

// allow_numa_imbalance (fair.c): v5.11-v5.17 (7d2b5dd0bcc4) while dst_running is below a
// quarter of dst_weight, which find_idlest_group gives as the domain's span and
// calculate_imbalance as the busiest group's weight; v5.19+ (026b98a93bbd, cb29a5c19d2d)
// while it is at most the domain's imb_numa_nr, dst_weight unused.
bool KernelImpl::allow_numa_imbalance(unsigned dst_running, unsigned dst_weight,
                                      const SchedDomain& sd) const {
  if (prof_.version < 519) return dst_running < (dst_weight >> 2);
  return dst_running <= sd.imb_numa_nr;
}

// adjust_numa_imbalance (fair.c v5.11+): an imbalance of up to NUMA_IMBALANCE_MIN between
// nodes is left alone while allow_numa_imbalance holds.
long KernelImpl::adjust_numa_imbalance(long imbalance, unsigned dst_running, unsigned dst_weight,
                                       const SchedDomain& sd) const {
  return allow_numa_imbalance(dst_running, dst_weight, sd) && imbalance <= NUMA_IMBALANCE_MIN
             ? 0
             : imbalance;
}

// calculate_imbalance (fair.c v5.7).
void KernelImpl::calculate_imbalance(lb_env& env, sd_lb_stats& sds) {
  sg_lb_stats& local = sds.local_stat;
  sg_lb_stats& busiest = sds.busiest_stat;
  const DomainLevel& lvl = level_of(env.dst_cpu, env.sd_idx);
  if (busiest.group_type == sg_type::group_imbalanced) {
    env.mtype = migrate_task;
    env.imbalance = 1;
    return;
  }
  if (local.group_type == sg_type::group_has_spare) {
    // From v5.10 (16b0a7a1a0af) a domain that shares a cache (SMT, MC) spreads tasks by
    // idle CPUs as the wakeup path does, even from an overloaded group.
    const bool share_pkg = prof_.version >= 510 && (lvl.flags & SD_SHARE_PKG_RESOURCES);
    if (busiest.group_type > sg_type::group_fully_busy && !share_pkg) {
      // Fill the local group's spare capacity with utilization.
      env.mtype = migrate_util;
      env.imbalance =
          static_cast<long>(std::max(local.group_capacity, local.group_util) - local.group_util);
      if (env.idle != CPU_NOT_IDLE && env.imbalance == 0) {
        env.mtype = migrate_task;
        env.imbalance = 1;
      }
      return;
    }
    env.mtype = migrate_task;
    // v5.19 (cb29a5c19d2d) halves the difference after the NUMA allowance, not before.
    const bool halve_last = prof_.version >= 519;
    if (busiest.group_weight == 1 || sds.prefer_sibling) {
      long nr_diff =
          static_cast<long>(busiest.sum_nr_running) - static_cast<long>(local.sum_nr_running);
      env.imbalance = std::max(0L, nr_diff);
    } else {
      // max_t(long, 0, local->idle_cpus - busiest->idle_cpus) in unsigned int: when the
      // busiest group has more idle CPUs (only an overloaded one can, from v5.10), the
      // difference wraps and the imbalance is 2^31 - 1 or near it, as in the kernel.
      env.imbalance = static_cast<long>(local.idle_cpus - busiest.idle_cpus);
    }
    if (!halve_last) env.imbalance >>= 1;
    if (lvl.flags & SD_NUMA) {
      // v5.7 leaves a busiest group of at most 2 tasks alone; v5.11-v5.17 count the busiest
      // group's tasks against a quarter of its CPUs, v5.19+ the local group's with the one
      // to move against imb_numa_nr.
      if (prof_.version < 511) {
        if (busiest.sum_nr_running <= 2) env.imbalance = 0;
      } else {
        const SchedDomain& sd =
            rq_[static_cast<size_t>(env.dst_cpu)].sd[static_cast<size_t>(env.sd_idx)];
        env.imbalance = prof_.version < 519
                            ? adjust_numa_imbalance(env.imbalance, busiest.sum_nr_running,
                                                    busiest.group_weight, sd)
                            : adjust_numa_imbalance(env.imbalance, local.sum_nr_running + 1, 0, sd);
      }
    }
    if (halve_last) env.imbalance >>= 1;
    return;
  }
  if (local.group_type < sg_type::group_overloaded) {
    local.avg_load = local.group_load * SCHED_CAPACITY_SCALE / local.group_capacity;
    sds.avg_load = sds.total_load * SCHED_CAPACITY_SCALE / sds.total_capacity;
    // v5.7 (111688ca1c4a), and v6.3 (91dcf1e8068e) against the domain average too.
    if ((prof_.version >= 507 && local.avg_load >= busiest.avg_load) ||
        (prof_.version >= 603 && local.avg_load >= sds.avg_load)) {
      env.imbalance = 0;
      return;
    }
  }
  env.mtype = migrate_load;
  // In unsigned long, as the kernel computes it: a group on the wrong side of the domain
  // average wraps its term, and the other term is taken.
  const unsigned long a = (busiest.avg_load - sds.avg_load) * busiest.group_capacity;
  const unsigned long b = (sds.avg_load - local.avg_load) * local.group_capacity;
  env.imbalance = static_cast<long>(std::min(a, b) / SCHED_CAPACITY_SCALE);
}

// find_busiest_group (fair.c v5.7): returns the busiest group or -1 when balanced.
int KernelImpl::find_busiest_group(lb_env& env, sd_lb_stats& sds) {
  update_sd_lb_stats(env, sds);
  sg_lb_stats& local = sds.local_stat;
  sg_lb_stats& busiest = sds.busiest_stat;
  const DomainLevel& lvl = level_of(env.dst_cpu, env.sd_idx);
  auto balanced = [&](const char* why) {
    env.imbalance = 0;
    env.balanced_why = why;
    return -1;
  };
  if (sds.busiest < 0) return balanced("no other group runs a task");
  if (busiest.group_type != sg_type::group_imbalanced) {
    if (local.group_type > busiest.group_type) return balanced("local group of a busier class");
    if (local.group_type == sg_type::group_overloaded) {
      if (local.avg_load >= busiest.avg_load) return balanced("local avg_load >= busiest's");
      sds.avg_load = SCHED_CAPACITY_SCALE * sds.total_load / sds.total_capacity;
      if (local.avg_load >= sds.avg_load) return balanced("local avg_load >= the domain's");
      if (100 * busiest.avg_load <= static_cast<unsigned long>(lvl.imbalance_pct) * local.avg_load)
        return balanced("busiest avg_load within imbalance_pct of local's");
    }
    bool force = sds.prefer_sibling && local.group_type == sg_type::group_has_spare &&
                 busiest.sum_nr_running > local.sum_nr_running + 1;
    if (!force && busiest.group_type != sg_type::group_overloaded) {
      if (env.idle == CPU_NOT_IDLE) return balanced("busiest not overloaded and this CPU busy");
      if (busiest.group_weight > 1 && local.idle_cpus <= busiest.idle_cpus + 1)
        return balanced("local has at most one idle CPU more than busiest");
      if (busiest.sum_h_nr_running == 1) return balanced("busiest runs one task");
    }
  }
  calculate_imbalance(env, sds);
  if (!env.imbalance) return balanced("calculate_imbalance gives 0");
  return sds.busiest;
}

// find_busiest_queue (fair.c v5.7, and v5.12's skip of idle rqs) for symmetric capacity,
// without the NUMA fbq filter.
int KernelImpl::find_busiest_queue(lb_env& env, int group) {
  int busiest = -1;
  unsigned long busiest_load = 0, busiest_capacity = 1, busiest_util = 0;
  unsigned busiest_nr = 0;
  for (int i : groups_[static_cast<size_t>(group)].cpus) {
    if (!lb_cpu_allowed(i)) continue;
    const Rq& rq = cpu_rq(i);
    ++lb_probes_;
    unsigned long capacity = capacity_of(i);
    unsigned nr_running = rq.cfs.h_nr_running;
    // v5.12 (fc488ffd4297 "sched/fair: Skip idle cfs_rq"): an idle rq is never the busiest,
    // even when its blocked load is the highest.
    if (prof_.version >= 512 && nr_running == 0) continue;
    switch (env.mtype) {
      case migrate_load: {
        unsigned long load = cpu_load(i);
        // A single task bigger than the imbalance would only move the imbalance; the
        // reduced-capacity exception (check_cpu_capacity) never applies here.
        if (nr_running == 1 && load > static_cast<unsigned long>(env.imbalance)) break;
        if (load * busiest_capacity > busiest_load * capacity) {
          busiest_load = load;
          busiest_capacity = capacity;
          busiest = i;
        }
        break;
      }
      case migrate_util: {
        unsigned long util = cpu_util(i);
        // v5.7 (c32b4308295a): a CPU running one task is no source of utilization.
        if (prof_.version >= 507 && nr_running <= 1) continue;
        if (busiest_util < util) {
          busiest_util = util;
          busiest = i;
        }
        break;
      }
      case migrate_task:
        if (busiest_nr < nr_running) {
          busiest_nr = nr_running;
          busiest = i;
        }
        break;
      case migrate_misfit:
        break;
    }
  }
  return busiest;
}

// task_hot (fair.c v5.7).
int KernelImpl::task_hot(Task& p, const lb_env& env) {
  if (p.policy == Policy::Idle) return 0;
  // v5.10 (ec73240b1627): "SMT siblings share cache".
  if (prof_.version >= 510 && (level_of(env.dst_cpu, env.sd_idx).flags & SD_SHARE_CPUCAPACITY))
    return 0;
  cfs_rq& cfs = *p.se.cfs;
  if (feat(Feature::CACHE_HOT_BUDDY) && cpu_rq(env.dst_cpu).nr_running &&
      (cfs.next == &p.se || cfs.last == &p.se))
    return 1;
  if (sysctl_sched_migration_cost == 0) return 0;
  return clock_task() - p.se.exec_start < sysctl_sched_migration_cost;
}

// can_migrate_task (fair.c v5.7), without NUMA locality (migrate_degrades_locality = -1).
bool KernelImpl::can_migrate_task(Task& p, lb_env& env) {
  // Series 4 patch 2: a sched-idle pull takes only non-idle tasks, and no balance type
  // takes the last non-idle task of a CPU.
  if (env.idle == CPU_SCHED_IDLE && task_h_idle(p)) return false;
  if (feat(Feature::SIB_LAST_NONIDLE) && !cfs_rq_overloaded(cpu_rq(p.cpu)) && !task_h_idle(p)) {
    if (xp())
      explain_->step(fmt::format("{}: last non-idle task of cpu{}", task_label(p.se.task), p.cpu));
    return false;
  }
  if (!p.allowed[static_cast<size_t>(env.dst_cpu)]) {
    if (xp())
      explain_->step(fmt::format("{}: not allowed on cpu{}", task_label(p.se.task), env.dst_cpu));
    env.flags |= LBF_SOME_PINNED;
    if (env.idle == CPU_NEWLY_IDLE || (env.flags & LBF_DST_PINNED) || env.dst_group < 0)
      return false;
    // Remember another CPU of the local group that the task may use.
    for (int c : groups_[static_cast<size_t>(env.dst_group)].cpus) {
      if (lb_cpu_allowed(c) && p.allowed[static_cast<size_t>(c)]) {
        env.flags |= LBF_DST_PINNED;
        env.new_dst_cpu = c;
        break;
      }
    }
    return false;
  }
  env.flags &= ~LBF_ALL_PINNED;
  if (cpu_rq(p.cpu).curr == p.se.task) {  // task_running
    if (xp()) explain_->step(fmt::format("{}: running", task_label(p.se.task)));
    return false;
  }
  int hot = task_hot(p, env);
  SchedDomain& sd = env_sd(env);
  if (hot <= 0 || sd.nr_balance_failed >
                      static_cast<unsigned>(level_of(env.dst_cpu, env.sd_idx).cache_nice_tries)) {
    if (hot == 1 && env.idle != CPU_SCHED_IDLE) sd.lb_hot_gained[env.idle]++;
    return true;
  }
  if (xp())
    explain_->step(
        fmt::format("{}: cache hot (ran {} us ago, migration_cost {} us, nr_balance_failed {})",
                    task_label(p.se.task), (clock_task() - p.se.exec_start) / 1000,
                    sysctl_sched_migration_cost / 1000, sd.nr_balance_failed));
  return false;
}

// detach_task + migrate_task_rq_fair for a queued task (fair.c v5.7): dequeue, move the
// PELT signals (detach now, attach at the destination), forget cache hotness.
void KernelImpl::detach_task_lb(Task& p, int dst_cpu, int sd_idx) {
  if (trace_) trace_->sched_migrate_task(now_, this_cpu_, p.se.task, p.cpu, dst_cpu);
  deactivate_task(p.cpu, p.se.task, DEQUEUE_SAVE | DEQUEUE_MOVE);
  migrate_queued_task(p, dst_cpu);
  lb_stats_.migrations++;
  lb_stats_.by_domain[static_cast<size_t>(sd_idx)].migrations++;
}

// attach_task (fair.c v5.7): enqueue on the destination and let it preempt. The
// balancing CPU is this_cpu_: a remote destination gets a reschedule IPI.
void KernelImpl::attach_task_lb(Task& p, int dst_cpu) {
  activate_task(dst_cpu, p.se.task, 0);
  check_preempt_curr(dst_cpu, p.se.task, 0);
}

// detach_tasks (fair.c v5.7): walk the busiest rq's cfs_tasks from its tail.
int KernelImpl::detach_tasks(lb_env& env) {
  Rq& src = cpu_rq(env.src_cpu);
  const SchedDomain& sd = env_sd(env);
  const DomainLevel& lvl = level_of(env.dst_cpu, env.sd_idx);
  int detached = 0;
  if (env.imbalance <= 0) return 0;
  while (!src.cfs_tasks.empty()) {
    if (env.idle != CPU_NOT_IDLE && src.nr_running <= 1) break;
    sched_entity& se = src.cfs_tasks.back();
    Task& p = task(se.task);
    env.loop++;
    if (env.loop > env.loop_max) break;
    if (env.loop > env.loop_break) {
      env.loop_break += sched_nr_migrate_break;
      env.flags |= LBF_NEED_BREAK;
      break;
    }
    bool take = can_migrate_task(p, env);
    if (take) {
      switch (env.mtype) {
        case migrate_load: {
          // v5.8 (01cfcde9c26d) counts a task_h_load of 0 as 1.
          long load = static_cast<long>(task_h_load(p));
          if (prof_.version >= 508) load = std::max(load, 1L);
          // v5.5: half the load against the imbalance while nr_balance_failed <=
          // cache_nice_tries; from v5.10 (5a7f55590467) the load halved once per failed
          // balance (the shift bounded at 63, as a later fix's shr_bound does).
          const bool v510 = prof_.version >= 510;
          const bool too_much =
              v510 ? (load >> std::min(sd.nr_balance_failed, 63u)) > env.imbalance
                   : load / 2 > env.imbalance &&
                         sd.nr_balance_failed <= static_cast<unsigned>(lvl.cache_nice_tries);
          if (too_much) {
            take = false;
            if (xp())
              explain_->step(
                  v510 ? fmt::format("{}: load {} (task_h_load) >> nr_balance_failed {} above "
                                     "the imbalance {}",
                                     task_label(p.se.task), load, sd.nr_balance_failed,
                                     env.imbalance)
                       : fmt::format("{}: load {} (task_h_load), half of it above the imbalance "
                                     "{} (nr_balance_failed {} <= cache_nice_tries {})",
                                     task_label(p.se.task), load, env.imbalance,
                                     sd.nr_balance_failed, lvl.cache_nice_tries));
          } else {
            env.imbalance -= load;
          }
          break;
        }
        case migrate_util: {
          long util = static_cast<long>(task_util_est(p));
          if (util > env.imbalance) {
            take = false;
            if (xp())
              explain_->step(fmt::format("{}: util_est {} above the imbalance {}",
                                         task_label(p.se.task), util, env.imbalance));
          } else {
            env.imbalance -= util;
          }
          break;
        }
        case migrate_task:
          env.imbalance--;
          break;
        case migrate_misfit:
          take = false;  // every CPU has the same capacity: the task fits where it is
          if (xp())
            explain_->step(fmt::format("{}: fits its CPU (misfit pull)", task_label(p.se.task)));
          break;
      }
    }
    if (!take) {
      src.cfs_tasks.splice(src.cfs_tasks.begin(), src.cfs_tasks, src.cfs_tasks.iterator_to(se));
      continue;
    }
    detach_task_lb(p, env.dst_cpu, env.sd_idx);
    lb_detached_.push_back(p.se.task);
    detached++;
    // CONFIG_PREEMPTION: a newly idle CPU takes one task and runs it at once.
    if (env.idle == CPU_NEWLY_IDLE && m_.build.preempt == machine::Preemption::Full) break;
    if (env.imbalance <= 0) break;
  }
  return detached;
}

void KernelImpl::attach_tasks(lb_env& env) {
  for (TaskId t : lb_detached_) attach_task_lb(task(t), env.dst_cpu);
  lb_detached_.clear();
}

// voluntary_active_balance / need_active_balance (fair.c v5.7), symmetric capacity: only
// repeated failure triggers an active balance. From v5.12 (e9b9734b7465, "Reduce cases for
// active balance") repeated failure counts only when the imbalance is in tasks
// (imbalanced_active_balance): an overloaded group's waiting task is pulled by detach_tasks
// once its halved load fits. Asym packing and reduced capacity are not modelled.
bool KernelImpl::voluntary_active_balance(const lb_env& env) { return env.mtype == migrate_misfit; }

bool KernelImpl::need_active_balance(const lb_env& env) {
  if (voluntary_active_balance(env)) return true;
  const SchedDomain& sd = env_sd(env);
  if (prof_.version >= 512 && env.mtype != migrate_task) return false;
  return sd.nr_balance_failed >
         static_cast<unsigned>(level_of(env.dst_cpu, env.sd_idx).cache_nice_tries + 2);
}

// load_balance (fair.c v5.7, with v5.12's LBF_ALL_PINNED and active-balance changes on profiles
// v5.17 and later). Returns the number of tasks moved to this_cpu.
int KernelImpl::load_balance(int this_cpu, int sd_idx, cpu_idle_type idle,
                             bool& continue_balancing) {
  Rq& this_rq = cpu_rq(this_cpu);
  SchedDomain& sd = this_rq.sd[static_cast<size_t>(sd_idx)];
  const DomainLevel& lvl = levels_[static_cast<size_t>(sd.level_id)];
  lb_env env;
  env.sd_idx = sd_idx;
  env.sd_cpu = this_cpu;
  env.dst_cpu = this_cpu;
  // dst_grpmask is the local group for every balance type since v4.18 (65a4433aebe3); a
  // newly idle CPU's can_migrate_task still never retargets.
  env.dst_group = sd.groups.front();
  env.idle = idle;
  env.loop_break = sched_nr_migrate_break;
  ++lb_epoch_;  // env->cpus = the domain span
  int ld_moved = 0;
  std::vector<std::string> moved_tasks;  // --explain only
  bool active_balance = false;
  int busiest_cpu = -1;
  const bool v512 = prof_.version >= 512;
  sd.lb_count[idle]++;
  if (explain_ && explain_->begin("balance", now_, this_cpu, "")) {
    explain_->field("domain", lvl.name);
    explain_->field("type", balance_type_name(idle));
  }

  enum { MOVED, BALANCED, ALL_PINNED, ONE_PINNED } outcome = MOVED;
  for (int pass = 1;; ++pass) {  // redo:
    if (pass > 1 && xp()) {      // the record's data describe the last pass; steps show them all
      explain_->clear_data();
      explain_->data("passes", pass);
    }
    if (!should_we_balance(env)) {
      continue_balancing = false;
      outcome = BALANCED;
      env.balanced_why = "should_we_balance: another CPU of the group balances";
      break;
    }
    sd_lb_stats sds;
    int group = find_busiest_group(env, sds);
    if (xp()) {
      explain_->step(group_stats_text("local", sds.local, sds.local_stat));
      group_stats_data("local", sds.local, sds.local_stat);
      if (sds.busiest >= 0) {
        explain_->step(group_stats_text("busiest", sds.busiest, sds.busiest_stat));
        group_stats_data("busiest", sds.busiest, sds.busiest_stat);
      }
      if (sds.avg_load) {
        explain_->step(fmt::format("domain avg_load={}", sds.avg_load));
        explain_->data("domain_avg_load", static_cast<long long>(sds.avg_load));
      }
      if (group >= 0) {
        static constexpr const char* mt[] = {"migrate_load", "migrate_util", "migrate_task",
                                             "migrate_misfit"};
        explain_->step(fmt::format("imbalance {} {}", mt[env.mtype], env.imbalance));
        explain_->data("migration_type", mt[env.mtype]);
        explain_->data("imbalance", static_cast<long long>(env.imbalance));
      }
    }
    if (group < 0) {
      sd.lb_nobusyg[idle]++;
      outcome = BALANCED;
      break;
    }
    busiest_cpu = find_busiest_queue(env, group);
    if (busiest_cpu < 0) {
      sd.lb_nobusyq[idle]++;
      outcome = BALANCED;
      env.balanced_why = "find_busiest_queue: no CPU qualifies";
      break;
    }
    if (xp()) {
      explain_->step(fmt::format("busiest queue cpu{} ({})", busiest_cpu, cpu_state(busiest_cpu)));
      explain_->data("busiest_cpu", busiest_cpu);
    }
    sd.lb_imbalance[idle] += static_cast<std::uint64_t>(env.imbalance);
    env.src_cpu = busiest_cpu;
    Rq& busiest = cpu_rq(busiest_cpu);
    ld_moved = 0;
    moved_tasks.clear();
    bool redo = false;
    // v5.12 (8a41dfcda7a3): set whatever busiest runs, cleared by the first task that could
    // run here (detach_tasks or the active balance below). With v5.12's need_active_balance
    // and no misfit tasks, out_one_pinned sees the same flag as v5.7 would, except when a
    // task allowed here was refused for a reason other than hotness (SIB_LAST_NONIDLE).
    if (v512) env.flags |= LBF_ALL_PINNED;
    if (busiest.nr_running > 1) {
      env.flags |= LBF_ALL_PINNED;
      env.loop_max = std::min(sysctl_sched_nr_migrate, busiest.nr_running);
      for (;;) {  // more_balance:
        int cur = detach_tasks(env);
        if (cur) {
          if (xp())
            for (TaskId t : lb_detached_) moved_tasks.push_back(task_label(t));
          attach_tasks(env);
          ld_moved += cur;
        }
        if (env.flags & LBF_NEED_BREAK) {
          env.flags &= ~LBF_NEED_BREAK;
          continue;
        }
        if ((env.flags & LBF_DST_PINNED) && env.imbalance > 0) {
          lb_excluded_[static_cast<size_t>(env.dst_cpu)] = lb_epoch_;
          env.dst_cpu = env.new_dst_cpu;
          env.flags &= ~LBF_DST_PINNED;
          env.loop = 0;
          env.loop_break = sched_nr_migrate_break;
          continue;
        }
        break;
      }
      if (sd.parent >= 0) {
        SchedGroup& parent_local =
            groups_[static_cast<size_t>(this_rq.sd[static_cast<size_t>(sd.parent)].groups.front())];
        if ((env.flags & LBF_SOME_PINNED) && env.imbalance > 0) parent_local.imbalance = 1;
      }
      if (env.flags & LBF_ALL_PINNED) {
        lb_excluded_[static_cast<size_t>(busiest_cpu)] = lb_epoch_;
        // Redo unless every CPU left is in the local group.
        bool subset = true;
        for (int c : lvl.span) {
          if (!lb_cpu_allowed(c)) continue;
          if (!std::binary_search(groups_[static_cast<size_t>(env.dst_group)].cpus.begin(),
                                  groups_[static_cast<size_t>(env.dst_group)].cpus.end(), c)) {
            subset = false;
            break;
          }
        }
        if (!subset) {
          env.loop = 0;
          env.loop_break = sched_nr_migrate_break;
          redo = true;
        } else {
          outcome = ALL_PINNED;
        }
      }
    }
    if (redo) continue;
    break;
  }

  if (outcome == MOVED) {
    if (!ld_moved) {
      sd.lb_failed[idle]++;
      if (idle != CPU_NEWLY_IDLE) sd.nr_balance_failed++;
      if (need_active_balance(env)) {
        Rq& busiest = cpu_rq(busiest_cpu);
        if (busiest.curr != kNoTask && !task(busiest.curr).allowed[static_cast<size_t>(this_cpu)]) {
          if (!v512) env.flags |= LBF_ALL_PINNED;
          outcome = ONE_PINNED;
        } else {
          if (v512) env.flags &= ~LBF_ALL_PINNED;
          if (!busiest.active_balance) {
            busiest.active_balance = true;
            busiest.push_cpu = this_cpu;
            active_balance = true;
          }
          if (active_balance) {
            trace_stopper_wakeup(busiest_cpu);
            kick_cpu(busiest_cpu);  // stop_one_cpu_nowait wakes the stopper
          }
          sd.nr_balance_failed = static_cast<unsigned>(lvl.cache_nice_tries + 1);
        }
      }
    } else {
      sd.nr_balance_failed = 0;
      sd.lb_gained[idle] += static_cast<std::uint64_t>(ld_moved);
    }
    if (outcome == MOVED) {
      // v5.12 (e9b9734b7465) asks need_active_balance again, after nr_balance_failed was
      // reset above, and no longer backs off after kicking an active balance.
      if (!active_balance || (v512 ? need_active_balance(env) : voluntary_active_balance(env)))
        sd.balance_interval = static_cast<unsigned>(lvl.min_interval);
      else if (!v512 && sd.balance_interval < static_cast<unsigned>(lvl.max_interval))
        sd.balance_interval *= 2;
    }
  }
  if (outcome == BALANCED) {
    if (sd.parent >= 0 && !(env.flags & LBF_ALL_PINNED))
      groups_[static_cast<size_t>(this_rq.sd[static_cast<size_t>(sd.parent)].groups.front())]
          .imbalance = 0;
  }
  if (outcome == BALANCED || outcome == ALL_PINNED) {
    sd.lb_balanced[idle]++;
    sd.nr_balance_failed = 0;
  }
  if (xp()) {
    static constexpr const char* outcomes[] = {"moved", "balanced", "all_pinned", "running_pinned"};
    explain_->data("outcome", outcome == MOVED && !ld_moved
                                  ? (active_balance ? "active_balance" : "nothing_moved")
                                  : outcomes[outcome]);
    if (outcome == BALANCED && *env.balanced_why) explain_->data("balanced_why", env.balanced_why);
    explain_->data("moved", ld_moved);
    if (ld_moved) explain_->data("moved_tasks", fmt::format("{}", fmt::join(moved_tasks, " ")));
    if (outcome == MOVED)
      explain_->end(ld_moved ? fmt::format("moved {} task(s) from cpu{}: {}", ld_moved, busiest_cpu,
                                           fmt::join(moved_tasks, " "))
                    : active_balance
                        ? fmt::format("nothing moved; active balance kicked on cpu{}", busiest_cpu)
                        : std::string("nothing moved"));
    else
      explain_->end(outcome == BALANCED && *env.balanced_why
                        ? fmt::format("balanced: {}", env.balanced_why)
                    : outcome == BALANCED   ? std::string("balanced")
                    : outcome == ALL_PINNED ? std::string("all tasks pinned")
                                            : std::string("running task pinned"));
  }
  if (outcome != MOVED) {
    ld_moved = 0;
    if (env.idle != CPU_NEWLY_IDLE &&
        (((env.flags & LBF_ALL_PINNED) && sd.balance_interval < MAX_PINNED_INTERVAL) ||
         sd.balance_interval < static_cast<unsigned>(lvl.max_interval)))
      sd.balance_interval *= 2;
  }
  return ld_moved;
}

// active_load_balance_cpu_stop (fair.c v5.7): the stopper preempts the running task of
// busiest_cpu and moves one fair task (detach_one_task, from the tail of cfs_tasks) to
// push_cpu, in the lowest domain of push_cpu that spans busiest_cpu. The stopper's
// switch in and out costs one context switch.
void KernelImpl::active_load_balance_cpu_stop(int busiest_cpu) {
  Rq& busiest = cpu_rq(busiest_cpu);
  busiest.active_balance = false;
  trace_stopper_in(busiest_cpu);
  int target = busiest.push_cpu;
  // "Is there any task to move?": busiest_rq->nr_running <= 1 counts the stopper itself
  // (enqueue_task_stop), so a lone fair task, preempted by it, can be moved.
  if (target < 0 || busiest.nr_running == 0 || target == busiest_cpu) return;
  Rq& trq = cpu_rq(target);
  int sd_idx = -1;
  for (size_t k = 0; k < trq.sd.size(); ++k) {
    const auto& span = levels_[static_cast<size_t>(trq.sd[k].level_id)].span;
    if (std::binary_search(span.begin(), span.end(), busiest_cpu)) {
      sd_idx = static_cast<int>(k);
      break;
    }
  }
  if (sd_idx < 0) return;
  SchedDomain& sd = trq.sd[static_cast<size_t>(sd_idx)];
  sd.alb_count++;
  settle(busiest_cpu);
  busiest.debt += m_.costs.context_switch.ns;
  lb_env env;
  env.sd_idx = sd_idx;
  env.dst_cpu = target;
  env.src_cpu = busiest_cpu;
  env.idle = CPU_IDLE;
  ++lb_epoch_;
  // The stopper is running, so the previously running task counts as queued.
  TaskId running = busiest.curr;
  TaskId moved = kNoTask;
  for (auto it = busiest.cfs_tasks.rbegin(); it != busiest.cfs_tasks.rend(); ++it) {
    Task& p = task(it->task);
    bool ok;
    if (p.se.task == running) {
      ok = p.allowed[static_cast<size_t>(target)];
    } else {
      ok = can_migrate_task(p, env);
    }
    if (ok) {
      moved = p.se.task;
      break;
    }
  }
  if (explain_ && explain_->begin("active_balance", now_, busiest_cpu,
                                  moved == kNoTask ? "" : task_label(moved))) {
    explain_->field("domain", levels_[static_cast<size_t>(sd.level_id)].name);
    explain_->field("dst", target);
    explain_->flag("was_running", moved != kNoTask && moved == running, moved != kNoTask);
    explain_->end(moved == kNoTask ? "no task may move" : fmt::format("pushed to cpu{}", target));
  }
  if (moved == kNoTask) {
    sd.alb_failed++;
    return;
  }
  sd.alb_pushed++;
  sd.nr_balance_failed = 0;  // "Active balancing done, reset the failure counter."
  lb_stats_.active_migrations++;
  lb_stats_.by_domain[static_cast<size_t>(sd_idx)].active_migrations++;
  int saved_cpu = this_cpu_;
  bool saved_ctx = in_cpu_context_;
  this_cpu_ = busiest_cpu;
  in_cpu_context_ = false;
  if (moved == running) {
    move_task(moved, target);  // takes it off the CPU; schedule() below picks the next
    lb_stats_.migrations++;
    lb_stats_.by_domain[static_cast<size_t>(sd_idx)].migrations++;
  } else {
    Task& p = task(moved);
    detach_task_lb(p, target, sd_idx);
    attach_task_lb(p, target);
  }
  this_cpu_ = saved_cpu;
  in_cpu_context_ = saved_ctx;
  if (moved == running) schedule(busiest_cpu);
}

// newidle_balance (fair.c v5.7; idle_balance in v5.4). Returns > 0 when a fair task
// was pulled. From v5.16 (Vincent Guittot's "Improve newidle lb cost tracking and early
// abort": 9d783c8dd112, c5b0a7eefc70) the skip test is the lowest domain's
// max_newidle_lb_cost instead of sysctl_sched_migration_cost, and a new maximum cost
// restarts its decay period (update_newidle_cost). From v5.14 (e5e678e4fea2) a pending
// wakeup returns at once and stops the domain walk. The pass runs at one instant: a
// wakeup cannot arrive in the middle of it (its cost is paid before the CPU idles).
int KernelImpl::newidle_balance(int cpu) {
  Rq& rq = cpu_rq(cpu);
  const bool v514 = prof_.version >= 514, v516 = prof_.version >= 516;
  std::int64_t next_balance = jiffies() + hz_;
  int pulled = 0;
  Time curr_cost = 0;
  lb_stats_.newidle_entries++;
  // v5.14 (e5e678e4fea2): a wakeup already queued here will run next.
  if (v514 && rq.ttwu_pending) {
    lb_stats_.newidle_wakeup_pending++;
    return 0;
  }
  rq.idle_stamp = now_;
  const bool too_short = v516 ? !rq.sd.empty() && rq.avg_idle < rq.sd.front().max_newidle_lb_cost
                              : rq.avg_idle < sysctl_sched_migration_cost;
  if (too_short || !rd_overload_) {
    // Counted by the test the kernel makes first: v5.16+ tests rd->overload first.
    const bool by_overload = v516 ? !rd_overload_ : !too_short;
    ++(by_overload ? lb_stats_.newidle_no_overload : lb_stats_.newidle_avg_idle);
    if (!rq.sd.empty()) update_next_balance(rq.sd.front(), next_balance);
    if (prof_.version < 513) nohz_newidle_balance(cpu);
  } else {
    update_blocked_averages(cpu);
    if (feat(Feature::SIB_BALANCE)) {
      // The RFC's hook ignores whether a task was pulled: the first domain is balanced
      // anyway, and nr_running > 0 ends the walk after it.
      lb_probes_ = 0;
      sched_idle_balance(cpu);
      Time cost = static_cast<Time>(lb_probes_) * m_.costs.idle_probe.ns;
      lb_probes_ = 0;
      rq.debt += cost;
      curr_cost += cost;
    }
    for (size_t k = 0; k < rq.sd.size(); ++k) {
      SchedDomain& sd = rq.sd[k];
      const DomainLevel& lvl = levels_[static_cast<size_t>(sd.level_id)];
      if (!(lvl.flags & SD_LOAD_BALANCE)) continue;
      if (rq.avg_idle < curr_cost + sd.max_newidle_lb_cost) {
        update_next_balance(sd, next_balance);
        break;
      }
      if (lvl.flags & SD_BALANCE_NEWIDLE) {
        bool cont = true;
        lb_probes_ = 0;
        pulled = load_balance(cpu, static_cast<int>(k), CPU_NEWLY_IDLE, cont);
        Time domain_cost = static_cast<Time>(lb_probes_) * m_.costs.idle_probe.ns;
        lb_probes_ = 0;
        rq.debt += domain_cost;
        if (domain_cost > sd.max_newidle_lb_cost) {
          sd.max_newidle_lb_cost = domain_cost;
          if (v516) sd.next_decay_max_lb_cost = jiffies() + hz_;
        } else if (v516 && time_after(jiffies(), sd.next_decay_max_lb_cost)) {
          // update_newidle_cost decays here too
          sd.max_newidle_lb_cost = sd.max_newidle_lb_cost * 253 / 256;
          sd.next_decay_max_lb_cost = jiffies() + hz_;
        }
        curr_cost += domain_cost;
      }
      update_next_balance(sd, next_balance);
      if (pulled || rq.nr_running > 0 || (v514 && rq.ttwu_pending)) break;
    }
    if (curr_cost > rq.max_idle_balance_cost) rq.max_idle_balance_cost = curr_cost;
  }
  if (time_after(rq.next_balance, next_balance)) rq.next_balance = next_balance;
  if (rq.cfs.h_nr_running && !pulled) pulled = 1;
  if (pulled)
    rq.idle_stamp = 0;
  else if (prof_.version >= 513)
    nohz_newidle_balance(cpu);
  return pulled;
}

// ---------------------------------------------------------------------------
// Sched-idle balancing (Abel Wu's RFC, Feb 2022; fair-class.md §8)

// update_overload_status (series 4 patch 1): keep this CPU's bit in its LLC's overloaded
// mask in step with cfs_rq_overloaded; called only from the tick and when the CPU goes idle.
void KernelImpl::update_overload_status(int cpu) {
  if (!feat(Feature::SIB_OVERLOAD_MASK)) return;
  Rq& rq = cpu_rq(cpu);
  bool now_overloaded = cfs_rq_overloaded(rq);
  if (now_overloaded == rq.overloaded) return;
  rq.overloaded = now_overloaded;
  llc_shared_[static_cast<size_t>(rq.llc_id)].nr_overloaded += now_overloaded ? 1 : -1;
}

// sched_idle_balance (series 4 patch 2): a CPU with no non-idle fair task pulls one non-idle
// task from an overloaded CPU of its LLC, walking the mask from dst+1. Returns 1 if it did.
int KernelImpl::sched_idle_balance(int dst_cpu) {
  Rq& dst = cpu_rq(dst_cpu);
  if (dst.sd_llc < 0 || llc_shared_[static_cast<size_t>(dst.llc_id)].nr_overloaded == 0) return 0;
  SchedDomain& sd = dst.sd[static_cast<size_t>(dst.sd_llc)];
  const auto& span = levels_[static_cast<size_t>(sd.level_id)].span;
  if (explain_ && explain_->begin("sched_idle_balance", now_, dst_cpu, "")) {
    explain_->field(
        "overloaded_cpus",
        static_cast<long long>(llc_shared_[static_cast<size_t>(dst.llc_id)].nr_overloaded));
  }
  size_t start =
      static_cast<size_t>(std::upper_bound(span.begin(), span.end(), dst_cpu) - span.begin());
  const size_t n = span.size();
  for (size_t k = 0, i = start % n; k < n; ++k, i = wrap_next(i, n)) {
    int src_cpu = span[i];
    Rq& src = cpu_rq(src_cpu);
    if (src_cpu == dst_cpu || !src.overloaded) continue;
    ++lb_probes_;
    if (!cfs_rq_overloaded(src)) {
      sd.sib_peeked++;
      if (xp()) explain_->step(fmt::format("cpu{}: no longer overloaded (peeked)", src_cpu));
      update_overload_status(src_cpu);  // lazy clear of a stale bit
      continue;
    }
    // detach_one_task with env {sd = LLC, idle = CPU_SCHED_IDLE, LBF_DST_PINNED}.
    lb_env env;
    env.sd_idx = dst.sd_llc;
    env.dst_cpu = dst_cpu;
    env.src_cpu = src_cpu;
    env.idle = CPU_SCHED_IDLE;
    env.flags = LBF_DST_PINNED;
    ++lb_epoch_;
    Task* moved = nullptr;
    for (auto it = src.cfs_tasks.rbegin(); it != src.cfs_tasks.rend(); ++it) {
      Task& p = task(it->task);
      if (can_migrate_task(p, env)) {
        moved = &p;
        break;
      }
    }
    if (!moved) {
      sd.sib_failed++;
      if (xp()) explain_->step(fmt::format("cpu{}: no task may move (failed)", src_cpu));
      continue;
    }
    if (xp()) {
      explain_->data("src_cpu", src_cpu);
      explain_->data("pulled", task_label(moved->se.task));
      explain_->end(fmt::format("pulled {} from cpu{}", task_label(moved->se.task), src_cpu));
    }
    detach_task_lb(*moved, dst_cpu, dst.sd_llc);
    attach_task_lb(*moved, dst_cpu);
    sd.sib_pulled++;
    return 1;
  }
  if (xp()) explain_->end("nothing pulled");
  return 0;
}

// ---------------------------------------------------------------------------
// NOHZ idle balancing (fair.c v5.7)

// nohz_balance_enter_idle: the tick stops on a CPU that goes idle.
void KernelImpl::nohz_balance_enter_idle(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (!m_.build.nohz_idle) return;
  rq.has_blocked_load = true;
  if (!rq.nohz_tick_stopped) {
    if (rq.sd.empty()) return;  // on_null_domain: nohz.has_blocked is left alone too
    rq.nohz_tick_stopped = true;
    nohz_.nr_cpus++;
    llc_shared_[static_cast<size_t>(rq.llc_id)].nr_busy_cpus--;  // set_cpu_sd_state_idle
    if (prof_.version >= 516) nohz_.needs_update = true;         // 7fd7a9e0caba
  }
  nohz_.has_blocked = true;
}

// nohz_balance_exit_idle: the first busy tick of a CPU that was tickless.
void KernelImpl::nohz_balance_exit_idle(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (!rq.nohz_tick_stopped) return;
  rq.nohz_tick_stopped = false;
  nohz_.nr_cpus--;
  llc_shared_[static_cast<size_t>(rq.llc_id)].nr_busy_cpus++;  // set_cpu_sd_state_busy
}

// nohz_balancer_kick (fair.c v5.7), symmetric capacity, no asym packing.
void KernelImpl::nohz_balancer_kick(int cpu) {
  Rq& rq = cpu_rq(cpu);
  nohz_balance_exit_idle(cpu);
  if (nohz_.nr_cpus == 0) return;
  unsigned flags = 0;
  std::int64_t now = jiffies();
  if (nohz_.has_blocked && time_after(now, nohz_.next_blocked)) flags = NOHZ_STATS_KICK;
  if (!(now - nohz_.next_balance < 0)) {
    if (rq.nr_running >= 2) {
      flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
    } else if (rq.sd_llc >= 0 && llc_shared_[static_cast<size_t>(rq.llc_id)].nr_busy_cpus > 1) {
      flags = NOHZ_STATS_KICK | NOHZ_BALANCE_KICK;
    }
  }
  // v5.16 (efd984c481ab): a CPU that went tickless has its next_balance collated by an ILB.
  if (nohz_.needs_update) flags |= NOHZ_NEXT_KICK;
  if (flags) kick_ilb(flags);
}

// kick_ilb (fair.c v5.7): the first tickless idle CPU balances for all of them.
void KernelImpl::kick_ilb(unsigned flags) {
  // Up to v5.7 every kick, a stats-only one too, pushes the next one a jiffy later; v5.8
  // (3ea2f097b17e) only a balance kick, to the next jiffy.
  if (prof_.version < 508)
    nohz_.next_balance++;
  else if (flags & NOHZ_BALANCE_KICK)
    nohz_.next_balance = jiffies() + 1;
  int ilb = -1;
  for (int c = 0; c < nr_cpus(); ++c) {
    if (cpu_rq(c).nohz_tick_stopped && idle_cpu(c)) {
      ilb = c;
      break;
    }
  }
  if (ilb < 0) return;
  Rq& rq = cpu_rq(ilb);
  unsigned old = rq.nohz_flags;
  rq.nohz_flags |= flags;
  if (old & NOHZ_KICK_MASK) return;
  kick_cpu(ilb);
}

// nohz_idle_balance (fair.c v5.7), run by the kicked CPU while it is still idle. Returns
// true when the kick was handled.
bool KernelImpl::nohz_idle_balance(int this_cpu) {
  Rq& this_rq = cpu_rq(this_cpu);
  unsigned flags = this_rq.nohz_flags & NOHZ_KICK_MASK;
  if (!flags) return false;
  this_rq.nohz_flags &= ~NOHZ_KICK_MASK;
  if (!idle_cpu(this_cpu)) return false;  // got_nohz_idle_kick: the kick is stale
  _nohz_idle_balance(this_cpu, flags, CPU_IDLE);
  return true;
}

// _nohz_idle_balance (fair.c v5.7; v5.13's 7a82e5f52a35 and 64f84f273592 from profile v5.13):
// refresh the blocked load of the tickless idle CPUs and, with NOHZ_BALANCE_KICK, balance on
// their behalf. Up to v5.12 the CPUs are walked in order, then this CPU (not when newly idle:
// it has just updated its own); from v5.13 one walk starts after this CPU and ends with it,
// and a CPU's stats are refreshed only if not already this jiffy. A v5.16 NOHZ_NEXT_KICK
// alone only collates the CPUs' next_balance: no stats, no balancing. Leaves out the
// need_resched() abort (nothing reaches this CPU while the pass runs), so the walk always
// completes and no other CPU is kicked to finish it.
void KernelImpl::_nohz_idle_balance(int this_cpu, unsigned flags, cpu_idle_type idle) {
  Rq& this_rq = cpu_rq(this_cpu);
  const bool v513 = prof_.version >= 513;
  const std::int64_t now = jiffies();
  std::int64_t next_balance = now + 60 * hz_;
  bool update_next = false;
  bool has_blocked_load = false;
  const bool stats = flags & NOHZ_STATS_KICK;
  if (stats) nohz_.has_blocked = false;
  if (flags & NOHZ_NEXT_KICK) nohz_.needs_update = false;
  const int n = nr_cpus();
  for (int k = 0; k < n; ++k) {
    const int c = v513 ? (this_cpu + 1 + k) % n : k;
    Rq& rq = cpu_rq(c);
    if ((!v513 && c == this_cpu) || !rq.nohz_tick_stopped || !idle_cpu(c)) continue;
    ++lb_probes_;
    if (stats) has_blocked_load |= update_nohz_stats(c, !v513);
    if (time_after_eq(jiffies(), rq.next_balance) && (flags & NOHZ_BALANCE_KICK))
      rebalance_domains(c, CPU_IDLE);
    if (time_after(next_balance, rq.next_balance)) {
      next_balance = rq.next_balance;
      update_next = true;
    }
  }
  if (!v513) {
    if (idle != CPU_NEWLY_IDLE) {
      update_blocked_averages(this_cpu);
      has_blocked_load |= this_rq.has_blocked_load;
    }
    if (flags & NOHZ_BALANCE_KICK) rebalance_domains(this_cpu, CPU_IDLE);
  }
  if (stats) nohz_.next_blocked = now + msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz_);
  if (has_blocked_load) nohz_.has_blocked = true;
  if (update_next) nohz_.next_balance = next_balance;
}

// update_nohz_stats (fair.c v5.7): refresh a tickless idle CPU's blocked load, unless it was
// refreshed this jiffy and `force` is not set. Returns whether blocked load remains.
bool KernelImpl::update_nohz_stats(int cpu, bool force) {
  Rq& rq = cpu_rq(cpu);
  if (!rq.has_blocked_load || !rq.nohz_tick_stopped) return false;
  if (!force && !time_after(jiffies(), rq.last_blocked_load_update_tick)) return true;
  update_blocked_averages(cpu);
  return rq.has_blocked_load;
}

// nohz_newidle_balance (fair.c v4.17-v5.12; v5.13's c6f886546cb8 from profile v5.13): a CPU
// about to idle for a while refreshes the idle CPUs' blocked load itself instead of waking
// one of them. Up to v5.12 at once, from newidle_balance; from v5.13 it only sets
// NOHZ_NEWILB_KICK, and the idle loop does the update on entry (nohz_run_idle_balance).
void KernelImpl::nohz_newidle_balance(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (!m_.build.nohz_idle) return;
  if (rq.avg_idle < sysctl_sched_migration_cost) return;  // will wake up very soon
  if (!nohz_.has_blocked || time_before(jiffies(), nohz_.next_blocked)) return;
  if (prof_.version >= 513) {
    rq.nohz_flags |= NOHZ_NEWILB_KICK;
    return;
  }
  const int outer_probes = lb_probes_;
  lb_probes_ = 0;
  _nohz_idle_balance(cpu, NOHZ_STATS_KICK, CPU_NEWLY_IDLE);
  rq.debt += static_cast<Time>(lb_probes_) * m_.costs.idle_probe.ns;
  lb_probes_ = outer_probes;
}

// nohz_run_idle_balance (fair.c v5.13), from do_idle before the idle loop: only when no
// other kick is pending on this CPU (its softirq would do the same) and nothing waits to run.
// The pass's time is not charged: the CPU is about to idle.
void KernelImpl::nohz_run_idle_balance(int cpu) {
  Rq& rq = cpu_rq(cpu);
  const unsigned flags = rq.nohz_flags;
  rq.nohz_flags &= ~NOHZ_NEWILB_KICK;
  if (flags != NOHZ_NEWILB_KICK) return;
  if (rq.need_resched || rq.nr_running > 0 || !rq.wake_list.empty()) return;
  const int outer_probes = lb_probes_;
  _nohz_idle_balance(cpu, NOHZ_STATS_KICK, CPU_IDLE);
  lb_probes_ = outer_probes;
}

// /proc/schedstat version 15 (kernel/sched/stats.c v5.4–v5.19): a cpu line per CPU
// followed by its domain lines. ttwu_move_balance is 0, as in those kernels (nothing
// increments it since the wakeup balancing it counted was removed).
std::string KernelImpl::schedstat_text() const {
  std::string out = fmt::format("version 15\ntimestamp {}\n", jiffies());
  for (int cpu = 0; cpu < nr_cpus(); ++cpu) {
    const Rq& rq = rq_[static_cast<size_t>(cpu)];
    out += fmt::format("cpu{} {} 0 {} {} {} {} {} {} {}\n", cpu, rq.yld_count, rq.sched_count,
                       rq.sched_goidle, rq.ttwu_count, rq.ttwu_local, rq.cfs.exec_clock,
                       rq.run_delay, rq.nr_switches);
    for (size_t k = 0; k < rq.sd.size(); ++k) {
      const SchedDomain& sd = rq.sd[k];
      const DomainLevel& lvl = levels_[static_cast<size_t>(sd.level_id)];
      // cpumask_pr_args with %*pb (lib/vsprintf.c bitmap_string, v5.4): 32-bit chunks, most
      // significant first, comma-separated; the first is as wide as the bits it holds need
      // (nr_cpu_ids % 32, rounded up to hex digits), the others 8 digits: 8 CPUs print "0f".
      std::string mask;
      const int words = (nr_cpus() + 31) / 32;
      const int top_bits = nr_cpus() % 32 == 0 ? 32 : nr_cpus() % 32;
      for (int w = words - 1; w >= 0; --w) {
        std::uint32_t bits = 0;
        for (int c : lvl.span)
          if (c / 32 == w) bits |= 1u << (c % 32);
        if (!mask.empty()) mask += ',';
        mask += fmt::format("{:0{}x}", bits, w == words - 1 ? (top_bits + 3) / 4 : 8);
      }
      out += fmt::format("domain{} {}", k, mask);
      for (int it = CPU_IDLE; it <= CPU_NEWLY_IDLE; ++it)
        out += fmt::format(" {} {} {} {} {} {} {} {}", sd.lb_count[it], sd.lb_balanced[it],
                           sd.lb_failed[it], sd.lb_imbalance[it], sd.lb_gained[it],
                           sd.lb_hot_gained[it], sd.lb_nobusyq[it], sd.lb_nobusyg[it]);
      out +=
          fmt::format(" {} {} {} 0 0 0 0 0 0 {} {} {}", sd.alb_count, sd.alb_failed, sd.alb_pushed,
                      sd.ttwu_wake_remote, sd.ttwu_move_affine, sd.ttwu_move_balance);
      // Series 4 patch 3 appends its counters to the domain lines.
      if (feat(Feature::SIB_BALANCE))
        out += fmt::format(" {} {} {}", sd.sib_peeked, sd.sib_pulled, sd.sib_failed);
      out += "\n";
    }
  }
  return out;
}

}  // namespace schedtwin::kernel
