// hackbench / `perf bench sched messaging` inside the simulation (reference/workloads.md §1).
//
// Topology: `groups` independent groups of `fds` receivers and `fds` senders; one channel
// (AF_UNIX stream socket pair or pipe) per receiver, written by every sender of its group.
// Each sender writes `loops` rounds of one message to receiver 0, 1, ..., fds-1; each receiver
// reads fds*loops messages. A parent task forks the children (group by group, receivers
// first), collects one "ready" byte from each through a shared ready channel, takes the start
// time, writes the GO byte to the wake fd every child polls, and reaps the children; the
// reported time is GO (start) to the last reap (stop).
//
// System calls: each write()/read() costs the machine's per-message cost
// (costs.socket_write / socket_read, or pipe_write / pipe_read, in ns at capacity 1024) as a
// Step::run; its effect (message queued, wakeups) happens at the end of that step, where the
// task blocks instead if the channel is full / empty (channel.h). The ready and GO bytes use
// the same costs. fork / pthread_create, poll(), exit and wait() / pthread_join() cost no
// work here (the cost model has no figure for them); context switches and wakeups are
// charged by the kernel model.
//
// A receiver's reads that can neither fail nor wake anyone are taken lazily, without an
// event each (Step::run_repeated, Channel::reads_without_wakeup; src/kernel/repeat.cpp):
// the same results, fewer events to dispatch.
//
// Process and thread mode (-t / -T) differ in reality only in the context-switch cost (no mm
// switch between threads) and in policies that look at the mm; the model uses the machine's
// one context-switch cost for both, so the two modes differ only in how the parent reaps:
// process mode wait()s (perf: any child) or waitpid()s (rt-tests: in order) with a sync
// wakeup from the exiting child; thread mode pthread_join()s in order, woken by the exit's
// futex wake (not sync).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/time.h"
#include "kernel/kernel.h"
#include "workload/channel.h"

namespace schedtwin::workload {

struct MessagingParams {
  int groups = 10;
  int fds = 20;              // receivers (and senders) per group; perf: always 20
  std::int64_t loops = 100;  // rounds per sender
  int datasize = 100;        // bytes per message; perf: always 100
  Transport transport = Transport::UnixStream;
  bool threads = false;        // thread mode (perf -t, rt-tests -T)
  bool reap_in_order = false;  // rt-tests: waitpid(child[i]) in creation order; perf: wait()
  std::string comm = "sched-messaging";  // task name (perf's prctl(PR_SET_NAME) value)
  std::int64_t sndbuf = 212992;          // AF_UNIX sk_sndbuf: net.core.wmem_default, bytes
  std::int64_t skb_truesize =
      0;                  // bytes charged per queued message; 0: unix_skb_truesize(datasize)
  int pipe_buffers = 16;  // PIPE_DEF_BUFFERS
  int page_size = 4096;   // bytes
};

// Throws InputError naming the field if `p` cannot be simulated (sizes, limits).
void validate(const MessagingParams& p);

// The channel configuration the data channels use under kernel profile `version`
// (major*100+minor): pipe wake rules switch at v5.5.
ChannelConfig data_channel_config(const MessagingParams& p, int kernel_version);

struct MessagingResult {
  Time start = 0;  // the parent's gettimeofday(&start), just before it writes the GO byte
  Time stop = 0;   // its gettimeofday(&stop), once the last child is reaped
  Time total_time() const { return stop - start; }
  std::uint64_t messages = 0;         // data messages delivered (groups * fds * fds * loops)
  int tasks = 0;                      // children (2 * groups * fds)
  std::int64_t channel_capacity = 0;  // most messages one data channel holds
  ChannelStats data;                  // summed over the data channels
  ChannelStats ready;                 // the ready channel
  // Of data.writes, those committed without an event of their own (Step::repeats): an
  // engine detail, not a result (0 when the kernel takes no repeated steps); not printed.
  std::int64_t lazy_writes = 0;
};

// One run of the workload on a kernel. The object owns the task programs and channels and
// must outlive the simulation of its tasks.
class Messaging {
 public:
  Messaging(kernel::Kernel& k, const MessagingParams& p);
  ~Messaging();
  Messaging(const Messaging&) = delete;
  Messaging& operator=(const Messaging&) = delete;

  // Creates the parent task (as if forked from CPU 0 at the kernel's current time).
  void start();
  bool finished() const;
  MessagingResult result() const;
  const Channel& data_channel(int group, int receiver) const;

  struct State;

 private:
  std::unique_ptr<State> s_;
};

// start(), then runs the kernel until the parent has reaped every child. Throws
// std::logic_error if the simulation stops making progress (a modelling bug).
MessagingResult run_messaging(kernel::Kernel& k, const MessagingParams& p);

}  // namespace schedtwin::workload
