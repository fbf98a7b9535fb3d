// uperf's ping-pong profile inside the simulation (reference/workloads.md §3).
//
// The profile (the Sun/Oracle "TCP PingPong" pingpong.xml, with the size the LKML posts
// used):
//   <group nthreads="$t">
//     <transaction iterations="1"> <flowop type="connect" .../> </transaction>
//     <transaction duration="30s">
//       <flowop type="read" options="size=8k"/> <flowop type="write" options="size=8k"/>
//     </transaction>
//     <transaction iterations="1"> <flowop type="disconnect"/> </transaction>
//   </group>
// uperf's master runs `nthreads` strands, each with its own TCP connection over loopback; the
// slave runs the inverse profile (flowop_opposite: read <-> write) on one strand per
// connection. So N connections are 2N busy threads: each master strand loops {read S; write
// S}, its slave strand {write S; read S}, in lock step.
//
// Model. Each connection is two one-way byte streams (master -> slave and slave -> master),
// each a workload::Channel with the AF_UNIX stream rules, whose rules are those of a TCP
// loopback connection in lock step: a blocking read sleeps until data is queued; every write
// wakes a sleeping reader with a sync wakeup from the writer's context (tcp_v4_rcv runs in the
// sender's softirq on loopback, then tcp_data_ready -> sk_data_ready = sock_def_readable ->
// wake_up_interruptible_sync_poll: WF_SYNC); a writer never waits for send-buffer space,
// since each direction holds at most one message at a time.
//
// Costs. A write() costs the machine's costs.socket_write, a read() costs costs.socket_read
// (ns at capacity 1024), once per message whatever its size: the cost model has no loopback-
// TCP figure and no per-byte copy cost, so the size only scales the bytes counted. (Real TCP
// loopback pays the TCP/IP stack and two 8 KiB copies per message, so absolute throughput is
// expected above the published figures.) As in messaging.h, the call's effect happens at the
// end of its cost (Step::run); a read that finds nothing queued sleeps there and completes
// without paying again when woken. Context switches, wakeups, IPIs and idle exits are
// charged by the kernel model.
//
// Timing. Only the timed transaction is simulated: start() forks the threads (slave strands
// first, as the slave spawns its strands during the handshake, then the master strands), all
// from CPU 0 at the kernel's current time, and each starts the transaction at once; run for
// `duration`. Left out: connect / disconnect (transactions 1 and 3), the barriers between
// transactions and uperf's master and slave main threads (they sleep in poll() and wake once
// a second), uperf's one-second callout granularity for the end of the duration, and TCP
// segmentation of messages above the loopback MSS (a message is one wakeup whatever its size).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/time.h"
#include "kernel/kernel.h"
#include "workload/channel.h"

namespace schedtwin::workload {

struct PingpongParams {
  int connections = 1;             // uperf nthreads ($t): master strands = TCP connections
  std::int64_t msg_bytes = 8192;   // flowop size, bytes per read() / write()
  Time duration = 30 * kNsPerSec;  // the timed transaction (the profile's duration="30s"), ns
  std::string comm = "uperf";      // task name of every strand
};

// Largest values validate() accepts: 50 000 connections are 100 000 threads (the task limit
// of the messaging workload); sizes up to 1 GiB (uperf parses sizes into an int).
inline constexpr int kPingpongMaxConnections = 50'000;
inline constexpr std::int64_t kPingpongMaxBytes = std::int64_t{1} << 30;
inline constexpr Time kPingpongMaxDuration = 86'400 * kNsPerSec;  // one day

// Throws InputError naming the field if `p` cannot be simulated.
void validate(const PingpongParams& p);

// What uperf's master counts (stats_update FLOWOP_END on the master strands): every completed
// read and write flowop is one op of msg_bytes bytes. The slave's own counts are kept apart.
struct PingpongResult {
  Time start = 0;                 // start of the timed transaction (ns)
  Time elapsed = 0;               // its length: the run's duration (ns)
  std::uint64_t ops = 0;          // master read + write flowops completed
  std::uint64_t bytes = 0;        // ops * msg_bytes
  std::uint64_t round_trips = 0;  // master reads completed (a pong received)
  std::uint64_t slave_ops = 0;    // slave read + write flowops completed
  std::uint64_t slave_bytes = 0;
  int threads = 0;         // connections (uperf's "threads": master strands)
  int tasks = 0;           // simulated threads: 2 * connections
  ChannelStats to_slave;   // master -> slave streams, summed over connections
  ChannelStats to_master;  // slave -> master streams

  // uperf's print_summary: bytes * 8 / seconds and ops / seconds (0 when elapsed is 0).
  double throughput_bps() const;
  double ops_per_s() const;
};

// One run of the workload on a kernel. Owns the thread programs and streams; must outlive the
// simulation of its tasks.
class Pingpong {
 public:
  Pingpong(kernel::Kernel& k, const PingpongParams& p);  // validate(p) first
  ~Pingpong();
  Pingpong(const Pingpong&) = delete;
  Pingpong& operator=(const Pingpong&) = delete;

  // Forks the 2N threads from CPU 0 at the kernel's current time: slave strands 0..N-1, then
  // master strands 0..N-1. The transaction starts now.
  void start();
  // Counts of the flowops completed so far; elapsed = now - start.
  PingpongResult result() const;

  kernel::TaskId master_task(int conn) const;
  kernel::TaskId slave_task(int conn) const;
  const Channel& to_slave(int conn) const;   // the master writes, the slave reads
  const Channel& to_master(int conn) const;  // the slave writes, the master reads

  struct State;

 private:
  std::unique_ptr<State> s_;
};

// start(), then runs the kernel for p.duration; counts what completed before the end.
PingpongResult run_pingpong(kernel::Kernel& k, const PingpongParams& p);

}  // namespace schedtwin::workload
