// Small machines and task programs for kernel scenario tests.
#pragma once
#include <vector>

#include "kernel/features.h"
#include "kernel/kernel.h"
#include "machine/machine.h"

namespace schedtwin::testutil {

// `clusters` LLCs of `per_cluster` CPUs, no SMT, one NUMA node; one idle state with
// the given real exit cost (exit latency the kernel sees equal to it).
inline machine::Machine flat_machine(int clusters, int per_cluster, Time exit_ns = 0,
                                     Time residency_ns = 0) {
  machine::Machine m;
  m.name = "test";
  int id = 0;
  for (int c = 0; c < clusters; ++c)
    for (int k = 0; k < per_cluster; ++k, ++id) {
      machine::Cpu cpu;
      cpu.id = id;
      cpu.core = id;
      cpu.cluster = c;
      cpu.llc = c;
      m.cpus.push_back(cpu);
    }
  m.numa_distance = {{10}};
  machine::IdleState s;
  s.name = "C1";
  s.exit_latency_ns = exit_ns;
  s.real_exit_ns = exit_ns;
  s.target_residency_ns = residency_ns;
  m.idle_states.push_back(s);
  m.build.hz = 250;
  m.costs.context_switch.ns = 0;
  m.costs.ipi.ns = 0;
  m.costs.idle_probe.ns = 0;
  m.costs.wakeup.ns = 0;
  return m;
}

// A kernel configuration of `profile` with the invariant checker (--check) on.
inline kernel::Config checked_config(const char* profile) {
  kernel::Config c;
  c.profile = kernel::make_profile(profile);
  c.check = true;
  return c;
}

// Runs forever.
struct BusyBody : kernel::TaskBody {
  kernel::Step next(kernel::TaskId, Time) override { return kernel::Step::run(kNsPerSec * 3600); }
};

// run `work` then sleep until the next multiple of `period` (absolute timer), recording
// the wakeup latency: when next() is called after the timer minus the programmed time.
struct PeriodicBody : kernel::TaskBody {
  kernel::Kernel* k = nullptr;
  Time work = 0, period = 0, t_next = 0;
  bool running = false;
  std::vector<Time> latencies;
  kernel::Step next(kernel::TaskId self, Time now) override {
    if (running) {
      running = false;
      t_next += period;
      if (now < t_next) {
        k->arm_timer(self, t_next);
        return kernel::Step::block();
      }
      t_next = now;
    } else if (t_next) {
      latencies.push_back(now - t_next);
    }
    running = true;
    if (!t_next) t_next = now;
    return kernel::Step::run(work);
  }
};

}  // namespace schedtwin::testutil
