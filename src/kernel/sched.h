// Internal state of the kernel model: the kernel's struct rq, cfs_rq,
// sched_entity, task_struct and sched_domain, kept in flat arrays indexed by
// CPU / task id and owned by KernelImpl (kernel/sched/sched.h, v5.4–v5.7).
//
// Task groups (CONFIG_FAIR_GROUP_SCHED): each group has a cfs_rq and a group entity
// per CPU (KernelImpl::tg_rt_); the root group's cfs_rq is rq->cfs.
// Left out: RT/DL classes, CFS bandwidth, uclamp, NUMA balancing.
#pragma once
#include <array>
#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/event_queue.h"
#include "engine/time.h"
#include "kernel/pelt.h"
#include "kernel/task_api.h"

namespace schedtwin::kernel {

namespace bi = boost::intrusive;

inline constexpr int SCHED_FIXEDPOINT_SHIFT = 10;   // scale_load on 64-bit kernels
inline constexpr unsigned long NICE_0_LOAD = 1024;  // user-visible weights (scale_load_down)
inline constexpr unsigned long WEIGHT_IDLEPRIO = 3;
inline constexpr std::uint32_t WMULT_IDLEPRIO = 1431655765;
inline constexpr long SCHED_CAPACITY_SCALE = 1024;
inline constexpr long NUMA_IMBALANCE_MIN = 2;  // fair.c v5.11+

struct load_weight {
  unsigned long weight = 0;
  std::uint32_t inv_weight = 0;
};

// util_est (kernel/sched/fair.c, v5.7): per task {enqueued, ewma}; enqueued also carries the
// UTIL_AVG_UNCHANGED flag (load_avg.cpp).
struct util_est {
  unsigned int enqueued = 0;
  unsigned int ewma = 0;
};

struct cfs_rq;

struct sched_entity {
  load_weight load;
  unsigned long runnable_weight = 0;  // group entity: my_q->h_nr_running (se_update_runnable)
  // optimize_size keeps the node's colour in its parent pointer, as the kernel's rb_node does.
  bi::set_member_hook<bi::link_mode<bi::normal_link>, bi::optimize_size<true>> run_node;
  bi::list_member_hook<bi::link_mode<bi::normal_link>> group_node;  // rq->cfs_tasks
  Time exec_start = 0;
  Time sum_exec_runtime = 0;
  Time prev_sum_exec_runtime = 0;
  std::uint64_t vruntime = 0;  // u64 as in the kernel; compared through signed differences
  // EEVDF (v6.6 profiles only): the request size r_i, its virtual deadline vd_i and the
  // virtual lag saved at dequeue. Between pick and dequeue vlag holds the deadline as it was
  // at pick time: RUN_TO_PARITY's marker (set_next_entity, v6.6).
  Time slice = 0;
  std::uint64_t deadline = 0;
  std::int64_t vlag = 0;
  sched_avg avg;
  util_est ue;
  // Hierarchy (FAIR_GROUP_SCHED): se->cfs_rq is the queue the entity is (to be) queued on,
  // my_q the queue a group entity owns, parent the group entity above (null at the root).
  cfs_rq* cfs = nullptr;
  cfs_rq* my_q = nullptr;
  sched_entity* parent = nullptr;
  TaskId task = kNoTask;  // kNoTask for a group entity
  int depth = 0;
  bool on_rq = false;
  // v5.4's se->avg.runnable_load_avg as last added to cfs_rq::runnable_load (0 off the queue).
  unsigned long runnable_load_contrib = 0;
};

struct VruntimeLess {
  bool operator()(const sched_entity& a, const sched_entity& b) const {
    return static_cast<std::int64_t>(a.vruntime - b.vruntime) < 0;
  }
};

// The rbtree of queued entities; insertion of equal keys goes right (after), as in the kernel.
using Timeline = bi::multiset<
    sched_entity, bi::compare<VruntimeLess>,
    bi::member_hook<sched_entity, decltype(sched_entity::run_node), &sched_entity::run_node>,
    bi::constant_time_size<true>>;

// rq->cfs_tasks: the queued fair tasks, most recently queued or picked at the front;
// detach_tasks walks it from the back.
using TaskList = bi::list<
    sched_entity,
    bi::member_hook<sched_entity, decltype(sched_entity::group_node), &sched_entity::group_node>,
    bi::constant_time_size<true>>;

struct cfs_rq {
  load_weight load;
  unsigned int nr_running = 0;
  unsigned int h_nr_running = 0;
  unsigned int idle_h_nr_running = 0;  // series 1 patch 1 (43e9f7f231e4)
  unsigned int idle_nr_running = 0;    // queued entities that are se_is_idle (v5.15, a2dcb276ff92)
  // v5.4's cfs_rq->avg.runnable_load_avg (dropped in v5.7 by 0dacee1bfa70), read by the v5.4
  // find_idlest_group: the sum of the queued entities' load_avg as of their last update.
  unsigned long runnable_load = 0;
  std::uint64_t min_vruntime = static_cast<std::uint64_t>(-(1LL << 20));
  // EEVDF (v6.6 profiles only): over the entities in the timeline (curr is added when read),
  // the sum of (vruntime - min_vruntime) * weight and the sum of the weights.
  std::int64_t avg_vruntime = 0;
  long avg_load = 0;
  Timeline timeline;
  sched_entity* curr = nullptr;
  sched_entity* next = nullptr;
  sched_entity* last = nullptr;
  sched_entity* skip = nullptr;
  sched_avg avg;
  struct {
    int nr = 0;
    unsigned long load_avg = 0, util_avg = 0, runnable_avg = 0;
  } removed;
  unsigned int util_est_enqueued = 0;
  Time exec_clock = 0;  // ns of fair-task execution on this CPU (schedstat rq_cpu_time)
  // Group scheduling
  int cpu = 0;
  int tg = 0;         // task group id, 0 = root
  bool idle = false;  // cfs_rq_is_idle: the group has cpu.idle set (v5.15)
  unsigned long tg_load_avg_contrib = 0;
  bool propagate = false;
  long prop_runnable_sum = 0;
  unsigned long h_load = 0;
  sched_entity* h_load_next = nullptr;
  std::int64_t last_h_load_update = -1;  // jiffies
};

enum class TaskState : std::uint8_t { Running, Runnable, Waking, Blocked, Exited };

// What current/idle has done lately as a waker (task_struct fields used by wake_wide
// and select_idle_sibling). The per-CPU idle task has one too: it is `current` when a
// timer interrupt wakes a task on an idle CPU.
struct WakerInfo {
  TaskId last_wakee = kNoTask;
  unsigned int wakee_flips = 0;
  std::int64_t wakee_flip_decay_ts = 0;  // jiffies
  int recent_used_cpu = -1;
};

// 100 000 of these make a run (issue 7 asks for at most 1 KiB of memory per task), so the
// fields are ordered to leave little padding: eight cache lines.
struct alignas(64) Task {
  // The program, first: every step completion reads and writes these (one cache line).
  TaskBody* body = nullptr;
  Time remaining = 0;  // work left in the current step, ns at full speed
  Time run_until = 0;
  Step::Kind step_kind = Step::Kind::Run;
  TaskState state = TaskState::Blocked;
  bool needs_next = true;      // call body->next() once the pending work is done
  bool migrated_cold = false;  // pay the cache-cold penalty at next switch-in
  bool exit_traced = false;    // sched_process_exit written before its exit_notify wakeup
  int cpu = 0;                 // task_cpu()
  int pending_move = -1;       // set_affinity of a running task: move after its step
  Policy policy = Policy::Normal;
  // se_is_idle / task_h_idle: SCHED_IDLE, or in a cpu.idle group (v5.15+). The flat model
  // has no group entities: a task of an idle group stands for its group's idle entity.
  bool h_idle = false;
  Policy created_policy = Policy::Normal;  // TaskAttr::policy, for the occupancy report
  int nice = 0;
  int nr_cpus_allowed = 0;
  std::string name;                     // comm (TaskAttr::name)
  Time timer_slack_ns = 50 * kNsPerUs;  // TaskAttr::timer_slack_ns
  std::vector<bool> allowed;            // cpus_ptr
  sched_entity se;
  WakerInfo waker;
  // hrtimer
  engine::SlotId timer_slot = 0;
  int timer_cpu = -1;
  Time timer_expires = kTimeNever;
  // accounting
  Time runnable_since = 0;
  std::int64_t nr_wakeups = 0, nr_migrations = 0, nr_switches = 0;
  Time run_delay = 0;
  int fork_cpu = -1;
  TaskId parent = kNoTask;  // the task that forked it (real_parent); none: a workload's first
  TaskId tgid = kNoTask;    // its thread group's leader (itself unless created as a thread)
  int group = 0;            // task group id
  int latency_nice = 5;     // from the group (latency-nice RFC)
  unsigned pending_wake_flags = 0;  // WF_* of a wakeup waiting on a remote wake list
};
static_assert(sizeof(Task) <= 512, "Task grew past eight cache lines (1 KiB per task, issue 7)");

// SD_* flags (include/linux/sched/topology.h).
enum SdFlags : unsigned {
  SD_LOAD_BALANCE = 1u << 0,
  SD_BALANCE_NEWIDLE = 1u << 1,
  SD_BALANCE_EXEC = 1u << 2,
  SD_BALANCE_FORK = 1u << 3,
  SD_BALANCE_WAKE = 1u << 4,
  SD_WAKE_AFFINE = 1u << 5,
  SD_ASYM_CPUCAPACITY = 1u << 6,
  SD_SHARE_CPUCAPACITY = 1u << 7,
  SD_SHARE_PKG_RESOURCES = 1u << 9,
  SD_SERIALIZE = 1u << 10,
  SD_ASYM_PACKING = 1u << 11,
  SD_PREFER_SIBLING = 1u << 12,
  SD_OVERLAP = 1u << 13,
  SD_NUMA = 1u << 14,
};

// for_each_cpu_wrap's walk over an ascending span held as a vector: from index `start` (the
// span's size means its first CPU) round to the one before, stepping without a division.
inline std::size_t wrap_next(std::size_t i, std::size_t n) { return i + 1 == n ? 0 : i + 1; }

// A sched group of one domain level; shared by the CPUs of the level (sgc).
struct SchedGroup {
  std::vector<int> cpus;  // span, ascending
  long capacity = 0;      // sgc->capacity: sum of capacity_of
  long max_capacity = 0;
  int imbalance = 0;    // sgc->imbalance (group_imbalanced)
  int balance_cpu = 0;  // group_balance_cpu: first CPU of the group
};

// A domain level shared by all CPUs it spans; per-CPU fields are in SchedDomain.
struct DomainLevel {
  std::string name;  // SMT, MC, DIE, NUMA
  int topology_level = 0;  // its row of the topology table (SMT, CLS, MC, DIE, NUMA...)
  unsigned flags = 0;
  int imbalance_pct = 125;
  int cache_nice_tries = 0;
  int busy_factor = 32;
  int min_interval = 1, max_interval = 2;  // ms
  std::vector<int> span;                   // ascending
  std::vector<int> groups;  // indices into KernelImpl::groups_, local-first order is per CPU
};

// The per-CPU instance of a domain (struct sched_domain).
struct SchedDomain {
  int level_id = -1;                // index into KernelImpl::levels_
  int parent = -1, child = -1;      // indices into the same CPU's domain list
  std::vector<int> groups;          // group ids, starting with the group containing this CPU
  std::uint64_t avg_scan_cost = 0;  // ns, select_idle_cpu EWMA
  Time max_newidle_lb_cost = 0;
  std::int64_t last_balance = 0;  // jiffies
  unsigned balance_interval = 1;  // ms
  unsigned nr_balance_failed = 0;
  std::int64_t next_decay_max_lb_cost = 0;
  unsigned imb_numa_nr = 0;  // v5.19+: tasks a NUMA imbalance is allowed up to (0 below the LLC)
  // schedstat (v15), indexed by cpu_idle_type: CPU_IDLE, CPU_NOT_IDLE, CPU_NEWLY_IDLE
  std::array<std::uint64_t, 3> lb_count{}, lb_balanced{}, lb_failed{}, lb_imbalance{}, lb_gained{},
      lb_hot_gained{}, lb_nobusyq{}, lb_nobusyg{};
  std::uint64_t alb_count = 0, alb_failed = 0, alb_pushed = 0;
  std::uint64_t ttwu_wake_remote = 0, ttwu_move_affine = 0, ttwu_move_balance = 0;
  std::uint64_t sib_peeked = 0, sib_pulled = 0, sib_failed = 0;  // series 4 patch 3
};

enum class CpuMode : std::uint8_t { Busy, Idle, ExitingIdle };

struct alignas(64) Rq {
  // Progress of the running step, first: every step completion reads and writes these
  // (one cache line).
  TaskId curr = kNoTask;  // kNoTask: the idle task is current
  bool need_resched = false;
  CpuMode mode = CpuMode::Idle;
  Time seg_start = 0;             // when the current segment began doing the task's work
  Time debt = 0;                  // kernel time to pay on this CPU before task work resumes
  std::int64_t speed_q10 = 1024;  // work per ns x1024 for the current segment
  engine::SlotId tick_slot = 0, step_slot = 0, ipi_slot = 0, idle_exit_slot = 0;
  int cpu = 0;
  unsigned int nr_running = 0;
  // Lazy ends of curr's repeated steps still to commit (repeat.cpp); the step slot is armed
  // at the end after them. Every settle and re-arm tests it.
  std::int64_t repeats_left = 0;
  cfs_rq cfs;
  WakerInfo idle_waker;  // current->... when the idle task is current
  // Idle
  int idle_state = -1;  // cpuidle state entered, -1 if none
  Time idle_entered = 0;
  Time menu_next_timer = 0;        // the sleep length at idle entry, ns (menu's next_timer_us)
  bool tick_stopped = false;       // tick_sched's tick_stopped: NO_HZ idle stopped the tick
  bool tick_wakeup = false;        // menu's tick_wakeup: the tick came during this idle period
  bool idle_tick_pending = false;  // the running tick interrupted idle; handled on the way out
  // Nothing to run, but the kernel path that found so (a failed newly-idle balance, the
  // wakeups the last task made before it blocked) is still being paid: not idle yet.
  bool going_idle = false;
  Time idle_stamp = 0;       // rq->idle_stamp (0 = not idle)
  Time avg_idle = 0;
  Time max_idle_balance_cost = 0;
  std::array<Time, 8> idle_history{};  // the last 8 idle durations (menu's intervals[])
  // menu's correction_factor[] per sleep-length bucket (no I/O-wait half), in units of
  // 1/(RESOLUTION * DECAY) = 1/8192; unity at boot (menu_enable_device).
  std::array<std::uint32_t, 6> menu_correction{8192, 8192, 8192, 8192, 8192, 8192};
  int menu_bucket = 0;  // the bucket of the sleep length at idle entry
  int idle_history_pos = 0;
  int idle_history_seen = 0;  // how many of them are real (at most 8)
  // Remote wake list (TTWU_QUEUE)
  std::vector<TaskId> wake_list;
  int ttwu_pending = 0;
  std::vector<TaskId> pending_timers;  // timers fired while the CPU was leaving idle
  bool ipi_pending = false;
  // Topology
  std::vector<SchedDomain> sd;  // bottom-up
  int sd_llc = -1;              // index into sd of the LLC level, -1 if none
  int llc_id = 0, llc_size = 1;
  int core = 0;
  // Repeated steps of curr (repeat.cpp): the next lazy end's time, the wall time of one step.
  Time repeat_next = 0, repeat_wall = 0;
  long cpu_capacity = 1024, cpu_capacity_orig = 1024;
  std::int64_t next_balance = 0;  // jiffies
  int sis_next_cpu = -1;          // SIS_ROTATE: where the next search for this target starts
  bool overloaded = false;        // SIB_OVERLOAD_MASK: this CPU's bit in its LLC's mask
  Time wake_avg_idle = 0;         // v5.13+ SIS_PROP: avg_idle / 2, decayed per jiffy
  std::int64_t wake_stamp = 0;    // jiffies
  TaskList cfs_tasks;
  // Active balance: the stopper of this CPU pushes its running task to push_cpu.
  bool active_balance = false;
  int push_cpu = -1;
  // Traces only: where the stopper is in its sched_wakeup / sched_switch sequence (nothing
  // the simulation reads). Woken: its sched_wakeup is out; Running: switched in.
  enum class StopperTrace : std::uint8_t { None, Woken, Running };
  StopperTrace stopper_trace = StopperTrace::None;
  // NOHZ
  bool nohz_tick_stopped = false;
  unsigned nohz_flags = 0;  // NOHZ_*_KICK pending on this CPU
  bool has_blocked_load = false;
  std::int64_t last_blocked_load_update_tick = 0;  // jiffies
  // Timers armed on this CPU, for the idle governor's "next timer event".
  std::vector<TaskId> armed_timers;
  // stats (schedstat cpu line)
  std::uint64_t nr_switches = 0;
  std::uint64_t yld_count = 0, sched_count = 0, sched_goidle = 0, ttwu_count = 0, ttwu_local = 0;
  Time run_delay = 0;
  std::uint64_t pcount = 0;
  Time wasted_since = -1;  // --check: idle while a task it may run waits in its LLC, since
};

// Per-LLC shared state (struct sched_domain_shared).
struct LlcShared {
  bool has_idle_cores = false;
  int nr_busy_cpus = 0;
  int nr_idle_scan = 0;   // SIS_UTIL (v6.0): CPUs select_idle_cpu may scan
  int nr_overloaded = 0;  // SIB_OVERLOAD_MASK: CPUs of the LLC with > 1 non-idle fair task
};

}  // namespace schedtwin::kernel
