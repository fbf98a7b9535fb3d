// schbench (Chris Mason, masoncl/schbench) inside the simulation, in its December 2021 - March
// 2023 form (commits 2eef4479 / 0eda8062 and after, before the April 2023 v1.0 rewrite;
// reference/workloads.md §2.2, §2.3): the version the series of DESIGN.md §1 used.
//
// Threads (all named "schbench", one process):
// - main: creates the message threads, then sleep_for_runtime(): every sleep(1) it reads the
//   clock; past the warmup (-w, default 5 s) it zeroes every worker's statistics once, every
//   -i seconds (default 10) it records the merged table, past -r seconds it sets `stopping`,
//   fposts and joins the message threads; the final table is merged from every worker after
//   the joins.
// - M message threads (-m, default 2), each creating its T workers (-t, default 16), then
//   looping: futex = BLOCKED; xlist_wake_all (splice the list of waiting workers, take ONE
//   timestamp, and for each worker, most recent poster first, store it as the worker's
//   wake_time and fpost its futex); if stopping: wake all again and join the workers; else
//   fwait on its own futex (until a worker posts), usec_spin(message_cputime), usleep(sleeptime
//   + rand() % (sleeptime / 4)).
// - workers: loop { if stopping: exit; msg_and_wait (futex = BLOCKED, provisional wake_time =
//   now, push itself on the message thread's list, fpost the message thread, fwait on its own
//   futex); do_work = usec_spin(cputime); add_lat(now - wake_time) }.
//
// Measurement, exactly as that version: gettimeofday() is the simulated time truncated to whole
// microseconds; usec_spin(t) burns CPU until the clock read is MORE than t µs past its start, so
// it ends at the first whole microsecond past start + t (wall clock: time the thread is
// preempted counts; Step::run_until); the sample is (now - wake_time) in µs, dropped if 0, and
// add_lat() turns it into (sample - cputime), or 1 if that is not positive. A worker that runs
// at once after its wakeup therefore records 1 µs; every µs it waits for a CPU adds one.
//
// Costs: the try_to_wake_up of each fpost is charged by the kernel model on the waker (the
// message thread wakes its batch one worker per step, so that later wakees count the waker's
// time spent waking the earlier ones and its preemption by them); futex system-call entry and
// exit, gettimeofday (vDSO), pthread_create and the list operations cost nothing here (the
// cost model has no figure for them).
//
// Statistics: schbench keeps one histogram per worker and sums them to print; the sum is kept
// here directly (the same numbers), with each worker's sample count, min and max so that the
// merged min/max follow combine_stats (a worker without samples since the last reset makes the
// merged min restart from the next worker's).
//
// Left out: pipe mode (-p), RPS mode (-R, -A), autobench (-a), jitter of the spin (-j), the
// matrix multiplication work (-F, -n; the do_work spin is the only work), -C (accepted by the
// CLI and ignored, as that version ignores it: a self-assignment bug keeps the message thread's
// spin at 30000 µs), the ops/sec figures that only pipe and RPS modes print. schbench's runtime
// 0 (run forever) is refused. A sleeptime of 1..3 µs makes the real program divide by zero
// (rand() % (sleeptime / 4)); here the jitter is then 0.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/time.h"
#include "kernel/kernel.h"
#include "metrics/latency_histogram.h"

namespace schedtwin::workload {

// Limits (InputError beyond them): tasks (M * T workers + M + 1) and the run length, so that a
// run fits in memory and in a working day.
inline constexpr std::int64_t kSchbenchMaxTasks = 100'000;
inline constexpr int kSchbenchMaxRuntimeS = 86'400;
inline constexpr std::int64_t kSchbenchMaxTimeUs = 100'000'000;  // -s, -c: 100 s

// schbench's plist and the row that gets the star (PLIST_P99).
inline constexpr std::array<double, 7> kSchbenchPercentiles = {50.0, 75.0, 90.0, 95.0,
                                                               99.0, 99.5, 99.9};
inline constexpr int kSchbenchP99Row = 4;

struct SchbenchParams {
  int message_threads = 2;                  // -m
  int worker_threads = 16;                  // -t, per message thread
  int runtime_s = 30;                       // -r, seconds, >= 1
  std::int64_t sleeptime_us = 30000;        // -s: the message thread's usleep (plus jitter)
  std::int64_t cputime_us = 30000;          // -c: each worker's spin per request
  std::int64_t message_cputime_us = 30000;  // the message thread's spin per cycle (-C ignored)
  int warmuptime_s = 5;                     // -w; 0: no warmup reset
  int intervaltime_s = 10;                  // -i: periodic tables
  int zerotime_s = 0;                       // -z: zero the statistics every N s; 0: never
  std::string comm = "schbench";
  std::uint64_t seed = 1;  // the run's --seed: the message threads' rand_r streams
  // CPU pinning, not part of schbench: -1 or missing entries leave a thread free. For tests
  // and hand-built scenarios. message_cpu[i] pins message thread i, worker_cpu[i * T + j] its
  // worker j.
  int main_cpu = -1;
  std::vector<int> message_cpu;
  std::vector<int> worker_cpu;
};

// Throws InputError naming the field if `p` cannot be simulated.
void validate(const SchbenchParams& p);

// combine_stats()' min over the workers, in order, into a zeroed struct stats: each worker's
// min (0: no samples since the last reset) replaces the running one if that is 0 (unset) or
// larger, so a worker without samples restarts the minimum from the next worker's.
std::uint64_t combine_min(const std::vector<std::uint64_t>& worker_min);

// One merged table as show_latencies() prints it.
struct SchbenchTable {
  Time at = 0;                  // simulated time of the main thread's clock read
  std::uint64_t runtime_s = 0;  // "runtime N (s)": elapsed whole seconds, or -r for the final
  std::uint64_t samples = 0;    // "(N total samples)"
  std::vector<metrics::Percentile> rows;  // kSchbenchPercentiles, schbench's calc_percentiles
  std::uint64_t min_us = 0, max_us = 0;   // combine_stats' min and max
};

// What schbench writes, in order: "warmup done, zeroing stats" or a table.
struct SchbenchOutputItem {
  bool warmup_done = false;  // true: the warmup line (at `table.at`); false: `table`
  SchbenchTable table;
};

struct SchbenchResult {
  Time start = 0;       // main's gettimeofday(&start), after creating the message threads
  Time stop = 0;        // main sets `stopping`
  Time end = 0;         // main has joined every thread and prints the final table
  Time warmup_at = -1;  // when the warmup reset happened; -1: never
  std::vector<SchbenchOutputItem> output;  // interval tables and the warmup line
  SchbenchTable final_table;
  metrics::LatencyHistogram histogram;  // the final merged histogram (µs)
  std::uint64_t loops = 0;              // worker loops completed (all, warmup included)
  int workers = 0;
};

// One run of the workload on a kernel. The object owns the task programs and must outlive the
// simulation of its tasks.
class Schbench {
 public:
  Schbench(kernel::Kernel& k, const SchbenchParams& p);
  ~Schbench();
  Schbench(const Schbench&) = delete;
  Schbench& operator=(const Schbench&) = delete;

  // Creates the main thread (as if started on CPU 0, or main_cpu, at the kernel's current time).
  void start();
  bool finished() const;
  SchbenchResult result() const;

  struct State;

 private:
  std::unique_ptr<State> s_;
};

// start(), then runs the kernel until the main thread has printed its final table. Throws
// std::logic_error if the simulation stops making progress (a modelling bug).
SchbenchResult run_schbench(kernel::Kernel& k, const SchbenchParams& p);

}  // namespace schedtwin::workload
