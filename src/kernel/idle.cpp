// The cpuidle governor: which idle state a CPU enters, predicted from the
// past the way the kernel's menu governor does (drivers/cpuidle/governors/menu.c,
// v5.4): the time to the next timer event this CPU knows of, capped by the
// "typical interval" of the last 8 idle periods when they are regular.
// menu_select also decides whether the idle CPU stops its tick (NO_HZ idle) or keeps it
// running for a short predicted idle; enter_idle acts on that decision.
// Left out: the I/O-wait half of menu's correction-factor buckets and its I/O-wait
// multiplier, PM QoS latency limits, the polling state's time limit.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

namespace {

constexpr std::size_t INTERVALS = 8;
constexpr Time kMaxInteresting = 50 * kNsPerMs;  // MAX_INTERESTING, 50000 us
constexpr std::uint64_t RESOLUTION = 1024, DECAY = 8;

// which_bucket (menu.c v5.4) without I/O waiters: the sleep length's decade in us.
int which_bucket(std::uint64_t duration_us) {
  if (duration_us < 10) return 0;
  if (duration_us < 100) return 1;
  if (duration_us < 1000) return 2;
  if (duration_us < 10000) return 3;
  if (duration_us < 100000) return 4;
  return 5;
}

// menu's next_timer_us: an unsigned int of us. A CPU with no timer armed (the model has no
// background timers) gets the largest value, so a correction factor cannot bring it near.
std::uint64_t next_timer_us(Time sleep_length) {
  constexpr std::uint64_t kMax = 0xffffffffu;
  if (sleep_length == kTimeNever) return kMax;
  return std::min<std::uint64_t>(static_cast<std::uint64_t>(sleep_length) / kNsPerUs, kMax);
}

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

// menu_select (menu.c v5.4, with v5.3's 07d815701274: a non-polling state 0 chosen up front
// lets the tick stop): the prediction is the sleep length (the next timer armed on this CPU)
// scaled by its bucket's correction factor, or the typical interval, whichever is shorter,
// and the interactivity limit is that prediction (performance_multiplier is 1 without I/O
// waiters). Sets `stop_tick` false when the tick should keep running: a
// polling state, or a predicted idle shorter than a tick while the tick still runs; then a
// state deeper than the time to the next tick is traded for a shallower one. Once the tick
// is stopped a short prediction is not trusted: the time to the next timer decides.
int KernelImpl::cpuidle_select(int cpu, bool& stop_tick) {
  Rq& rq = cpu_rq(cpu);
  stop_tick = true;
  Time next_timer = kTimeNever;
  for (TaskId t : rq.armed_timers) next_timer = std::min(next_timer, task(t).timer_expires);
  // tick_nohz_get_sleep_length: the sleep length if the tick were stopped (kept, as the
  // kernel keeps it in ts->timer_expires, for tick_nohz_idle_stop_tick), and in delta_next
  // the time to the next clock event, the tick included while it runs.
  const Time sleep_length =
      next_timer == kTimeNever ? kTimeNever : std::max<Time>(0, next_timer - now_);
  rq.menu_next_timer = sleep_length;
  const std::uint64_t timer_us = next_timer_us(sleep_length);
  rq.menu_bucket = which_bucket(timer_us);
  if (m_.idle_states.empty()) return -1;  // no cpuidle driver: default_idle_call, tick stopped
  const Time delta_next =
      rq.tick_stopped ? sleep_length : std::min(sleep_length, next_tick_time() - now_);
  const auto& st = m_.idle_states;
  if (st.size() <= 1 || sleep_length < st[1].target_residency_ns) {
    stop_tick = !st[0].polling;  // state 0 whatever the prediction
    return 0;
  }
  // DIV_ROUND_CLOSEST_ULL(next_timer_us * correction_factor, RESOLUTION * DECAY)
  const std::uint64_t factor = rq.menu_correction[static_cast<std::size_t>(rq.menu_bucket)];
  const std::uint64_t predicted_us =
      (timer_us * factor + RESOLUTION * DECAY / 2) / (RESOLUTION * DECAY);
  Time predicted = std::min(static_cast<Time>(predicted_us) * kNsPerUs,
                            get_typical_interval(rq.idle_history, rq.idle_history_seen));
  Time latency_req = kTimeNever;
  if (rq.tick_stopped) {
    if (predicted < tick_ns_) predicted = delta_next;
  } else {
    latency_req = predicted;  // interactivity_req
  }
  int idx = -1;
  for (size_t i = 0; i < st.size(); ++i) {
    const machine::IdleState& s = st[i];
    if (idx == -1) idx = static_cast<int>(i);
    const machine::IdleState& cur = st[static_cast<size_t>(idx)];
    if (s.target_residency_ns > predicted) {
      // A physical state rather than polling, when a timer will come soon enough.
      if (cur.polling && s.exit_latency_ns <= latency_req &&
          s.target_residency_ns <= sleep_length) {
        predicted = s.target_residency_ns;
        idx = static_cast<int>(i);
        break;
      }
      if (predicted < tick_ns_) break;
      if (!rq.tick_stopped) {
        // Waking early from a shallow state does no harm: keep the tick, decide again then.
        predicted = cur.target_residency_ns;
        break;
      }
      if (cur.target_residency_ns < tick_ns_ && s.target_residency_ns <= delta_next)
        idx = static_cast<int>(i);
      return idx;
    }
    if (s.exit_latency_ns > latency_req) {
      // Out for latency: the chosen state's residency is the expected idle, so that the
      // tick is kept while that is short.
      predicted = st[static_cast<size_t>(idx)].target_residency_ns;
      break;
    }
    idx = static_cast<int>(i);
  }
  if ((st[static_cast<size_t>(idx)].polling || predicted < tick_ns_) && !rq.tick_stopped) {
    stop_tick = false;
    if (idx > 0 && st[static_cast<size_t>(idx)].target_residency_ns > delta_next) {
      while (idx > 0) {
        --idx;
        if (st[static_cast<size_t>(idx)].target_residency_ns <= delta_next) break;
      }
    }
  }
  return idx;
}

// menu_reflect/menu_update (menu.c v5.4): remember the measured idle period and correct the
// bucket's factor towards measured / sleep length. The residency runs from entering the
// state to leaving it, exit included; menu takes the state's exit latency off and caps the
// result at the sleep length it predicted with. An idle period the running tick interrupted
// when no timer was due within a tick counts as a long one (9/10 of MAX_INTERESTING, 45 ms),
// so that the next prediction lets the tick stop. Left out: the polling time limit (a
// polling state polls until it is woken), and halving a residency between one and two exit
// latencies (menu's guess that the state was never reached): on a CPU with no timer armed
// (the model has no background timers, so no correction factor brings its sleep length
// near) the halved-up short idles after a deep state spread the intervals until
// get_typical_interval gives up, and the CPU then takes the deepest state every time (v5.3
// pingpong at 32 threads on xeon-2s-88: 623 -> 45-289 Gb/s by seed). A residency under the
// exit latency itself is still halved.
void KernelImpl::cpuidle_reflect(int cpu, Time residency) {
  Rq& rq = cpu_rq(cpu);
  // A wakeup that arrived while the CPU was still entering idle ends the period before it
  // began: the kernel measures such a period as 0 (found by fuzz/scenario_fuzz).
  Time measured = std::max<Time>(residency, 0);
  const Time exit_latency =
      rq.idle_state >= 0 ? m_.idle_states[static_cast<size_t>(rq.idle_state)].exit_latency_ns : 0;
  if (rq.tick_wakeup && rq.menu_next_timer > tick_ns_)
    measured = 9 * kMaxInteresting / 10;
  else if (measured > exit_latency)
    measured -= exit_latency;
  else
    measured /= 2;
  rq.tick_wakeup = false;
  measured = std::min(measured, rq.menu_next_timer);
  // The correction ratio, in the kernel's unsigned us arithmetic.
  const std::uint64_t timer_us = next_timer_us(rq.menu_next_timer);
  const std::uint64_t measured_us = static_cast<std::uint64_t>(measured) / kNsPerUs;
  std::uint32_t& factor = rq.menu_correction[static_cast<std::size_t>(rq.menu_bucket)];
  std::uint64_t new_factor = factor - factor / DECAY;
  if (timer_us > 0 && measured_us < static_cast<std::uint64_t>(kMaxInteresting / kNsPerUs))
    new_factor += RESOLUTION * measured_us / timer_us;
  else
    new_factor += RESOLUTION;  // idle so long that it counts as a perfect prediction
  factor = static_cast<std::uint32_t>(new_factor);
  rq.idle_history[static_cast<size_t>(rq.idle_history_pos)] = measured;
  if (rq.idle_history_seen < static_cast<int>(INTERVALS)) ++rq.idle_history_seen;
  rq.idle_history_pos = (rq.idle_history_pos + 1) % INTERVALS;
}

}  // namespace schedtwin::kernel
