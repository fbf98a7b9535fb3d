// The cpuidle governor: which idle state a CPU enters, predicted from the
// past the way the kernel's menu governor does (drivers/cpuidle/governors/menu.c,
// v5.4): the time to the next timer event this CPU knows of, capped by the
// "typical interval" of the last 8 idle periods when they are regular.
// Left out: menu's correction-factor buckets and its I/O-wait multiplier, PM QoS
// latency limits, retaining the tick for short predictions.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

namespace {

constexpr std::size_t INTERVALS = 8;

// get_typical_interval (menu.c v5.4): the average of the recent idle periods if they
// are consistent (stddev small), dropping the largest outliers; "unknown" otherwise.
// Until a CPU has 8 periods it is "unknown". The kernel's array starts as zeros (a
// prediction of 0), but on a machine that has been up for a while every idle CPU has long
// filled it with the long periods between background interrupts, which are not modelled:
// with zeros, a CPU the workload never used would stay in its shallowest state.
Time get_typical_interval(const std::array<Time, INTERVALS>& intervals, int seen) {
  if (seen < static_cast<int>(INTERVALS)) return kTimeNever;
  std::uint64_t thresh = std::numeric_limits<std::uint64_t>::max();
  for (;;) {
    std::uint64_t max = 0, sum = 0;
    unsigned divisor = 0;
    for (Time t : intervals) {
      std::uint64_t value = static_cast<std::uint64_t>(t) / kNsPerUs;
      if (value <= thresh) {
        sum += value;
        divisor++;
        if (value > max) max = value;
      }
    }
    if (!divisor) return kTimeNever;
    std::uint64_t avg = sum / divisor;
    std::uint64_t variance = 0;
    for (Time t : intervals) {
      std::uint64_t value = static_cast<std::uint64_t>(t) / kNsPerUs;
      if (value <= thresh) {
        std::int64_t diff = static_cast<std::int64_t>(value) - static_cast<std::int64_t>(avg);
        variance += static_cast<std::uint64_t>(diff * diff);
      }
    }
    variance /= divisor;
    // "if the stddev is under 20 us or under 1/6 of the average, we have a pattern"; the
    // first test only while at least 3/4 of the samples are left.
    if ((avg * avg > variance * 36 && divisor * 4 >= INTERVALS * 3) || variance <= 400)
      return static_cast<Time>(avg) * kNsPerUs;
    if (divisor * 4 <= INTERVALS * 3) return kTimeNever;
    thresh = max - 1;
  }
}

}  // namespace

// menu_select (menu.c v5.4), simplified as the file comment says.
int KernelImpl::cpuidle_select(int cpu) {
  Rq& rq = cpu_rq(cpu);
  if (m_.idle_states.empty()) return -1;
  Time next_timer = kTimeNever;
  for (TaskId t : rq.armed_timers) next_timer = std::min(next_timer, task(t).timer_expires);
  Time sleep_length = next_timer == kTimeNever ? kTimeNever : std::max<Time>(0, next_timer - now_);
  rq.menu_next_timer = sleep_length;
  Time predicted =
      std::min(sleep_length, get_typical_interval(rq.idle_history, rq.idle_history_seen));
  int idx = 0;
  for (size_t i = 0; i < m_.idle_states.size(); ++i) {
    const machine::IdleState& s = m_.idle_states[i];
    if (s.target_residency_ns > predicted) break;
    idx = static_cast<int>(i);
  }
  return idx;
}

// menu_reflect/menu_update (menu.c v5.4): remember the measured idle period. The residency
// runs from entering the state to leaving it, exit included; menu takes the state's exit
// latency off and caps the result at the sleep length it predicted with. Left out: the tick
// wakeup and polling-limit cases (no tick in idle here, no polling time limit), and halving
// a residency between one and two exit latencies (menu's guess that the state was never
// reached): that guess feeds menu's correction factors as well as its intervals, and without
// the factors (left out, see the file comment) the halved-up short idles after a deep state
// spread the intervals until get_typical_interval gives up and the CPU takes the deepest
// state every time (v5.3 pingpong at 32 threads on xeon-2s-88: 623 -> 45-289 Gb/s by seed).
// A residency under the exit latency itself is still halved.
void KernelImpl::cpuidle_reflect(int cpu, Time residency) {
  Rq& rq = cpu_rq(cpu);
  // A wakeup that arrived while the CPU was still entering idle ends the period before it
  // began: the kernel measures such a period as 0 (found by fuzz/scenario_fuzz).
  Time measured = std::max<Time>(residency, 0);
  const Time exit_latency =
      rq.idle_state >= 0 ? m_.idle_states[static_cast<size_t>(rq.idle_state)].exit_latency_ns : 0;
  if (measured > exit_latency)
    measured -= exit_latency;
  else
    measured /= 2;
  measured = std::min(measured, rq.menu_next_timer);
  rq.idle_history[static_cast<size_t>(rq.idle_history_pos)] = measured;
  if (rq.idle_history_seen < static_cast<int>(INTERVALS)) ++rq.idle_history_seen;
  rq.idle_history_pos = (rq.idle_history_pos + 1) % INTERVALS;
}

}  // namespace schedtwin::kernel
