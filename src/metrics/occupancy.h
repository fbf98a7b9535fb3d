// Per-CPU occupancy over time: for each CPU and each bin of simulated time, how long tasks of
// each scheduling policy ran there; the rest of the bin the CPU ran its idle task. Built from
// sched_switch alone, as one would build it from a trace's sched_switch events (the HTML
// report's occupancy chart, `reproduce --report`).
#pragma once
#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/time.h"
#include "kernel/kernel.h"
#include "kernel/trace.h"

namespace schedtwin::metrics {

inline constexpr int kNrPolicies = 3;  // kernel::Policy: SCHED_OTHER, SCHED_BATCH, SCHED_IDLE

struct Occupancy {
  Time bin_ns = 0;  // length of a bin (ns); bin b covers [b * bin_ns, (b + 1) * bin_ns)
  Time end_ns = 0;  // end of the recording (ns); the last bin may be partial
  int nr_cpus = 0;
  // ns[bin * nr_cpus + cpu][policy]: ns run in that bin on that CPU by tasks of that policy
  std::vector<std::array<Time, kNrPolicies>> ns;

  std::size_t nr_bins() const;
  Time ran(int cpu, std::size_t bin, kernel::Policy p) const;
  // The part of bin b inside [0, end_ns): bin_ns except for a partial last bin (ns).
  Time bin_length(std::size_t bin) const;
};

// {"bin_ms": ..., "end_s": ..., "cpus": N, "classes": [...], "rows": [...]}: one row per CPU
// and bin, {"cpu": c, "t_s": start of the bin, "SCHED_OTHER": share, ..., "idle": share},
// shares of the bin's length rounded to 1e-4. "classes" lists the policies that ran at all
// (kernel::policy_name) and then "idle"; rows carry exactly those keys.
nlohmann::json occupancy_json(const Occupancy& o);

// The TraceSink that records an Occupancy. Install it on a Kernel before any task exists
// (every CPU then runs its idle task) and call finish() once the run has ended. A task's
// class is the policy it was created with (Kernel::task_created_policy; a later sched_setscheduler is
// not seen). Memory: one entry per CPU and bin reached.
class OccupancyRecorder final : public kernel::TraceSink {
 public:
  // bin_ns > 0 (std::invalid_argument otherwise).
  OccupancyRecorder(const kernel::Kernel& k, Time bin_ns);

  void sched_switch(Time t, int cpu, kernel::TaskId prev, kernel::SwitchState prev_state,
                    kernel::TaskId next) override;
  void sched_waking(Time, int, kernel::TaskId, int) override {}
  void sched_wakeup(Time, int, kernel::TaskId, int) override {}
  void sched_wakeup_new(Time, int, kernel::TaskId, int) override {}
  void sched_migrate_task(Time, int, kernel::TaskId, int, int) override {}
  void sched_process_exit(Time, int, kernel::TaskId) override {}
  void cpu_idle(Time, int, int) override {}
  void pelt_task(Time, kernel::TaskId, unsigned long, unsigned long, unsigned long) override {}
  void pelt_cpu(Time, int, unsigned long, unsigned long, unsigned long) override {}

  // Closes every CPU's current stretch at `end` (ns) and returns the result; the recorder
  // is left empty.
  Occupancy finish(Time end);

 private:
  void account(int cpu, Time until);

  const kernel::Kernel& k_;
  Occupancy o_;
  std::vector<Time> since_;  // per CPU: when its current task was switched in
  std::vector<int> cls_;     // per CPU: that task's policy index, -1 for the idle task
};

}  // namespace schedtwin::metrics
