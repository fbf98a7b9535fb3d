// The pingpong workload (uperf's ping-pong profile): one connection on two-CPU machines worked
// by hand (flowops, round trips, context switches and the wakeup placement the kernel's
// wake_affine / select_idle_sibling choose for the sync wakeups), what uperf counts, the size
// only scaling the bytes, invariants over a longer run, determinism, and bad parameters.
#include <gtest/gtest.h>

#include "engine/error.h"
#include "kernel/kernel.h"
#include "kernel_test_util.h"
#include "workload/pingpong.h"

using namespace schedtwin;
using namespace schedtwin::workload;

namespace {

// Costs of the hand-worked runs (ns): a write 3 us, a read 2 us, a context switch 1 us, an
// IPI 1 us, the idle state's real exit 2 us; the waker's wakeup cost and idle probes 0.
constexpr Time kW = us(3), kR = us(2), kC = us(1), kI = us(1), kE = us(2);

machine::Machine two_cpus(int llcs) {
  machine::Machine m = testutil::flat_machine(llcs, 2 / llcs, kE);
  m.costs.socket_write.ns = kW;
  m.costs.socket_read.ns = kR;
  m.costs.context_switch.ns = kC;
  m.costs.ipi.ns = kI;
  return m;
}

kernel::Config v54() {
  kernel::Config c;
  c.profile = kernel::make_profile("v5.4");
  return c;
}

PingpongParams one_connection(Time duration) {
  PingpongParams p;
  p.connections = 1;
  p.msg_bytes = 8192;
  p.duration = duration;
  return p;
}

}  // namespace

// Two CPUs sharing an LLC. v5.4's find_idlest_group takes the first other group of an idle
// machine, so the slave (created first) forks onto CPU 1; the master stays on CPU 0, whose
// runnable load (0) is below CPU 1's (the slave's 1024) by more than the imbalance. Both CPUs
// wake from idle: IPI + exit = 3 us, then a context switch (1 us).
//   master: read (2 us) -> nothing queued at 6 us -> sleeps; CPU 0 idle.
//   slave:  write (3 us) commits at 7 us and wakes the master with WF_SYNC from CPU 1.
// The kernel's choice: wake_affine_idle (sync, the waker's CPU runs one task) proposes CPU 1,
// but select_idle_sibling(prev = 0, target = 1) returns the idle prev CPU in the same LLC, so
// the master stays on CPU 0, which pays the IPI and the idle exit again: it runs at 10 us.
// Every half round trip is then I + E + C + W = 7 us (the reader's 2 us read overlaps with it),
// a round trip 14 us. Master: switched in at 10 + 14k, its read completes 1 us later (context
// switch), its write 3 us after that: reads at 11 + 14k, writes at 14 + 14k. Slave: first write
// at 7, switched in at 17 + 14k, reads at 18 + 14k, writes at 21 + 14k.
// In 100 us (no tick yet, so no load balancing): master reads k = 0..6 (95) and writes k = 0..6
// (98): 14 ops, 7 round trips; slave writes 7, 21, ..., 91 (7) and reads 18, ..., 88 (6): 13.
// Context switches: 2 at 3 us, the master's 7 (10 ... 94) and the slave's 6 (17 ... 87): 15.
TEST(PingpongHandWorked, OneLlcTheSyncWakeeStaysOnItsIdleCpu) {
  kernel::Kernel k(two_cpus(1), v54());
  Pingpong pp(k, one_connection(us(100)));
  pp.start();
  const kernel::TaskId slave = pp.slave_task(0), master = pp.master_task(0);
  EXPECT_EQ(k.task_stats(slave).fork_cpu, 1);
  EXPECT_EQ(k.task_stats(master).fork_cpu, 0);
  k.run_until(us(100));
  const PingpongResult r = pp.result();
  EXPECT_EQ(r.elapsed, us(100));
  EXPECT_EQ(r.ops, 14u);
  EXPECT_EQ(r.round_trips, 7u);
  EXPECT_EQ(r.bytes, 14u * 8192);
  EXPECT_EQ(r.slave_ops, 13u);
  EXPECT_EQ(r.slave_bytes, 13u * 8192);
  EXPECT_EQ(k.context_switches(), 15u);
  EXPECT_EQ(k.task_cpu(slave), 1);
  EXPECT_EQ(k.task_cpu(master), 0);
  EXPECT_EQ(k.task_stats(slave).nr_migrations, 0);
  EXPECT_EQ(k.task_stats(master).nr_migrations, 0);
  // Every read but the first of each side found nothing queued and slept until the write.
  EXPECT_EQ(r.to_master.writes, 7);
  EXPECT_EQ(r.to_master.reads, 7);
  EXPECT_EQ(r.to_master.reader_wakeups, 7);  // the master, by the slave's writes 7 ... 91
  EXPECT_EQ(r.to_slave.writes, 7);
  EXPECT_EQ(r.to_slave.reads, 6);
  EXPECT_EQ(r.to_slave.reader_wakeups, 7);  // the slave, by the master's writes 14 ... 98
  // uperf: bytes * 8 / seconds and ops / seconds.
  EXPECT_DOUBLE_EQ(r.throughput_bps(), 14.0 * 8192 * 8 / 100e-6);
  EXPECT_DOUBLE_EQ(r.ops_per_s(), 14.0 / 100e-6);
  EXPECT_EQ(k.task_stats(master).nr_wakeups, 7);
}

// Two CPUs in different LLCs (one CPU each). Same start: slave on CPU 1, master on CPU 0,
// master asleep at 6 us, slave's write at 7 us. Now select_idle_sibling(prev = 0, target = 1)
// cannot use prev (another LLC) and finds no idle CPU in CPU 1's LLC, so wake_affine's sync
// choice stands: the master migrates to CPU 1 and is queued behind the slave (no wakeup
// preemption: the vruntime gap of a few us is far below the 1 ms wakeup granularity). From
// then on every wakeup has this_cpu == prev_cpu and the pair shares CPU 1; CPU 0 stays idle.
// Half a round trip is W + R + C = 6 us: the waker writes, reads (nothing there), sleeps, and
// the wakee is switched in. Slave reads at 9: master switched in at 9 + 12k, reads at
// 10 + 12k, writes at 13 + 12k; slave switched in at 15 + 12k, reads at 16 + 12k, writes at
// 19 + 12k. In 100 us: master reads 10 ... 94 (8) and writes 13 ... 97 (8): 16 ops; slave
// writes 7, 19, ..., 91 (8) and reads 16 ... 88 (7): 15. Switches: 2 + 8 (9 ... 93) + 8
// (15 ... 99).
TEST(PingpongHandWorked, TwoLlcsTheSyncWakeupPullsThePairTogether) {
  kernel::Kernel k(two_cpus(2), v54());
  Pingpong pp(k, one_connection(us(100)));
  pp.start();
  const kernel::TaskId slave = pp.slave_task(0), master = pp.master_task(0);
  EXPECT_EQ(k.task_stats(master).fork_cpu, 0);
  k.run_until(us(8));
  EXPECT_EQ(k.task_cpu(master), 1);  // pulled at the first wakeup (7 us)
  k.run_until(us(100));
  const PingpongResult r = pp.result();
  EXPECT_EQ(r.ops, 16u);
  EXPECT_EQ(r.round_trips, 8u);
  EXPECT_EQ(r.slave_ops, 15u);
  EXPECT_EQ(k.context_switches(), 18u);
  EXPECT_EQ(k.task_cpu(slave), 1);
  EXPECT_EQ(k.task_cpu(master), 1);
  EXPECT_EQ(k.task_stats(master).nr_migrations, 1);
  EXPECT_EQ(k.task_stats(slave).nr_migrations, 0);
}

// run_pingpong counts what completed before start + duration; the size scales the bytes only.
TEST(PingpongCounts, SizeScalesBytesNotTiming) {
  PingpongResult by_size[2];
  const std::int64_t sizes[2] = {64, 1 << 20};
  for (int i = 0; i < 2; ++i) {
    kernel::Kernel k(two_cpus(1), v54());
    PingpongParams p = one_connection(us(100));
    p.msg_bytes = sizes[i];
    by_size[i] = run_pingpong(k, p);
  }
  EXPECT_EQ(by_size[0].ops, 14u);
  EXPECT_EQ(by_size[1].ops, 14u);
  EXPECT_EQ(by_size[0].bytes, 14u * 64);
  EXPECT_EQ(by_size[1].bytes, 14u << 20);
}

// Six connections on 2 LLCs x 4 CPUs for 50 ms (ticks, load balancing, preemption): lock step
// holds whatever the placement. Per connection each side's two flowops alternate (reads and
// writes differ by at most one) and each stream holds at most one message.
TEST(PingpongCounts, LockStepInvariantsAndDeterminism) {
  machine::Machine m = testutil::flat_machine(2, 4, us(2), us(2));
  m.costs.socket_write.ns = us(3);
  m.costs.socket_read.ns = us(2);
  m.costs.context_switch.ns = us(1);
  m.costs.ipi.ns = us(1);
  m.costs.wakeup.ns = 300;
  m.costs.idle_probe.ns = 40;
  PingpongParams p;
  p.connections = 6;
  p.duration = ms(50);
  PingpongResult res[2];
  std::uint64_t events[2];
  for (int run = 0; run < 2; ++run) {
    kernel::Kernel k(m, v54());
    Pingpong pp(k, p);
    pp.start();
    k.run_until(p.duration);
    res[run] = pp.result();
    events[run] = k.events();
    for (int c = 0; c < p.connections; ++c) {
      const ChannelStats& down = pp.to_slave(c).stats();
      const ChannelStats& up = pp.to_master(c).stats();
      EXPECT_LE(pp.to_slave(c).queued(), 1);
      EXPECT_LE(pp.to_master(c).queued(), 1);
      EXPECT_EQ(down.writes - down.reads, pp.to_slave(c).queued());
      EXPECT_GE(up.reads, down.writes);  // master: read, write, read, write, ...
      EXPECT_LE(up.reads, down.writes + 1);
      EXPECT_GE(up.writes, down.reads);  // slave: write, read, write, read, ...
      EXPECT_LE(up.writes, down.reads + 1);
      EXPECT_GT(up.reads, 100);
    }
    EXPECT_EQ(res[run].ops, static_cast<std::uint64_t>(res[run].to_master.reads) +
                                static_cast<std::uint64_t>(res[run].to_slave.writes));
    EXPECT_EQ(res[run].round_trips, static_cast<std::uint64_t>(res[run].to_master.reads));
    EXPECT_EQ(res[run].tasks, 12);
  }
  EXPECT_EQ(res[0].ops, res[1].ops);
  EXPECT_EQ(res[0].slave_ops, res[1].slave_ops);
  EXPECT_EQ(events[0], events[1]);
}

TEST(PingpongParamsTest, BadValuesAreRefused) {
  kernel::Kernel k(two_cpus(1), v54());
  auto refused = [&](PingpongParams p) {
    EXPECT_THROW(validate(p), InputError);
    EXPECT_THROW({ Pingpong pp(k, p); }, InputError);
  };
  PingpongParams p = one_connection(us(100));
  EXPECT_NO_THROW(validate(p));
  p.connections = 0;
  refused(p);
  p.connections = kPingpongMaxConnections + 1;
  refused(p);
  p = one_connection(us(100));
  p.msg_bytes = 0;
  refused(p);
  p.msg_bytes = kPingpongMaxBytes + 1;
  refused(p);
  p = one_connection(0);
  refused(p);
  p.duration = kPingpongMaxDuration + 1;
  refused(p);
  EXPECT_EQ(k.nr_tasks(), 0);
}
