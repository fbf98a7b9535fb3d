// The schbench workload (December 2021 version) on small machines, every figure worked by hand
// from schbench.c's loops and clock reads: the +1 µs of usec_spin's strict comparison, the
// cputime subtraction of add_lat, the dropped 0 µs samples, one timestamp per batch (later
// wakees count the waker's wakeup cost), the warmup reset, the interval tables, the stop and
// the joins, and combine_stats' min.
#include <gtest/gtest.h>

#include <vector>

#include "engine/error.h"
#include "kernel/kernel.h"
#include "kernel_test_util.h"
#include "workload/schbench.h"

using namespace schedtwin;
using namespace schedtwin::workload;

namespace {

kernel::Config config() {
  kernel::Config c;
  c.profile = kernel::make_profile("v5.4");
  c.seed = 1;
  return c;
}

// One message thread on CPU 0 with its workers on CPUs 1.., main on the last CPU, so that
// nothing shares a CPU.
SchbenchParams pinned(int workers, int cpus) {
  SchbenchParams p;
  p.message_threads = 1;
  p.worker_threads = workers;
  p.main_cpu = cpus - 1;
  p.message_cpu = {0};
  for (int i = 0; i < workers; ++i) p.worker_cpu.push_back(1 + i);
  return p;
}

void expect_all_rows(const SchbenchTable& t, std::uint64_t v) {
  ASSERT_EQ(t.rows.size(), kSchbenchPercentiles.size());
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    EXPECT_EQ(t.rows[i].p, kSchbenchPercentiles[i]);
    EXPECT_EQ(t.rows[i].value_us, v) << "row " << i;
  }
}

}  // namespace

TEST(SchbenchCombine, MinRestartsAfterAWorkerWithoutSamples) {
  EXPECT_EQ(combine_min({}), 0u);
  EXPECT_EQ(combine_min({5, 3, 9}), 3u);
  // 5, then 3 < 5, then 0 < 3 (an empty worker), then 7 replaces the unset 0.
  EXPECT_EQ(combine_min({5, 3, 0, 7}), 7u);
  EXPECT_EQ(combine_min({0, 0}), 0u);
}

TEST(SchbenchParams, Validation) {
  SchbenchParams p;
  EXPECT_NO_THROW(validate(p));
  auto bad = [](auto change) {
    SchbenchParams q;
    change(q);
    EXPECT_THROW(validate(q), InputError);
  };
  bad([](SchbenchParams& q) { q.message_threads = 0; });
  bad([](SchbenchParams& q) { q.worker_threads = 0; });
  bad([](SchbenchParams& q) { q.runtime_s = 0; });  // schbench: forever
  bad([](SchbenchParams& q) { q.cputime_us = -1; });
  bad([](SchbenchParams& q) { q.sleeptime_us = kSchbenchMaxTimeUs + 1; });
  bad([](SchbenchParams& q) { q.warmuptime_s = -1; });
  bad([](SchbenchParams& q) { q.sleeptime_us = q.message_cputime_us = 0; });
  bad([](SchbenchParams& q) {
    q.message_threads = 1000;
    q.worker_threads = 100;  // 101001 threads
  });
}

// Zero costs, sleeptime 0 (no usleep, no jitter: the message thread only spins), cputime
// 10000 µs. At t = 0 the message thread creates the worker, finds its list empty and spins
// until 30001 µs (usec_spin ends at the first µs past start + 30000); the worker posts at 0.
// Wakes then come every 30001 µs: T_k = 30001 k, k >= 1; the worker runs at T_k, spins until
// T_k + 10001 µs and records (10001 - 10000) = 1 µs. main polls at 0, 1000050 (sleep(1) + 50 µs
// slack), 2000100 >= 2 s: stop. T_66 = 1980066 is the last wake before it; the worker posts
// again at 1990067, so the message thread's wake at T_67 = 2010067 (after stopping) gives one
// more sample at 2020068, where the worker exits, the message thread and then main join: 67
// samples, the run ends at 2020068 µs.
TEST(SchbenchRun, ZeroCostsGiveOneMicrosecondPerWakeup) {
  machine::Machine m = testutil::flat_machine(1, 4);
  kernel::Kernel k(m, config());
  SchbenchParams p = pinned(1, 4);
  p.runtime_s = 2;
  p.sleeptime_us = 0;
  p.cputime_us = 10000;
  const SchbenchResult r = run_schbench(k, p);
  EXPECT_EQ(r.start, 0);
  EXPECT_EQ(r.stop, 2'000'100'000);
  EXPECT_EQ(r.end, 2'020'068'000);
  EXPECT_EQ(r.loops, 67u);
  EXPECT_EQ(r.final_table.samples, 67u);
  EXPECT_EQ(r.final_table.runtime_s, 2u);
  expect_all_rows(r.final_table, 1);
  EXPECT_EQ(r.final_table.rows[0].samples_increment, 67u);
  EXPECT_EQ(r.final_table.min_us, 1u);
  EXPECT_EQ(r.final_table.max_us, 1u);
  EXPECT_EQ(r.histogram.bucket(1), 67u);
  EXPECT_TRUE(r.output.empty());  // runtime 2 < warmup 5 and < interval 10
  EXPECT_EQ(r.warmup_at, -1);
}

// The same with cputime 0: usec_spin(0) returns at once, the sample is now - wake_time = 0 µs,
// and schbench drops samples of 0 ("if (delta > 0)"): loops but no samples, and the empty
// table reports bucket 0 everywhere.
TEST(SchbenchRun, ZeroDeltaSamplesAreDropped) {
  machine::Machine m = testutil::flat_machine(1, 4);
  kernel::Kernel k(m, config());
  SchbenchParams p = pinned(1, 4);
  p.runtime_s = 1;
  p.sleeptime_us = 0;
  p.cputime_us = 0;
  const SchbenchResult r = run_schbench(k, p);
  EXPECT_GT(r.loops, 0u);
  EXPECT_EQ(r.final_table.samples, 0u);
  expect_all_rows(r.final_table, 0);
  EXPECT_EQ(r.final_table.min_us, 0u);
  EXPECT_EQ(r.final_table.max_us, 0u);
}

// The worker's CPU sleeps in C1 (exit 20 µs); the message thread's wakeup sends an IPI (5 µs),
// so the worker gets its CPU 25 µs after the batch timestamp (context switch 0). With the
// default sleeptime (jitter) and cputime, every sample is 25 + 1 = 26 µs; with cputime 0 it is
// 25 µs (no spin, no +1).
TEST(SchbenchRun, LatencyIsIpiPlusIdleExitPlusOne) {
  for (std::int64_t cputime : {30000, 0}) {
    machine::Machine m = testutil::flat_machine(1, 3, us(20), 0);
    m.costs.ipi.ns = us(5);
    kernel::Kernel k(m, config());
    SchbenchParams p = pinned(1, 3);
    p.runtime_s = 2;
    p.cputime_us = cputime;
    const SchbenchResult r = run_schbench(k, p);
    const std::uint64_t want = cputime ? 26 : 25;
    EXPECT_GT(r.final_table.samples, 10u);
    EXPECT_EQ(r.final_table.samples, r.loops);
    expect_all_rows(r.final_table, want);
    EXPECT_EQ(r.final_table.min_us, want);
    EXPECT_EQ(r.final_table.max_us, want);
  }
}

// Two workers on their own CPUs, a try_to_wake_up cost of 3 µs on the waker, nothing else.
// xlist_wake_all takes one timestamp T: the first worker it wakes runs at T (1 µs), the second
// is woken after the first wakeup's cost, at T + 3 µs (4 µs). Every batch holds both workers,
// so the samples split evenly between 1 and 4: p50 is 1 (N/2 samples reach it), p75 and up 4.
TEST(SchbenchRun, OneTimestampPerBatchChargesTheWakersTime) {
  machine::Machine m = testutil::flat_machine(1, 4);
  m.costs.wakeup.ns = us(3);
  kernel::Kernel k(m, config());
  SchbenchParams p = pinned(2, 4);
  p.runtime_s = 2;
  p.sleeptime_us = 0;
  p.cputime_us = 10000;
  const SchbenchResult r = run_schbench(k, p);
  const std::uint64_t n = r.final_table.samples;
  ASSERT_GT(n, 100u);
  EXPECT_EQ(n % 2, 0u);
  EXPECT_EQ(r.histogram.bucket(1), n / 2);
  EXPECT_EQ(r.histogram.bucket(4), n / 2);
  const auto& rows = r.final_table.rows;
  EXPECT_EQ(rows[0].value_us, 1u);
  EXPECT_EQ(rows[0].samples_increment, n / 2);
  EXPECT_EQ(rows[1].value_us, 4u);
  EXPECT_EQ(rows[1].samples_increment, n / 2);
  for (std::size_t i = 2; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].value_us, 4u);
    EXPECT_EQ(rows[i].samples_increment, 0u);
  }
  EXPECT_EQ(r.final_table.min_us, 1u);
  EXPECT_EQ(r.final_table.max_us, 4u);
}

// Warmup 5 s, runtime 7 s, the zero-cost cycle of the first test (wakes at T_k = 30001 k µs,
// samples at T_k + 10001). main polls every 1000050 µs: the poll at 5000250 µs is the first
// past 5 s and zeroes the statistics; samples after it are those of k >= 167 (T_167 + 10001 =
// 5020168). The stop poll is at 7000350; T_233 = 6990233's sample (7000234) precedes it, so
// the last wake is T_234 (after stopping): 234 loops, 68 samples in the final table.
TEST(SchbenchRun, WarmupZeroesTheStatisticsOnce) {
  machine::Machine m = testutil::flat_machine(1, 4);
  kernel::Kernel k(m, config());
  SchbenchParams p = pinned(1, 4);
  p.runtime_s = 7;
  p.sleeptime_us = 0;
  p.cputime_us = 10000;
  const SchbenchResult r = run_schbench(k, p);
  EXPECT_EQ(r.warmup_at, 5'000'250'000);
  ASSERT_EQ(r.output.size(), 1u);
  EXPECT_TRUE(r.output[0].warmup_done);
  EXPECT_EQ(r.output[0].table.at, 5'000'250'000);
  EXPECT_EQ(r.stop, 7'000'350'000);
  EXPECT_EQ(r.loops, 234u);
  EXPECT_EQ(r.final_table.samples, 68u);
  EXPECT_EQ(r.final_table.runtime_s, 7u);
}

// Interval 1 s, no warmup: tables at the polls 1000050 (runtime 1, samples up to T_33 + 10001 =
// 1000034: 33) and 2000100 (runtime 2, samples up to T_66: 66), cumulative. The stop poll is at
// 3000150: the worker woken at T_100 = 3000100 finishes its spin after it and exits without
// posting, so the final table has 100 samples and the run ends at T_101 = 3030101 µs, when the
// message thread, back from its spin, finds nobody to wake and joins.
TEST(SchbenchRun, IntervalTablesAreCumulative) {
  machine::Machine m = testutil::flat_machine(1, 4);
  kernel::Kernel k(m, config());
  SchbenchParams p = pinned(1, 4);
  p.runtime_s = 3;
  p.sleeptime_us = 0;
  p.cputime_us = 10000;
  p.warmuptime_s = 0;
  p.intervaltime_s = 1;
  const SchbenchResult r = run_schbench(k, p);
  ASSERT_EQ(r.output.size(), 2u);
  EXPECT_FALSE(r.output[0].warmup_done);
  EXPECT_EQ(r.output[0].table.at, 1'000'050'000);
  EXPECT_EQ(r.output[0].table.runtime_s, 1u);
  EXPECT_EQ(r.output[0].table.samples, 33u);
  EXPECT_EQ(r.output[1].table.at, 2'000'100'000);
  EXPECT_EQ(r.output[1].table.runtime_s, 2u);
  EXPECT_EQ(r.output[1].table.samples, 66u);
  EXPECT_EQ(r.final_table.samples, 100u);
  EXPECT_EQ(r.loops, 100u);
  EXPECT_EQ(r.end, 3'030'101'000);
}

// -z 2 with -r 5 and no warmup: zero_time starts at 0; the polls at 2000100 (> 2 s past it)
// and then 4000200 (2000100 later) reset the statistics; samples after 4000200 µs remain:
// T_k + 10001 > 4000200 for k >= 134 (T_134 = 4020134), up to the stop poll at 5000250:
// T_166 = 4980166 samples at 4990167 and posts, T_167 = 5010167 (after stopping) is the last.
TEST(SchbenchRun, ZerotimeResetsPeriodically) {
  machine::Machine m = testutil::flat_machine(1, 4);
  kernel::Kernel k(m, config());
  SchbenchParams p = pinned(1, 4);
  p.runtime_s = 5;
  p.sleeptime_us = 0;
  p.cputime_us = 10000;
  p.warmuptime_s = 0;
  p.zerotime_s = 2;
  const SchbenchResult r = run_schbench(k, p);
  EXPECT_TRUE(r.output.empty());
  EXPECT_EQ(r.loops, 167u);
  EXPECT_EQ(r.final_table.samples, 167u - 133u);
}

// Unpinned on a 4-CPU two-cluster machine with real costs: every worker gets samples, the
// figures are consistent, and the same seed gives the same run.
TEST(SchbenchRun, UnpinnedRunIsConsistentAndDeterministic) {
  machine::Machine m = testutil::flat_machine(2, 2, us(10), us(20));
  m.costs.ipi.ns = 1000;
  m.costs.context_switch.ns = 1500;
  m.costs.wakeup.ns = 300;
  SchbenchParams p;
  p.message_threads = 2;
  p.worker_threads = 4;
  p.runtime_s = 3;
  SchbenchResult a, b;
  {
    kernel::Kernel k(m, config());
    a = run_schbench(k, p);
  }
  {
    kernel::Kernel k(m, config());
    b = run_schbench(k, p);
  }
  EXPECT_EQ(a.workers, 8);
  EXPECT_EQ(a.final_table.samples, a.loops);  // no warmup within 3 s, every delta > 0
  EXPECT_GT(a.final_table.samples, 8u * 20u);
  // min and max are exact and lie in the lowest and highest non-empty buckets.
  unsigned lo = metrics::PLAT_NR, hi = 0;
  for (unsigned i = 0; i < metrics::PLAT_NR; ++i)
    if (a.histogram.bucket(i)) {
      if (lo == metrics::PLAT_NR) lo = i;
      hi = i;
    }
  EXPECT_EQ(metrics::plat_val_to_idx(a.final_table.min_us), lo);
  EXPECT_EQ(metrics::plat_val_to_idx(a.final_table.max_us), hi);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.loops, b.loops);
  for (unsigned i = 0; i < metrics::PLAT_NR; ++i)
    ASSERT_EQ(a.histogram.bucket(i), b.histogram.bucket(i)) << i;
}
