#include "metrics/trace_ftrace.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace schedtwin::metrics {

std::string trace_comm(const kernel::Kernel& k, kernel::TaskId t, int cpu) {
  if (t == kernel::kNoTask) return "swapper/" + std::to_string(cpu);
  if (kernel::is_stopper(t)) return "migration/" + std::to_string(kernel::stopper_cpu(t));
  const std::string& name = k.task_name(t);
  return name.size() > 15 ? name.substr(0, 15) : name;
}

const std::string& TraceComms::of(kernel::TaskId t, int cpu) {
  std::deque<std::string>& v = t == kernel::kNoTask    ? idle_
                               : kernel::is_stopper(t) ? stoppers_
                                                       : tasks_;
  const auto i = static_cast<std::size_t>(t == kernel::kNoTask    ? cpu
                                          : kernel::is_stopper(t) ? kernel::stopper_cpu(t)
                                                                  : t);
  if (i >= v.size()) v.resize(i + 1);
  if (v[i].empty()) v[i] = trace_comm(k_, t, cpu);
  return v[i];
}

bool TraceSelection::task(kernel::TaskId t, int cpu) {
  if (f_.comms.empty()) return true;
  auto matches = [&] {
    const std::string& c = comms_.of(t, cpu);
    return std::find(f_.comms.begin(), f_.comms.end(), c) != f_.comms.end();
  };
  if (t < 0) return matches();  // swapper/<cpu>, migration/<cpu>: one comm per CPU
  const auto i = static_cast<std::size_t>(t);
  if (i >= match_.size()) match_.resize(i + 1, -1);
  if (match_[i] < 0) match_[i] = matches() ? 1 : 0;
  return match_[i] == 1;
}

int trace_prio(const kernel::Kernel& k, kernel::TaskId t) {
  if (kernel::is_stopper(t)) return 0;
  return t == kernel::kNoTask ? 120 : 120 + k.task_nice(t);
}

std::int64_t trace_prev_state(kernel::SwitchState s) {
  switch (s) {
    case kernel::SwitchState::Running:
      return 0;
    case kernel::SwitchState::Preempted:
      return 0x100;  // TASK_REPORT_MAX (v5.4)
    case kernel::SwitchState::Interruptible:
      return 0x01;  // TASK_INTERRUPTIBLE
    case kernel::SwitchState::Zombie:
      return 0x20;  // EXIT_ZOMBIE
    case kernel::SwitchState::Dead:
      return 0x10;  // EXIT_DEAD
  }
  return 0;
}

const char* trace_prev_state_text(kernel::SwitchState s) {
  switch (s) {
    case kernel::SwitchState::Running:
      return "R";
    case kernel::SwitchState::Preempted:
      return "R+";
    case kernel::SwitchState::Interruptible:
      return "S";
    case kernel::SwitchState::Zombie:
      return "Z";
    case kernel::SwitchState::Dead:
      return "X";
  }
  return "R";
}

FtraceTextWriter::FtraceTextWriter(const kernel::Kernel& k, std::uint64_t max_events,
                                   TraceFilter filter)
    : k_(k),
      wide_layout_(k.profile().version >= 513),
      max_events_(max_events),
      curr_(k.machine().nr_cpus()),
      comms_(k),
      select_(std::move(filter), comms_) {}

bool FtraceTextWriter::admit(Time t) {
  if (recorded_ < max_events_) {
    ++recorded_;
    return true;
  }
  if (dropped_++ == 0) truncated_at_ = t;
  return false;
}

// trace_print_context + trace_print_lat_fmt (kernel/trace/trace_output.c, v5.4): the
// current task's comm right-aligned in 16 columns ("<idle>" for pid 0), its pid, the CPU,
// the irq-info flags and the timestamp in µs (ns2usecs rounds to the nearest µs).
void FtraceTextWriter::context(Time t, int cpu, const char* flags, const char* event) {
  const kernel::TaskId cur = curr_.on(cpu);
  const std::uint64_t usecs = (static_cast<std::uint64_t>(t) + 500) / 1000;
  line_.clear();
  fmt::format_to(
      std::back_inserter(line_), "{:>16}-{:<{}} [{:03}] {}{} {:5}.{:06}: {}: ",
      cur == kernel::kNoTask ? std::string_view("<idle>") : std::string_view(comms_.of(cur, cpu)),
      trace_pid(cur), wide_layout_ ? 7 : 5, curr_.cpu(cpu), flags, wide_layout_ ? "." : "",
      usecs / 1000000, usecs % 1000000, event);
}

void FtraceTextWriter::end_line() {
  line_.push_back('\n');
  body_.append(line_.data(), line_.size());
}

void FtraceTextWriter::sched_switch(Time t, int cpu, kernel::TaskId prev,
                                    kernel::SwitchState prev_state, kernel::TaskId next) {
  // The context is prev (the switch is traced before the CPU changes hands).
  curr_.set(cpu, prev);
  if (select_.admits(t, prev, next, cpu) && admit(t)) {
    context(t, cpu, "d..2", "sched_switch");
    fmt::format_to(
        std::back_inserter(line_),
        "prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} "
        "next_prio={}",
        comms_.of(prev, cpu), trace_pid(prev), trace_prio(k_, prev),
        trace_prev_state_text(prev_state), comms_.of(next, cpu), trace_pid(next),
        trace_prio(k_, next));
    end_line();
  }
  curr_.set(cpu, next);
}

// sched_waking, sched_wakeup and sched_wakeup_new: one event class (sched_wakeup_template),
// one line shape; only the flags' preempt count and the event name differ.
void FtraceTextWriter::wakeup_line(Time t, int cpu, const char* flags, const char* event,
                                   kernel::TaskId p, int target_cpu) {
  if (!select_.admits(t, p, cpu) || !admit(t)) return;
  context(t, cpu, flags, event);
  fmt::format_to(std::back_inserter(line_), "comm={} pid={} prio={} target_cpu={:03}",
                 comms_.of(p, cpu), trace_pid(p), trace_prio(k_, p), target_cpu);
  end_line();
}

// In a timer interrupt (hrtimer_wakeup) or an IPI's wake list (sched_ttwu_pending) the
// hardirq column shows 'h'.
void FtraceTextWriter::sched_waking(Time t, int cpu, kernel::TaskId p, int target_cpu) {
  wakeup_line(t, cpu, k_.in_hardirq() ? "d.h3" : "d..3", "sched_waking", p, target_cpu);
}

// ttwu_do_wakeup runs with the wakee's rq lock held inside try_to_wake_up: one preempt
// count more than sched_waking.
void FtraceTextWriter::sched_wakeup(Time t, int cpu, kernel::TaskId p, int target_cpu) {
  wakeup_line(t, cpu, k_.in_hardirq() ? "d.h4" : "d..4", "sched_wakeup", p, target_cpu);
}

void FtraceTextWriter::sched_wakeup_new(Time t, int cpu, kernel::TaskId p, int target_cpu) {
  wakeup_line(t, cpu, "d..3", "sched_wakeup_new", p, target_cpu);
}

// In a wakeup from an interrupt (set_task_cpu inside try_to_wake_up) at sched_waking's depth.
void FtraceTextWriter::sched_migrate_task(Time t, int cpu, kernel::TaskId p, int orig_cpu,
                                          int dest_cpu) {
  if (!select_.admits(t, p, cpu) || !admit(t)) return;
  context(t, cpu, k_.in_hardirq() ? "d.h3" : "d..2", "sched_migrate_task");
  fmt::format_to(std::back_inserter(line_), "comm={} pid={} prio={} orig_cpu={} dest_cpu={}",
                 comms_.of(p, cpu), trace_pid(p), trace_prio(k_, p), orig_cpu, dest_cpu);
  end_line();
}

void FtraceTextWriter::sched_process_exit(Time t, int cpu, kernel::TaskId p) {
  if (!select_.admits(t, p, cpu) || !admit(t)) return;
  context(t, cpu, "...1", "sched_process_exit");
  fmt::format_to(std::back_inserter(line_), "comm={} pid={} prio={}", comms_.of(p, cpu),
                 trace_pid(p), trace_prio(k_, p));
  end_line();
}

// TP_printk("state=%lu cpu_id=%lu"): the exit's PWR_EVENT_EXIT is (u32)-1. The idle task
// traces it with interrupts off inside the idle loop's preempt-disabled section.
void FtraceTextWriter::cpu_idle(Time t, int cpu, int state) {
  if (!select_.admits_untasked(t) || !admit(t)) return;
  context(t, cpu, "d..1", "cpu_idle");
  fmt::format_to(std::back_inserter(line_), "state={} cpu_id={}", trace_idle_state(state), cpu);
  end_line();
}

// print_trace_header's nop form with irq-info (print_event_info +
// print_func_help_header_irq, kernel/trace/trace.c, without tgid): v5.4's, or v5.17's
// (a wider pid, the migrate-disable column, BH-disabled named with irqs-off).
std::string FtraceTextWriter::finish() {
  constexpr const char* kHelpV54 =
      "#                              _-----=> irqs-off\n"
      "#                             / _----=> need-resched\n"
      "#                            | / _---=> hardirq/softirq\n"
      "#                            || / _--=> preempt-depth\n"
      "#                            ||| /     delay\n"
      "#           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION\n"
      "#              | |       |   ||||       |         |\n";
  constexpr const char* kHelpV517 =
      "#                                _-----=> irqs-off/BH-disabled\n"
      "#                               / _----=> need-resched\n"
      "#                              | / _---=> hardirq/softirq\n"
      "#                              || / _--=> preempt-depth\n"
      "#                              ||| / _-=> migrate-disable\n"
      "#                              |||| /     delay\n"
      "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
      "#              | |         |   |||||     |         |\n";
  std::string head = fmt::format(
      "# tracer: nop\n"
      "#\n"
      "# entries-in-buffer/entries-written: {}/{}   #P:{}\n"
      "#\n"
      "{}",
      recorded_, recorded_ + dropped_, k_.machine().nr_cpus(), wide_layout_ ? kHelpV517 : kHelpV54);
  // In place: the body may be hundreds of MB, so no second copy of it.
  body_.insert(0, head);
  if (truncated()) {
    // Rounded to the µs as the event lines are (ns2usecs).
    const std::uint64_t usecs = (static_cast<std::uint64_t>(truncated_at_) + 500) / 1000;
    fmt::format_to(std::back_inserter(body_),
                   "# schedtwin: trace truncated at {}.{:06}: event limit of {} reached, {} later "
                   "events not recorded\n",
                   usecs / 1000000, usecs % 1000000, max_events_, dropped_);
  }
  std::string out = std::move(body_);
  body_.clear();
  return out;
}

}  // namespace schedtwin::metrics
