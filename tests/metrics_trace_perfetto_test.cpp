// PerfettoTraceWriter: the file parses as perfetto.protos.Trace (the repository's subset,
// compiled into st_metrics) and holds the packets Perfetto needs, fed hand-made tracepoints.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "kernel_test_util.h"
#include "metrics/trace_perfetto.h"
#include "proto/perfetto_trace_subset.pb.h"

namespace schedtwin {
namespace {

namespace pp = perfetto::protos;
using kernel::kNoTask;
using kernel::SwitchState;

struct Fixture {
  machine::Machine m = testutil::flat_machine(1, 2);
  kernel::Kernel k{m, kernel::Config{kernel::make_profile("v5.7")}};
  testutil::BusyBody body;
  Fixture() {
    k.create_task(kernel::TaskAttr{.name = "worker", .nice = -5}, &body);  // pid 1
    k.create_task(kernel::TaskAttr{.name = "helper"}, &body);              // pid 2
  }
};

pp::Trace parse(const std::string& bytes) {
  pp::Trace t;
  EXPECT_TRUE(t.ParseFromString(bytes));
  return t;
}

TEST(PerfettoTrace, SystemInfoProcessTreeAndSchedEvents) {
  Fixture f;
  metrics::PerfettoTraceWriter w(f.k);
  w.sched_wakeup_new(0, 0, 1, 1);
  w.sched_switch(1000, 1, kNoTask, SwitchState::Running, 1);
  w.sched_waking(2000, 1, 0, 0);
  w.sched_switch(2500, 0, kNoTask, SwitchState::Running, 0);
  w.sched_migrate_task(3000, 0, 1, 1, 0);  // helper pulled to CPU 0 by CPU 0
  w.sched_switch(4000, 1, 1, SwitchState::Interruptible, kNoTask);
  w.sched_process_exit(5000, 0, 0);
  w.sched_switch(5000, 0, 0, SwitchState::Dead, kNoTask);
  w.sched_wakeup(6000, 0, 1, 0);
  w.sched_switch(7000, 0, kNoTask, SwitchState::Running, 1);
  w.sched_switch(8000, 0, 1, SwitchState::Preempted, kNoTask);
  EXPECT_EQ(w.events(), 11u);
  pp::Trace t = parse(w.finish());

  ASSERT_GE(t.packet_size(), 2);
  const pp::TracePacket& info = t.packet(0);
  ASSERT_TRUE(info.has_system_info());
  EXPECT_EQ(info.system_info().utsname().sysname(), "Linux");
  EXPECT_EQ(info.system_info().utsname().release(), "5.7.0-schedtwin");
  EXPECT_EQ(info.system_info().num_cpus(), 2u);
  EXPECT_EQ(info.sequence_flags(), 1u);  // SEQ_INCREMENTAL_STATE_CLEARED

  const pp::TracePacket& ps = t.packet(1);
  ASSERT_TRUE(ps.has_process_tree());
  ASSERT_EQ(ps.process_tree().threads_size(), 2);
  EXPECT_EQ(ps.process_tree().threads(0).tid(), 1);
  EXPECT_EQ(ps.process_tree().threads(0).tgid(), 1);
  EXPECT_EQ(ps.process_tree().threads(0).name(), "worker");
  EXPECT_EQ(ps.process_tree().threads(1).name(), "helper");

  // Events per CPU, in order.
  std::map<unsigned, std::vector<pp::FtraceEvent>> by_cpu;
  for (const pp::TracePacket& p : t.packet())
    if (p.has_ftrace_events())
      for (const pp::FtraceEvent& e : p.ftrace_events().event())
        by_cpu[p.ftrace_events().cpu()].push_back(e);
  ASSERT_EQ(by_cpu[0].size(), 8u);
  ASSERT_EQ(by_cpu[1].size(), 3u);

  const pp::FtraceEvent& wn = by_cpu[0][0];
  ASSERT_TRUE(wn.has_sched_wakeup_new());
  EXPECT_EQ(wn.timestamp(), 0u);
  EXPECT_EQ(wn.pid(), 0u);  // forked from the idle context
  EXPECT_EQ(wn.sched_wakeup_new().comm(), "helper");
  EXPECT_EQ(wn.sched_wakeup_new().pid(), 2);
  EXPECT_EQ(wn.sched_wakeup_new().prio(), 120);
  EXPECT_EQ(wn.sched_wakeup_new().target_cpu(), 1);

  const pp::FtraceEvent& sw = by_cpu[1][0];
  ASSERT_TRUE(sw.has_sched_switch());
  EXPECT_EQ(sw.timestamp(), 1000u);
  EXPECT_EQ(sw.pid(), 0u);
  EXPECT_EQ(sw.sched_switch().prev_comm(), "swapper/1");
  EXPECT_EQ(sw.sched_switch().prev_pid(), 0);
  EXPECT_EQ(sw.sched_switch().prev_prio(), 120);
  EXPECT_EQ(sw.sched_switch().prev_state(), 0);
  EXPECT_EQ(sw.sched_switch().next_comm(), "helper");
  EXPECT_EQ(sw.sched_switch().next_pid(), 2);

  const pp::FtraceEvent& wk = by_cpu[1][1];
  ASSERT_TRUE(wk.has_sched_waking());
  EXPECT_EQ(wk.pid(), 2u);  // helper wakes worker
  EXPECT_EQ(wk.sched_waking().comm(), "worker");
  EXPECT_EQ(wk.sched_waking().pid(), 1);
  EXPECT_EQ(wk.sched_waking().prio(), 115);  // nice -5
  EXPECT_EQ(wk.sched_waking().success(), 1);
  EXPECT_EQ(wk.sched_waking().target_cpu(), 0);

  ASSERT_TRUE(by_cpu[0][2].has_sched_migrate_task());
  EXPECT_EQ(by_cpu[0][2].pid(), 1u);  // worker is current on CPU 0
  EXPECT_EQ(by_cpu[0][2].sched_migrate_task().comm(), "helper");
  EXPECT_EQ(by_cpu[0][2].sched_migrate_task().pid(), 2);
  EXPECT_EQ(by_cpu[0][2].sched_migrate_task().orig_cpu(), 1);
  EXPECT_EQ(by_cpu[0][2].sched_migrate_task().dest_cpu(), 0);

  EXPECT_EQ(by_cpu[1][2].sched_switch().prev_state(), 1);  // S
  ASSERT_TRUE(by_cpu[0][3].has_sched_process_exit());
  EXPECT_EQ(by_cpu[0][3].sched_process_exit().pid(), 1);
  EXPECT_EQ(by_cpu[0][3].sched_process_exit().tgid(), 1);
  EXPECT_EQ(by_cpu[0][3].sched_process_exit().prio(), 115);
  EXPECT_EQ(by_cpu[0][4].sched_switch().prev_state(), 16);  // X: EXIT_DEAD
  EXPECT_EQ(by_cpu[0][4].pid(), 1u);
  ASSERT_TRUE(by_cpu[0][5].has_sched_wakeup());
  EXPECT_EQ(by_cpu[0][5].timestamp(), 6000u);
  EXPECT_EQ(by_cpu[0][5].sched_wakeup().pid(), 2);  // task 1 is helper, pid 2
  EXPECT_EQ(by_cpu[0][5].sched_wakeup().success(), 1);
  EXPECT_EQ(by_cpu[0][5].sched_wakeup().target_cpu(), 0);
  // Preempted: TASK_REPORT_MAX (0x100), which Perfetto shows as "Runnable (Preempted)".
  EXPECT_EQ(by_cpu[0][7].sched_switch().prev_state(), 256);
}

TEST(PerfettoTrace, CounterTracksPerTaskAndCpuWithUnchangedValuesSkipped) {
  Fixture f;
  metrics::PerfettoTraceWriter w(f.k);
  w.pelt_task(100, 0, 10, 20, 30);
  w.pelt_task(200, 0, 10, 25, 30);  // only runnable_avg changed: one sample
  w.pelt_cpu(200, 1, 7, 8, 9);
  w.pelt_task(300, kNoTask, 1, 1, 1);  // the idle task has no signals
  EXPECT_EQ(w.events(), 3u + 1u + 3u);
  pp::Trace t = parse(w.finish());

  std::map<std::uint64_t, std::string> names;
  std::map<std::uint64_t, std::uint64_t> parent;
  std::uint64_t thread_track = 0;
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::int64_t>> samples;  // ts, track, value
  for (const pp::TracePacket& p : t.packet()) {
    if (p.has_track_descriptor()) {
      const pp::TrackDescriptor& d = p.track_descriptor();
      if (d.has_thread()) {
        EXPECT_EQ(d.thread().pid(), 1);
        EXPECT_EQ(d.thread().tid(), 1);
        EXPECT_EQ(d.thread().thread_name(), "worker");
        thread_track = d.uuid();
        continue;
      }
      EXPECT_TRUE(d.has_counter());
      names[d.uuid()] = d.name();
      if (d.has_parent_uuid()) parent[d.uuid()] = d.parent_uuid();
    }
    if (p.has_track_event()) {
      EXPECT_EQ(p.track_event().type(), pp::TrackEvent::TYPE_COUNTER);
      EXPECT_EQ(p.trusted_packet_sequence_id(), 1u);
      samples.emplace_back(p.timestamp(), p.track_event().track_uuid(),
                           p.track_event().counter_value());
    }
  }
  ASSERT_NE(thread_track, 0u);
  ASSERT_EQ(names.size(), 6u);  // 3 for the task, 3 for CPU 1
  ASSERT_EQ(samples.size(), 7u);
  auto name_of = [&](std::uint64_t uuid) { return names.at(uuid); };
  EXPECT_EQ(name_of(std::get<1>(samples[0])), "util_avg");
  EXPECT_EQ(parent.at(std::get<1>(samples[0])), thread_track);
  EXPECT_EQ(std::get<2>(samples[0]), 10);
  EXPECT_EQ(name_of(std::get<1>(samples[1])), "runnable_avg");
  EXPECT_EQ(std::get<2>(samples[1]), 20);
  EXPECT_EQ(name_of(std::get<1>(samples[2])), "load_avg");
  EXPECT_EQ(std::get<2>(samples[2]), 30);
  EXPECT_EQ(std::get<0>(samples[3]), 200u);
  EXPECT_EQ(name_of(std::get<1>(samples[3])), "runnable_avg");
  EXPECT_EQ(std::get<2>(samples[3]), 25);
  EXPECT_EQ(name_of(std::get<1>(samples[4])), "cpu1 util_avg");
  EXPECT_EQ(parent.count(std::get<1>(samples[4])), 0u);  // CPU tracks are root tracks
  EXPECT_EQ(std::get<2>(samples[6]), 9);
}

TEST(PerfettoTrace, StopsAtTheEventLimitWithAMarker) {
  Fixture f;
  metrics::PerfettoTraceWriter w(f.k, 2);
  w.sched_switch(1000, 0, kNoTask, SwitchState::Running, 0);
  w.sched_switch(2000, 0, 0, SwitchState::Interruptible, kNoTask);
  w.sched_switch(3000, 1, kNoTask, SwitchState::Running, 1);  // dropped
  w.pelt_cpu(3000, 1, 5, 5, 5);                               // 3 samples dropped
  EXPECT_EQ(w.events(), 2u);
  EXPECT_EQ(w.dropped(), 4u);
  EXPECT_EQ(w.truncated_at(), 3000);
  pp::Trace t = parse(w.finish());
  int switches = 0;
  bool marker = false;
  for (const pp::TracePacket& p : t.packet()) {
    if (p.has_ftrace_events()) switches += p.ftrace_events().event_size();
    if (p.has_track_event() && p.track_event().type() == pp::TrackEvent::TYPE_INSTANT) {
      marker = true;
      EXPECT_EQ(p.timestamp(), 3000u);
      EXPECT_EQ(
          p.track_event().name(),
          "schedtwin: trace truncated: event limit of 2 reached, 4 later events not recorded");
    }
  }
  EXPECT_EQ(switches, 2);
  EXPECT_TRUE(marker);
}

TEST(PerfettoTrace, BundlesAreWrittenInChunksAndKeepEveryEvent) {
  Fixture f;
  metrics::PerfettoTraceWriter w(f.k);
  // 10000 switches alternate on two CPUs: more than one flush of the pending bundles.
  for (int i = 0; i < 10000; ++i) {
    const int cpu = i % 2;
    const bool in = (i / 2) % 2 == 0;
    w.sched_switch(1000 * i, cpu, in ? kNoTask : cpu, SwitchState::Running, in ? cpu : kNoTask);
  }
  pp::Trace t = parse(w.finish());
  int bundles = 0, events = 0;
  std::uint64_t last[2] = {0, 0};
  for (const pp::TracePacket& p : t.packet())
    if (p.has_ftrace_events()) {
      ++bundles;
      EXPECT_EQ(p.trusted_packet_sequence_id(), 2u);
      for (const pp::FtraceEvent& e : p.ftrace_events().event()) {
        EXPECT_GE(e.timestamp(), last[p.ftrace_events().cpu()]);
        last[p.ftrace_events().cpu()] = e.timestamp();
        ++events;
      }
    }
  EXPECT_EQ(events, 10000);
  EXPECT_GE(bundles, 4);  // flushed at 4096 pending events: 3 rounds of 2 CPUs
}

}  // namespace
}  // namespace schedtwin
