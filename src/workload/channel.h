// Kernel IPC objects of the messaging workload (hackbench / perf bench sched messaging):
// an AF_UNIX SOCK_STREAM socket pair and an anonymous pipe, each with one reader and any
// number of writers, plus the poll() start barrier (reference/workloads.md §1.6).
//
// A channel counts queued messages; it never stores payload, and it allocates nothing per
// message (wait queues are vectors / a ring that only grow to the number of waiters).
//
// Timing contract with the task programs (see messaging.h): a read() or write() system call
// is modelled as its CPU cost (Step::run) followed by an atomic commit at the end of the
// call, done here. If the commit cannot proceed (channel full / empty) the caller joins the
// object's wait queue and blocks; when woken it commits again without paying the cost a
// second time (in the kernel, the task slept inside the call and completes it on wakeup).
// All wakeups are sync wakeups (WF_SYNC), as in the kernel paths modelled.
#pragma once
#include <cstdint>
#include <vector>

#include "kernel/kernel.h"
#include "kernel/task_api.h"

namespace schedtwin::workload {

using kernel::TaskId;

// What a channel needs from the kernel: try_to_wake_up issued by the running task (the
// waker is whoever calls into the channel). Tests substitute a recorder.
class Waker {
 public:
  virtual ~Waker() = default;
  virtual bool wake_up(TaskId t, unsigned wake_flags) = 0;
};

class KernelWaker final : public Waker {
 public:
  explicit KernelWaker(kernel::Kernel& k) : k_(k) {}
  bool wake_up(TaskId t, unsigned wake_flags) override { return k_.wake_up(t, wake_flags); }

 private:
  kernel::Kernel& k_;
};

enum class Transport : std::uint8_t { UnixStream, Pipe };

// Which fs/pipe.c wakeup scheme a kernel uses (reference/workloads.md §1.6).
enum class PipeWakeRules : std::uint8_t {
  // Up to v5.4: one wait queue (pipe->wait) for readers and writers, non-exclusive; every
  // write wakes all sleepers, and so does every read that frees a buffer.
  SingleQueue,
  // v5.5 onward: rd_wait / wr_wait with exclusive waits; a write wakes the reader only if
  // the pipe was empty, a read wakes one writer only if the pipe was full, and a writer that
  // slept passes the wakeup on to the next writer if room remains (wake_next_writer).
  SplitExclusive,
};

struct ChannelConfig {
  Transport transport = Transport::UnixStream;
  int msg_bytes = 100;  // bytes per write() and per read() (one message)
  // AF_UNIX stream: the writer socket's send budget (sk_sndbuf = net.core.wmem_default) and
  // what one queued skb charges to sk_wmem_alloc (its truesize), both in bytes.
  std::int64_t sndbuf = 212992;
  std::int64_t skb_truesize = 768;
  // pipe: ring slots (PIPE_DEF_BUFFERS) of one page each.
  int pipe_buffers = 16;
  int page_size = 4096;
  PipeWakeRules pipe_rules = PipeWakeRules::SplitExclusive;
};

// The truesize of the skb unix_stream_sendmsg allocates for a `bytes`-byte write on the
// v5.x kernels: a linear skb (bytes <= SKB_MAX_HEAD(0) = 3776 with 4 KiB pages) whose head is
// kmalloc'ed as SKB_DATA_ALIGN(bytes) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) (320)
// and rounded up to the kmalloc size class; truesize = that size + SKB_DATA_ALIGN(sizeof(struct
// sk_buff)) (256). 100 bytes: 128 + 320 = 448 -> kmalloc-512 -> 768 (reference §1.6, [derived];
// 64-byte cache lines, 64-bit kernel). Leaves out the small-head cache of later kernels.
// Returns 0 for sizes outside 1..3776.
std::int64_t unix_skb_truesize(int bytes);

// Event counts of one channel.
struct ChannelStats {
  std::int64_t writes = 0;         // messages committed
  std::int64_t reads = 0;          // messages consumed
  std::int64_t writer_blocks = 0;  // a writer joined the wait queue (includes re-sleeps)
  std::int64_t reader_blocks = 0;
  std::int64_t writer_wakeups = 0;  // successful wakeups of writers
  std::int64_t reader_wakeups = 0;  // successful wakeups of the reader
  std::int64_t max_queued = 0;

  ChannelStats& operator+=(const ChannelStats& o);
};

// A FIFO of task ids in a ring that grows by doubling (no allocation once it has grown to
// the number of waiters).
class TaskFifo {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  void push_back(TaskId t);
  TaskId pop_front();

 private:
  std::vector<TaskId> buf_;
  std::size_t head_ = 0, size_ = 0;
};

class Channel {
 public:
  explicit Channel(const ChannelConfig& c);

  // Commit one message written by `self` at the end of its write(). `after_sleep`: self
  // slept in this same write() (it was woken from this channel's wait queue). Returns false
  // when self has joined the wait queue and must block.
  bool write(Waker& w, TaskId self, bool after_sleep);
  // Consume one message for the reader `self` at the end of its read(). Returns false when
  // self must block (nothing queued); it is woken once a message is queued.
  bool read(Waker& w, TaskId self);

  std::int64_t queued() const { return queued_; }
  // How many of the next reads will find a message and wake no one, whatever writers do
  // meanwhile short of joining the wait queue: every queued message while no writer waits;
  // on a socket with writers waiting, the reads that leave it above the quarter-budget mark
  // (unix_write_space); on a pipe with writers waiting, none.
  std::int64_t reads_without_wakeup() const;
  // Most messages that can be queued at once.
  std::int64_t capacity() const;
  std::size_t waiting_writers() const;
  bool reader_waiting() const { return reader_waiting_ != kernel::kNoTask; }
  const ChannelStats& stats() const { return stats_; }
  const ChannelConfig& config() const { return cfg_; }

 private:
  bool unix_write(Waker& w, TaskId self);
  bool unix_read(Waker& w, TaskId self);
  bool pipe_write(Waker& w, TaskId self, bool after_sleep);
  bool pipe_read(Waker& w, TaskId self);
  // wake every sleeper of a non-exclusive queue, most recently added first (prepare_to_wait
  // adds at the head of the wait queue; __wake_up_common walks it from the head).
  void wake_all(Waker& w, std::vector<TaskId>& q);
  void wake_reader(Waker& w);
  void note_queued();

  ChannelConfig cfg_;
  std::int64_t queued_ = 0;
  ChannelStats stats_;
  TaskId reader_waiting_ = kernel::kNoTask;  // unix, and pipe v5.5+: the sleeping reader
  std::vector<TaskId> lifo_;                 // unix writers; pipe <= v5.4: everyone
  std::vector<TaskId> scratch_;
  TaskFifo writers_fifo_;  // pipe v5.5+: exclusive writers (tail-added)
  // pipe ring: messages written into each slot's page; tail slot's messages read
  std::vector<std::uint16_t> page_msgs_;
  int tail_ = 0, nr_bufs_ = 0, tail_read_ = 0, per_page_ = 0;
  // unix: a read that leaves at most this many messages queued wakes the sleeping writers
  // (unix_write_space); -1: none does.
  std::int64_t unix_wake_at_ = -1;
};

// The poll() start barrier on the wake fd: pollers block until the GO byte, then all wake
// at once (POLLIN stays set: poll does not consume the byte); a late poller passes at once.
class PollBarrier {
 public:
  // Returns false when self must block.
  bool poll(TaskId self);
  // The GO write's effect: wakes every poller, the most recent first (poll_wait adds at the
  // head of the wait queue), with WF_SYNC (pollwake passes the sync hint through).
  void release(Waker& w);
  bool released() const { return released_; }
  std::size_t waiting() const { return pollers_.size(); }

 private:
  bool released_ = false;
  std::vector<TaskId> pollers_;
};

}  // namespace schedtwin::workload
