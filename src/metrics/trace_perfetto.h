// Perfetto protobuf trace writer (`--trace FILE`): the kernel model's tracepoints as the
// packets Perfetto's own traced_probes writes, so that ui.perfetto.dev and trace_processor
// show CPU tracks, thread states and wakeups as for a real kernel.
//
// The file is a perfetto.protos.Trace (proto/perfetto_trace_subset.proto):
//  - a SystemInfo packet (utsname "Linux", release "<major>.<minor>.0-schedtwin" from the
//    kernel profile) so that trace_processor decodes prev_state with the right version;
//  - a ProcessTree packet naming every task (pid = TaskId + 1, tgid = pid);
//  - TrackDescriptors: per task a thread track with counter tracks "util_avg",
//    "runnable_avg", "load_avg" under it; per CPU root counter tracks "cpuN util_avg", ...;
//  - FtraceEventBundles per CPU with sched_switch, sched_waking, sched_wakeup_new,
//    sched_migrate_task and sched_process_exit (fields as in metrics/trace_ftrace.h);
//  - TrackEvent TYPE_COUNTER packets with the PELT values the kernel reports at each
//    context switch (a sample is written only when the value changed).
// Timestamps are simulated ns in the default (BOOTTIME) clock domain.
//
// Memory is bounded: events are encoded as they come into one buffer, at most
// `max_events` of them (ftrace events and counter samples); past the limit the writer only
// counts, and the file ends with an instant event "schedtwin: trace truncated ..." on a
// track named "schedtwin" at the time of the first dropped event.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "kernel/kernel.h"
#include "kernel/trace.h"
#include "metrics/trace_ftrace.h"

namespace schedtwin::metrics {

class PerfettoTraceWriter final : public kernel::TraceSink {
 public:
  explicit PerfettoTraceWriter(const kernel::Kernel& k,
                               std::uint64_t max_events = kDefaultTraceEventLimit,
                               TraceFilter filter = {});
  ~PerfettoTraceWriter() override;
  PerfettoTraceWriter(const PerfettoTraceWriter&) = delete;
  PerfettoTraceWriter& operator=(const PerfettoTraceWriter&) = delete;

  void sched_switch(Time t, int cpu, kernel::TaskId prev, kernel::SwitchState prev_state,
                    kernel::TaskId next) override;
  void sched_waking(Time t, int cpu, kernel::TaskId p, int target_cpu) override;
  // Not written (as Perfetto's default sched config): sched_waking carries the wakeup.
  void sched_wakeup(Time t, int cpu, kernel::TaskId p, int target_cpu) override;
  void sched_wakeup_new(Time t, int cpu, kernel::TaskId p, int target_cpu) override;
  void sched_migrate_task(Time t, int cpu, kernel::TaskId p, int orig_cpu, int dest_cpu) override;
  void sched_process_exit(Time t, int cpu, kernel::TaskId p) override;
  void cpu_idle(Time t, int cpu, int state) override;
  void pelt_task(Time t, kernel::TaskId p, unsigned long util_avg, unsigned long runnable_avg,
                 unsigned long load_avg) override;
  void pelt_cpu(Time t, int cpu, unsigned long util_avg, unsigned long runnable_avg,
                unsigned long load_avg) override;

  std::uint64_t events() const;  // ftrace events and counter samples recorded
  std::uint64_t limit() const;
  std::uint64_t dropped() const;  // past the limit
  bool truncated() const { return dropped() > 0; }
  Time truncated_at() const;  // time of the first dropped event

  // The serialized trace. Leaves the writer empty.
  std::string finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedtwin::metrics
