// schbench, December 2021 - March 2023 (masoncl/schbench schbench.c after 2eef4479 /
// 0eda8062): see schbench.h. Function and variable names follow schbench.c.
#include "workload/schbench.h"

#include <fmt/core.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "engine/error.h"
#include "engine/rng.h"

namespace schedtwin::workload {

using kernel::Step;
using kernel::TaskId;

namespace {

// schbench's futex words (FUTEX_BLOCKED / FUTEX_RUNNING); calloc leaves them BLOCKED.
constexpr int kFutexBlocked = 0;
constexpr int kFutexRunning = 1;

// Random stream ids of the message threads' rand_r (schbench seeds it with pthread_self()).
constexpr std::uint64_t kJitterStream = 0x5343484200000000ULL;  // "SCHB"

// gettimeofday(): simulated time truncated to whole microseconds.
std::int64_t gtod_us(Time now) { return now / kNsPerUs; }

// usec_spin(spin_time): spins until a clock read is more than spin_time µs past the first,
// i.e. until the first whole microsecond after start + spin_time; wall-clock bounded.
Time usec_spin_deadline(Time now, std::int64_t spin_us) {
  return (gtod_us(now) + spin_us + 1) * kNsPerUs;
}

// What every schbench thread shares: its futex word, whether it sleeps in FUTEX_WAIT on it,
// and pthread_join on it.
struct ThreadData {
  TaskId id = kernel::kNoTask;
  int futex = kFutexBlocked;
  bool in_futex_wait = false;
  bool exited = false;
  TaskId joiner = kernel::kNoTask;  // a thread sleeping in pthread_join on this one
};

class WorkerBody final : public kernel::TaskBody {
 public:
  WorkerBody(Schbench::State* s, int index, int msg) : s_(s), index_(index), msg_(msg) {}
  Step next(TaskId self, Time now) override;

  ThreadData td;
  std::int64_t wake_time_us = 0;  // stored by the message thread before it fposts us
  // This worker's struct stats since the last reset (the buckets live in the shared sum).
  std::uint64_t nr_samples = 0, min_us = 0, max_us = 0;
  std::uint64_t loop_count = 0;

 private:
  enum class Phase : std::uint8_t { Top, Wait, Work, Sample, Done };
  Schbench::State* s_;
  int index_;  // global: msg * T + j
  int msg_;
  Phase phase_ = Phase::Top;
};

class MessageBody final : public kernel::TaskBody {
 public:
  MessageBody(Schbench::State* s, int index, std::uint64_t seed)
      : s_(s), index_(index), rng_(seed, kJitterStream + static_cast<std::uint64_t>(index)) {}
  Step next(TaskId self, Time now) override;

  ThreadData td;
  std::vector<int> list;  // xlist: workers waiting for a wakeup, in the order they were added

 private:
  enum class Phase : std::uint8_t { Create, Top, Wake, Wait, Spin, Sleep, Join, Done };
  void xlist_wake_all_begin(Time now);

  Schbench::State* s_;
  int index_;
  engine::Rng rng_;
  Phase phase_ = Phase::Create;
  int created_ = 0;
  std::vector<int> batch_;  // the spliced list, in wake order
  std::size_t wake_i_ = 0;
  std::int64_t batch_now_us_ = 0;
  bool second_pass_ = false;  // stopping: the second xlist_wake_all has been started
  int join_i_ = 0;
  bool join_posted_ = false;
};

class MainBody final : public kernel::TaskBody {
 public:
  explicit MainBody(Schbench::State* s) : s_(s) {}
  Step next(TaskId self, Time now) override;

  ThreadData td;

 private:
  enum class Phase : std::uint8_t { Create, Start, Poll, Stop, Done };
  Schbench::State* s_;
  Phase phase_ = Phase::Create;
  int created_ = 0;
  std::int64_t start_us_ = 0, last_calc_us_ = 0, zero_time_us_ = 0;
  bool warmup_done_ = false;
  int stop_i_ = 0;
  bool stop_posted_ = false;
};

}  // namespace

struct Schbench::State {
  kernel::Kernel& k;
  SchbenchParams p;
  bool stopping = false;  // the main thread's `stopping`
  bool started = false;
  bool finished = false;
  MainBody main;
  std::vector<MessageBody> msgs;
  std::vector<WorkerBody> workers;
  metrics::LatencyHistogram plat;  // the sum of the workers' histograms since the last reset
  std::vector<double> plist;
  SchbenchResult r;

  State(kernel::Kernel& kk, const SchbenchParams& pp) : k(kk), p(pp), main(this) {
    plist.assign(kSchbenchPercentiles.begin(), kSchbenchPercentiles.end());
  }

  kernel::TaskAttr attr(int cpu) const {
    kernel::TaskAttr a;
    a.name = p.comm;
    if (cpu >= 0) a.cpus = {cpu};
    a.thread_group = main.td.id;  // every thread is a pthread of the main one
    return a;
  }

  // fpost(): wake the futex's waiter if the word was BLOCKED (FUTEX_WAKE of a thread that
  // sleeps in FUTEX_WAIT on it; a plain wake_up_q, not a sync wakeup).
  void fpost(ThreadData& t) {
    if (t.futex != kFutexBlocked) return;
    t.futex = kFutexRunning;
    if (t.in_futex_wait) {
      t.in_futex_wait = false;
      k.wake_up(t.id, kernel::WF_NONE);
    }
  }

  // do_exit of a thread: the CLONE_CHILD_CLEARTID futex wake of a pthread_join.
  void thread_exit(ThreadData& t) {
    t.exited = true;
    if (t.joiner != kernel::kNoTask) {
      const TaskId j = t.joiner;
      t.joiner = kernel::kNoTask;
      k.wake_up(j, kernel::WF_NONE);
    }
  }

  // add_lat(): the sample less cputime (1 if not more), into the worker's stats.
  void add_lat(WorkerBody& w, std::uint64_t us) {
    const auto cputime = static_cast<std::uint64_t>(p.cputime_us);
    us = us > cputime ? us - cputime : 1;
    if (us > w.max_us) w.max_us = us;
    if (w.min_us == 0 || us < w.min_us) w.min_us = us;
    ++w.nr_samples;
    plat.add(us);
  }

  // reset_thread_stats(): memset of every worker's struct stats.
  void reset_thread_stats() {
    plat.reset();
    for (WorkerBody& w : workers) w.nr_samples = w.min_us = w.max_us = 0;
  }

  // combine_message_thread_stats() into a zeroed struct stats, then calc_percentiles() as
  // show_latencies() uses them.
  SchbenchTable table(Time at, std::uint64_t runtime_s) const {
    SchbenchTable t;
    t.at = at;
    t.runtime_s = runtime_s;
    t.samples = plat.count();
    t.rows = plat.percentiles(plist);
    std::vector<std::uint64_t> mins;
    mins.reserve(workers.size());
    for (const WorkerBody& w : workers) {  // combine_stats, worker by worker
      if (w.max_us > t.max_us) t.max_us = w.max_us;
      mins.push_back(w.min_us);
    }
    t.min_us = combine_min(mins);
    return t;
  }
};

namespace {

Step WorkerBody::next(TaskId self, Time now) {
  Schbench::State& s = *s_;
  td.id = self;
  for (;;) {
    switch (phase_) {
      case Phase::Top: {
        if (s.stopping) {
          s.thread_exit(td);
          phase_ = Phase::Done;
          return Step::exit();
        }
        // msg_and_wait(): blocked, provisional timestamp, on the list, post the message thread.
        td.futex = kFutexBlocked;
        wake_time_us = gtod_us(now);
        MessageBody& m = s.msgs[static_cast<std::size_t>(msg_)];
        m.list.push_back(index_);
        s.fpost(m.td);
        // "don't wait if the main threads are shutting down"
        phase_ = s.stopping ? Phase::Work : Phase::Wait;
        return Step::run(0);  // the FUTEX_WAKE's cost, if it woke the message thread
      }
      case Phase::Wait:  // fwait(&td->futex)
        if (td.futex == kFutexRunning) {
          td.futex = kFutexBlocked;
          phase_ = Phase::Work;
          break;
        }
        td.in_futex_wait = true;
        return Step::block();
      case Phase::Work:  // do_work(): usec_spin(cputime)
        phase_ = Phase::Sample;
        if (s.p.cputime_us > 0) return Step::run_until(usec_spin_deadline(now, s.p.cputime_us));
        break;
      case Phase::Sample: {
        ++loop_count;
        std::int64_t delta = gtod_us(now) - wake_time_us;  // tvdelta: negative -> 0
        if (delta < 0) delta = 0;
        if (delta > 0) s.add_lat(*this, static_cast<std::uint64_t>(delta));
        phase_ = Phase::Top;
        break;
      }
      case Phase::Done:
        return Step::exit();
    }
  }
}

// xlist_splice() then one gettimeofday() for the whole batch. xlist_add() pushes at the head,
// so the splice walks the workers from the most recent poster to the first.
void MessageBody::xlist_wake_all_begin(Time now) {
  batch_.assign(list.rbegin(), list.rend());
  list.clear();
  batch_now_us_ = gtod_us(now);
  wake_i_ = 0;
}

Step MessageBody::next(TaskId self, Time now) {
  Schbench::State& s = *s_;
  td.id = self;
  const int nworkers = s.p.worker_threads;
  for (;;) {
    switch (phase_) {
      case Phase::Create:  // message_thread(): pthread_create each worker
        if (created_ < nworkers) {
          const int w = index_ * nworkers + created_++;
          const std::size_t wi = static_cast<std::size_t>(w);
          const int cpu = wi < s.p.worker_cpu.size() ? s.p.worker_cpu[wi] : -1;
          WorkerBody& body = s.workers[wi];
          body.td.id = s.k.create_task(s.attr(cpu), &body, s.k.task_cpu(self));
          return Step::run(0);  // the child may preempt its parent
        }
        phase_ = Phase::Top;
        break;
      case Phase::Top:  // run_msg_thread() loop
        td.futex = kFutexBlocked;
        xlist_wake_all_begin(now);
        phase_ = Phase::Wake;
        break;
      case Phase::Wake:
        if (wake_i_ < batch_.size()) {
          WorkerBody& w = s.workers[static_cast<std::size_t>(batch_[wake_i_++])];
          w.wake_time_us = batch_now_us_;
          s.fpost(w.td);
          return Step::run(0);  // pay this wakeup before the next one
        }
        if (!s.stopping) {
          phase_ = s.p.sleeptime_us > 0 ? Phase::Wait : Phase::Spin;
          break;
        }
        if (!second_pass_) {  // if (stopping) { xlist_wake_all(td); break; }
          second_pass_ = true;
          xlist_wake_all_begin(now);
          break;
        }
        phase_ = Phase::Join;
        break;
      case Phase::Wait:  // fwait(&td->futex)
        if (td.futex == kFutexRunning) {
          td.futex = kFutexBlocked;
          phase_ = Phase::Spin;
          break;
        }
        td.in_futex_wait = true;
        return Step::block();
      case Phase::Spin:  // usec_spin(message_cputime)
        phase_ = Phase::Sleep;
        if (s.p.message_cputime_us > 0)
          return Step::run_until(usec_spin_deadline(now, s.p.message_cputime_us));
        break;
      case Phase::Sleep: {  // usleep(sleeptime + rand_r(&seed) % max_jitter)
        phase_ = Phase::Top;
        if (s.p.sleeptime_us <= 0) break;
        const std::int64_t max_jitter = s.p.sleeptime_us / 4;
        const std::int64_t jitter =
            max_jitter > 0
                ? static_cast<std::int64_t>(rng_.below(static_cast<std::uint64_t>(max_jitter)))
                : 0;
        s.k.arm_timer(self, now + (s.p.sleeptime_us + jitter) * kNsPerUs);
        return Step::block();
      }
      case Phase::Join:  // fpost and pthread_join each worker in order
        if (join_i_ < nworkers) {
          WorkerBody& w = s.workers[static_cast<std::size_t>(index_ * nworkers + join_i_)];
          if (!join_posted_) {
            join_posted_ = true;
            s.fpost(w.td);
            return Step::run(0);
          }
          if (!w.td.exited) {
            w.td.joiner = self;
            return Step::block();
          }
          ++join_i_;
          join_posted_ = false;
          break;
        }
        s.thread_exit(td);
        phase_ = Phase::Done;
        return Step::exit();
      case Phase::Done:
        return Step::exit();
    }
  }
}

Step MainBody::next(TaskId self, Time now) {
  Schbench::State& s = *s_;
  td.id = self;
  const SchbenchParams& p = s.p;
  for (;;) {
    switch (phase_) {
      case Phase::Create:  // main(): one message thread after the other
        if (created_ < p.message_threads) {
          const std::size_t i = static_cast<std::size_t>(created_++);
          const int cpu = i < p.message_cpu.size() ? p.message_cpu[i] : -1;
          MessageBody& body = s.msgs[i];
          body.td.id = s.k.create_task(s.attr(cpu), &body, s.k.task_cpu(self));
          return Step::run(0);
        }
        phase_ = Phase::Start;
        break;
      case Phase::Start:  // sleep_for_runtime(): gettimeofday(&start)
        start_us_ = last_calc_us_ = zero_time_us_ = gtod_us(now);
        s.r.start = now;
        phase_ = Phase::Poll;
        break;
      case Phase::Poll: {
        const std::int64_t now_us = gtod_us(now);
        const std::int64_t runtime_delta = now_us - start_us_;
        if (runtime_delta >= static_cast<std::int64_t>(p.runtime_s) * 1'000'000) {
          s.stopping = true;
          s.r.stop = now;
          phase_ = Phase::Stop;
          break;
        }
        if (runtime_delta > static_cast<std::int64_t>(p.warmuptime_s) * 1'000'000 &&
            !warmup_done_ && p.warmuptime_s) {
          warmup_done_ = true;
          SchbenchOutputItem item;
          item.warmup_done = true;
          item.table.at = now;
          s.r.output.push_back(std::move(item));
          s.r.warmup_at = now;
          zero_time_us_ = now_us;
          s.reset_thread_stats();
        } else if (now_us - last_calc_us_ >=
                   static_cast<std::int64_t>(p.intervaltime_s) * 1'000'000) {
          SchbenchOutputItem item;
          item.table = s.table(now, static_cast<std::uint64_t>(runtime_delta / 1'000'000));
          s.r.output.push_back(std::move(item));
          last_calc_us_ = now_us;
        }
        if (p.zerotime_s &&
            now_us - zero_time_us_ > static_cast<std::int64_t>(p.zerotime_s) * 1'000'000) {
          zero_time_us_ = now_us;
          s.reset_thread_stats();
        }
        s.k.arm_timer(self, now + kNsPerSec);  // sleep(1)
        return Step::block();
      }
      case Phase::Stop:  // fpost and pthread_join each message thread in order
        if (stop_i_ < p.message_threads) {
          MessageBody& m = s.msgs[static_cast<std::size_t>(stop_i_)];
          if (!stop_posted_) {
            stop_posted_ = true;
            s.fpost(m.td);
            return Step::run(0);
          }
          if (!m.td.exited) {
            m.td.joiner = self;
            return Step::block();
          }
          ++stop_i_;
          stop_posted_ = false;
          break;
        }
        s.r.final_table = s.table(now, static_cast<std::uint64_t>(p.runtime_s));
        s.r.histogram = s.plat;
        s.r.end = now;
        s.finished = true;
        s.thread_exit(td);
        phase_ = Phase::Done;
        return Step::exit();
      case Phase::Done:
        return Step::exit();
    }
  }
}

}  // namespace

std::uint64_t combine_min(const std::vector<std::uint64_t>& worker_min) {
  std::uint64_t d = 0;
  for (std::uint64_t m : worker_min)
    if (d == 0 || m < d) d = m;
  return d;
}

void validate(const SchbenchParams& p) {
  auto bad = [](const std::string& what) { throw InputError("schbench: " + what); };
  if (p.message_threads < 1) bad("message_threads must be >= 1");
  if (p.worker_threads < 1) bad("worker_threads must be >= 1");
  const std::int64_t tasks =
      static_cast<std::int64_t>(p.message_threads) * (p.worker_threads + 1) + 1;
  if (tasks > kSchbenchMaxTasks)
    bad(fmt::format(
        "{} threads (message_threads * (worker_threads + 1) + 1) exceed the limit of {}", tasks,
        kSchbenchMaxTasks));
  if (p.runtime_s < 1 || p.runtime_s > kSchbenchMaxRuntimeS)
    bad(fmt::format("runtime must be in 1..{} s", kSchbenchMaxRuntimeS));
  for (auto [v, name] : {std::pair{p.sleeptime_us, "sleeptime"}, std::pair{p.cputime_us, "cputime"},
                         std::pair{p.message_cputime_us, "message_cputime"}})
    if (v < 0 || v > kSchbenchMaxTimeUs)
      bad(fmt::format("{} must be in 0..{} usec", name, kSchbenchMaxTimeUs));
  if (p.sleeptime_us == 0 && p.message_cputime_us == 0)
    bad("sleeptime and message_cputime are both 0: the message thread would loop without pause");
  for (auto [v, name] :
       {std::pair{p.warmuptime_s, "warmuptime"}, std::pair{p.intervaltime_s, "intervaltime"},
        std::pair{p.zerotime_s, "zerotime"}})
    if (v < 0 || v > kSchbenchMaxRuntimeS)
      bad(fmt::format("{} must be in 0..{} s", name, kSchbenchMaxRuntimeS));
}

Schbench::Schbench(kernel::Kernel& k, const SchbenchParams& p) {
  validate(p);
  s_ = std::make_unique<State>(k, p);
  const int workers = p.message_threads * p.worker_threads;
  // Bodies never move once the tasks exist.
  s_->msgs.reserve(static_cast<std::size_t>(p.message_threads));
  for (int i = 0; i < p.message_threads; ++i) s_->msgs.emplace_back(s_.get(), i, p.seed);
  s_->workers.reserve(static_cast<std::size_t>(workers));
  for (int i = 0; i < workers; ++i) s_->workers.emplace_back(s_.get(), i, i / p.worker_threads);
  s_->r.workers = workers;
}

Schbench::~Schbench() = default;

void Schbench::start() {
  if (s_->started) throw std::logic_error("Schbench::start called twice");
  s_->started = true;
  const int cpu = s_->p.main_cpu;
  s_->main.td.id = s_->k.create_task(s_->attr(cpu), &s_->main, cpu >= 0 ? cpu : 0);
}

bool Schbench::finished() const { return s_->finished; }

SchbenchResult Schbench::result() const {
  SchbenchResult r = s_->r;
  r.loops = 0;
  for (const WorkerBody& w : s_->workers) r.loops += w.loop_count;
  return r;
}

SchbenchResult run_schbench(kernel::Kernel& k, const SchbenchParams& p) {
  Schbench sb(k, p);
  sb.start();
  std::uint64_t seen = k.events();
  while (!sb.finished()) {
    // The main thread wakes every second, so a second without events means a modelling bug.
    k.run_until(k.now() + kNsPerSec);
    if (!sb.finished() && k.events() == seen)
      throw std::logic_error("schbench: every thread is asleep before the run finished");
    seen = k.events();
  }
  return sb.result();
}

}  // namespace schedtwin::workload
