// KernelImpl: the whole kernel model of one simulation. Its member functions
// are spread over the files of src/kernel/ by concern, like kernel/sched/:
//   core.cpp     try_to_wake_up, schedule, ticks, timers, IPIs, CPU progress
//   fair.cpp     the fair class: vruntime, enqueue/dequeue, pick, preemption
//   load_avg.cpp PELT bookkeeping of entities and cfs_rqs, util_est
//   wakeup.cpp   select_task_rq_fair and the idle-CPU search
//   balance.cpp  load balancing: periodic, newly idle, NOHZ idle, active
//   topology.cpp sched domains and groups
//   idle.cpp     the cpuidle governor
#pragma once
#include <climits>
#include <memory>
#include <vector>

#include "engine/event_queue.h"
#include "engine/rng.h"
#include "kernel/explain.h"
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
  ENQUEUE_INITIAL = 0x80,  // v6.6: task_fork_fair's placement (PLACE_DEADLINE_INITIAL)
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

// enum cpu_idle_type (include/linux/sched/idle.h): also the schedstat column order.
// CPU_SCHED_IDLE: sched-idle balancing RFC (series 4), not counted in schedstat's arrays.
enum cpu_idle_type : int { CPU_IDLE = 0, CPU_NOT_IDLE = 1, CPU_NEWLY_IDLE = 2, CPU_SCHED_IDLE = 3 };

enum migration_type : int { migrate_load = 0, migrate_util, migrate_task, migrate_misfit };

// lb_env flags (fair.c v5.7).
enum : unsigned {
  LBF_ALL_PINNED = 0x01,
  LBF_NEED_BREAK = 0x02,
  LBF_DST_PINNED = 0x04,
  LBF_SOME_PINNED = 0x08,
  LBF_NOHZ_STATS = 0x10,  // v4.17-v5.12: newly idle balancing refreshes idle CPUs' blocked load
  LBF_NOHZ_AGAIN = 0x20,
};

// nohz_flags (sched.h v5.7; NOHZ_NEWILB_KICK from v5.13, c6f886546cb8; NOHZ_NEXT_KICK from
// v5.16, efd984c481ab: only collate nohz.next_balance).
enum : unsigned {
  NOHZ_BALANCE_KICK = 0x1,
  NOHZ_STATS_KICK = 0x2,
  NOHZ_NEWILB_KICK = 0x4,
  NOHZ_NEXT_KICK = 0x8,
  NOHZ_KICK_MASK = NOHZ_BALANCE_KICK | NOHZ_STATS_KICK | NOHZ_NEXT_KICK,
};

// struct lb_env (fair.c v5.7). `cpus` is the balancing mask: the domain span minus the
// CPUs excluded by an epoch stamp in KernelImpl::lb_excluded_.
struct lb_env {
  int sd_idx = 0;   // index into the dst CPU's domains
  int sd_cpu = -1;  // env->sd's CPU, the balancing one: dst_cpu until LBF_DST_PINNED moves it
  int src_cpu = -1;
  int dst_cpu = 0;
  int dst_group = -1;  // dst_grpmask: the local group
  int new_dst_cpu = -1;
  cpu_idle_type idle = CPU_NOT_IDLE;
  long imbalance = 0;
  unsigned flags = 0;
  unsigned loop = 0, loop_break = 32, loop_max = 0;
  migration_type mtype = migrate_load;
  const char* balanced_why = "";  // --explain: the test that found the domain balanced
};

// struct sd_lb_stats (fair.c v5.7).
struct sd_lb_stats {
  int busiest = -1;
  int local = -1;
  unsigned long total_load = 0;
  unsigned long total_capacity = 0;
  unsigned long avg_load = 0;
  bool prefer_sibling = false;
  // idle_cpus UINT_MAX: any has_spare group with tasks beats "no busiest group yet" in
  // update_sd_pick_busiest, however many idle CPUs it has.
  sg_lb_stats busiest_stat{.idle_cpus = UINT_MAX};
  sg_lb_stats local_stat;
};

// A task group's per-CPU scheduling state (struct task_group's cfs_rq[] and se[]).
struct GroupCpu {
  cfs_rq cfs;
  sched_entity se;
};

// Runtime state of a task group besides its attributes (struct task_group, v5.15).
struct TaskGroupRt {
  unsigned long shares = NICE_0_LOAD;  // tg->shares in user-visible units (scale_load_down)
  long load_avg = 0;                   // tg->load_avg: sum of the per-CPU contributions
  bool idle = false;                   // tg->idle (cpu.idle)
  std::unique_ptr<GroupCpu[]> cpu;     // per CPU; null for the root group (it uses rq->cfs)
};

// The tasks by id. Entities are linked into intrusive trees, so a task never moves: blocks of
// 64 allocated as the count grows; task(id) is a shift, a mask and two loads (std::deque holds
// one 500-byte Task per block and indexes through iterator arithmetic).
class TaskStore {
 public:
  Task& operator[](std::size_t i) { return blocks_[i >> kShift][i & kMask]; }
  const Task& operator[](std::size_t i) const { return blocks_[i >> kShift][i & kMask]; }
  std::size_t size() const { return size_; }
  Task& emplace_back() {
    if ((size_ & kMask) == 0) blocks_.push_back(std::make_unique<Task[]>(kMask + 1));
    return (*this)[size_++];
  }
  Task& back() { return (*this)[size_ - 1]; }

 private:
  static constexpr unsigned kShift = 6;
  static constexpr std::size_t kMask = (std::size_t{1} << kShift) - 1;
  std::vector<std::unique_ptr<Task[]>> blocks_;
  std::size_t size_ = 0;
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
  // The kernel's clocks have run since boot by the time a workload starts; the model's start
  // at 0. 2^30 ns (about a second), a whole number of PELT microseconds, keeps PELT's 1024-ns
  // steps where they would be from 0.
  static constexpr std::uint64_t kClockSinceBoot = std::uint64_t{1} << 30;
  // rq_clock_pelt: no task is created at PELT time 0, which would read as "not attached"
  // (last_update_time 0) and skip the task's PELT updates until its first sleep.
  std::uint64_t clock_pelt() const { return static_cast<std::uint64_t>(now_) + kClockSinceBoot; }
  // rq_clock_task, what se.exec_start is stamped with: a task never run or just migrated
  // (exec_start 0, as __sched_fork and migrate_task_rq_fair leave it) is long past
  // sysctl_sched_migration_cost in task_hot, however early in the run.
  Time clock_task() const { return now_ + static_cast<Time>(kClockSinceBoot); }
  std::uint64_t events_ = 0;
  std::uint64_t switches_ = 0;
  std::uint64_t migrations_ = 0;  // set_task_cpu to another CPU, any path
  std::vector<Rq> rq_;
  TaskStore tasks_;
  std::vector<LlcShared> llc_shared_;
  std::vector<DomainLevel> levels_;
  std::vector<SchedGroup> groups_;
  // Execution context: which CPU is executing kernel code right now and on behalf of
  // which task (kNoTask: interrupt / idle task).
  int this_cpu_ = 0;
  TaskId current_ = kNoTask;
  bool smt_present_ = false;
  std::vector<std::vector<int>> smt_sib_;  // per CPU: its core's hardware threads, ascending
  const std::vector<int>& smt_siblings(int cpu) const { return smt_sib_[static_cast<size_t>(cpu)]; }
  // True while a CPU runs kernel code that checks need_resched when it ends (a task's
  // system call, an interrupt handler, the tick); a local resched_curr then needs no kick.
  bool in_cpu_context_ = false;
  // Handling a timer interrupt or an IPI's wake list: the trace's hardirq flag.
  bool in_hardirq_ = false;
  mutable TaskStats stats_scratch_;
  std::vector<TaskGroupAttr> tgs_;  // task groups; 0 is the root
  std::vector<TaskGroupRt> tg_rt_;  // same index as tgs_
  int create_task_group(const TaskGroupAttr& g);
  cfs_rq& tg_cfs_rq(int tg, int cpu) {
    return tg == 0 ? rq_[static_cast<size_t>(cpu)].cfs
                   : tg_rt_[static_cast<size_t>(tg)].cpu[static_cast<size_t>(cpu)].cfs;
  }
  sched_entity* tg_se(int tg, int cpu) {
    return tg == 0 ? nullptr : &tg_rt_[static_cast<size_t>(tg)].cpu[static_cast<size_t>(cpu)].se;
  }
  void set_task_rq(Task& p, int cpu);
  TraceSink* trace_ = nullptr;
  // ---- check.cpp ----
  bool check_ = false;
  CheckStats check_stats_;
  std::vector<int> check_running_;
  std::vector<int> check_waiting_cpus_;  // CPUs with a task waiting, rebuilt per check
  static constexpr Time kWastedThreshold = 10 * kNsPerMs;
  // Task groups x CPUs: each is a cfs_rq and a group entity (about 0.5 KiB).
  static constexpr size_t kMaxGroupCpus = size_t{1} << 19;
  void check_invariants();
  std::string dump_state() const;
  Explain* explain_ = nullptr;
  // True while a decision record is open: instrumentation formats text only then.
  bool xp() const { return explain_ && explain_->active(); }
  // One step of your own in the --explain log: added to the record open now (a wakeup, fork
  // or balance pass, or a queued wakeup's "preempt" record), or, where none is
  // (newidle_balance before its domain loop, the NOHZ kicks, the tick), written as a one-step
  // "note" record of `cpu` and its current task. Formats nothing without --explain.
  void explain_step(int cpu, std::string_view text);
  std::string task_label(TaskId t) const;
  // "idle", "sched-idle", "busy (nr_running=2)", "busy (nr_running=1, still leaving idle)"
  std::string cpu_state(int cpu) const;
  // "local 0-3: has_spare nr_running=1 idle_cpus=3 load=... util=... runnable=...
  // capacity=..." plus avg_load when computed: one group's statistics for --explain.
  // --explain's JSON figures of a group's statistics, keys "<what>_nr_running" etc.
  void group_stats_data(const char* what, int group, const sg_lb_stats& s);
  std::string group_stats_text(const char* what, int group, const sg_lb_stats& s) const;

  // tunables (ns), scaled by 1 + ilog2(min(ncpus, 8)) (fair-class.md §3.2)
  Time sysctl_sched_latency = 0, sysctl_sched_min_granularity = 0,
       sysctl_sched_wakeup_granularity = 0;
  Time sysctl_sched_migration_cost = 500 * kNsPerUs;
  Time sysctl_sched_base_slice = 0;  // v6.6: 0.75 ms x factor
  // v5.15 (51ce83ed523b): the slice floor of an idle entity among non-idle ones; it has no
  // normalized_ value, so update_sysctl never scales it with the CPU count.
  static constexpr Time sysctl_sched_idle_min_granularity = 750 * kNsPerUs;
  // v6.6 profiles: the fair class is EEVDF (fair-class.md §3.10), not CFS.
  bool eevdf_ = false;
  // The CPU inside schedule() before the kernel's clear_tsk_need_resched(prev): a resched
  // raised there (update_deadline from dequeue or pick) is dropped, as in __schedule.
  int picking_cpu_ = -1;
  unsigned sched_nr_latency = 8;
  int hz_ = 250;
  Time tick_ns_ = 4 * kNsPerMs;

  bool feat(Feature f) const { return prof_.features.has(f); }
  // The workload starts at an arbitrary point of the tick period, as a real run does:
  // the phase is the seed's only use so far (drawn once, at construction).
  Time tick_phase_ = 0;
  std::int64_t jiffies() const { return (now_ + tick_phase_) / tick_ns_; }
  Time next_tick_time() const { return (jiffies() + 1) * tick_ns_ - tick_phase_; }
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
  void prefetch_next_step() const;
  void on_tick(int cpu);
  void on_step_done(int cpu);
  void on_ipi(int cpu);
  void on_idle_exit(int cpu);
  void on_timer(TaskId t);
  void handle_timer_irq(int cpu, TaskId t);
  void ttwu_queue(TaskId p, int cpu, unsigned wake_flags);
  void ttwu_stat(int cpu);
  struct BuiltDomain;
  void set_imb_numa_nr(Rq& rq, const std::vector<BuiltDomain>& built);
  bool allow_numa_imbalance(unsigned dst_running, unsigned dst_weight, const SchedDomain& sd) const;
  long adjust_numa_imbalance(long imbalance, unsigned dst_running, unsigned dst_weight,
                             const SchedDomain& sd) const;
  void process_wake_list(int cpu);
  void set_affinity(TaskId t, const std::vector<int>& cpus);
  void set_scheduler(TaskId t, Policy policy, int nice);
  void set_user_nice(TaskId t, int nice);
  void requeue_reweighted(Task& t, Policy policy, int nice);
  void prio_changed_fair(TaskId id, int old_prio);
  void sched_move_task(TaskId t, int group);
  void move_task(TaskId t, int dest_cpu);
  const TaskStats& task_stats(TaskId t) const;
  int nr_tasks_i() const { return static_cast<int>(tasks_.size()); }
  void ttwu_do_activate(int cpu, TaskId p, unsigned wake_flags);
  void check_preempt_curr(int cpu, TaskId p, unsigned wake_flags);
  void resched_curr(int cpu);
  void kick_cpu(int cpu);  // deliver an IPI or wake a polling CPU
  // preempt: __schedule(true), a switch forced by need_resched; false for sched_yield (a
  // runnable prev then shows as "R" rather than "R+" in sched_switch).
  void schedule(int cpu);
  void run_task_program(int cpu);
  // ---- repeat.cpp ----
  bool repeats_on_ = true;
  int repeating_cpus_ = 0;          // CPUs with lazy step ends pending
  std::uint64_t lazy_events_ = 0;   // lazy step ends committed (counted in events_ too)
  // The highest slot dispatched at time passed_time_ (the one being handled included): a
  // step end at that time with a lower slot would have been dispatched before it.
  Time passed_time_ = -1;
  engine::SlotId passed_slot_ = 0;
  engine::SlotId passed_bound() const { return passed_time_ == now_ ? passed_slot_ : 0; }
  bool start_repeats(int cpu, const Step& s);
  void commit_repeats_before(Rq& rq, Time at, engine::SlotId slot);
  void end_repeats(Rq& rq);
  void end_repeats(TaskId id);
  void sync_repeats(TaskId id);
  Rq* repeating_rq(TaskId id);
  void commit_repeats_until(Time end);
  void settle(int cpu);
  void rearm_step(int cpu);
  // Wall ns to do `work` ns of work at speed_q10 (rounded up), for work < 2^50: what
  // rearm_step arms a step's end at, and what each repeated step takes.
  static Time step_wall(Time work, std::int64_t speed_q10) {
    return (work * 1024 + speed_q10 - 1) / speed_q10;
  }
  void update_speed(int cpu);
  void smt_siblings_changed(int cpu);
  void enter_idle(int cpu);
  void tick_nohz_idle_stop_tick(int cpu, bool stop_tick);
  void trace_switch(int cpu, TaskId prev, SwitchState prev_state, TaskId next);
  void trace_stopper_wakeup(int cpu);
  void trace_stopper_in(int cpu);
  void trace_stopper_out(int cpu);
  void start_idle_exit(int cpu, Time delay);
  bool ttwu_queue_cond(int cpu) const;       // the wakeup goes through cpu's wake list
  bool cluster_powered_down(int cpu) const;  // every other CPU of its cluster in a cluster state
  void set_task_cpu(TaskId p, int new_cpu);
  void migrate_queued_task(Task& p, int dest);
  void move_to_cpu(Task& t, int dest);
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
  void put_prev_task_fair(Task& p);
  void set_next_entity(cfs_rq& cfs, sched_entity& se);
  sched_entity* pick_next_entity(cfs_rq& cfs, sched_entity* curr);
  TaskId pick_next_task_fair(Rq& rq, TaskId prev);
  void check_preempt_tick(cfs_rq& cfs, sched_entity& curr);
  void entity_tick(cfs_rq& cfs, sched_entity& curr);
  void check_preempt_wakeup(Rq& rq, Task& p, unsigned wake_flags);
  void explain_preempt(Rq& rq, std::string_view verdict, const std::string& reason);
  int wakeup_preempt_entity(sched_entity& curr, sched_entity& se);
  void clear_buddies(cfs_rq& cfs, sched_entity& se);
  void yield_task_fair(Rq& rq);
  void task_fork_fair(Task& p, int this_cpu);
  // EEVDF (v6.6 profiles)
  std::uint64_t avg_vruntime(const cfs_rq& cfs) const;
  bool entity_eligible(const cfs_rq& cfs, const sched_entity& se) const;
  void update_entity_lag(cfs_rq& cfs, sched_entity& se);
  void update_deadline(cfs_rq& cfs, sched_entity& se);
  sched_entity* pick_eevdf(cfs_rq& cfs);
  void __enqueue_entity(cfs_rq& cfs, sched_entity& se);
  void __dequeue_entity(cfs_rq& cfs, sched_entity& se);
  void place_entity_v66(cfs_rq& cfs, sched_entity& se, bool initial);
  void enqueue_entity_v66(cfs_rq& cfs, sched_entity& se, int flags);
  sched_entity* pick_next_entity_v66(cfs_rq& cfs);
  TaskId pick_next_task_fair_v66(Rq& rq, TaskId prev);
  void check_preempt_wakeup_v66(Rq& rq, Task& p, unsigned wake_flags);
  void yield_task_fair_v66(Rq& rq);
  Time calc_delta_fair(Time delta, const sched_entity& se) const;
  void set_next_buddy(sched_entity* se);
  void update_cfs_group(sched_entity& se);
  unsigned long calc_group_shares(cfs_rq& gcfs);
  void reweight_entity(cfs_rq& cfs, sched_entity& se, unsigned long weight);
  bool se_is_idle(const sched_entity& se) const {
    return se.my_q ? se.my_q->idle : tasks_[static_cast<size_t>(se.task)].policy == Policy::Idle;
  }
  Rq& rq_of(const cfs_rq& cfs) { return rq_[static_cast<size_t>(cfs.cpu)]; }

  // ---- load_avg.cpp ----
  void update_load_avg(cfs_rq& cfs, sched_entity& se, int flags);
  void sync_runnable_load(cfs_rq& cfs, sched_entity& se);
  bool update_cfs_rq_load_avg(std::uint64_t now, cfs_rq& cfs);
  void attach_entity_load_avg(cfs_rq& cfs, sched_entity& se);
  void detach_entity_load_avg(cfs_rq& cfs, sched_entity& se);
  void remove_entity_load_avg(sched_entity& se, cfs_rq& cfs);
  void sync_entity_load_avg(sched_entity& se, cfs_rq& cfs);
  void init_entity_runnable_average(sched_entity& se);
  void update_tg_load_avg(cfs_rq& cfs);
  void enqueue_load_avg(cfs_rq& cfs, sched_entity& se);
  void dequeue_load_avg(cfs_rq& cfs, sched_entity& se);
  bool propagate_entity_load_avg(sched_entity& se);
  void update_tg_cfs_util(cfs_rq& cfs, sched_entity& se, const cfs_rq& gcfs, std::uint32_t divider);
  void update_tg_cfs_runnable(cfs_rq& cfs, sched_entity& se, const cfs_rq& gcfs,
                              std::uint32_t divider);
  void update_tg_cfs_load(cfs_rq& cfs, sched_entity& se, cfs_rq& gcfs, std::uint32_t divider);
  // v5.17 (the relax-the-sync series): *_sums keep a lower bound instead of being synced to
  // their *_avgs. v5.14..v5.16's hard syncs have no profile and are not modelled.
  bool pelt_sum_lower_bound() const { return prof_.version >= 517; }
  void detach_entity_cfs_rq(sched_entity& se);
  void attach_entity_cfs_rq(sched_entity& se);
  void propagate_entity_cfs_rq(sched_entity& se);
  unsigned long task_h_load(Task& p);
  void update_cfs_rq_h_load(cfs_rq& cfs);
  void post_init_entity_util_avg(Task& p);
  void util_est_enqueue(cfs_rq& cfs, Task& p);
  void util_est_dequeue(cfs_rq& cfs, Task& p, bool task_sleep);
  unsigned long task_util(const Task& p) const { return p.se.avg.util_avg; }
  unsigned int util_avg_unchanged() const;
  void cfs_se_util_change(sched_entity& se);
  unsigned long _task_util_est(const Task& p) const;
  unsigned long task_util_est(const Task& p) const;
  unsigned long cpu_load(int cpu) const { return rq_[cpu].cfs.avg.load_avg; }
  unsigned long cpu_runnable_load(int cpu) const { return rq_[cpu].cfs.runnable_load; }
  // The wakeup path's CPU load: cpu_runnable_load before v5.5 (11f10e5420f6), cpu_load after.
  unsigned long wakeup_cpu_load(int cpu) const {
    return prof_.version < 505 ? cpu_runnable_load(cpu) : cpu_load(cpu);
  }
  unsigned long cpu_runnable(int cpu) const { return rq_[cpu].cfs.avg.runnable_avg; }
  unsigned long cpu_util(int cpu) const;
  unsigned long cpu_load_without(int cpu, Task& p);
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
  int select_idle_cpu(Task& p, int target, bool has_idle_core = false);
  int select_idle_sibling_v513(Task& p, int prev, int target);
  int select_idle_smt(Task& p, int target);
  int find_idlest_cpu(int sd_idx, Task& p, int cpu, int prev_cpu, unsigned sd_flag);
  int select_fallback_rq(int cpu, const Task& t, int chosen);
  int find_idlest_group(int cpu, int sd_idx, Task& p, int this_cpu);
  int find_idlest_group_v54(int cpu, int sd_idx, Task& p, int this_cpu, unsigned sd_flag);
  int find_idlest_group_cpu(int group, Task& p, int this_cpu);
  void update_sg_wakeup_stats(int cpu, int sd_idx, int group, sg_lb_stats& sgs, Task& p);
  bool update_pick_idlest(int idlest, sg_lb_stats& idlest_sgs, int group, sg_lb_stats& sgs);
  sg_type group_classify(int imbalance_pct, int group, sg_lb_stats& sgs);
  bool group_has_capacity(int imbalance_pct, const sg_lb_stats& sgs) const;
  bool group_is_overloaded(int imbalance_pct, const sg_lb_stats& sgs) const;
  void update_idle_core(int cpu);
  void update_idle_cpu_scan(const lb_env& env, unsigned long sum_util);
  std::vector<char> core_visited_;  // select_idle_core scratch
  bool test_idle_cores(int cpu) const { return llc_shared_[rq_[cpu].llc_id].has_idle_cores; }
  void set_idle_cores(int cpu, bool v) { llc_shared_[rq_[cpu].llc_id].has_idle_cores = v; }
  int probes_ = 0;  // CPUs examined by the current search, charged to the waker
  // The search's cost, while try_to_wake_up or wake_up_new_task enqueues the task it chose:
  // select_task_rq returns before ttwu_queue, so an IPI the enqueue sends leaves this late.
  Time kick_delay_ = 0;

  // ---- balance.cpp ----
  void trigger_load_balance(int cpu, cpu_idle_type idle);
  void run_rebalance_domains(int cpu, cpu_idle_type idle);
  void rebalance_domains(int cpu, cpu_idle_type idle);
  int load_balance(int this_cpu, int sd_idx, cpu_idle_type idle, bool& continue_balancing);
  bool should_we_balance(const lb_env& env);
  int find_busiest_group(lb_env& env, sd_lb_stats& sds);
  void update_sd_lb_stats(lb_env& env, sd_lb_stats& sds);
  void update_sg_lb_stats(lb_env& env, int group, sg_lb_stats& sgs, bool& sg_overload);
  bool update_sd_pick_busiest(sd_lb_stats& sds, sg_lb_stats& sgs);
  void calculate_imbalance(lb_env& env, sd_lb_stats& sds);
  int find_busiest_queue(lb_env& env, int group);
  int detach_tasks(lb_env& env);
  void attach_tasks(lb_env& env);
  bool can_migrate_task(Task& p, lb_env& env);
  int task_hot(Task& p, const lb_env& env);
  bool voluntary_active_balance(const lb_env& env);
  bool need_active_balance(const lb_env& env);
  void active_load_balance_cpu_stop(int busiest_cpu);
  int newidle_balance(int cpu);
  void update_blocked_averages(int cpu);
  std::int64_t get_sd_balance_interval(const SchedDomain& sd, bool cpu_busy) const;
  void update_next_balance(const SchedDomain& sd, std::int64_t& next_balance) const;
  void nohz_balance_enter_idle(int cpu);
  void nohz_balance_exit_idle(int cpu);
  void nohz_balancer_kick(int cpu);
  void kick_ilb(unsigned flags);
  bool nohz_idle_balance(int cpu);
  void _nohz_idle_balance(int this_cpu, unsigned flags, cpu_idle_type idle);
  bool update_nohz_stats(int cpu, bool force);
  void nohz_newidle_balance(int cpu);
  void nohz_run_idle_balance(int cpu);
  std::string schedstat_text() const;
  // ---- sched-idle balancing RFC (series 4, fair-class.md §8) ----
  bool task_h_idle(const Task& p) const { return p.h_idle; }
  bool group_is_idle(int g) const;  // cpu.idle on the group or an ancestor
  int spawn_group_ = 0;             // group of tasks created with no parent task
  bool cfs_rq_overloaded(const Rq& rq) const {
    return rq.cfs.h_nr_running - rq.cfs.idle_h_nr_running > 1;
  }
  bool need_pull_cfs_task(const Rq& rq) const {
    return rq.cfs.h_nr_running == rq.cfs.idle_h_nr_running;
  }
  void update_overload_status(int cpu);
  int sched_idle_balance(int dst_cpu);
  void detach_task_lb(Task& p, int dst_cpu, int sd_idx);
  void attach_task_lb(Task& p, int dst_cpu);
  bool lb_cpu_allowed(int cpu) const { return lb_excluded_[static_cast<size_t>(cpu)] != lb_epoch_; }
  // env->sd: the balancing CPU's domain, whichever CPU the tasks go to.
  SchedDomain& env_sd(const lb_env& env) {
    return rq_[static_cast<size_t>(env.sd_cpu >= 0 ? env.sd_cpu : env.dst_cpu)]
        .sd[static_cast<size_t>(env.sd_idx)];
  }
  const DomainLevel& level_of(int cpu, int sd_idx) const {
    return levels_[static_cast<size_t>(
        rq_[static_cast<size_t>(cpu)].sd[static_cast<size_t>(sd_idx)].level_id)];
  }
  bool rd_overload_ = false;                // root_domain->overload: some CPU has > 1 task
  std::vector<std::uint32_t> lb_excluded_;  // CPUs dropped from env->cpus in this load_balance
  std::uint32_t lb_epoch_ = 0;
  std::vector<TaskId> lb_detached_;             // env->tasks
  int lb_probes_ = 0;                           // CPUs whose statistics this balance pass read
  std::int64_t max_load_balance_interval_ = 1;  // jiffies
  struct {
    int nr_cpus = 0;
    std::int64_t next_balance = 0;  // jiffies
    std::int64_t next_blocked = 0;
    bool has_blocked = false;
    bool needs_update = false;  // v5.16+: a CPU went tickless since next_balance was collated
  } nohz_;
  LbStats lb_stats_;

  // ---- topology.cpp ----
  void build_sched_domains();
  void sched_domain_debug(std::ostream& out) const;
  std::string sched_domain_tunables() const;

  // ---- idle.cpp ----
  int cpuidle_select(int cpu, bool& stop_tick);
  void cpuidle_reflect(int cpu, Time idle_duration);
};

}  // namespace schedtwin::kernel
