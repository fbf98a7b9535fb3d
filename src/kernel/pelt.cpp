// PELT arithmetic, following kernel/sched/pelt.c of Linux v5.7 line for line (see pelt.h).
// Left out: the tracepoints, and the rt/dl/irq/thermal signal owners (only the CFS entity
// and cfs_rq wrappers are needed; they are the same arithmetic with other inputs).
#include "kernel/pelt.h"

namespace schedtwin::kernel {

std::uint64_t mul_u64_u32_shr(std::uint64_t a, std::uint32_t mul, unsigned shift) {
  const auto al = static_cast<std::uint32_t>(a);
  const auto ah = static_cast<std::uint32_t>(a >> 32);
  std::uint64_t ret = (static_cast<std::uint64_t>(al) * mul) >> shift;
  if (ah) ret += (static_cast<std::uint64_t>(ah) * mul) << (32 - shift);
  return ret;
}

std::uint64_t decay_load(std::uint64_t val, std::uint64_t n) {
  if (n > LOAD_AVG_PERIOD * 63) return 0;
  // After the bounds check n fits 32 bits; y^n = 1/2^(n/32) * y^(n%32).
  auto local_n = static_cast<std::uint32_t>(n);
  if (local_n >= LOAD_AVG_PERIOD) {
    val >>= local_n / LOAD_AVG_PERIOD;
    local_n %= LOAD_AVG_PERIOD;
  }
  return mul_u64_u32_shr(val, runnable_avg_yN_inv[local_n], 32);
}

std::uint32_t __accumulate_pelt_segments(std::uint64_t periods, std::uint32_t d1,
                                         std::uint32_t d3) {
  const std::uint32_t c3 = d3;  // y^0 == 1
  const auto c1 = static_cast<std::uint32_t>(decay_load(d1, periods));
  // 1024 * sum_{n=1}^{p-1} y^n = LOAD_AVG_MAX - LOAD_AVG_MAX*y^p - 1024 (u32 arithmetic).
  const auto c2 =
      static_cast<std::uint32_t>(LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024);
  return c1 + c2 + c3;
}

std::uint64_t accumulate_sum(std::uint64_t delta, sched_avg& sa, unsigned long load,
                             unsigned long runnable, int running) {
  auto contrib = static_cast<std::uint32_t>(delta);  // periods == 0 -> delta < 1024
  delta += sa.period_contrib;
  const std::uint64_t periods = delta / 1024;

  // Step 1: decay the old sums if period boundaries were crossed.
  if (periods) {
    sa.load_sum = decay_load(sa.load_sum, periods);
    sa.runnable_sum = decay_load(sa.runnable_sum, periods);
    sa.util_sum = static_cast<std::uint32_t>(decay_load(sa.util_sum, periods));

    // Step 2: d1 (rest of the old period), full periods, d3 (start of the current one).
    delta %= 1024;
    // With load == 0 the caller has zeroed runnable and running too, so contrib is unused.
    if (load) {
      contrib = __accumulate_pelt_segments(periods, 1024 - sa.period_contrib,
                                           static_cast<std::uint32_t>(delta));
    }
  }
  sa.period_contrib = static_cast<std::uint32_t>(delta);

  if (load) sa.load_sum += static_cast<std::uint64_t>(load) * contrib;
  if (runnable)
    sa.runnable_sum += (static_cast<std::uint64_t>(runnable) * contrib) << PELT_CAPACITY_SHIFT;
  if (running) sa.util_sum += contrib << PELT_CAPACITY_SHIFT;

  return periods;
}

int ___update_load_sum(std::uint64_t now, sched_avg& sa, unsigned long load, unsigned long runnable,
                       int running) {
  std::uint64_t delta = now - sa.last_update_time;
  // Time going backwards: resynchronise and account nothing.
  if (static_cast<std::int64_t>(delta) < 0) {
    sa.last_update_time = now;
    return 0;
  }

  // 1024 ns is the unit of measurement; the remainder stays for the next update.
  delta >>= 10;
  if (!delta) return 0;
  sa.last_update_time += delta << 10;

  // A dequeued entity (or empty cfs_rq) can still be cfs_rq->curr for a moment; running
  // is a subset of runnable, which is a subset of load.
  if (!load) runnable = running = 0;

  if (!accumulate_sum(delta, sa, load, runnable, running)) return 0;
  return 1;
}

void ___update_load_avg(sched_avg& sa, unsigned long load) {
  // The maximum a sum can reach at this point of the period is
  // LOAD_AVG_MAX*y + period_contrib == LOAD_AVG_MAX - 1024 + period_contrib, so dividing by
  // it keeps an always-running signal at 1024 instead of oscillating in [1002, 1024].
  const std::uint32_t divider = LOAD_AVG_MAX - 1024 + sa.period_contrib;
  sa.load_avg =
      static_cast<unsigned long>(static_cast<std::uint64_t>(load) * sa.load_sum / divider);
  sa.runnable_avg = static_cast<unsigned long>(sa.runnable_sum / divider);
  sa.util_avg = sa.util_sum / divider;
}

bool update_pelt(std::uint64_t now, sched_avg& sa, unsigned long weight_for_load_avg,
                 unsigned long load_input, unsigned long runnable_input, bool running) {
  if (___update_load_sum(now, sa, load_input, runnable_input, running ? 1 : 0)) {
    ___update_load_avg(sa, weight_for_load_avg);
    return true;
  }
  return false;
}

}  // namespace schedtwin::kernel
