// Hardware plus the kernel build that runs on it (DESIGN.md §5).
//
// A Machine is plain data: the topology the kernel's sched domains are built
// from, per-CPU capacity, idle states, and the cost model. Every cost figure
// carries the source it was taken from; presets/ holds the cited values.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/time.h"

namespace schedtwin::machine {

// One cpuidle state as the kernel's cpuidle driver describes it.
struct IdleState {
  std::string name;              // e.g. "WFI", "cpu-sleep", "C1E"
  Time exit_latency_ns = 0;      // what the kernel sees (driver table or device tree)
  Time target_residency_ns = 0;  // what the governor compares the predicted idle time with
  Time real_exit_ns = 0;         // what waking from it really costs (cited measurement)
  bool polling = false;          // a polling state: no IPI needed, no exit cost
  // A cluster-level state (PSCI power level 1, platform-coordinated): the cluster powers down
  // only while every CPU of the cluster is in a cluster-level state. A CPU woken while another
  // CPU of its cluster is up has been only as deep as the deepest CPU-level state before it.
  bool cluster = false;
  std::string source;            // where exit_latency / target_residency / polling come from
  std::string real_exit_source;  // where real_exit_ns comes from
};

struct Cpu {
  int id = 0;
  int core = 0;     // physical core id (SMT siblings share it), unique machine-wide
  int cluster = 0;  // cluster id (arm64 clusters; equals the LLC on most x86), unique machine-wide
  int llc = 0;      // last-level-cache id, unique machine-wide
  int package = 0;  // socket
  int node = 0;     // NUMA node
  int capacity = 1024;  // arch_scale_cpu_capacity
};

// A cost figure with its citation.
struct Cost {
  Time ns = 0;
  std::string source;
};

struct CostModel {
  Cost context_switch;  // switch between two tasks of different mm, incl. kernel entry/exit
  Cost ipi;             // delivery latency of a wakeup / reschedule IPI
  Cost idle_probe;  // per-CPU probe in select_idle_cpu / select_idle_core (remote cache line read)
  Cost cache_cold;  // extra work a task pays after migrating to another LLC/core (cache refill)
  Cost wakeup;      // try_to_wake_up path on the waker (enqueue, preemption check)
  Cost pipe_write, pipe_read;      // per 100-byte message system call
  Cost socket_write, socket_read;  // AF_UNIX stream, per 100-byte message
  // The hrtimer interrupt's delivery and handler before it wakes a task (hrtimer_interrupt ->
  // hrtimer_wakeup), on the timer's CPU. Optional in a machine file: 0 when not given.
  Cost timer_irq;
};

enum class Preemption { None, Voluntary, Full };

struct KernelBuild {
  int hz = 250;
  Preemption preempt = Preemption::Voluntary;
  bool nohz_idle = true;
  std::string source;  // e.g. the distro config the values come from
};

// A loaded Machine (load_machine / from_json / capture_sysfs, machine_file.h) is validated and
// normalised: CPU ids are 0..n-1 in order; core, cluster, llc and package ids are dense
// (0..k-1, numbered in the order of their lowest CPU); node ids index numa_distance.
// Nesting holds: SMT siblings share a cluster, an LLC, a package and a node; a cluster lies
// inside one LLC; an LLC inside one package. Idle-state times are in 0..kMaxTimeNs, so
// that the kernel model's sums of them never overflow; cost figures in 0..kMaxCostNs.
struct Machine {
  static constexpr int kFormatVersion = 1;
  static constexpr int kMaxCpus = 4096;
  static constexpr Time kMaxTimeNs = kNsPerSec;  // 1 s; the presets' largest figure is 2.7 ms
  // A cost is paid per event (per probe, per switch, per message): one of seconds makes a
  // run of simulated hours, whose ticks alone take minutes to simulate. The presets' largest
  // cost is 18 us (cache_cold); host measurements are microseconds.
  static constexpr Time kMaxCostNs = 10 * kNsPerMs;

  std::string name;
  std::string description;
  std::vector<Cpu> cpus;                        // indexed by CPU id, ids 0..n-1
  std::string topology_source;                  // where the CPU numbering and grouping come from
  std::vector<std::vector<int>> numa_distance;  // node x node, 10 on the diagonal
  std::string numa_source;
  // node_reclaim_distance (sd_init, v5.4+): a NUMA level whose distance exceeds it loses
  // SD_BALANCE_EXEC, SD_BALANCE_FORK and SD_WAKE_AFFINE. RECLAIM_DISTANCE, 30, unless the
  // architecture sets it: x86 sets 32 on AMD family 17h (Zen; a55c7454a8c8). Before v5.4
  // the constant 30 applies whatever this says.
  int node_reclaim_distance = 30;
  std::vector<IdleState> idle_states;  // shallowest first; same for every CPU
  double smt_throughput =
      1.0;  // per-thread speed when all siblings of a core are busy (1.0 = no sharing)
  std::string smt_source;
  CostModel costs;
  KernelBuild build;

  int nr_cpus() const { return static_cast<int>(cpus.size()); }
  int nr_nodes() const { return static_cast<int>(numa_distance.size()); }
  // SMT siblings of cpu, including cpu itself, ascending.
  std::vector<int> smt_siblings(int cpu) const;
  std::vector<int> llc_cpus(int llc) const;
  int smt_width() const;  // threads per core (max)
  std::vector<int> cluster_cpus(int cluster) const;
  std::vector<int> package_cpus(int package) const;
  std::vector<int> node_cpus(int node) const;
  // Number of distinct ids (ids are dense after loading, so these are max id + 1).
  int nr_cores() const;
  int nr_clusters() const;
  int nr_llcs() const;
  int nr_packages() const;
};

// Kernel cpulist syntax ("0-3,8,10-11"), as in sysfs and on the kernel command line.
std::string format_cpu_list(const std::vector<int>& cpus);  // sorted, ranges merged
// Throws std::invalid_argument on malformed text; the result is sorted and unique.
std::vector<int> parse_cpu_list(std::string_view text);

}  // namespace schedtwin::machine
