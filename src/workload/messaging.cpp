#include "workload/messaging.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/error.h"

namespace schedtwin::workload {

using kernel::Step;
using kernel::TaskId;

namespace {

constexpr std::int64_t kMaxGroups = 10000;
// Bounds on memory (about 700 bytes per task with the kernel's share) and on run time
// (some 5-10 million messages per wall second): beyond them a run would not finish in a
// working day, so it is refused up front.
constexpr std::int64_t kMaxTasks = 100'000;
constexpr std::int64_t kMaxMessages = 10'000'000'000;  // 1e10

// A sender or receiver program (perf: sender() / receiver() after ready()).
class ChildBody final : public kernel::TaskBody {
 public:
  ChildBody(Messaging::State* s, int index, int group, int slot, bool sender)
      : s_(s), index_(index), group_(group), slot_(slot), sender_(sender) {}
  Step next(TaskId self, Time now) override;
  void commit_repeats(TaskId self, std::int64_t n, bool over) override;
  // A sender with lazy writes pending: whether one of them goes to receiver `slot`.
  bool plans_write_to(int slot) const;
  TaskId self() const { return self_; }

 private:
  enum class Phase : std::uint8_t { Begin, ReadyCommit, Work, Commit };
  // This receiver's socket, or the sender's next one.
  std::size_t channel_index() const { return channel_of(slot_); }
  std::size_t channel_of(int slot) const;  // the socket of receiver `slot` of this group
  int next_slot(int slot) const;           // round robin over the group's receivers
  Step read_step(TaskId self);
  Step write_step(TaskId self);
  void release_planned_writes();
  Messaging::State* s_;
  int index_;  // creation order among all children
  int group_;
  int slot_;  // receiver index in the group (receivers); next receiver to write (senders)
  bool sender_;
  bool after_sleep_ = false;
  Phase phase_ = Phase::Begin;
  std::int64_t done_ = 0;  // messages written / read
  TaskId self_ = kernel::kNoTask;
  std::int32_t planned_ = 0;  // a sender's lazy writes not yet committed, from slot_ on
  int plan_start_ = 0;        // the plan's first receiver, and its length
  std::int32_t plan_len_ = 0;
};

// The parent: fork, collect ready bytes, GO, reap (bench_sched_messaging / hackbench main).
class ParentBody final : public kernel::TaskBody {
 public:
  explicit ParentBody(Messaging::State* s) : s_(s) {}
  Step next(TaskId self, Time now) override;

 private:
  enum class Phase : std::uint8_t { Fork, ReadyCommit, Go, Reap, Done };
  Messaging::State* s_;
  Phase phase_ = Phase::Fork;
  int ready_read_ = 0;
};

}  // namespace

struct Messaging::State {
  kernel::Kernel& k;
  KernelWaker waker;
  MessagingParams p;
  Time write_cost = 0, read_cost = 0;
  std::int64_t per_child = 0;  // messages each sender writes / each receiver reads
  std::vector<Channel> data;   // group * fds + receiver
  // Per data channel: its receiver while it reads with repeated steps (else kNoTask), whose
  // lazy reads a writer commits first (Kernel::sync_repeats).
  std::vector<TaskId> repeat_reader;
  // Per data channel: the lazy writes planned into it and not yet committed. Invariant:
  // queued + pending <= max_queued, so the lazy writes cannot fill the socket nor raise its
  // high-water mark, whatever order they and the reads are committed in.
  std::vector<std::int32_t> pending_writes;
  // Per data channel: the senders with lazy writes planned into it (a few at a time).
  std::vector<std::vector<ChildBody*>> lazy_writers;
  bool lazy_writes_possible = false;  // AF_UNIX sockets, and the kernel takes repeated steps
  std::int64_t lazy_writes = 0;
  Channel ready;
  PollBarrier wake;
  ParentBody parent;
  std::vector<ChildBody> children;
  TaskId parent_id = kernel::kNoTask;
  // reaping
  std::vector<char> exited;  // per child, in creation order
  int zombies = 0;           // exited, not yet reaped (wait() in any order)
  int reaped = 0;
  int waiting_for = -1;  // the child the sleeping parent waits for; -2: any; -1: not asleep
  bool started = false;
  bool finished = false;
  Time start = 0, stop = 0;

  State(kernel::Kernel& kk, const MessagingParams& pp, const ChannelConfig& dc,
        const ChannelConfig& rc)
      : k(kk), waker(kk), p(pp), ready(rc), parent(this) {
    data.reserve(static_cast<std::size_t>(p.groups) * static_cast<std::size_t>(p.fds));
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(p.groups) * p.fds; ++i)
      data.emplace_back(dc);
    repeat_reader.assign(data.size(), kernel::kNoTask);
    pending_writes.assign(data.size(), 0);
    lazy_writers.resize(data.size());
    lazy_writes_possible = p.transport == Transport::UnixStream && k.repeats_taken();
  }
  int total_children() const { return 2 * p.groups * p.fds; }

  // Commits the lazy writes to data channel `idx` (receiver `slot` of its group) that come
  // before the event being handled, with the rest of each such writer's writes due by then.
  void sync_writers(std::size_t idx, int slot) {
    std::vector<ChildBody*>& w = lazy_writers[idx];
    // Backwards: a writer whose plan is over leaves the list, replaced by the last one.
    for (std::size_t i = w.size(); i-- > 0;)
      if (w[i]->plans_write_to(slot)) k.sync_repeats(w[i]->self());
  }
  // The lazy writes planned to data channel `idx` stop (each such writer's step in progress
  // ends in an event of its own): its receiver starts waiting, so a write may wake it, or a
  // plain write left them no room.
  void end_writers_to(std::size_t idx, int slot) {
    std::vector<ChildBody*>& w = lazy_writers[idx];
    for (std::size_t i = w.size(); i-- > 0;)
      if (w[i]->plans_write_to(slot)) k.end_repeats(w[i]->self());
    if (pending_writes[idx] != 0)
      throw std::logic_error("messaging: lazy writes left to a socket after ending them");
  }

  // do_exit of child `index`: process mode notifies the parent (__wake_up_parent, a sync
  // wakeup, only if the parent's wait is eligible for this child); thread mode clears the
  // tid and futex-wakes a pthread_join on it (not sync).
  void child_exited(int index, TaskId self) {
    // Process mode: exit_notify's wakeup of the parent comes after do_exit's tracepoint;
    // thread mode: the futex wake in exit_mm comes before it.
    if (!p.threads) k.trace_process_exit(self);
    exited[static_cast<std::size_t>(index)] = 1;
    ++zombies;
    if (waiting_for == -1) return;
    if (waiting_for != -2 && waiting_for != index) return;
    waiting_for = -1;
    k.wake_up(parent_id, p.threads ? kernel::WF_NONE : kernel::WF_SYNC);
  }
};

namespace {

std::size_t ChildBody::channel_of(int slot) const {
  return static_cast<std::size_t>(group_) * static_cast<std::size_t>(s_->p.fds) +
         static_cast<std::size_t>(slot);
}

int ChildBody::next_slot(int slot) const { return slot + 1 == s_->p.fds ? 0 : slot + 1; }

Step ChildBody::next(TaskId self, Time) {
  Messaging::State& s = *s_;
  for (;;) {
    switch (phase_) {
      case Phase::Begin:  // ready(): write one byte to ready_out ...
        phase_ = Phase::ReadyCommit;
        return Step::run(s.write_cost);
      case Phase::ReadyCommit:
        if (!s.ready.write(s.waker, self, after_sleep_)) {
          after_sleep_ = true;
          return Step::block();
        }
        after_sleep_ = false;
        phase_ = Phase::Work;
        if (!s.wake.poll(self)) return Step::block();  // ... then poll() the wake fd for GO
        break;
      case Phase::Work:
        if (done_ == s.per_child) {
          s.child_exited(index_, self);
          return Step::exit();
        }
        phase_ = Phase::Commit;
        return sender_ ? write_step(self) : read_step(self);
      case Phase::Commit: {
        const std::size_t idx = channel_index();
        Channel& ch = s.data[idx];
        // Lazy reads and writes of this socket that come before this call are committed first.
        if (s.pending_writes[idx] > 0) s.sync_writers(idx, slot_);
        if (sender_) {
          const TaskId reader = s.repeat_reader[idx];
          if (reader != kernel::kNoTask) s.k.sync_repeats(reader);
          if (!ch.write(s.waker, self, after_sleep_)) {
            // A read may now wake this writer: the reader's reads stop being lazy.
            if (reader != kernel::kNoTask) s.k.end_repeats(reader);
            after_sleep_ = true;
            return Step::block();
          }
          after_sleep_ = false;
          // Less room for the lazy writes planned after this one: if they no longer all fit
          // below the high-water mark, they stop being lazy.
          if (s.pending_writes[idx] > 0 &&
              ch.queued() + s.pending_writes[idx] > ch.stats().max_queued)
            s.end_writers_to(idx, slot_);
          slot_ = next_slot(slot_);
        } else if (!ch.read(s.waker, self)) {
          if (s.pending_writes[idx] > 0) s.end_writers_to(idx, slot_);
          return Step::block();
        }
        ++done_;
        phase_ = Phase::Work;
        break;
      }
    }
  }
}

// The next read(). The reads after it need no event each while they cannot fail or wake
// anyone (Channel::reads_without_wakeup: writes only add messages; a writer that starts
// waiting ends them), and not the last message (the receiver then exits).
Step ChildBody::read_step(TaskId self) {
  Messaging::State& s = *s_;
  const std::size_t idx = channel_index();
  const Channel& ch = s.data[idx];
  if (s.pending_writes[idx] > 0) s.sync_writers(idx, slot_);  // more messages to plan on
  const std::int64_t n = std::min({ch.reads_without_wakeup(), s.per_child - done_ - 1,
                                   std::int64_t{std::numeric_limits<std::int32_t>::max()}});
  if (n <= 0) return Step::run(s.read_cost);
  s.repeat_reader[idx] = self;
  return Step::run_repeated(s.read_cost, static_cast<std::int32_t>(n));
}

// The next write(). The writes after it need no event each while they cannot block, wake
// the receiver or raise the socket's high-water mark, whatever the receivers read meanwhile:
// to receivers that are not waiting, up to each socket's high-water mark counting every
// lazy write planned into it (a receiver that starts waiting ends the writes planned to it),
// and not the last message (the sender then exits). Pipes are left out: whether a write
// merges into the last page, and whom it wakes, depend on where the reads stand.
Step ChildBody::write_step(TaskId self) {
  Messaging::State& s = *s_;
  if (!s.lazy_writes_possible) return Step::run(s.write_cost);
  // Plans are often cut short (by a preemption, a receiver that starts waiting): longer ones
  // cost more to plan and undo than they save (-g 20 -l 2000 on xeon-e5-2650v4: 1.60 s of
  // CPU with 8, 1.64 s with 20).
  constexpr std::int64_t kMaxPlan = 8;
  const std::int64_t limit = std::min(kMaxPlan, s.per_child - done_ - 1);
  std::int32_t n = 0;
  for (int slot = slot_; n < limit; slot = next_slot(slot)) {
    const std::size_t idx = channel_of(slot);
    const Channel& ch = s.data[idx];
    if (ch.reader_waiting() || ch.queued() + s.pending_writes[idx] >= ch.stats().max_queued) break;
    ++s.pending_writes[idx];
    ++n;
  }
  if (n == 0) return Step::run(s.write_cost);
  self_ = self;
  planned_ = n;
  plan_start_ = slot_;
  plan_len_ = n;
  for (int k = 0, slot = slot_; k < std::min(n, s.p.fds); ++k, slot = next_slot(slot))
    s.lazy_writers[channel_of(slot)].push_back(this);
  return Step::run_repeated(s.write_cost, n);
}

bool ChildBody::plans_write_to(int slot) const {
  const int ahead = slot >= slot_ ? slot - slot_ : slot - slot_ + s_->p.fds;
  return ahead < planned_;
}

// The planned writes not committed are not written lazily after all.
void ChildBody::release_planned_writes() {
  Messaging::State& s = *s_;
  for (int slot = slot_; planned_ > 0; --planned_, slot = next_slot(slot))
    --s.pending_writes[channel_of(slot)];
  // The channels the plan is listed in: from its first write on, one per receiver it writes to.
  for (int k = 0, slot = plan_start_; k < std::min(s.p.fds, plan_len_);
       ++k, slot = next_slot(slot)) {
    std::vector<ChildBody*>& w = s.lazy_writers[channel_of(slot)];
    const auto it = std::find(w.begin(), w.end(), this);
    *it = w.back();
    w.pop_back();
  }
}

void ChildBody::commit_repeats(TaskId self, std::int64_t n, bool over) {
  Messaging::State& s = *s_;
  if (sender_) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::size_t idx = channel_index();
      Channel& ch = s.data[idx];
      if (planned_ == 0 || ch.reader_waiting() || ch.queued() >= ch.stats().max_queued)
        throw std::logic_error(
            "messaging: a lazy write was not planned, would wake or would raise the high-water "
            "mark");
      --planned_;
      --s.pending_writes[idx];
      if (!ch.write(s.waker, self, false))
        throw std::logic_error("messaging: a lazy write found its socket full");
      ++done_;
      slot_ = next_slot(slot_);
    }
    s.lazy_writes += n;
    if (over) release_planned_writes();
    return;
  }
  const std::size_t idx = channel_index();
  Channel& ch = s.data[idx];
  for (std::int64_t i = 0; i < n; ++i) {
    if (!ch.read(s.waker, self))
      throw std::logic_error("messaging: a lazy read found its socket empty");
    ++done_;
  }
  if (over) s.repeat_reader[idx] = kernel::kNoTask;
}

Step ParentBody::next(TaskId self, Time now) {
  Messaging::State& s = *s_;
  for (;;) {
    switch (phase_) {
      case Phase::Fork: {
        // group(): per group the receivers, then the senders; fork balancing places them.
        const int cpu = s.k.task_cpu(self);
        kernel::TaskAttr attr;
        attr.name = s.p.comm;
        if (s.p.threads) attr.thread_group = self;  // pthread_create: threads of the parent
        for (ChildBody& c : s.children) s.k.create_task(attr, &c, cpu);
        phase_ = Phase::ReadyCommit;
        return Step::run(s.read_cost);  // read(readyfds[0], &dummy, 1)
      }
      case Phase::ReadyCommit:
        if (!s.ready.read(s.waker, self)) return Step::block();
        if (++ready_read_ < s.total_children()) return Step::run(s.read_cost);
        s.start = now;  // gettimeofday(&start)
        phase_ = Phase::Go;
        return Step::run(s.write_cost);  // write(wakefds[1], &dummy, 1)
      case Phase::Go:
        s.wake.release(s.waker);
        phase_ = Phase::Reap;
        break;
      case Phase::Reap: {
        const int total = s.total_children();
        if (!s.p.threads && !s.p.reap_in_order) {
          s.reaped += s.zombies;  // wait(): any child
          s.zombies = 0;
        } else {
          while (s.reaped < total && s.exited[static_cast<std::size_t>(s.reaped)]) ++s.reaped;
        }
        if (s.reaped == total) {
          s.stop = now;  // gettimeofday(&stop)
          s.finished = true;
          phase_ = Phase::Done;
          return Step::exit();
        }
        s.waiting_for = (!s.p.threads && !s.p.reap_in_order) ? -2 : s.reaped;
        return Step::block();
      }
      case Phase::Done:
        return Step::exit();
    }
  }
}

ChannelConfig ready_channel_config(const MessagingParams& p, int kernel_version) {
  ChannelConfig c = data_channel_config(p, kernel_version);
  c.msg_bytes = 1;
  c.skb_truesize = p.skb_truesize > 0 ? p.skb_truesize : unix_skb_truesize(1);
  return c;
}

}  // namespace

void validate(const MessagingParams& p) {
  auto bad = [](const std::string& what) { throw InputError("messaging: " + what); };
  if (p.groups < 1 || p.groups > kMaxGroups)
    bad(fmt::format("groups must be in 1..{}", kMaxGroups));
  if (p.fds < 1) bad("fds must be >= 1");
  if (p.loops < 1) bad("loops must be >= 1");
  const std::int64_t tasks = 2 * static_cast<std::int64_t>(p.groups) * p.fds;
  if (tasks > kMaxTasks)
    bad(fmt::format("{} tasks (2 * groups * fds) exceed the limit of {}", tasks, kMaxTasks));
  const __int128 msgs = static_cast<__int128>(p.groups) * p.fds * p.fds * p.loops;
  if (msgs > kMaxMessages)
    bad(fmt::format("groups * fds * fds * loops exceeds the limit of {} messages", kMaxMessages));
  if (p.transport == Transport::UnixStream) {
    if (unix_skb_truesize(p.datasize) == 0)
      bad("datasize must be in 1..3776 bytes for AF_UNIX sockets");
    if (p.sndbuf < 2 || p.skb_truesize < 0) bad("sndbuf must be >= 2 and skb_truesize >= 0");
  } else {
    if (p.datasize < 1 || p.datasize > p.page_size)
      bad(fmt::format("datasize must be in 1..{} bytes for pipes", p.page_size));
    if (p.pipe_buffers < 1) bad("pipe_buffers must be >= 1");
  }
}

ChannelConfig data_channel_config(const MessagingParams& p, int kernel_version) {
  ChannelConfig c;
  c.transport = p.transport;
  c.msg_bytes = p.datasize;
  c.sndbuf = p.sndbuf;
  c.skb_truesize = p.skb_truesize > 0 ? p.skb_truesize : unix_skb_truesize(p.datasize);
  c.pipe_buffers = p.pipe_buffers;
  c.page_size = p.page_size;
  c.pipe_rules = kernel_version < 505 ? PipeWakeRules::SingleQueue : PipeWakeRules::SplitExclusive;
  return c;
}

Messaging::Messaging(kernel::Kernel& k, const MessagingParams& p) {
  validate(p);
  const int version = k.profile().version;
  s_ = std::make_unique<State>(k, p, data_channel_config(p, version),
                               ready_channel_config(p, version));
  const machine::CostModel& c = k.machine().costs;
  const bool sock = p.transport == Transport::UnixStream;
  s_->write_cost = sock ? c.socket_write.ns : c.pipe_write.ns;
  s_->read_cost = sock ? c.socket_read.ns : c.pipe_read.ns;
  s_->per_child = static_cast<std::int64_t>(p.fds) * p.loops;
  const int total = s_->total_children();
  s_->children.reserve(static_cast<std::size_t>(total));  // bodies never move once created
  for (int g = 0, idx = 0; g < p.groups; ++g) {
    for (int r = 0; r < p.fds; ++r) s_->children.emplace_back(s_.get(), idx++, g, r, false);
    for (int i = 0; i < p.fds; ++i) s_->children.emplace_back(s_.get(), idx++, g, 0, true);
  }
  s_->exited.assign(static_cast<std::size_t>(total), 0);
}

Messaging::~Messaging() = default;

void Messaging::start() {
  if (s_->started) throw std::logic_error("Messaging::start called twice");
  s_->started = true;
  kernel::TaskAttr attr;
  attr.name = s_->p.comm;
  s_->parent_id = s_->k.create_task(attr, &s_->parent, 0);
}

bool Messaging::finished() const { return s_->finished; }

const Channel& Messaging::data_channel(int group, int receiver) const {
  return s_->data.at(static_cast<std::size_t>(group) * static_cast<std::size_t>(s_->p.fds) +
                     static_cast<std::size_t>(receiver));
}

MessagingResult Messaging::result() const {
  MessagingResult r;
  r.start = s_->start;
  r.stop = s_->stop;
  r.tasks = s_->total_children();
  for (const Channel& c : s_->data) r.data += c.stats();
  r.messages = static_cast<std::uint64_t>(r.data.reads);
  r.channel_capacity = s_->data.empty() ? 0 : s_->data.front().capacity();
  r.ready = s_->ready.stats();
  r.lazy_writes = s_->lazy_writes;
  return r;
}

MessagingResult run_messaging(kernel::Kernel& k, const MessagingParams& p) {
  Messaging m(k, p);
  m.start();
  // In steps of a millisecond, so that the run (and what --schedstat and --lb-stats count)
  // ends within 1 ms of the benchmark's end, as perf's own process exits then, and does
  // not run on idle up to a whole second.
  constexpr Time kStep = kNsPerMs;
  std::uint64_t seen = k.events();
  Time quiet = 0;
  while (!m.finished()) {
    k.run_until(k.now() + kStep);
    // A running task always has a tick or a step event within a second, so a second
    // without events means every task sleeps for good.
    quiet = k.events() == seen ? quiet + kStep : 0;
    if (!m.finished() && quiet >= kNsPerSec)
      throw std::logic_error("messaging: every task is asleep before the run finished");
    seen = k.events();
  }
  return m.result();
}

}  // namespace schedtwin::workload
