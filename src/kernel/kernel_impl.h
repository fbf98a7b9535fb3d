// KernelImpl: the whole kernel model of one simulation. Its member functions
// are spread over the files of src/kernel/ by concern, like kernel/sched/:
//   core.cpp     try_to_wake_up, schedule, ticks, timers, IPIs, CPU progress
//   fair.cpp     the fair class: vruntime, enqueue/dequeue, pick, preemption
//   load_avg.cpp PELT bookkeeping of entities and cfs_rqs, util_est
//   wakeup.cpp   select_task_rq_fair and the idle-CPU search
//   topology.cpp sched domains and groups
//   idle.cpp     the cpuidle governor
#pragma once
#include <deque>
#include <vector>

#include "engine/event_queue.h"
#include "engine/rng.h"
#include "kernel/kernel.h"
#include "kernel/sched.h"
#include "machine/machine.h"

namespace schedtwin::kernel {

// Queue flags (kernel ENQUEUE_* / DEQUEUE_*).
enum : int {
  DEQUEUE_SLEEP = 0x01,
  DEQUEUE_SAVE = 0x02,
  DEQUEUE_MOVE = 0x04,
  ENQUEUE_WAKEUP = 0x01,
  ENQUEUE_MIGRATED = 0x40,
};

// update_load_avg flags.
enum : int { UPDATE_TG = 0x1, SKIP_AGE_LOAD = 0x2, DO_ATTACH = 0x4 };

// Event kinds of the engine slots this kernel owns.
enum EventKind : std::uint32_t { EV_TICK, EV_STEP, EV_IPI, EV_IDLE_EXIT, EV_TIMER };

enum class sg_type : int {
  group_has_spare = 0,
  group_fully_busy,
  group_misfit_task,
  group_asym_packing,
  group_imbalanced,
  group_overloaded,
};

struct sg_lb_stats {
  unsigned long avg_load = 0;
  unsigned long group_load = 0;
  unsigned long group_capacity = 0;
  unsigned long group_util = 0;
  unsigned long group_runnable = 0;
  unsigned int sum_nr_running = 0;
  unsigned int sum_h_nr_running = 0;
  unsigned int idle_cpus = 0;
  unsigned int group_weight = 0;
  sg_type group_type = sg_type::group_has_spare;
  unsigned int group_asym_packing = 0;
  unsigned long group_misfit_task_load = 0;
};

class KernelImpl {
 public:
  KernelImpl(const machine::Machine& m, const Config& cfg);

  // ---- state ----
  machine::Machine m_;
  Config cfg_;
  Profile prof_;
  engine::EventQueue q_;
  engine::Rng rng_;
  Time now_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t switches_ = 0;
  std::vector<Rq> rq_;
  std::deque<Task> tasks_;  // deque: entities are linked into intrusive trees, so they never move
  std::vector<LlcShared> llc_shared_;
  std::vector<DomainLevel> levels_;
  std::vector<SchedGroup> groups_;
  // Execution context: which CPU is executing kernel code right now and on behalf of
  // which task (kNoTask: interrupt / idle task).
  int this_cpu_ = 0;
  TaskId current_ = kNoTask;
  bool smt_present_ = false;
  // True while a CPU runs kernel code that checks need_resched when it ends (a task's
  // system call, an interrupt handler, the tick); a local resched_curr then needs no kick.
  bool in_cpu_context_ = false;
  mutable TaskStats stats_scratch_;

  // tunables (ns), scaled by 1 + ilog2(min(ncpus, 8)) (fair-class.md §3.2)
  Time sysctl_sched_latency = 0, sysctl_sched_min_granularity = 0,
       sysctl_sched_wakeup_granularity = 0;
  Time sysctl_sched_migration_cost = 500 * kNsPerUs;
  unsigned sched_nr_latency = 8;
  int hz_ = 250;
  Time tick_ns_ = 4 * kNsPerMs;

  bool feat(Feature f) const { return prof_.features.has(f); }
  std::int64_t jiffies() const { return now_ / tick_ns_; }
  Task& task(TaskId t) { return tasks_[static_cast<size_t>(t)]; }
  Task* task_of(sched_entity* se) { return se ? &tasks_[static_cast<size_t>(se->task)] : nullptr; }
  Rq& cpu_rq(int cpu) { return rq_[static_cast<size_t>(cpu)]; }
  int nr_cpus() const { return static_cast<int>(rq_.size()); }

  // ---- core.cpp ----
  TaskId create_task(const TaskAttr& attr, TaskBody* body, int parent_cpu);
  bool try_to_wake_up(TaskId p, unsigned wake_flags);
  void arm_timer(TaskId t, Time expires);
  void run_until(Time end);
  void dispatch(engine::SlotId slot);
  void on_tick(int cpu);
  void on_step_done(int cpu);
  void on_ipi(int cpu);
  void on_idle_exit(int cpu);
  void on_timer(TaskId t);
  void handle_timer_irq(int cpu, TaskId t);
  void ttwu_queue(TaskId p, int cpu, unsigned wake_flags);
  void process_wake_list(int cpu);
  void set_affinity(TaskId t, const std::vector<int>& cpus);
  void set_scheduler(TaskId t, Policy policy, int nice);
  void move_task(TaskId t, int dest_cpu);
  const TaskStats& task_stats(TaskId t) const;
  int nr_tasks_i() const { return static_cast<int>(tasks_.size()); }
  void ttwu_do_activate(int cpu, TaskId p, unsigned wake_flags);
  void check_preempt_curr(int cpu, TaskId p, unsigned wake_flags);
  void resched_curr(int cpu);
  void kick_cpu(int cpu);  // deliver an IPI or wake a polling CPU
  void schedule(int cpu);
  void run_task_program(int cpu);
  void settle(int cpu);
  void rearm_step(int cpu);
  void update_speed(int cpu);
  void smt_siblings_changed(int cpu);
  void enter_idle(int cpu);
  void start_idle_exit(int cpu, Time delay);
  void set_task_cpu(TaskId p, int new_cpu);
  void activate_task(int cpu, TaskId p, int flags);
  void deactivate_task(int cpu, TaskId p, int flags);
  bool idle_cpu(int cpu) const;
  bool available_idle_cpu(int cpu) const { return idle_cpu(cpu); }
  bool sched_idle_rq(const Rq& rq) const {
    return rq.nr_running == rq.cfs.idle_h_nr_running && rq.nr_running > 0;
  }
  bool sched_idle_cpu(int cpu) const { return sched_idle_rq(rq_[static_cast<size_t>(cpu)]); }
  bool cpus_share_cache(int a, int b) const { return rq_[a].llc_id == rq_[b].llc_id; }
  WakerInfo& current_waker();
  void charge(int cpu, Time ns);

  // ---- fair.cpp ----
  void set_load_weight(Task& p);
  void update_curr(cfs_rq& cfs);
  void update_min_vruntime(cfs_rq& cfs);
  Time sched_slice(cfs_rq& cfs, sched_entity& se);
  Time sched_vslice(cfs_rq& cfs, sched_entity& se);
  Time __sched_period(unsigned long nr_running) const;
  void place_entity(cfs_rq& cfs, sched_entity& se, bool initial);
  void enqueue_entity(cfs_rq& cfs, sched_entity& se, int flags);
  void dequeue_entity(cfs_rq& cfs, sched_entity& se, int flags);
  void enqueue_task_fair(Rq& rq, Task& p, int flags);
  void dequeue_task_fair(Rq& rq, Task& p, int flags);
  void put_prev_entity(cfs_rq& cfs, sched_entity& prev);
  void set_next_entity(cfs_rq& cfs, sched_entity& se);
  sched_entity* pick_next_entity(cfs_rq& cfs, sched_entity* curr);
  TaskId pick_next_task_fair(Rq& rq, TaskId prev);
  void check_preempt_tick(cfs_rq& cfs, sched_entity& curr);
  void entity_tick(cfs_rq& cfs, sched_entity& curr);
  void check_preempt_wakeup(Rq& rq, Task& p, unsigned wake_flags);
  int wakeup_preempt_entity(sched_entity& curr, sched_entity& se);
  void clear_buddies(cfs_rq& cfs, sched_entity& se);
  void yield_task_fair(Rq& rq);
  void task_fork_fair(Task& p, int this_cpu);
  Time calc_delta_fair(Time delta, const sched_entity& se) const;

  // ---- load_avg.cpp ----
  void update_load_avg(cfs_rq& cfs, sched_entity& se, int flags);
  bool update_cfs_rq_load_avg(Time now, cfs_rq& cfs);
  void attach_entity_load_avg(cfs_rq& cfs, sched_entity& se);
  void detach_entity_load_avg(cfs_rq& cfs, sched_entity& se);
  void remove_entity_load_avg(sched_entity& se, cfs_rq& cfs);
  void sync_entity_load_avg(sched_entity& se, cfs_rq& cfs);
  void init_entity_runnable_average(sched_entity& se);
  void post_init_entity_util_avg(Task& p);
  void util_est_enqueue(cfs_rq& cfs, Task& p);
  void util_est_dequeue(cfs_rq& cfs, Task& p, bool task_sleep);
  unsigned long task_util(const Task& p) const { return p.se.avg.util_avg; }
  unsigned long _task_util_est(const Task& p) const;
  unsigned long task_util_est(const Task& p) const;
  unsigned long cpu_load(int cpu) const { return rq_[cpu].cfs.avg.load_avg; }
  unsigned long cpu_runnable(int cpu) const { return rq_[cpu].cfs.avg.runnable_avg; }
  unsigned long cpu_util(int cpu) const;
  unsigned long cpu_load_without(int cpu, const Task& p) const;
  unsigned long cpu_runnable_without(int cpu, const Task& p) const;
  unsigned long cpu_util_without(int cpu, const Task& p) const;
  unsigned long capacity_of(int cpu) const { return rq_[cpu].cpu_capacity; }
  unsigned long capacity_orig_of(int cpu) const { return rq_[cpu].cpu_capacity_orig; }

  // ---- wakeup.cpp ----
  int select_task_rq_fair(Task& p, int prev_cpu, unsigned sd_flag, unsigned wake_flags);
  void record_wakee(Task& p);
  bool wake_wide(Task& p);
  int wake_affine(int sd_idx, Task& p, int this_cpu, int prev_cpu, bool sync);
  int wake_affine_idle(int this_cpu, int prev_cpu, bool sync);
  int wake_affine_weight(int sd_idx, Task& p, int this_cpu, int prev_cpu, bool sync);
  int select_idle_sibling(Task& p, int prev, int target);
  int select_idle_core(Task& p, int target);
  int select_idle_cpu(Task& p, int target);
  int select_idle_smt(Task& p, int target);
  int find_idlest_cpu(int sd_idx, Task& p, int cpu, int prev_cpu, unsigned sd_flag);
  int find_idlest_group(int cpu, int sd_idx, Task& p, int this_cpu);
  int find_idlest_group_cpu(int group, Task& p, int this_cpu);
  void update_sg_wakeup_stats(int cpu, int sd_idx, int group, sg_lb_stats& sgs, Task& p);
  bool update_pick_idlest(int idlest, sg_lb_stats& idlest_sgs, int group, sg_lb_stats& sgs);
  sg_type group_classify(int imbalance_pct, int group, sg_lb_stats& sgs);
  bool group_has_capacity(int imbalance_pct, const sg_lb_stats& sgs) const;
  bool group_is_overloaded(int imbalance_pct, const sg_lb_stats& sgs) const;
  void update_idle_core(int cpu);
  bool test_idle_cores(int cpu) const { return llc_shared_[rq_[cpu].llc_id].has_idle_cores; }
  void set_idle_cores(int cpu, bool v) { llc_shared_[rq_[cpu].llc_id].has_idle_cores = v; }
  int probes_ = 0;  // CPUs examined by the current search, charged to the waker

  // ---- topology.cpp ----
  void build_sched_domains();
  std::string sched_domain_debug() const;

  // ---- idle.cpp ----
  int cpuidle_select(int cpu);
  void cpuidle_reflect(int cpu, Time idle_duration);
};

}  // namespace schedtwin::kernel
