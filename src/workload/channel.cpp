#include "workload/channel.h"

#include <algorithm>
#include <stdexcept>

namespace schedtwin::workload {

using kernel::kNoTask;
using kernel::WF_SYNC;

std::int64_t unix_skb_truesize(int bytes) {
  constexpr std::int64_t kShinfo = 320;  // SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
  constexpr std::int64_t kSkBuff = 256;  // SKB_DATA_ALIGN(sizeof(struct sk_buff))
  constexpr std::int64_t kMaxHead = 4096 - kShinfo;  // SKB_MAX_HEAD(0)
  if (bytes < 1 || bytes > kMaxHead) return 0;
  std::int64_t need = (static_cast<std::int64_t>(bytes) + 63) / 64 * 64 + kShinfo;
  std::int64_t slab = 512;  // the smallest kmalloc class that can hold need (>= 384)
  while (slab < need) slab *= 2;
  return slab + kSkBuff;
}

ChannelStats& ChannelStats::operator+=(const ChannelStats& o) {
  writes += o.writes;
  reads += o.reads;
  writer_blocks += o.writer_blocks;
  reader_blocks += o.reader_blocks;
  writer_wakeups += o.writer_wakeups;
  reader_wakeups += o.reader_wakeups;
  max_queued = std::max(max_queued, o.max_queued);
  return *this;
}

void TaskFifo::push_back(TaskId t) {
  if (size_ == buf_.size()) {
    std::vector<TaskId> grown(std::max<std::size_t>(8, buf_.size() * 2));
    for (std::size_t i = 0; i < size_; ++i) grown[i] = buf_[(head_ + i) % buf_.size()];
    buf_.swap(grown);
    head_ = 0;
  }
  buf_[(head_ + size_) % buf_.size()] = t;
  ++size_;
}

TaskId TaskFifo::pop_front() {
  TaskId t = buf_[head_];
  head_ = (head_ + 1) % buf_.size();
  --size_;
  return t;
}

Channel::Channel(const ChannelConfig& c) : cfg_(c) {
  if (cfg_.msg_bytes < 1) throw std::invalid_argument("channel: msg_bytes must be >= 1");
  if (cfg_.transport == Transport::UnixStream) {
    if (cfg_.skb_truesize < 1 || cfg_.sndbuf < 1)
      throw std::invalid_argument("channel: sndbuf and skb_truesize must be >= 1");
    // 4 * (2 + left * truesize) <= sndbuf, solved for `left` (the messages a read leaves).
    unix_wake_at_ = cfg_.sndbuf >= 8 ? (cfg_.sndbuf - 8) / (4 * cfg_.skb_truesize) : -1;
  } else {
    if (cfg_.pipe_buffers < 1 || cfg_.msg_bytes > cfg_.page_size)
      throw std::invalid_argument("channel: a pipe message must fit in a page");
    per_page_ = cfg_.page_size / cfg_.msg_bytes;
    page_msgs_.assign(static_cast<std::size_t>(cfg_.pipe_buffers), 0);
  }
}

std::int64_t Channel::capacity() const {
  if (cfg_.transport == Transport::Pipe)
    return static_cast<std::int64_t>(cfg_.pipe_buffers) * per_page_;
  // writes proceed while 1 + n * truesize < sndbuf (sk_wmem_alloc starts at 1)
  return (cfg_.sndbuf - 2) / cfg_.skb_truesize + 1;
}

std::size_t Channel::waiting_writers() const {
  if (cfg_.transport == Transport::Pipe && cfg_.pipe_rules == PipeWakeRules::SplitExclusive)
    return writers_fifo_.size();
  std::size_t n = lifo_.size();
  if (cfg_.transport == Transport::Pipe && cfg_.pipe_rules == PipeWakeRules::SingleQueue &&
      reader_waiting_ != kNoTask)
    --n;
  return n;
}

std::int64_t Channel::reads_without_wakeup() const {
  if (waiting_writers() == 0) return queued_;
  if (cfg_.transport != Transport::UnixStream) return 0;
  // The reads that leave more than unix_wake_at_ queued; more writes only leave more.
  return std::max<std::int64_t>(0, queued_ - unix_wake_at_ - 1);
}

bool Channel::write(Waker& w, TaskId self, bool after_sleep) {
  return cfg_.transport == Transport::UnixStream ? unix_write(w, self)
                                                 : pipe_write(w, self, after_sleep);
}

bool Channel::read(Waker& w, TaskId self) {
  return cfg_.transport == Transport::UnixStream ? unix_read(w, self) : pipe_read(w, self);
}

void Channel::note_queued() {
  ++stats_.writes;
  ++queued_;
  stats_.max_queued = std::max(stats_.max_queued, queued_);
}

void Channel::wake_all(Waker& w, std::vector<TaskId>& q) {
  if (q.empty()) return;
  scratch_.swap(q);  // q is empty from here on, whatever the wakeups do
  for (auto it = scratch_.rbegin(); it != scratch_.rend(); ++it) {
    bool woken = w.wake_up(*it, WF_SYNC);
    if (!woken) continue;
    if (*it == reader_waiting_) {
      reader_waiting_ = kNoTask;
      ++stats_.reader_wakeups;
    } else {
      ++stats_.writer_wakeups;
    }
  }
  scratch_.clear();
}

void Channel::wake_reader(Waker& w) {
  TaskId r = reader_waiting_;
  if (r == kNoTask) return;
  reader_waiting_ = kNoTask;
  if (w.wake_up(r, WF_SYNC)) ++stats_.reader_wakeups;
}

// ---------------------------------------------------------------------------
// AF_UNIX SOCK_STREAM (net/unix/af_unix.c, net/core/sock.c; v5.4, unchanged to v6.0).

// unix_stream_sendmsg for one small write: sock_alloc_send_pskb waits in sock_wait_for_wmem
// (non-exclusive, on the writer socket's wait queue) while sk_wmem_alloc >= sk_sndbuf, then
// the skb is charged at its truesize, queued on the peer and sk_data_ready
// (sock_def_readable) wakes the reader if it sleeps. Modelled at the end of the call: the
// kernel charges the skb before copying the data; the difference is at most one message per
// writer in flight. Leaves out the SOCK_NOSPACE / async-notification bits.
bool Channel::unix_write(Waker& w, TaskId self) {
  if (1 + queued_ * cfg_.skb_truesize >= cfg_.sndbuf) {
    lifo_.push_back(self);
    ++stats_.writer_blocks;
    return false;
  }
  note_queued();
  wake_reader(w);
  return true;
}

// unix_stream_read_generic for one message: the consumed skb is freed, and its destructor
// sock_wfree calls unix_write_space, which wakes every sleeping writer once the budget is
// back to a quarter (4 * sk_wmem_alloc <= sk_sndbuf, with sk_wmem_alloc = 1 + 1 reference
// held during the callback + the truesize of the skbs still queued).
bool Channel::unix_read(Waker& w, TaskId self) {
  if (queued_ == 0) {
    reader_waiting_ = self;
    ++stats_.reader_blocks;
    return false;
  }
  --queued_;
  ++stats_.reads;
  if (!lifo_.empty() && queued_ <= unix_wake_at_) wake_all(w, lifo_);
  return true;
}

// ---------------------------------------------------------------------------
// pipe (fs/pipe.c: pipe_write / pipe_read of v5.4 and of v5.5+ as of 00a7d39898c8).
// Leaves out pipe->mutex contention (each call is atomic at its end) and poll_usage (the data
// pipes are never polled).

bool Channel::pipe_write(Waker& w, TaskId self, bool after_sleep) {
  const bool single = cfg_.pipe_rules == PipeWakeRules::SingleQueue;
  const bool was_empty = nr_bufs_ == 0;
  const int nbuf = cfg_.pipe_buffers;
  // A fresh write merges into the last page if the message fits; a writer that slept does
  // not retry the merge (it waits for a free slot, then takes a new one).
  if (!after_sleep && !was_empty) {
    std::uint16_t& last = page_msgs_[static_cast<std::size_t>((tail_ + nr_bufs_ - 1) % nbuf)];
    if (last < per_page_) {
      ++last;
      note_queued();
      if (single) wake_all(w, lifo_);  // v5.4: do_wakeup after a merge
      return true;                     // v5.5+: `goto out` with was_empty false: no wakeup
    }
  }
  if (nr_bufs_ < nbuf) {
    page_msgs_[static_cast<std::size_t>((tail_ + nr_bufs_) % nbuf)] = 1;
    ++nr_bufs_;
    note_queued();
    if (single) {
      wake_all(w, lifo_);
    } else {
      if (was_empty) wake_reader(w);
      // wake_next_writer: this writer slept, and room remains for the next one.
      if (after_sleep && nr_bufs_ < nbuf && !writers_fifo_.empty()) {
        TaskId next = writers_fifo_.pop_front();
        if (w.wake_up(next, WF_SYNC)) ++stats_.writer_wakeups;
      }
    }
    return true;
  }
  // Full: sleep. v5.4 pipe_wait (prepare_to_wait: head of pipe->wait); v5.5+
  // wait_event_interruptible_exclusive on wr_wait (exclusive waiters go to the tail).
  if (single)
    lifo_.push_back(self);
  else
    writers_fifo_.push_back(self);
  ++stats_.writer_blocks;
  return false;
}

bool Channel::pipe_read(Waker& w, TaskId self) {
  const bool single = cfg_.pipe_rules == PipeWakeRules::SingleQueue;
  const int nbuf = cfg_.pipe_buffers;
  if (nr_bufs_ == 0) {
    reader_waiting_ = self;
    if (single) lifo_.push_back(self);
    ++stats_.reader_blocks;
    return false;
  }
  const bool was_full = nr_bufs_ == nbuf;
  --queued_;
  ++stats_.reads;
  bool released = false;
  if (++tail_read_ == page_msgs_[static_cast<std::size_t>(tail_)]) {
    // The page's data is all read (buf->len == 0): release the slot.
    tail_ = (tail_ + 1) % nbuf;
    --nr_bufs_;
    tail_read_ = 0;
    released = true;
  }
  if (single) {
    if (released) wake_all(w, lifo_);  // v5.4: do_wakeup once a buffer is freed
  } else if (was_full && !writers_fifo_.empty()) {
    // v5.5+: a read from a full pipe wakes one exclusive writer, even if no slot was freed
    // (the writer then finds the pipe still full and sleeps again).
    TaskId next = writers_fifo_.pop_front();
    if (w.wake_up(next, WF_SYNC)) ++stats_.writer_wakeups;
  }
  return true;
}

// ---------------------------------------------------------------------------

bool PollBarrier::poll(TaskId self) {
  if (released_) return true;
  pollers_.push_back(self);
  return false;
}

void PollBarrier::release(Waker& w) {
  released_ = true;
  for (auto it = pollers_.rbegin(); it != pollers_.rend(); ++it) w.wake_up(*it, WF_SYNC);
  pollers_.clear();
  pollers_.shrink_to_fit();
}

}  // namespace schedtwin::workload
