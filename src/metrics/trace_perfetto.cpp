#include "metrics/trace_perfetto.h"

#include <fmt/core.h>

#include <array>
#include <vector>

#include "proto/perfetto_trace_subset.pb.h"

namespace schedtwin::metrics {

namespace pp = perfetto::protos;

namespace {

// Events per CPU bundle are collected until this many are pending over all CPUs; then
// every CPU's bundle is written, so the file stays roughly in time order.
constexpr std::size_t kFlushEvents = 4096;

// Sequence ids (trusted_packet_sequence_id): track descriptors, counters and the marker on
// one, ftrace bundles on another, as traced_probes and a track-event producer would.
constexpr std::uint32_t kTrackSequence = 1;
constexpr std::uint32_t kFtraceSequence = 2;

// Track uuids: kind in the high 32 bits, pid or CPU in the low ones.
enum TrackKind : std::uint64_t {
  kThreadTrack = 1,
  kTaskCounter = 2,  // + 0..2: util_avg, runnable_avg, load_avg
  kCpuCounter = 5,   // + 0..2
  kMarkerTrack = 8,
};
constexpr const char* kSignalNames[3] = {"util_avg", "runnable_avg", "load_avg"};

std::uint64_t uuid(std::uint64_t kind, std::uint64_t id) { return kind << 32 | id; }

// One Trace.packet field: tag (field 1, length-delimited), length, the packet. A file of
// such records is one Trace message.
void append_packet(std::string& out, const pp::TracePacket& p) {
  out.push_back('\x0a');
  std::size_t n = p.ByteSizeLong();
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  p.AppendToString(&out);
}

// Last value written per counter track, to write a sample only when it changed.
struct LastValues {
  std::array<std::int64_t, 3> v{};
  bool valid = false;
};

}  // namespace

struct PerfettoTraceWriter::Impl {
  Impl(const kernel::Kernel& kk, std::uint64_t max, TraceFilter filter)
      : k(kk),
        max_events(max),
        curr(kk.machine().nr_cpus()),
        comms(kk),
        select(std::move(filter), comms),
        bundles(static_cast<std::size_t>(kk.machine().nr_cpus())),
        cpu_last(static_cast<std::size_t>(kk.machine().nr_cpus())) {}

  const kernel::Kernel& k;
  std::uint64_t max_events;
  std::uint64_t recorded = 0, dropped = 0;
  Time truncated_at = 0;
  CurrentTasks curr;
  TraceComms comms;
  TraceSelection select;
  std::string body;
  std::vector<pp::FtraceEventBundle> bundles;  // pending, per CPU
  std::size_t pending = 0;
  std::vector<LastValues> task_last, cpu_last;
  std::vector<char> stopper_seen;  // per CPU: its stopper is named in an event recorded

  void note_stopper(kernel::TaskId t) {
    if (!kernel::is_stopper(t)) return;
    const auto c = static_cast<std::size_t>(kernel::stopper_cpu(t));
    if (c >= stopper_seen.size()) stopper_seen.resize(c + 1, 0);
    stopper_seen[c] = 1;
  }

  bool admit(Time t, std::uint64_t n = 1) {
    if (recorded + n <= max_events) {
      recorded += n;
      return true;
    }
    if (dropped == 0) truncated_at = t;
    dropped += n;
    return false;
  }

  // A new ftrace event on `cpu` with common_pid = the CPU's current task.
  pp::FtraceEvent* event(Time t, int cpu) {
    pp::FtraceEvent* e = bundles[static_cast<std::size_t>(curr.cpu(cpu))].add_event();
    e->set_timestamp(static_cast<std::uint64_t>(t));
    e->set_pid(static_cast<std::uint32_t>(trace_pid(curr.on(cpu))));
    ++pending;
    return e;
  }

  void maybe_flush() {
    if (pending >= kFlushEvents) flush();
  }

  void flush() {
    for (std::size_t c = 0; c < bundles.size(); ++c) {
      if (bundles[c].event_size() == 0) continue;
      pp::TracePacket p;
      pp::FtraceEventBundle* b = p.mutable_ftrace_events();
      b->Swap(&bundles[c]);
      b->set_cpu(static_cast<std::uint32_t>(c));
      p.set_trusted_packet_sequence_id(kFtraceSequence);
      append_packet(body, p);
    }
    pending = 0;
  }

  void counters(Time t, LastValues& last, std::uint64_t kind, std::uint64_t id, unsigned long a,
                unsigned long b, unsigned long c) {
    const std::array<std::int64_t, 3> v{static_cast<std::int64_t>(a), static_cast<std::int64_t>(b),
                                        static_cast<std::int64_t>(c)};
    int changed = 0;
    for (int i = 0; i < 3; ++i)
      changed +=
          !last.valid || last.v[static_cast<std::size_t>(i)] != v[static_cast<std::size_t>(i)];
    if (changed == 0 || !admit(t, static_cast<std::uint64_t>(changed))) return;
    pp::TracePacket p;
    for (int i = 0; i < 3; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      if (last.valid && last.v[ui] == v[ui]) continue;
      p.Clear();
      p.set_timestamp(static_cast<std::uint64_t>(t));
      p.set_trusted_packet_sequence_id(kTrackSequence);
      pp::TrackEvent* te = p.mutable_track_event();
      te->set_type(pp::TrackEvent::TYPE_COUNTER);
      te->set_track_uuid(uuid(kind + static_cast<std::uint64_t>(i), id));
      te->set_counter_value(v[ui]);
      append_packet(body, p);
    }
    last.v = v;
    last.valid = true;
  }

  // Packets that go before the events: system info, process tree, track descriptors.
  std::string head() const {
    std::string out;
    const int ncpu = k.machine().nr_cpus();
    {
      pp::TracePacket p;
      p.set_trusted_packet_sequence_id(kTrackSequence);
      p.set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      pp::SystemInfo* si = p.mutable_system_info();
      pp::Utsname* u = si->mutable_utsname();
      u->set_sysname("Linux");
      const int v = k.profile().version;
      u->set_release(fmt::format("{}.{}.0-schedtwin", v / 100, v % 100));
      u->set_version("#1 SMP schedtwin " + k.profile().name);
      si->set_num_cpus(static_cast<std::uint32_t>(ncpu));
      append_packet(out, p);
    }
    const int ntasks = k.nr_tasks();
    {
      pp::TracePacket p;
      p.set_trusted_packet_sequence_id(kTrackSequence);
      pp::ProcessTree* tree = p.mutable_process_tree();
      // A process per thread group leader; every task is a thread of its leader's process.
      for (kernel::TaskId t = 0; t < ntasks; ++t) {
        const kernel::TaskStats st = k.task_stats(t);  // a copy: task_stats reuses its result
        const std::string comm = trace_comm(k, t, 0);
        if (st.tgid == t) {
          pp::ProcessTree::Process* proc = tree->add_processes();
          proc->set_pid(trace_pid(t));
          proc->set_ppid(st.parent == kernel::kNoTask ? 0
                                                      : trace_pid(k.task_stats(st.parent).tgid));
          proc->add_cmdline(comm);
        }
        pp::ProcessTree::Thread* th = tree->add_threads();
        th->set_tid(trace_pid(t));
        th->set_tgid(trace_pid(st.tgid));
        th->set_name(comm);
      }
      // Stoppers are kernel threads: a process of their own without a command line.
      for (std::size_t c = 0; c < stopper_seen.size(); ++c) {
        if (!stopper_seen[c]) continue;
        const kernel::TaskId s = kernel::stopper_task(static_cast<int>(c));
        tree->add_processes()->set_pid(trace_pid(s));
        pp::ProcessTree::Thread* th = tree->add_threads();
        th->set_tid(trace_pid(s));
        th->set_tgid(trace_pid(s));
        th->set_name(trace_comm(k, s, 0));
      }
      append_packet(out, p);
    }
    auto descriptor = [&](std::uint64_t id, std::uint64_t parent, const std::string& name) {
      pp::TracePacket p;
      p.set_trusted_packet_sequence_id(kTrackSequence);
      pp::TrackDescriptor* d = p.mutable_track_descriptor();
      d->set_uuid(id);
      if (parent) d->set_parent_uuid(parent);
      d->set_name(name);
      d->mutable_counter();
      append_packet(out, p);
    };
    for (kernel::TaskId t = 0; t < ntasks; ++t) {
      if (static_cast<std::size_t>(t) >= task_last.size() ||
          !task_last[static_cast<std::size_t>(t)].valid)
        continue;
      const auto pid = static_cast<std::uint64_t>(trace_pid(t));
      pp::TracePacket p;
      p.set_trusted_packet_sequence_id(kTrackSequence);
      pp::TrackDescriptor* d = p.mutable_track_descriptor();
      d->set_uuid(uuid(kThreadTrack, pid));
      pp::ThreadDescriptor* td = d->mutable_thread();
      td->set_pid(trace_pid(k.task_stats(t).tgid));
      td->set_tid(static_cast<std::int64_t>(pid));
      td->set_thread_name(trace_comm(k, t, 0));
      append_packet(out, p);
      for (std::uint64_t i = 0; i < 3; ++i)
        descriptor(uuid(kTaskCounter + i, pid), uuid(kThreadTrack, pid), kSignalNames[i]);
    }
    for (int c = 0; c < ncpu; ++c) {
      if (!cpu_last[static_cast<std::size_t>(c)].valid) continue;
      for (std::uint64_t i = 0; i < 3; ++i)
        descriptor(uuid(kCpuCounter + i, static_cast<std::uint64_t>(c)), 0,
                   fmt::format("cpu{} {}", c, kSignalNames[i]));
    }
    if (dropped) {
      pp::TracePacket p;
      p.set_trusted_packet_sequence_id(kTrackSequence);
      pp::TrackDescriptor* d = p.mutable_track_descriptor();
      d->set_uuid(uuid(kMarkerTrack, 0));
      d->set_name("schedtwin");
      append_packet(out, p);
    }
    return out;
  }
};

PerfettoTraceWriter::PerfettoTraceWriter(const kernel::Kernel& k, std::uint64_t max_events,
                                         TraceFilter filter)
    : impl_(std::make_unique<Impl>(k, max_events, std::move(filter))) {}
PerfettoTraceWriter::~PerfettoTraceWriter() = default;

std::uint64_t PerfettoTraceWriter::events() const { return impl_->recorded; }
std::uint64_t PerfettoTraceWriter::limit() const { return impl_->max_events; }
std::uint64_t PerfettoTraceWriter::dropped() const { return impl_->dropped; }
Time PerfettoTraceWriter::truncated_at() const { return impl_->truncated_at; }

void PerfettoTraceWriter::sched_switch(Time t, int cpu, kernel::TaskId prev,
                                       kernel::SwitchState prev_state, kernel::TaskId next) {
  Impl& m = *impl_;
  m.curr.set(cpu, prev);
  if (m.select.admits(t, prev, next, cpu) && m.admit(t)) {
    m.note_stopper(prev);
    m.note_stopper(next);
    pp::SchedSwitchFtraceEvent* s = m.event(t, cpu)->mutable_sched_switch();
    s->set_prev_comm(m.comms.of(prev, cpu));
    s->set_prev_pid(trace_pid(prev));
    s->set_prev_prio(trace_prio(m.k, prev));
    s->set_prev_state(trace_prev_state(prev_state));
    s->set_next_comm(m.comms.of(next, cpu));
    s->set_next_pid(trace_pid(next));
    s->set_next_prio(trace_prio(m.k, next));
    m.maybe_flush();
  }
  m.curr.set(cpu, next);
}

namespace {

// sched_waking, sched_wakeup and sched_wakeup_new share one field layout (the kernel's
// DECLARE_EVENT_CLASS sched_wakeup_template).
template <class Event>
void fill_wakeup(Event* w, const std::string& comm, int pid, int prio, int target_cpu) {
  w->set_comm(comm);
  w->set_pid(pid);
  w->set_prio(prio);
  w->set_success(1);
  w->set_target_cpu(target_cpu);
}

}  // namespace

void PerfettoTraceWriter::sched_waking(Time t, int cpu, kernel::TaskId p, int target_cpu) {
  Impl& m = *impl_;
  if (!m.select.admits(t, p, cpu) || !m.admit(t)) return;
  m.note_stopper(p);
  fill_wakeup(m.event(t, cpu)->mutable_sched_waking(), m.comms.of(p, cpu), trace_pid(p),
              trace_prio(m.k, p), target_cpu);
  m.maybe_flush();
}

void PerfettoTraceWriter::sched_wakeup(Time t, int cpu, kernel::TaskId p, int target_cpu) {
  Impl& m = *impl_;
  if (!m.select.admits(t, p, cpu) || !m.admit(t)) return;
  m.note_stopper(p);
  fill_wakeup(m.event(t, cpu)->mutable_sched_wakeup(), m.comms.of(p, cpu), trace_pid(p),
              trace_prio(m.k, p), target_cpu);
  m.maybe_flush();
}

void PerfettoTraceWriter::sched_wakeup_new(Time t, int cpu, kernel::TaskId p, int target_cpu) {
  Impl& m = *impl_;
  if (!m.select.admits(t, p, cpu) || !m.admit(t)) return;
  fill_wakeup(m.event(t, cpu)->mutable_sched_wakeup_new(), m.comms.of(p, cpu), trace_pid(p),
              trace_prio(m.k, p), target_cpu);
  m.maybe_flush();
}

void PerfettoTraceWriter::sched_migrate_task(Time t, int cpu, kernel::TaskId p, int orig_cpu,
                                             int dest_cpu) {
  Impl& m = *impl_;
  if (!m.select.admits(t, p, cpu) || !m.admit(t)) return;
  pp::SchedMigrateTaskFtraceEvent* e = m.event(t, cpu)->mutable_sched_migrate_task();
  e->set_comm(m.comms.of(p, cpu));
  e->set_pid(trace_pid(p));
  e->set_prio(trace_prio(m.k, p));
  e->set_orig_cpu(orig_cpu);
  e->set_dest_cpu(dest_cpu);
  m.maybe_flush();
}

void PerfettoTraceWriter::sched_process_exit(Time t, int cpu, kernel::TaskId p) {
  Impl& m = *impl_;
  if (!m.select.admits(t, p, cpu) || !m.admit(t)) return;
  pp::SchedProcessExitFtraceEvent* e = m.event(t, cpu)->mutable_sched_process_exit();
  e->set_comm(m.comms.of(p, cpu));
  e->set_pid(trace_pid(p));
  e->set_tgid(trace_pid(m.k.task_stats(p).tgid));
  e->set_prio(trace_prio(m.k, p));
  m.maybe_flush();
}

void PerfettoTraceWriter::cpu_idle(Time t, int cpu, int state) {
  Impl& m = *impl_;
  if (!m.select.admits_untasked(t) || !m.admit(t)) return;
  pp::CpuIdleFtraceEvent* e = m.event(t, cpu)->mutable_cpu_idle();
  e->set_state(trace_idle_state(state));
  e->set_cpu_id(static_cast<std::uint32_t>(m.curr.cpu(cpu)));
  m.maybe_flush();
}

void PerfettoTraceWriter::pelt_task(Time t, kernel::TaskId p, unsigned long util_avg,
                                    unsigned long runnable_avg, unsigned long load_avg) {
  Impl& m = *impl_;
  if (p < 0 || !m.select.admits(t, p, 0)) return;
  const auto i = static_cast<std::size_t>(p);
  if (i >= m.task_last.size()) m.task_last.resize(i + 1);
  m.counters(t, m.task_last[i], kTaskCounter, static_cast<std::uint64_t>(trace_pid(p)), util_avg,
             runnable_avg, load_avg);
}

void PerfettoTraceWriter::pelt_cpu(Time t, int cpu, unsigned long util_avg,
                                   unsigned long runnable_avg, unsigned long load_avg) {
  Impl& m = *impl_;
  const int c = m.curr.cpu(cpu);
  if (!m.select.time(t)) return;
  m.counters(t, m.cpu_last[static_cast<std::size_t>(c)], kCpuCounter, static_cast<std::uint64_t>(c),
             util_avg, runnable_avg, load_avg);
}

std::string PerfettoTraceWriter::finish() {
  Impl& m = *impl_;
  m.flush();
  if (m.dropped) {
    pp::TracePacket p;
    p.set_timestamp(static_cast<std::uint64_t>(m.truncated_at));
    p.set_trusted_packet_sequence_id(kTrackSequence);
    pp::TrackEvent* te = p.mutable_track_event();
    te->set_type(pp::TrackEvent::TYPE_INSTANT);
    te->set_track_uuid(uuid(kMarkerTrack, 0));
    te->set_name(fmt::format(
        "schedtwin: trace truncated: event limit of {} reached, {} later events not recorded",
        m.max_events, m.dropped));
    append_packet(m.body, p);
  }
  // In place: the body may be hundreds of MB, so no second copy of it.
  m.body.insert(0, m.head());
  std::string out = std::move(m.body);
  m.body.clear();
  return out;
}

}  // namespace schedtwin::metrics
