// The messaging workload: channel semantics worked by hand (AF_UNIX budget and the
// wake-at-a-quarter hysteresis, pipe slots, merging and the v5.4 / v5.5+ wake rules), and
// whole runs on small machines (message counts, invariants, determinism).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/error.h"
#include "kernel/kernel.h"
#include "kernel_test_util.h"
#include "machine/machine_file.h"
#include "workload/channel.h"
#include "workload/messaging.h"

using namespace schedtwin;
using namespace schedtwin::workload;
using kernel::TaskId;
using kernel::WF_SYNC;

namespace {

// Records the wakeups a channel issues; every task it is asked to wake is asleep.
struct RecordingWaker : Waker {
  std::vector<std::pair<TaskId, unsigned>> woken;
  bool wake_up(TaskId t, unsigned flags) override {
    woken.emplace_back(t, flags);
    return true;
  }
  std::vector<TaskId> ids() const {
    std::vector<TaskId> v;
    for (auto& w : woken) v.push_back(w.first);
    return v;
  }
};

constexpr TaskId kReader = 9;

ChannelConfig small_socket() {
  ChannelConfig c;
  c.transport = Transport::UnixStream;
  c.sndbuf = 1000;
  c.skb_truesize = 100;
  return c;
}

ChannelConfig small_pipe(int buffers, PipeWakeRules rules) {
  ChannelConfig c;
  c.transport = Transport::Pipe;
  c.msg_bytes = 100;
  c.page_size = 400;  // 4 messages per page
  c.pipe_buffers = buffers;
  c.pipe_rules = rules;
  return c;
}

}  // namespace

TEST(UnixSkb, TruesizeFollowsTheKmallocClass) {
  EXPECT_EQ(unix_skb_truesize(100), 768);  // 128 + 320 = 448 -> kmalloc-512, + 256
  EXPECT_EQ(unix_skb_truesize(1), 768);
  EXPECT_EQ(unix_skb_truesize(192), 768);    // 192 + 320 = 512
  EXPECT_EQ(unix_skb_truesize(193), 1280);   // 256 + 320 = 576 -> kmalloc-1024
  EXPECT_EQ(unix_skb_truesize(3776), 4352);  // 3776 + 320 = 4096
  EXPECT_EQ(unix_skb_truesize(3777), 0);     // paged skb: not modelled
  EXPECT_EQ(unix_skb_truesize(0), 0);
}

// sndbuf 1000, truesize 100: a write proceeds while 1 + 100 n < 1000, so 10 messages fit;
// writers are woken once 4 * (2 + 100 n) <= 1000, i.e. when a read leaves n <= 2.
TEST(UnixChannel, BudgetAndQuarterHysteresis) {
  Channel ch(small_socket());
  RecordingWaker w;
  EXPECT_EQ(ch.capacity(), 10);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(ch.write(w, 1 + i % 2, false)) << i;
  EXPECT_EQ(ch.reads_without_wakeup(), 10);  // nobody waits: every queued message
  EXPECT_FALSE(ch.write(w, 3, false));
  EXPECT_FALSE(ch.write(w, 4, false));
  EXPECT_FALSE(ch.write(w, 1, false));
  EXPECT_EQ(ch.stats().writer_blocks, 3);
  EXPECT_EQ(ch.waiting_writers(), 3u);
  // Reads 1..7 leave 9..3 queued: still above a quarter, nobody is woken (what a lazy
  // receiver may take without an event each).
  EXPECT_EQ(ch.reads_without_wakeup(), 7);
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(ch.read(w, kReader));
  EXPECT_TRUE(w.woken.empty());
  EXPECT_EQ(ch.reads_without_wakeup(), 0);
  // The 8th read leaves 2: every sleeping writer wakes, the last to sleep first, sync.
  EXPECT_TRUE(ch.read(w, kReader));
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{1, 4, 3}));
  for (auto& x : w.woken) EXPECT_EQ(x.second, WF_SYNC);
  EXPECT_EQ(ch.stats().writer_wakeups, 3);
  EXPECT_EQ(ch.waiting_writers(), 0u);
  // Woken writers commit on retry without another wait.
  EXPECT_TRUE(ch.write(w, 1, true));
  EXPECT_EQ(ch.queued(), 3);
  // Drain; the reader sleeps on the empty queue and the next write wakes it, once.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(ch.read(w, kReader));
  w.woken.clear();
  EXPECT_FALSE(ch.read(w, kReader));
  EXPECT_TRUE(ch.reader_waiting());
  EXPECT_TRUE(ch.write(w, 2, false));
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{kReader}));
  EXPECT_EQ(w.woken[0].second, WF_SYNC);
  EXPECT_TRUE(ch.write(w, 2, false));
  EXPECT_EQ(w.woken.size(), 1u);
  EXPECT_EQ(ch.stats().reader_blocks, 1);
  EXPECT_EQ(ch.stats().reader_wakeups, 1);
  EXPECT_EQ(ch.stats().max_queued, 10);
}

// The default budget (wmem_default 212992, truesize 768): 278 queued messages; writers wake
// when a read leaves 69 (4 * (2 + 69 * 768) = 211976 <= 212992; with 70: 215048).
TEST(UnixChannel, DefaultBudgetHolds278AndWakesAt69) {
  ChannelConfig c;
  Channel ch(c);
  RecordingWaker w;
  EXPECT_EQ(ch.capacity(), 278);
  for (int i = 0; i < 278; ++i) ASSERT_TRUE(ch.write(w, 1, false));
  EXPECT_FALSE(ch.write(w, 2, false));
  for (int i = 0; i < 208; ++i) ASSERT_TRUE(ch.read(w, kReader));
  EXPECT_EQ(ch.queued(), 70);
  EXPECT_TRUE(w.woken.empty());
  ASSERT_TRUE(ch.read(w, kReader));
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{2}));
}

// v5.5+ pipe, 2 slots of 4 messages: a write wakes the reader only into an empty pipe, small
// writes merge into the last page, a read from a full pipe wakes one writer (FIFO) even when
// it frees nothing, and a woken writer that still finds the pipe full sleeps again.
TEST(PipeChannel, SplitRulesWakeOnEmptyAndOneWriterWhenFull) {
  Channel ch(small_pipe(2, PipeWakeRules::SplitExclusive));
  RecordingWaker w;
  EXPECT_EQ(ch.capacity(), 8);
  EXPECT_FALSE(ch.read(w, kReader));
  EXPECT_TRUE(ch.write(w, 1, false));  // empty -> non-empty: wakes the reader
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{kReader}));
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(ch.write(w, 2, false));  // merges, one new page
  EXPECT_EQ(w.woken.size(), 1u);
  EXPECT_EQ(ch.reads_without_wakeup(), 8);
  EXPECT_FALSE(ch.write(w, 3, false));
  EXPECT_FALSE(ch.write(w, 4, false));
  EXPECT_EQ(ch.reads_without_wakeup(), 0);  // the next read wakes a writer
  w.woken.clear();
  EXPECT_TRUE(ch.read(w, kReader));  // full before: wakes writer 3 (first to sleep)
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{3}));
  EXPECT_FALSE(ch.write(w, 3, true));  // page 0 still holds 3 messages: pipe still full
  EXPECT_EQ(ch.stats().writer_blocks, 3);
  EXPECT_TRUE(ch.read(w, kReader));  // wakes 4
  EXPECT_TRUE(ch.read(w, kReader));  // wakes 3 again
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{3, 4, 3}));
  EXPECT_TRUE(ch.read(w, kReader));  // frees page 0; nobody left to wake
  EXPECT_EQ(w.woken.size(), 3u);
  EXPECT_EQ(ch.queued(), 4);
  // A woken writer takes a new slot (it does not merge); the pipe is full again, so it does
  // not pass the wakeup on.
  EXPECT_TRUE(ch.write(w, 3, true));
  EXPECT_EQ(ch.queued(), 5);
  EXPECT_FALSE(ch.write(w, 4, true));  // full
  // A fresh writer still merges into the new last page while the pipe is full.
  EXPECT_TRUE(ch.write(w, 5, false));
  EXPECT_EQ(ch.queued(), 6);
  EXPECT_EQ(w.woken.size(), 3u);
  EXPECT_EQ(ch.stats().writer_wakeups, 3);
}

// wake_next_writer: 3 slots of 4, six writers asleep on a full pipe. Reads 1-4 (from full)
// wake 21..24 and free page 0; reads 5-8 wake nobody (not full before) and free page 1.
// Writer 21 then takes a slot and, room remaining, wakes the next writer (25); writer 22
// fills the pipe and wakes nobody; writer 23 sleeps again at the tail.
TEST(PipeChannel, WokenWriterPassesTheWakeupOn) {
  Channel ch(small_pipe(3, PipeWakeRules::SplitExclusive));
  RecordingWaker w;
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(ch.write(w, 1, false));
  for (TaskId t = 21; t <= 26; ++t) ASSERT_FALSE(ch.write(w, t, false));
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(ch.read(w, kReader));
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{21, 22, 23, 24}));
  EXPECT_TRUE(ch.write(w, 21, true));
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{21, 22, 23, 24, 25}));
  EXPECT_TRUE(ch.write(w, 22, true));
  EXPECT_FALSE(ch.write(w, 23, true));
  EXPECT_EQ(w.woken.size(), 5u);
  EXPECT_EQ(ch.waiting_writers(), 2u);                           // 26, 23
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ch.read(w, kReader));  // 4 left in page 2: from full
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{21, 22, 23, 24, 25, 26, 23}));
}

// v5.4 pipe: one non-exclusive queue for reader and writers; every write wakes all sleepers,
// and so does every read that frees a page (and no other read).
TEST(PipeChannel, SingleQueueWakesEveryoneOnEveryWrite) {
  Channel ch(small_pipe(2, PipeWakeRules::SingleQueue));
  RecordingWaker w;
  EXPECT_FALSE(ch.read(w, kReader));
  EXPECT_TRUE(ch.write(w, 1, false));
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{kReader}));
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(ch.write(w, 2, false));
  EXPECT_FALSE(ch.write(w, 3, false));
  EXPECT_FALSE(ch.write(w, 4, false));
  EXPECT_EQ(ch.waiting_writers(), 2u);
  w.woken.clear();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(ch.read(w, kReader));
  EXPECT_TRUE(w.woken.empty());      // no page freed yet
  EXPECT_TRUE(ch.read(w, kReader));  // frees page 0: wakes both, the last to sleep first
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{4, 3}));
  EXPECT_TRUE(ch.write(w, 5, false));  // a fresh writer: last page full, takes the free slot
  EXPECT_FALSE(ch.write(w, 4, true));  // full again
  EXPECT_FALSE(ch.write(w, 3, true));
  EXPECT_TRUE(ch.write(w, 6, false));  // merges into the last page and wakes both sleepers
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{4, 3, 3, 4}));
  for (auto& x : w.woken) EXPECT_EQ(x.second, WF_SYNC);
}

TEST(PollBarrier, WakesAllPollersLastFirstAndLetsLatePollersThrough) {
  PollBarrier b;
  RecordingWaker w;
  EXPECT_FALSE(b.poll(1));
  EXPECT_FALSE(b.poll(2));
  EXPECT_FALSE(b.poll(3));
  b.release(w);
  EXPECT_EQ(w.ids(), (std::vector<TaskId>{3, 2, 1}));
  EXPECT_TRUE(b.poll(4));
  EXPECT_EQ(w.woken.size(), 3u);
}

// ---------------------------------------------------------------------------
// Whole runs

namespace {

machine::Machine test_machine(int clusters, int per_cluster) {
  machine::Machine m = testutil::flat_machine(clusters, per_cluster);
  m.costs.context_switch.ns = 2000;
  m.costs.wakeup.ns = 300;
  m.costs.socket_write.ns = 1500;
  m.costs.socket_read.ns = 1200;
  m.costs.pipe_write.ns = 1000;
  m.costs.pipe_read.ns = 900;
  return m;
}

struct Outcome {
  MessagingResult r;
  std::uint64_t events = 0;
  std::uint64_t switches = 0;
};

Outcome run_sim(const MessagingParams& p, const char* profile = "v5.4", int clusters = 2,
                int per = 2, std::uint64_t seed = 1) {
  kernel::Config c;
  c.profile = kernel::make_profile(profile);
  c.seed = seed;
  kernel::Kernel k(test_machine(clusters, per), c);
  Outcome out;
  out.r = run_messaging(k, p);
  out.events = k.events();
  out.switches = k.context_switches();
  return out;
}

}  // namespace

TEST(Messaging, DeliversGroupsTimesFdsSquaredTimesLoops) {
  MessagingParams p;
  p.groups = 2;
  p.fds = 3;
  p.loops = 5;
  for (Transport t : {Transport::UnixStream, Transport::Pipe}) {
    for (const char* prof : {"v5.4", "v5.7"}) {
      p.transport = t;
      Outcome r = run_sim(p, prof);
      EXPECT_EQ(r.r.messages, 2u * 3 * 3 * 5) << prof;
      EXPECT_EQ(r.r.data.writes, 90) << prof;
      EXPECT_EQ(r.r.tasks, 12);
      EXPECT_EQ(r.r.ready.writes, 12);  // one ready byte per child
      EXPECT_GT(r.r.total_time(), 0);
      EXPECT_GT(r.r.start, 0);
    }
  }
}

TEST(Messaging, ThreadModeAndInOrderReapingFinish) {
  MessagingParams p;
  p.groups = 2;
  p.fds = 4;
  p.loops = 20;
  p.threads = true;
  EXPECT_EQ(run_sim(p).r.messages, 2u * 4 * 4 * 20);
  p.threads = false;
  p.reap_in_order = true;
  EXPECT_EQ(run_sim(p).r.messages, 2u * 4 * 4 * 20);
}

// One CPU: a sender runs for a whole slice, far longer than it takes to fill a channel, so
// writers block on full channels and are woken in bursts; the budget is never exceeded.
TEST(Messaging, SendersFillTheSocketBudgetAndSleep) {
  MessagingParams p;
  p.groups = 1;
  p.fds = 2;
  p.loops = 2000;
  Outcome r = run_sim(p, "v5.4", 1, 1);
  EXPECT_EQ(r.r.messages, 2u * 2 * 2000);
  EXPECT_EQ(r.r.channel_capacity, 278);
  EXPECT_EQ(r.r.data.max_queued, 278);
  EXPECT_GT(r.r.data.writer_blocks, 0);
  EXPECT_GT(r.r.data.writer_wakeups, 0);
  EXPECT_LE(r.r.data.writer_wakeups, r.r.data.writer_blocks);
}

TEST(Messaging, PipesHold640PerChannel) {
  MessagingParams p;
  p.groups = 1;
  p.fds = 2;
  p.loops = 2000;
  p.transport = Transport::Pipe;
  for (const char* prof : {"v5.4", "v5.7"}) {
    Outcome r = run_sim(p, prof, 1, 1);
    EXPECT_EQ(r.r.messages, 2u * 2 * 2000) << prof;
    EXPECT_EQ(r.r.channel_capacity, 640);
    EXPECT_LE(r.r.data.max_queued, 640) << prof;
    EXPECT_GT(r.r.data.writer_blocks, 0) << prof;
  }
}

TEST(Messaging, SameSeedSameRun) {
  MessagingParams p;
  p.groups = 3;
  p.fds = 5;
  p.loops = 30;
  Outcome a = run_sim(p, "v5.4", 2, 2, 7);
  Outcome b = run_sim(p, "v5.4", 2, 2, 7);
  EXPECT_EQ(a.r.start, b.r.start);
  EXPECT_EQ(a.r.stop, b.r.stop);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.switches, b.switches);
  EXPECT_EQ(a.r.data.writer_blocks, b.r.data.writer_blocks);
  EXPECT_EQ(a.r.data.reader_wakeups, b.r.data.reader_wakeups);
}

// Lazy reads (Step::repeats, src/kernel/repeat.cpp) change nothing a run computes: every
// figure of the run, the kernel's counters and /proc/schedstat are those of the same run with
// every read ending in an event of its own, on machines with SMT (a sibling's start changes
// the reader's speed mid-batch), clusters, NUMA and cluster idle, for sockets and both pipe
// wake rules, processes and threads, and with free IPIs and switches (events armed for the
// time being handled, with slots below the one handled).
// Lazy reads and writes (Step::repeats) against the plain steps, down to per-task runtime.
TEST(Messaging, LazyReadsAndWritesChangeNothing) {
  struct Case {
    const char* machine;
    const char* profile;
    int groups, loops;
    Transport transport;
    bool threads;
    bool zero_costs = false;  // IPIs, switches and wakeups free: chains of events at one time
    std::int64_t sndbuf = 0;  // a small socket budget: writers block, lazy writes meet it
  };
  const Case cases[] = {
      {"xeon-e5-2650v4", "v5.7", 4, 60, Transport::UnixStream, false},
      {"xeon-e5-2650v4", "v5.17", 2, 100, Transport::Pipe, true},
      {"hikey", "v5.4", 2, 80, Transport::UnixStream, false},
      {"hikey", "v5.3", 2, 80, Transport::Pipe, false},
      {"thunderx2", "v6.6", 3, 20, Transport::UnixStream, true},
      {"xeon-2s-88", "v6.0", 3, 40, Transport::Pipe, false},
      {"xeon-e5-2650v4", "v6.6", 3, 60, Transport::UnixStream, false, true},
      {"hikey", "v5.7", 2, 80, Transport::Pipe, true, true},
      {"xeon-e5-2650v4", "v5.4", 3, 60, Transport::UnixStream, false, false, 8000},
      {"thunderx2", "v5.4", 1, 60, Transport::UnixStream, false, false, 4000},
      {"hikey", "v6.6", 2, 80, Transport::UnixStream, true, true, 6000},
  };
  for (const Case& c : cases) {
    for (std::uint64_t seed : {1, 2}) {
      MessagingParams p;
      p.groups = c.groups;
      p.loops = c.loops;
      p.transport = c.transport;
      p.threads = c.threads;
      if (c.sndbuf > 0) p.sndbuf = c.sndbuf;
      machine::Machine m = machine::load_machine(c.machine);
      if (c.zero_costs)
        for (machine::Cost* x : {&m.costs.ipi, &m.costs.context_switch, &m.costs.wakeup,
                                 &m.costs.idle_probe, &m.costs.cache_cold})
          x->ns = 0;
      auto run = [&](bool repeats) {
        kernel::Config cfg;
        cfg.profile = kernel::make_profile(c.profile);
        cfg.seed = seed;
        cfg.repeats = repeats;
        auto k = std::make_unique<kernel::Kernel>(m, cfg);
        MessagingResult r = run_messaging(*k, p);
        return std::make_pair(std::move(k), r);
      };
      auto [lazy, a] = run(true);
      auto [plain, b] = run(false);
      const std::string what =
          std::string(c.machine) + " " + c.profile + " seed " + std::to_string(seed);
      EXPECT_GT(lazy->lazy_events(), 0u) << what;  // the case does take steps lazily
      EXPECT_EQ(plain->lazy_events(), 0u) << what;
      if (c.transport == Transport::UnixStream) {
        EXPECT_GT(a.lazy_writes, 0) << what;
      }
      EXPECT_EQ(b.lazy_writes, 0) << what;
      EXPECT_EQ(a.data.writes, b.data.writes) << what;
      EXPECT_EQ(a.start, b.start) << what;
      EXPECT_EQ(a.stop, b.stop) << what;
      EXPECT_EQ(a.data.reads, b.data.reads) << what;
      EXPECT_EQ(a.data.writer_blocks, b.data.writer_blocks) << what;
      EXPECT_EQ(a.data.writer_wakeups, b.data.writer_wakeups) << what;
      EXPECT_EQ(a.data.reader_blocks, b.data.reader_blocks) << what;
      EXPECT_EQ(a.data.reader_wakeups, b.data.reader_wakeups) << what;
      EXPECT_EQ(a.data.max_queued, b.data.max_queued) << what;
      EXPECT_EQ(lazy->events(), plain->events()) << what;
      EXPECT_EQ(lazy->context_switches(), plain->context_switches()) << what;
      EXPECT_EQ(lazy->migrations(), plain->migrations()) << what;
      EXPECT_EQ(lazy->now(), plain->now()) << what;
      EXPECT_EQ(lazy->schedstat(), plain->schedstat()) << what;
      for (TaskId t = 0; t < lazy->nr_tasks(); ++t) {
        EXPECT_EQ(lazy->task_stats(t).sum_exec_runtime, plain->task_stats(t).sum_exec_runtime)
            << what << " task " << t;
        EXPECT_EQ(lazy->task_stats(t).run_delay, plain->task_stats(t).run_delay)
            << what << " task " << t;
      }
    }
  }
}

TEST(Messaging, RejectsWhatItCannotSimulate) {
  MessagingParams p;
  p.groups = 0;
  EXPECT_THROW(validate(p), InputError);
  p.groups = 1;
  p.loops = 0;
  EXPECT_THROW(validate(p), InputError);
  p.loops = 1;
  p.datasize = 4000;
  EXPECT_THROW(validate(p), InputError);  // AF_UNIX: paged skbs are not modelled
  p.transport = Transport::Pipe;
  EXPECT_NO_THROW(validate(p));
  p.groups = 10000;
  p.fds = 100;  // 2 000 000 tasks
  EXPECT_THROW(validate(p), InputError);
}
