// Task placement at wakeup and fork (kernel/sched/fair.c, v5.4 with the
// sched-idle fallback; v5.6 and v5.7 changes behind their flags):
// select_task_rq_fair, wake_wide, wake_affine, select_idle_sibling and the
// idle-CPU search, and the fork/exec slow path find_idlest_cpu with the v5.7
// group classifier. Left out: energy-aware placement and asymmetric capacity
// (select_idle_capacity, wake_cap), NUMA preferred-node rules.
#include <fmt/core.h>

#include <algorithm>
#include <limits>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

namespace {
constexpr int kNone = -1;
}

// record_wakee (fair.c v5.4): the waker's wakee_flips decay by half once a second.
void KernelImpl::record_wakee(Task& p) {
  WakerInfo& w = current_waker();
  if (jiffies() > w.wakee_flip_decay_ts + hz_) {
    w.wakee_flips >>= 1;
    w.wakee_flip_decay_ts = jiffies();
  }
  if (w.last_wakee != p.se.task) {
    w.last_wakee = p.se.task;
    w.wakee_flips++;
  }
}

// wake_wide (fair.c v5.4): many-to-many wakeup patterns skip wake_affine.
bool KernelImpl::wake_wide(Task& p) {
  unsigned int master = current_waker().wakee_flips;
  unsigned int slave = p.waker.wakee_flips;
  unsigned int factor = static_cast<unsigned>(rq_[this_cpu_].llc_size);
  if (master < slave) std::swap(master, slave);
  if (slave < factor || master < slave * factor) return false;
  return true;
}

// wake_affine_idle (fair.c v5.4; from v5.11, d8fcb81f1acf, an idle prev_cpu is kept before
// wake_affine_weight is asked).
int KernelImpl::wake_affine_idle(int this_cpu, int prev_cpu, bool sync) {
  if (available_idle_cpu(this_cpu) && cpus_share_cache(this_cpu, prev_cpu))
    return available_idle_cpu(prev_cpu) ? prev_cpu : this_cpu;
  if (sync && cpu_rq(this_cpu).nr_running == 1) return this_cpu;
  if (prof_.version >= 511 && available_idle_cpu(prev_cpu)) return prev_cpu;
  return kNone;
}

// wake_affine_weight (fair.c v5.7; before v5.5 the CPU loads are cpu_runnable_load).
int KernelImpl::wake_affine_weight(int sd_idx, Task& p, int this_cpu, int prev_cpu, bool sync) {
  const DomainLevel& lvl = levels_[cpu_rq(this_cpu).sd[sd_idx].level_id];
  std::int64_t this_eff_load = static_cast<std::int64_t>(wakeup_cpu_load(this_cpu));
  if (sync && current_ != kNoTask) {
    std::int64_t current_load = static_cast<std::int64_t>(task_h_load(task(current_)));
    if (current_load > this_eff_load) {
      if (xp())
        explain_->step(fmt::format(
            "wake_affine_weight: sync, the waker's load {} > cpu{} load {}: the waker's CPU",
            current_load, this_cpu, this_eff_load));
      return this_cpu;
    }
    this_eff_load -= current_load;
  }
  std::int64_t task_load = static_cast<std::int64_t>(task_h_load(p));
  this_eff_load += task_load;
  if (feat(Feature::WA_BIAS)) this_eff_load *= 100;
  this_eff_load *= static_cast<std::int64_t>(capacity_of(prev_cpu));
  std::int64_t prev_eff_load = static_cast<std::int64_t>(wakeup_cpu_load(prev_cpu));
  prev_eff_load -= task_load;
  if (feat(Feature::WA_BIAS)) prev_eff_load *= 100 + (lvl.imbalance_pct - 100) / 2;
  prev_eff_load *= static_cast<std::int64_t>(capacity_of(this_cpu));
  if (sync) prev_eff_load += 1;
  if (xp())
    explain_->step(fmt::format("wake_affine_weight: this_eff_load {} {} prev_eff_load {}",
                               this_eff_load,
                               this_eff_load < prev_eff_load ? "<" : ">=", prev_eff_load));
  return this_eff_load < prev_eff_load ? this_cpu : kNone;
}

// wake_affine (fair.c v5.4). ttwu_move_affine counts every decision the two tests took,
// including wake_affine_idle's choice of an idle prev_cpu, as the kernel counts it.
int KernelImpl::wake_affine(int sd_idx, Task& p, int this_cpu, int prev_cpu, bool sync) {
  int target = kNone;
  if (feat(Feature::WA_IDLE)) {
    target = wake_affine_idle(this_cpu, prev_cpu, sync);
    if (xp() && target != kNone)
      explain_->step(fmt::format("wake_affine_idle: cpu{} ({})", target,
                                 available_idle_cpu(this_cpu) ? "the waker's CPU is idle"
                                 : target == this_cpu         ? "sync, the waker runs alone"
                                                              : "prev is idle"));
  }
  if (feat(Feature::WA_WEIGHT) && target == kNone)
    target = wake_affine_weight(sd_idx, p, this_cpu, prev_cpu, sync);
  if (target == kNone) return prev_cpu;
  cpu_rq(this_cpu).sd[static_cast<size_t>(sd_idx)].ttwu_move_affine++;
  return target;
}

// select_idle_core (fair.c v5.4): a core whose SMT siblings are all idle. Each
// sibling examined costs one probe.
int KernelImpl::select_idle_core(Task& p, int target) {
  if (!smt_present_) return kNone;
  if (!test_idle_cores(target)) return kNone;
  const Rq& trq = cpu_rq(target);
  const DomainLevel& llc = levels_[trq.sd[trq.sd_llc].level_id];
  const auto& span = llc.span;
  std::vector<char>& visited = core_visited_;  // all zero between calls
  size_t start =
      static_cast<size_t>(std::lower_bound(span.begin(), span.end(), target) - span.begin());
  int found = kNone;
  const size_t n = span.size();
  for (size_t k = 0, i = start % n; k < n && found == kNone; ++k, i = wrap_next(i, n)) {
    int core = span[i];
    if (visited[core] || !p.allowed[core]) continue;
    bool idle = true;
    for (int cpu : smt_siblings(core)) {
      visited[cpu] = 1;
      probes_++;
      if (!available_idle_cpu(cpu)) idle = false;
    }
    if (idle) found = core;
  }
  for (int c : span) visited[c] = 0;
  if (found == kNone) set_idle_cores(target, false);
  return found;
}

// select_idle_cpu (fair.c v5.4 with 3c29e651e16d; v5.6 with 17346452b25b when
// SCHED_IDLE_CONSISTENT): scan the LLC from target (v5.15+: from target + 1) under the
// SIS_PROP budget. With has_idle_core (v5.12+ shape, v5.17 code: the idle-core scan merged
// in) there is no budget: whole cores are examined, the first fully idle one is returned,
// else the first idle or sched-idle allowed CPU seen, and the LLC's idle-core hint is
// cleared; the scan's time then feeds neither avg_scan_cost nor wake_avg_idle.
int KernelImpl::select_idle_cpu(Task& p, int target, bool has_idle_core) {
  Rq& this_rq = cpu_rq(this_cpu_);
  if (this_rq.sd_llc < 0) return kNone;
  SchedDomain& this_sd = this_rq.sd[this_rq.sd_llc];
  const Rq& trq = cpu_rq(target);
  const DomainLevel& llc = levels_[trq.sd[trq.sd_llc].level_id];
  const auto& span = llc.span;
  const bool fallback = feat(Feature::SIS_SCHED_IDLE_FALLBACK);
  const bool consistent = feat(Feature::SCHED_IDLE_CONSISTENT);

  std::int64_t nr = std::numeric_limits<int>::max();
  bool account_scan = true;  // feed the scan's time into avg_scan_cost
  // --explain: what the budget was computed from (inputs in ns). `divisor`: v5.4 scales
  // avg_idle down by 512 ("large fuzz factor"); nr is the kernel's variable, and its
  // decrement-then-test loop examines nr - 1 CPUs.
  std::string why;
  auto sis_prop_inputs = [&](const char* rule, std::uint64_t avg_idle_ns, std::uint64_t divisor,
                             std::uint64_t avg_cost, std::int64_t nr_out) {
    if (!xp()) return;
    why = fmt::format(
        "{}: nr = {} CPUs x avg_idle {}{} / (avg_scan_cost {} + 1) = {}, at least 4; examines nr - "
        "1",
        rule, span.size(), avg_idle_ns, divisor > 1 ? fmt::format(" / {}", divisor) : std::string(),
        avg_cost - 1, nr_out);
    explain_->data("budget_rule", rule);
    explain_->data("budget_avg_idle_ns", static_cast<long long>(avg_idle_ns));
    explain_->data("budget_avg_idle_divisor", static_cast<long long>(divisor));
    explain_->data("budget_avg_scan_cost_ns", static_cast<long long>(avg_cost - 1));
    explain_->data("budget_nr", static_cast<long long>(nr_out));
  };
  if (feat(Feature::LATENCY_NICE_SIS)) {
    // Latency-nice RFC patches 2, 5, 6: the budget is the task's share of the LLC, at least
    // the target's SMT siblings (and 2); SIS_AVG_CPU (up to v5.11) and avg_scan_cost are kept.
    std::uint64_t avg_idle = static_cast<std::uint64_t>(this_rq.avg_idle) / 512;
    std::uint64_t avg_cost = this_sd.avg_scan_cost + 1;
    if (feat(Feature::SIS_AVG_CPU) && prof_.version < 512 && avg_idle < avg_cost) return kNone;
    std::int64_t floor =
        std::max<std::int64_t>(2, static_cast<std::int64_t>(smt_siblings(target).size()));
    nr = std::max<std::int64_t>(
        static_cast<std::int64_t>(p.latency_nice) * static_cast<std::int64_t>(span.size()) / 100,
        floor);
    if (xp()) {
      why = fmt::format(
          "LATENCY_NICE_SIS: nr = latency-nice {} x {} CPUs / 100, at least {}; "
          "examines nr - 1",
          p.latency_nice, span.size(), floor);
      explain_->data("budget_rule", "LATENCY_NICE_SIS");
    }
  } else if (has_idle_core) {
    account_scan = false;
  } else if (feat(Feature::SIS_PROP) && prof_.version >= 513) {
    // v5.13+ (94aafc3ee31d, bae4ec13640b): the waking CPU's wake_avg_idle, halved per
    // jiffy since its last wakeup and reduced by each scan's cost.
    std::int64_t now = jiffies();
    while (this_rq.wake_stamp < now && this_rq.wake_avg_idle) {
      this_rq.wake_stamp++;
      this_rq.wake_avg_idle >>= 1;
    }
    this_rq.wake_stamp = std::max(this_rq.wake_stamp, now);
    std::uint64_t avg_idle = static_cast<std::uint64_t>(this_rq.wake_avg_idle);
    std::uint64_t avg_cost = this_sd.avg_scan_cost + 1;
    std::uint64_t span_avg = span.size() * avg_idle;
    nr = span_avg > 4 * avg_cost ? static_cast<std::int64_t>(span_avg / avg_cost) : 4;
    sis_prop_inputs("SIS_PROP (v5.13: wake_avg_idle)", avg_idle, 1, avg_cost, nr);
  } else if (feat(Feature::SIS_PROP)) {
    // v5.4: "Large fuzz factor; hackbench in particular is sensitive here"
    std::uint64_t avg_idle = static_cast<std::uint64_t>(this_rq.avg_idle) / 512;
    std::uint64_t avg_cost = this_sd.avg_scan_cost + 1;
    if (feat(Feature::SIS_AVG_CPU) && avg_idle < avg_cost) return kNone;
    std::uint64_t span_avg = span.size() * avg_idle;
    if (span_avg > 4 * avg_cost)
      nr = static_cast<std::int64_t>(span_avg / avg_cost);
    else
      nr = 4;
    sis_prop_inputs("SIS_PROP (v5.4: avg_idle / 512)", static_cast<std::uint64_t>(this_rq.avg_idle),
                    512, avg_cost, nr);
  } else {
    account_scan = false;
  }
  if (feat(Feature::SIS_UTIL)) {
    // v6.0 (70fb5ccf2ebb): the LLC's scan depth from its utilization at the last balance.
    nr = llc_shared_[static_cast<size_t>(trq.llc_id)].nr_idle_scan + 1;
    if (xp()) {
      why = fmt::format(
          "SIS_UTIL: the LLC's nr_idle_scan {} (set by its last LLC balance; an idle LLC's "
          "before the first)",
          nr - 1);
      explain_->data("budget_rule", "SIS_UTIL");
    }
    if (nr == 1) {
      if (xp()) explain_->step("select_idle_cpu: " + why + ": no scan");
      return kNone;
    }
  }
  const int probes_before = probes_;
  int si_cpu = kNone;
  int found = kNone;
  const bool x = xp();
  std::string scan;
  if (x) {
    const bool all = nr == std::numeric_limits<int>::max();
    // The idle-core scan walks every core whatever the budget (v5.12+: only the plain
    // CPU scan counts it down).
    scan = has_idle_core ? std::string("select_idle_cpu idle-core scan (no budget):")
                         : fmt::format("select_idle_cpu budget={}{}:",
                                       all ? std::string("all") : std::to_string(nr - 1),
                                       why.empty() ? std::string() : " (" + why + ")");
    if (!all && !has_idle_core) explain_->data("budget", static_cast<long long>(nr - 1));
  }
  // SIS_ROTATE (latency-nice RFC patches 8, 9): resume where the last search for this
  // target stopped.
  const bool rotate = feat(Feature::SIS_ROTATE);
  const bool sis_filter = feat(Feature::SIB_SIS_FILTER) &&
                          llc_shared_[static_cast<size_t>(trq.llc_id)].nr_overloaded > 0;
  Rq& target_rq = cpu_rq(target);
  // v5.15+ (56498cfb045d "Avoid a second scan of target in select_idle_cpu"): the scan starts
  // after target, which select_idle_sibling has already tested; target comes last.
  int first = rotate && target_rq.sis_next_cpu >= 0 ? target_rq.sis_next_cpu
              : prof_.version >= 515                ? target + 1
                                                    : target;
  size_t start =
      static_cast<size_t>(std::lower_bound(span.begin(), span.end(), first) - span.begin());
  // Up to v5.5 the loop walks the whole LLC and tests the task's affinity after spending
  // budget on the CPU; v5.6 (60588bfa223f) walks only the CPUs the task may use.
  const bool budget_on_disallowed = prof_.version < 506;
  // Most tasks may run anywhere: no bit of the mask to extract per CPU then.
  const bool allowed_everywhere = p.nr_cpus_allowed == nr_cpus();
  const size_t n = span.size();
  for (size_t k = 0, i = start % n; k < n; ++k, i = wrap_next(i, n)) {
    int cpu = span[i];
    const bool allowed = allowed_everywhere || p.allowed[cpu];
    if (!allowed && !budget_on_disallowed) {
      if (x) scan += fmt::format(" {} not-allowed", cpu);
      continue;
    }
    if (sis_filter && cpu_rq(cpu).overloaded) {  // series 4 patch 4: not in `cpus`
      if (x) scan += fmt::format(" {} overloaded", cpu);
      continue;
    }
    if (rotate && allowed) target_rq.sis_next_cpu = cpu;
    if (has_idle_core) {
      // select_idle_core (v5.17): the core of `cpu`; its siblings leave the candidates.
      if (core_visited_[cpu]) continue;
      for (int sib : smt_siblings(cpu)) core_visited_[sib] = 1;
      bool idle = true;
      for (int sib : smt_siblings(cpu)) {
        probes_++;
        if (!available_idle_cpu(sib)) {
          idle = false;
          if (si_cpu == kNone && sched_idle_cpu(sib) && p.allowed[sib]) si_cpu = sib;
          if (si_cpu != kNone) break;
          continue;
        }
        if (si_cpu == kNone && p.allowed[sib]) si_cpu = sib;
      }
      if (x) scan += fmt::format(" core{}:{}", cpu, idle ? "idle" : "busy");
      if (idle) {
        found = cpu;
        break;
      }
      continue;
    }
    if (!--nr) {
      int r = fallback && !consistent ? si_cpu : kNone;
      if (x)
        explain_->step(
            scan + (r != kNone ? fmt::format(" | budget spent: fall back to sched-idle cpu{}", r)
                               : std::string(" | budget spent")));
      return r;  // the scan's time is not averaged
    }
    if (!allowed) {
      if (x) scan += fmt::format(" {} not-allowed", cpu);
      continue;
    }
    probes_++;
    if (x) scan += fmt::format(" {} {}", cpu, cpu_state(cpu));
    if (available_idle_cpu(cpu) || (consistent && sched_idle_cpu(cpu))) {
      found = cpu;
      break;
    }
    if (fallback && si_cpu == kNone && sched_idle_cpu(cpu)) si_cpu = cpu;
  }
  bool core_fallback = false;
  if (has_idle_core) {
    for (int c : span) core_visited_[c] = 0;
    if (found == kNone) {
      set_idle_cores(target, false);
      found = si_cpu;  // idle_cpu: the first idle or sched-idle CPU seen
      core_fallback = found != kNone;
    }
  }
  if (x)
    explain_->step(scan + (core_fallback
                               ? fmt::format(" | no idle core (has_idle_cores cleared): "
                                             "the first idle or sched-idle CPU seen, cpu{}",
                                             found)
                           : found != kNone ? fmt::format(" | found cpu{}", found)
                           : si_cpu != kNone && fallback && !consistent
                               ? fmt::format(" | none (the sched-idle cpu{} seen is dropped: the "
                                             "fallback returns it only when the budget runs out)",
                                             si_cpu)
                               : std::string(" | none")));
  if (!account_scan) return found;
  // The scan's duration is what the probes cost on this CPU.
  std::int64_t time = static_cast<std::int64_t>(probes_ - probes_before) * m_.costs.idle_probe.ns;
  if (prof_.version >= 513 && !feat(Feature::LATENCY_NICE_SIS))
    this_rq.wake_avg_idle -= std::min<Time>(this_rq.wake_avg_idle, time);
  std::int64_t delta = time - static_cast<std::int64_t>(this_sd.avg_scan_cost);
  this_sd.avg_scan_cost =
      static_cast<std::uint64_t>(static_cast<std::int64_t>(this_sd.avg_scan_cost) + delta / 8);
  return found;
}

// select_idle_smt (fair.c v5.4.214): an idle SMT sibling of target, else (fallback) a
// sched-idle one.
int KernelImpl::select_idle_smt(Task& p, int target) {
  if (!smt_present_) return kNone;
  const bool fallback = feat(Feature::SIS_SCHED_IDLE_FALLBACK);
  const bool consistent = feat(Feature::SCHED_IDLE_CONSISTENT);
  int si_cpu = kNone;
  for (int cpu : smt_siblings(target)) {
    if (!p.allowed[cpu]) continue;
    probes_++;
    if (available_idle_cpu(cpu) || (consistent && sched_idle_cpu(cpu))) return cpu;
    if (fallback && si_cpu == kNone && sched_idle_cpu(cpu)) si_cpu = cpu;
  }
  return si_cpu;
}

// select_idle_sibling (fair.c v5.4 order, fair-class.md §4.5).
int KernelImpl::select_idle_sibling(Task& p, int prev, int target) {
  const bool si = feat(Feature::SIS_SCHED_IDLE_FALLBACK);
  auto idle_or_si = [&](int cpu) { return available_idle_cpu(cpu) || (si && sched_idle_cpu(cpu)); };
  const bool x = xp();
  if (idle_or_si(target)) {
    if (x) explain_->step(fmt::format("target cpu{} {}: take it", target, cpu_state(target)));
    return target;
  }
  if (x) explain_->step(fmt::format("target cpu{} {}", target, cpu_state(target)));
  if (prev != target && cpus_share_cache(prev, target)) {
    if (idle_or_si(prev)) {
      if (x) explain_->step(fmt::format("prev cpu{} {}: take it", prev, cpu_state(prev)));
      return prev;
    }
    if (x) explain_->step(fmt::format("prev cpu{} {}", prev, cpu_state(prev)));
  } else if (x && prev != target) {
    explain_->step(fmt::format("prev cpu{}: another LLC than the target, not tried", prev));
  }
  // v5.4: p->recent_used_cpu is the CPU p last woke another task from (select_task_rq_fair
  // sets the waker's), and becomes prev only when taken. From v5.15 (89aafd67f28c) it is p's
  // prev at its last wakeup that got this far, written before the test; the affinity test
  // then reads the overwritten field (prev) until v6.5 (ae2ad293d6be).
  const int recent_used_cpu = p.waker.recent_used_cpu;
  const bool v515 = prof_.version >= 515;
  if (v515) p.waker.recent_used_cpu = prev;
  const int affinity_cpu = v515 && prof_.version < 605 ? prev : recent_used_cpu;
  if (recent_used_cpu >= 0 && recent_used_cpu != prev && recent_used_cpu != target &&
      cpus_share_cache(recent_used_cpu, target) && idle_or_si(recent_used_cpu) &&
      p.allowed[affinity_cpu]) {
    p.waker.recent_used_cpu = prev;
    if (x)
      explain_->step(fmt::format("recent_used_cpu cpu{} {}: take it", recent_used_cpu,
                                 cpu_state(recent_used_cpu)));
    return recent_used_cpu;
  }
  if (x && recent_used_cpu >= 0 && recent_used_cpu != prev && recent_used_cpu != target) {
    // Why the recent CPU was passed over, by the first test that failed.
    const std::string why = !cpus_share_cache(recent_used_cpu, target)
                                ? std::string("another LLC than the target")
                            : !idle_or_si(recent_used_cpu) ? cpu_state(recent_used_cpu)
                                                           : std::string("not allowed");
    explain_->step(fmt::format("recent_used_cpu cpu{}: {}, not taken", recent_used_cpu, why));
  }
  if (cpu_rq(target).sd_llc < 0) return target;
  // The latency-nice RFC's search (a v5.3 series) keeps the v5.4 shape on any profile.
  if (takes_select_idle_sibling_v513(prof_)) return select_idle_sibling_v513(p, prev, target);
  int i = kNone;
  if (feat(Feature::SIS_CORE)) {
    // --explain: "no idle core" after a scan, or no scan at all behind the LLC's hint.
    const bool hint = x && smt_present_ && test_idle_cores(target);
    const int probes_before = probes_;
    i = select_idle_core(p, target);
    if (x) {
      if (!smt_present_)
        explain_->step("select_idle_core: no SMT");
      else if (i != kNone)
        explain_->step(fmt::format("select_idle_core: core of cpu{} idle", i));
      else if (!hint)
        explain_->step("select_idle_core: the LLC's has_idle_cores hint is off: no scan");
      else
        explain_->step(
            fmt::format("select_idle_core: no idle core ({} CPUs examined; has_idle_cores cleared)",
                        probes_ - probes_before));
    }
    if (i != kNone) return i;
  } else if (x) {
    explain_->step("select_idle_core skipped (NO_SIS_CORE)");
  }
  if (feat(Feature::SIS_SMT_FIRST)) {
    // Latency-nice RFC patch 7: the target's SMT siblings before the LLC scan.
    i = select_idle_smt(p, target);
    if (i != kNone) return i;
    i = select_idle_cpu(p, target);
    if (i != kNone) return i;
    return target;
  }
  i = select_idle_cpu(p, target);
  if (i != kNone) return i;
  i = select_idle_smt(p, target);
  if (i != kNone) return i;
  return target;
}

// select_idle_sibling's tail from v5.13 (c722f35b513f, 9fe1f127b913), as in v5.17: with no
// idle core known, prev's SMT siblings first; then one LLC scan that looks for a whole idle
// core (no budget) while the LLC's hint says there may be one, else idle CPUs under the
// budget; then target.
int KernelImpl::select_idle_sibling_v513(Task& p, int prev, int target) {
  const bool x = xp();
  bool has_idle_core = false;
  if (smt_present_) {
    has_idle_core = feat(Feature::SIS_CORE) && test_idle_cores(target);
    if (!has_idle_core && cpus_share_cache(prev, target)) {
      // select_idle_smt (v5.17): prev's siblings in the LLC, idle or sched-idle.
      for (int cpu : smt_siblings(prev)) {
        if (cpu == prev || !p.allowed[cpu] || !cpus_share_cache(cpu, target)) continue;
        probes_++;
        if (available_idle_cpu(cpu) || sched_idle_cpu(cpu)) {
          if (x)
            explain_->step(fmt::format("select_idle_smt(prev): cpu{} {}", cpu, cpu_state(cpu)));
          return cpu;
        }
      }
      if (x) explain_->step("select_idle_smt(prev): none");
    }
  }
  if (x)
    explain_->step(has_idle_core ? "has_idle_cores: the scan looks for a whole idle core"
                                 : "the LLC's has_idle_cores hint is off: the scan looks for an "
                                   "idle CPU");
  const int i = select_idle_cpu(p, target, has_idle_core);
  return i != kNone ? i : target;
}

// group_has_capacity / group_is_overloaded (fair.c v5.7, fair-class.md §5.7): the
// runnable_avg clauses only with RUNNABLE_AVG_CLASSIFY.
bool KernelImpl::group_has_capacity(int imbalance_pct, const sg_lb_stats& sgs) const {
  if (sgs.sum_nr_running < sgs.group_weight) return true;
  if (feat(Feature::RUNNABLE_AVG_CLASSIFY) &&
      sgs.group_capacity * static_cast<unsigned long>(imbalance_pct) < sgs.group_runnable * 100)
    return false;
  if (sgs.group_capacity * 100 > sgs.group_util * static_cast<unsigned long>(imbalance_pct))
    return true;
  return false;
}

bool KernelImpl::group_is_overloaded(int imbalance_pct, const sg_lb_stats& sgs) const {
  if (sgs.sum_nr_running <= sgs.group_weight) return false;
  if (sgs.group_capacity * 100 < sgs.group_util * static_cast<unsigned long>(imbalance_pct))
    return true;
  if (feat(Feature::RUNNABLE_AVG_CLASSIFY) &&
      sgs.group_capacity * static_cast<unsigned long>(imbalance_pct) < sgs.group_runnable * 100)
    return true;
  return false;
}

// group_classify (fair.c v5.7): the order of the tests is the kernel's.
sg_type KernelImpl::group_classify(int imbalance_pct, int group, sg_lb_stats& sgs) {
  if (group_is_overloaded(imbalance_pct, sgs)) return sg_type::group_overloaded;
  if (groups_[group].imbalance) return sg_type::group_imbalanced;
  if (sgs.group_asym_packing) return sg_type::group_asym_packing;
  if (sgs.group_misfit_task_load) return sg_type::group_misfit_task;
  if (!group_has_capacity(imbalance_pct, sgs)) return sg_type::group_fully_busy;
  return sg_type::group_has_spare;
}

// update_sg_wakeup_stats (fair.c v5.7): group statistics without p's own contribution.
void KernelImpl::update_sg_wakeup_stats(int cpu, int sd_idx, int group, sg_lb_stats& sgs, Task& p) {
  sgs = sg_lb_stats{};
  const SchedGroup& g = groups_[group];
  for (int i : g.cpus) {
    if (!p.allowed[i]) continue;
    const Rq& rq = cpu_rq(i);
    sgs.group_load += cpu_load_without(i, p);
    sgs.group_util += cpu_util_without(i, p);
    sgs.group_runnable += cpu_runnable_without(i, p);
    unsigned local = (p.cpu == i && p.state == TaskState::Running) ? 1 : 0;
    sgs.sum_h_nr_running += rq.cfs.h_nr_running - local;
    unsigned nr_running = rq.nr_running - local;
    sgs.sum_nr_running += nr_running;
    if (!nr_running && idle_cpu(i)) sgs.idle_cpus++;
  }
  sgs.group_capacity = static_cast<unsigned long>(g.capacity);
  sgs.group_weight = static_cast<unsigned>(g.cpus.size());
  const DomainLevel& lvl = levels_[cpu_rq(cpu).sd[sd_idx].level_id];
  sgs.group_type = group_classify(lvl.imbalance_pct, group, sgs);
  if (sgs.group_type == sg_type::group_fully_busy || sgs.group_type == sg_type::group_overloaded)
    sgs.avg_load = sgs.group_load * SCHED_CAPACITY_SCALE / sgs.group_capacity;
}

// update_pick_idlest (fair.c v5.7).
bool KernelImpl::update_pick_idlest(int idlest, sg_lb_stats& idlest_sgs, int group,
                                    sg_lb_stats& sgs) {
  if (sgs.group_type < idlest_sgs.group_type) return true;
  if (sgs.group_type > idlest_sgs.group_type) return false;
  switch (sgs.group_type) {
    case sg_type::group_overloaded:
    case sg_type::group_fully_busy:
      if (idlest_sgs.avg_load <= sgs.avg_load) return false;
      break;
    case sg_type::group_imbalanced:
    case sg_type::group_asym_packing:
      return false;
    case sg_type::group_misfit_task:
      if (idlest >= 0 && groups_[idlest].max_capacity >= groups_[group].max_capacity) return false;
      break;
    case sg_type::group_has_spare:
      if (idlest_sgs.idle_cpus >= sgs.idle_cpus) return false;
      break;
  }
  return true;
}

// find_idlest_group (fair.c v5.7, the post-5.5 form; v5.3 and v5.4 take
// find_idlest_group_v54). Returns a group id or -1 to stay in the local group.
int KernelImpl::find_idlest_group(int cpu, int sd_idx, Task& p, int this_cpu) {
  const SchedDomain& sd = cpu_rq(cpu).sd[sd_idx];
  const DomainLevel& lvl = levels_[sd.level_id];
  int idlest = kNone, local = kNone;
  sg_lb_stats local_sgs, tmp_sgs, idlest_sgs;
  idlest_sgs.avg_load = std::numeric_limits<unsigned int>::max();
  idlest_sgs.group_type = sg_type::group_overloaded;
  for (int g : sd.groups) {
    const SchedGroup& grp = groups_[g];
    bool intersects = false;
    for (int c : grp.cpus) intersects |= static_cast<bool>(p.allowed[c]);
    if (!intersects) continue;
    bool local_group = std::binary_search(grp.cpus.begin(), grp.cpus.end(), this_cpu);
    sg_lb_stats& sgs = local_group ? local_sgs : tmp_sgs;
    if (local_group) local = g;
    update_sg_wakeup_stats(cpu, sd_idx, g, sgs, p);
    if (!local_group && update_pick_idlest(idlest, idlest_sgs, g, sgs)) {
      idlest = g;
      idlest_sgs = sgs;
    }
  }
  if (xp()) {
    explain_->step(fmt::format("find_idlest_group in {}", lvl.name));
    if (local != kNone) explain_->step(group_stats_text("local", local, local_sgs));
    if (idlest != kNone) explain_->step(group_stats_text("idlest", idlest, idlest_sgs));
  }
  if (idlest == kNone) return kNone;
  if (local == kNone) return idlest;
  if (local_sgs.group_type < idlest_sgs.group_type) return kNone;
  if (local_sgs.group_type > idlest_sgs.group_type) return idlest;
  switch (local_sgs.group_type) {
    case sg_type::group_overloaded:
    case sg_type::group_fully_busy: {
      unsigned long imbalance =
          NICE_0_LOAD * static_cast<unsigned long>(lvl.imbalance_pct - 100) / 100;
      if ((lvl.flags & SD_NUMA) && idlest_sgs.avg_load + imbalance >= local_sgs.avg_load)
        return kNone;
      if (idlest_sgs.avg_load >= local_sgs.avg_load + imbalance) return kNone;
      if (100 * local_sgs.avg_load <=
          static_cast<unsigned long>(lvl.imbalance_pct) * idlest_sgs.avg_load)
        return kNone;
      break;
    }
    case sg_type::group_imbalanced:
    case sg_type::group_asym_packing:
    case sg_type::group_misfit_task:
      return kNone;
    case sg_type::group_has_spare:
      // Stay on this node, close to the wakeup source, while the allowed NUMA imbalance
      // holds: v5.7 while it has an idle CPU; v5.11-v5.17 allow_numa_imbalance(local
      // sum_nr_running); v5.19+ (cb29a5c19d2d) adjust_numa_imbalance of the idle-CPU
      // difference with the new task counted.
      if (lvl.flags & SD_NUMA) {
        if (prof_.version < 511) {
          if (local_sgs.idle_cpus) return kNone;
        } else if (prof_.version < 519) {
          const auto span = static_cast<unsigned>(lvl.span.size());  // sd->span_weight
          if (allow_numa_imbalance(local_sgs.sum_nr_running, span, sd)) return kNone;
        } else {
          const long imbalance = std::labs(static_cast<long>(local_sgs.idle_cpus) -
                                           static_cast<long>(idlest_sgs.idle_cpus));
          if (adjust_numa_imbalance(imbalance, local_sgs.sum_nr_running + 1, 0, sd) == 0)
            return kNone;
        }
      }
      if (local_sgs.idle_cpus >= idlest_sgs.idle_cpus) return kNone;
      break;
  }
  return idlest;
}

// find_idlest_group (fair.c v5.4, before 57abff067a08 reworked it in v5.5): profiles v5.3 and
// v5.4. Groups compare their runnable load (capacity-scaled) within an imbalance of
// NICE_0_LOAD x (imbalance_pct - 100)%, then their load_avg by imbalance_scale; outside a
// fork the group with the most spare capacity wins first when the task fits in half of it.
// Sums over every CPU of a group, as for_each_cpu(sched_group_span) does. Returns a group id
// or -1 to stay in the local group.
int KernelImpl::find_idlest_group_v54(int cpu, int sd_idx, Task& p, int this_cpu,
                                      unsigned sd_flag) {
  const SchedDomain& sd = cpu_rq(cpu).sd[sd_idx];
  const DomainLevel& lvl = levels_[sd.level_id];
  constexpr unsigned long kMax = std::numeric_limits<unsigned long>::max();
  int idlest = kNone, most_spare_sg = kNone, local = kNone;
  unsigned long min_runnable_load = kMax, this_runnable_load = kMax;
  unsigned long min_avg_load = kMax, this_avg_load = kMax;
  unsigned long most_spare = 0, this_spare = 0;
  const auto pct = static_cast<unsigned long>(lvl.imbalance_pct);
  const unsigned long imbalance_scale = 100 + (pct - 100) / 2;
  const unsigned long imbalance = NICE_0_LOAD * (pct - 100) / 100;
  struct Seen {
    int group;
    unsigned long runnable_load, avg_load, max_spare;
  };
  std::vector<Seen> seen;  // for --explain only
  for (int g : sd.groups) {
    const SchedGroup& grp = groups_[static_cast<size_t>(g)];
    bool intersects = false;
    for (int c : grp.cpus) intersects |= static_cast<bool>(p.allowed[c]);
    if (!intersects) continue;
    const bool local_group = std::binary_search(grp.cpus.begin(), grp.cpus.end(), this_cpu);
    unsigned long avg_load = 0, runnable_load = 0, max_spare_cap = 0;
    for (int i : grp.cpus) {
      runnable_load += cpu_runnable_load(i);
      avg_load += cpu_rq(i).cfs.avg.load_avg;
      // capacity_spare_without
      const unsigned long cap = static_cast<unsigned long>(capacity_of(i));
      const unsigned long util = cpu_util_without(i, p);
      max_spare_cap = std::max(max_spare_cap, cap > util ? cap - util : 0);
    }
    const auto capacity = static_cast<unsigned long>(grp.capacity);
    avg_load = avg_load * SCHED_CAPACITY_SCALE / capacity;
    runnable_load = runnable_load * SCHED_CAPACITY_SCALE / capacity;
    if (xp()) seen.push_back({g, runnable_load, avg_load, max_spare_cap});
    if (local_group) {
      local = g;
      this_runnable_load = runnable_load;
      this_avg_load = avg_load;
      this_spare = max_spare_cap;
    } else {
      if (min_runnable_load > runnable_load + imbalance) {
        min_runnable_load = runnable_load;
        min_avg_load = avg_load;
        idlest = g;
      } else if (runnable_load < min_runnable_load + imbalance &&
                 100 * min_avg_load > imbalance_scale * avg_load) {
        min_avg_load = avg_load;
        idlest = g;
      }
      if (most_spare < max_spare_cap) {
        most_spare = max_spare_cap;
        most_spare_sg = g;
      }
    }
  }
  if (xp()) {
    explain_->step(fmt::format("find_idlest_group in {} (v5.4: runnable load, imbalance {})",
                               lvl.name, imbalance));
    for (const Seen& x : seen)
      explain_->step(
          fmt::format("{} {}: runnable_load={} avg_load={} max_spare_cap={}",
                      x.group == local ? "local" : "group",
                      machine::format_cpu_list(groups_[static_cast<size_t>(x.group)].cpus),
                      x.runnable_load, x.avg_load, x.max_spare));
    if (local == kNone)
      explain_->step(fmt::format(
          "local group not in the task's mask: this_runnable_load ULONG_MAX, + imbalance = {}",
          this_runnable_load + imbalance));
  }
  // Spare capacity is not used at fork: the new task's utilization is not set yet.
  if (!(sd_flag & SD_BALANCE_FORK)) {
    const unsigned long half_util = task_util(p) / 2;
    if (this_spare > half_util && imbalance_scale * this_spare > 100 * most_spare) return kNone;
    if (most_spare > half_util) return most_spare_sg;
  }
  if (idlest == kNone) return kNone;
  if ((lvl.flags & SD_NUMA) && min_runnable_load + imbalance >= this_runnable_load) return kNone;
  if (min_runnable_load > this_runnable_load + imbalance) return kNone;
  if (this_runnable_load < min_runnable_load + imbalance &&
      100 * this_avg_load < imbalance_scale * min_avg_load)
    return kNone;
  return idlest;
}

// find_idlest_group_cpu (fair.c v5.4 with 3c29e651e16d; v5.6 17346452b25b returns the
// first sched-idle CPU at once). Idle CPUs compete by the exit latency the kernel sees.
int KernelImpl::find_idlest_group_cpu(int group, Task& p, int this_cpu) {
  const SchedGroup& g = groups_[group];
  if (g.cpus.size() == 1) return g.cpus[0];
  const bool fallback = feat(Feature::SIS_SCHED_IDLE_FALLBACK);
  const bool consistent = feat(Feature::SCHED_IDLE_CONSISTENT);
  unsigned long min_load = std::numeric_limits<unsigned long>::max();
  Time min_exit_latency = std::numeric_limits<Time>::max();
  Time latest_idle_timestamp = 0;
  int least_loaded_cpu = this_cpu, shallowest_idle_cpu = kNone, si_cpu = kNone;
  for (int i : g.cpus) {
    if (!p.allowed[i]) continue;
    // Series 4 patch 5: an idle task does not stop at a sched-idle CPU.
    const bool spread = feat(Feature::SIB_IDLE_TASK_SPREAD) && task_h_idle(p);
    if (consistent && !spread && sched_idle_cpu(i)) return i;
    const Rq& rq = cpu_rq(i);
    if (available_idle_cpu(i)) {
      const machine::IdleState* idle =
          rq.idle_state >= 0 ? &m_.idle_states[static_cast<size_t>(rq.idle_state)] : nullptr;
      if (idle && idle->exit_latency_ns < min_exit_latency) {
        min_exit_latency = idle->exit_latency_ns;
        latest_idle_timestamp = rq.idle_stamp;
        shallowest_idle_cpu = i;
      } else if ((!idle || idle->exit_latency_ns == min_exit_latency) &&
                 rq.idle_stamp > latest_idle_timestamp) {
        latest_idle_timestamp = rq.idle_stamp;
        shallowest_idle_cpu = i;
      }
    } else if (shallowest_idle_cpu == kNone && si_cpu == kNone) {
      if (fallback && !spread && sched_idle_cpu(i)) {
        si_cpu = i;
        continue;
      }
      unsigned long load = wakeup_cpu_load(i);
      if (load < min_load) {
        min_load = load;
        least_loaded_cpu = i;
      }
    }
  }
  if (shallowest_idle_cpu != kNone) return shallowest_idle_cpu;
  if (si_cpu != kNone) return si_cpu;
  return least_loaded_cpu;
}

// find_idlest_cpu (fair.c v5.4): walk down from the widest domain with sd_flag.
int KernelImpl::find_idlest_cpu(int sd_idx, Task& p, int cpu, int prev_cpu, unsigned sd_flag) {
  int new_cpu = cpu;
  {
    const DomainLevel& lvl = levels_[cpu_rq(cpu).sd[sd_idx].level_id];
    bool intersects = false;
    for (int c : lvl.span) intersects |= static_cast<bool>(p.allowed[c]);
    if (!intersects) return prev_cpu;
  }
  if (!(sd_flag & SD_BALANCE_FORK)) sync_entity_load_avg(p.se, *p.se.cfs);
  int sd = sd_idx;
  while (sd >= 0) {
    const SchedDomain& d = cpu_rq(cpu).sd[sd];
    const DomainLevel& lvl = levels_[d.level_id];
    if (!(lvl.flags & sd_flag)) {
      sd = d.child;
      continue;
    }
    int group = prof_.version < 505 ? find_idlest_group_v54(cpu, sd, p, cpu, sd_flag)
                                    : find_idlest_group(cpu, sd, p, cpu);
    if (group == kNone) {
      if (xp()) explain_->step("stay in the local group");
      sd = d.child;
      continue;
    }
    new_cpu = find_idlest_group_cpu(group, p, cpu);
    if (xp()) explain_->step(fmt::format("go to the idlest group: cpu{}", new_cpu));
    if (new_cpu == cpu) {
      sd = d.child;
      continue;
    }
    cpu = new_cpu;
    size_t weight = lvl.span.size();
    sd = kNone;
    const Rq& nrq = cpu_rq(cpu);
    for (size_t k = 0; k < nrq.sd.size(); ++k) {
      const DomainLevel& t = levels_[nrq.sd[k].level_id];
      if (weight <= t.span.size()) break;
      if (t.flags & sd_flag) sd = static_cast<int>(k);
    }
  }
  return new_cpu;
}

// select_task_rq_fair (fair.c v5.4, fair-class.md §4.2). this_cpu_ is the waker's CPU.
int KernelImpl::select_task_rq_fair(Task& p, int prev_cpu, unsigned sd_flag, unsigned wake_flags) {
  int cpu = this_cpu_;
  int new_cpu = prev_cpu;
  bool want_affine = false;
  bool sync = (wake_flags & WF_SYNC) != 0;
  if (sd_flag & SD_BALANCE_WAKE) {
    record_wakee(p);
    bool wide = wake_wide(p);
    want_affine = !wide && p.allowed[cpu];
    if (xp()) {
      explain_->flag("wake_wide", wide);
      explain_->flag("want_affine", want_affine);
      // wake_wide's inputs: both flip counts and the LLC size they are compared with.
      explain_->data("waker_wakee_flips", current_waker().wakee_flips);
      explain_->data("wakee_wakee_flips", p.waker.wakee_flips);
      explain_->data("wake_wide_factor", rq_[this_cpu_].llc_size);
    }
  }
  int sd = kNone;
  const Rq& rq = cpu_rq(cpu);
  for (size_t k = 0; k < rq.sd.size(); ++k) {
    const DomainLevel& lvl = levels_[rq.sd[k].level_id];
    if (want_affine && (lvl.flags & SD_WAKE_AFFINE) &&
        std::binary_search(lvl.span.begin(), lvl.span.end(), prev_cpu)) {
      if (cpu != prev_cpu) new_cpu = wake_affine(static_cast<int>(k), p, cpu, prev_cpu, sync);
      if (xp()) explain_->data("affine_target_cpu", new_cpu);
      if (xp())
        explain_->step(fmt::format("wake_affine in {} {}: target cpu{}{}", lvl.name, "domain",
                                   new_cpu,
                                   cpu == prev_cpu  ? " (waker is on prev)"
                                   : new_cpu == cpu ? " (the waker's CPU)"
                                                    : " (prev)"));
      sd = kNone;  // Prefer wake_affine over balance flags
      break;
    }
    if (lvl.flags & sd_flag)
      sd = static_cast<int>(k);
    else if (!want_affine)
      break;
  }
  if (sd != kNone) {
    new_cpu = find_idlest_cpu(sd, p, cpu, prev_cpu, sd_flag);
    if (xp())
      explain_->step(fmt::format("slow path find_idlest_cpu from {}: cpu{}",
                                 levels_[rq.sd[sd].level_id].name, new_cpu));
  } else if (sd_flag & SD_BALANCE_WAKE) {
    new_cpu = select_idle_sibling(p, prev_cpu, new_cpu);
    if (want_affine && prof_.version < 515) current_waker().recent_used_cpu = cpu;
  }
  return new_cpu;
}

// __update_idle_core (fair.c v5.4): called when cpu switches to idle.
void KernelImpl::update_idle_core(int cpu) {
  if (!smt_present_ || test_idle_cores(cpu)) return;
  for (int s : smt_siblings(cpu)) {
    if (s == cpu) continue;
    if (!available_idle_cpu(s)) return;
  }
  set_idle_cores(cpu, true);
}

}  // namespace schedtwin::kernel
