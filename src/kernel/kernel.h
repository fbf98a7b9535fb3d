// The kernel model's public face: what a workload and the front ends use.
// (Implementation and the modelled kernel functions live in the other files
// of src/kernel/, one concern per file as in kernel/sched/.)
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/time.h"
#include "kernel/explain.h"
#include "kernel/features.h"
#include "kernel/task_api.h"
#include "kernel/trace.h"
#include "machine/machine.h"

namespace schedtwin::kernel {

struct Config {
  Profile profile;  // kernel release preset with feature flags applied
  std::uint64_t seed = 1;
  int hz = 0;  // 0: the machine's build
  // --check: verify the model's invariants after every event (also on when the
  // environment has SCHEDTWIN_CHECK=1, as the test suite sets it).
  bool check = false;
  // Let a task's repeated steps (Step::repeats) pass without an event each: the same results,
  // fewer events to dispatch. Off (also with SCHEDTWIN_PLAIN_STEPS=1 in the environment):
  // every step ends in a dispatched event, for tests that compare the two.
  bool repeats = true;
};

// Figures of --check.
struct CheckStats {
  std::uint64_t checks = 0;           // events after which the invariants were verified
  std::uint64_t wasted_episodes = 0;  // a CPU idle > 10 ms while a task it may run waits in its LLC
  Time wasted_ns = 0;                 // total length of those episodes
  // The longest episode, to look at with --explain or a trace: its CPU (-1: none), start and
  // length, ns.
  int longest_wasted_cpu = -1;
  Time longest_wasted_start = 0, longest_wasted_ns = 0;
};

// An invariant of the kernel model does not hold (a bug in schedtwin, not bad input).
struct CheckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Per-task figures the kernel accounts (schedstat-like), in ns unless noted.
struct TaskStats {
  int fork_cpu = -1;        // CPU chosen by wake_up_new_task
  TaskId parent = kNoTask;  // the task whose program created it; kNoTask from outside any task
  TaskId tgid = kNoTask;    // its thread group's leader: itself unless TaskAttr::thread_group
  std::int64_t nr_wakeups = 0;
  std::int64_t nr_migrations = 0;
  std::int64_t nr_switches = 0;
  Time run_delay = 0;  // time spent runnable but waiting (sched_info.run_delay)
  Time sum_exec_runtime = 0;
};

// Group classification counts of the load balancer, as the runnable_avg series counted
// them: every group that update_sd_lb_stats classified, by balance type (CPU_IDLE,
// CPU_NOT_IDLE, CPU_NEWLY_IDLE), group_type (has_spare, fully_busy, misfit_task,
// asym_packing, imbalanced, overloaded) and the group's nr_running (0, 1, 2, 3, 4+).
// by_domain splits them by sched domain, as schedstat's domainN lines do: index N is domain-N
// of the sched_verbose log (0 the lowest), `level` its name (SMT, MC, DIE, NUMA; names joined by
// "/" where CPUs of an asymmetric machine have different levels at the same index).
struct LbDomainStats {
  std::string level;
  std::uint64_t classified[6][5] = {};  // summed over the balance types
  std::uint64_t migrations = 0;         // moved by load balancing in this domain (all kinds)
  std::uint64_t active_migrations = 0;  // of those, by the active-balance stopper
};
struct LbStats {
  std::uint64_t classified[3][6][5] = {};
  std::uint64_t migrations = 0;         // tasks moved by load_balance (all types)
  std::uint64_t active_migrations = 0;  // tasks moved by the active-balance stopper
  std::vector<LbDomainStats> by_domain;
  // newidle_balance's gates, in the kernel's order: a CPU about to idle enters it (entries);
  // it returns at once for a queued wakeup (v5.14+); it skips the domain walk when avg_idle
  // is under sysctl_sched_migration_cost (up to v5.15) or the lowest domain's
  // max_newidle_lb_cost (v5.16+), else when no CPU is overloaded (rd->overload).
  std::uint64_t newidle_entries = 0, newidle_wakeup_pending = 0, newidle_avg_idle = 0,
                newidle_no_overload = 0;
};
const char* group_type_name(int type);    // "has_spare", ...
const char* balance_type_name(int idle);  // "idle", "busy", "newly_idle"

// A task group as cgroup v2 shapes it (cpu controller). Group 0 is the root.
struct TaskGroupAttr {
  std::string name;      // path, e.g. "/batch"
  int parent = 0;        // parent group id
  int weight = 100;      // cpu.weight, 1..10000 (kernel shares = weight * 1024 / 100)
  bool idle = false;     // cpu.idle (v5.15+)
  int latency_nice = 5;  // cpu.latency-nice of the latency-nice RFC, 1..100 (default 5)
};
inline constexpr int kLatencyNiceMin = 1, kLatencyNiceMax = 100, kLatencyNiceDefault = 5;

class KernelImpl;

// The sched domains the kernel builds for `m`, printed like the kernel's sched_verbose
// boot log (CPUn attaching sched-domain(s): / domain-N: span=... level=... / groups: ...),
// CPU by CPU to `out` (4096 CPUs print 139 MB).
void sched_domains_text(const machine::Machine& m, const Profile& p, std::ostream& out);
// Each CPU's domains with their tunables, one line per domain, as the files of
// /proc/sys/kernel/sched_domain/cpuN/domainM/ (v5.4) give them: min_interval and max_interval
// (ms), busy_factor, imbalance_pct, cache_nice_tries, flags (v5.4's bit values in decimal, as
// its file prints them, then their names), and imb_numa_nr (used by profiles v5.19 and later).
std::string sched_domain_tunables_text(const machine::Machine& m, const Profile& p);

class Kernel {
 public:
  Kernel(const machine::Machine& m, const Config& cfg);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  Time now() const;
  const machine::Machine& machine() const;
  const Profile& profile() const;

  // Creates a task as if forked by a task running on parent_cpu at now()
  // (sched_fork + wake_up_new_task: fork balancing picks its CPU).
  TaskId create_task(const TaskAttr& attr, TaskBody* body, int parent_cpu = 0);

  // try_to_wake_up from the current context: the task whose next() is running,
  // or the interrupt being handled. Returns false if the task was not sleeping.
  bool wake_up(TaskId wakee, unsigned wake_flags = WF_NONE);

  // hrtimer_nanosleep for the current task: arm a timer on its CPU that expires
  // at `expires` + its timer slack and wakes it. The caller then returns Step::block().
  void arm_timer(TaskId self, Time expires);

  // Creates a task group; throws InputError naming the group on a bad parent or on
  // values out of range. Tasks join one through TaskAttr::group and take its
  // latency-nice at creation (cpu_cgroup_fork). Returns the group id.
  int create_task_group(const TaskGroupAttr& g);
  // do_exit's sched_process_exit tracepoint, for a body whose exit wakes its parent in
  // exit_notify (after the tracepoint): call it before that wakeup, then return Step::exit().
  void trace_process_exit(TaskId self);
  const TaskGroupAttr& task_group(int id) const;
  int nr_task_groups() const;
  // The group whose path is `name` ("/batch"), or -1.
  int find_task_group(const std::string& name) const;
  // The task group a task is in now.
  int task_group_of(TaskId t) const;
  // Tasks created from outside any task (a workload's first task) join `group`; tasks
  // forked by a task join their parent's group.
  void set_spawn_group(int group);

  void set_affinity(TaskId t, const std::vector<int>& cpus);
  void set_scheduler(TaskId t, Policy policy, int nice);
  // setpriority(PRIO_PROCESS) on a task (set_user_nice): nice -20..19, any fair policy.
  void set_user_nice(TaskId t, int nice);
  // Moves a task to another task group (writing its pid to cgroup.procs: sched_move_task);
  // throws InputError if the group does not exist.
  void set_task_group(TaskId t, int group);

  int task_cpu(TaskId t) const;
  // What the task was created with (TaskAttr): its comm, and the policy given at creation
  // (a later set_scheduler does not change it).
  const std::string& task_name(TaskId t) const;
  Policy task_created_policy(TaskId t) const;
  int task_nice(TaskId t) const;  // now (set_scheduler and set_user_nice change it)
  const TaskStats& task_stats(TaskId t) const;
  int nr_tasks() const;

  // Runs events until simulated time `end` (exclusive) or until no event is left.
  void run_until(Time end);
  // Events so far: those dispatched from the queue and the ends of repeated steps that
  // passed without one (Step::repeats), so the count does not depend on Config::repeats.
  std::uint64_t events() const;
  // Of events(), the ends of repeated steps that passed without a dispatch of their own.
  std::uint64_t lazy_events() const;
  // Whether the kernel takes repeated steps at all (Config::repeats, unless the environment
  // sets SCHEDTWIN_PLAIN_STEPS=1): a body need not plan them otherwise.
  bool repeats_taken() const;
  // Before a task body reads or changes what task `t`'s pending repeated steps change (the
  // socket a repeating receiver drains or a repeating sender fills): commits the repeated
  // ends that come before the event being handled. A no-op unless t is running repeated
  // steps.
  void sync_repeats(TaskId t);
  // sync_repeats, then t's repeats stop: the step in progress ends in an event of its own
  // and calls next() (a writer that blocks on the receiver's socket, which a read may wake; a
  // receiver that starts waiting, which the sender's next write may wake).
  void end_repeats(TaskId t);
  // True while the kernel handles a timer interrupt or an IPI's wake list (hrtimer_wakeup,
  // sched_ttwu_pending): what a trace event's hardirq flag shows.
  bool in_hardirq() const;
  std::uint64_t context_switches() const;
  // Tasks moved to another CPU by any path (wakeup placement, load balancing, affinity):
  // what perf stat counts as cpu-migrations.
  std::uint64_t migrations() const;
  const LbStats& lb_stats() const;
  const CheckStats& check_stats() const;
  // Installs (or with nullptr removes) the receiver of the tracepoints; not owned.
  void set_trace_sink(TraceSink* sink);
  // Installs (or removes) the --explain decision log; not owned.
  void set_explain(Explain* explain);
  // /proc/schedstat (version 15) as the kernel prints it at this simulated time.
  std::string schedstat() const;

 private:
  std::unique_ptr<KernelImpl> impl_;
};

}  // namespace schedtwin::kernel
