// rt-app, as scheduler-tools/rt-app (HEAD 55cb0c04) reads and runs a task set
// (workloads.md §4): the grammar, the thread/phase loops, events matched by key
// prefix in file order, timers with unique and shared references, and the
// per-thread log files with rt-app's 11 columns.
//
// Limits (a clear error beyond them): at most kMaxThreads threads, duration at most
// kMaxDurationS seconds, run/sleep/timer values at most kMaxEventUs µs, at most kMaxLogRows
// log rows in a run when logs are written, kMaxSummaryRows when not (rows are kept in memory
// until the logs are written or the summary is made). An iteration whose
// events neither run nor block (only signal, unlock, run 0, ...) costs kEmptyIterationNs of
// CPU, as rt-app's own loop does, so that such a thread cannot stop simulated time.
// Not modelled (refused with "not modelled yet"): SCHED_FIFO, SCHED_RR, SCHED_DEADLINE,
// mem, iorun, memrun, fork, sem_post/sem_wait, cpus of a phase that differ per phase
// are applied, nodes_membind and util_min/max are accepted and ignored.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/time.h"
#include "kernel/kernel.h"
#include "workload/json_relaxed.h"

namespace schedtwin::workload::rtapp {

inline constexpr int kMaxThreads = 100000;
inline constexpr std::int64_t kMaxDurationS = 3600;
inline constexpr std::int64_t kMaxEventUs = 1'000'000'000;
// Rows are kept in memory until the logs are written: about 10 to 40 bytes each with
// RowDetail::Full, 2 to 6 (at most 20) with RowDetail::SummaryOnly (no log is written).
inline constexpr std::int64_t kMaxLogRows = 4'000'000;
inline constexpr std::int64_t kMaxSummaryRows = 32'000'000;
inline constexpr Time kEmptyIterationNs = 1000;
// The simulated calibration: ns per busy loop of rt-app's waste_cpu_cycles at capacity
// 1024 (a fixed rate stated here; it only scales the `perf` column).
inline constexpr std::int64_t kSimulatedPLoadNs = 100;

enum class EventType {
  Run,
  Runtime,
  Sleep,
  Timer,
  Lock,
  Unlock,
  Wait,
  Signal,
  Broad,
  Sync,
  Barrier,
  Suspend,
  Resume,
  Yield
};

struct Event {
  EventType type;
  std::int64_t us = 0;  // run/runtime/sleep value, timer period; -1 run = forever
  int res = -1;         // resource index (mutex, cond, barrier, timer, suspend cond)
  int res2 = -1;        // wait/sync: the mutex
  bool unique_timer = false;
  bool absolute = false;
};

struct Phase {
  std::string name;
  int loop = 1;
  std::vector<Event> events;
  std::optional<std::vector<int>> cpus;
  std::optional<std::string> taskgroup;  // cgroup path, "" = root; sticks for later phases
  std::optional<int> nice;  // "priority": setpriority() as the phase starts; sticks likewise
};

struct TaskDesc {
  std::string name;
  int instance = 1;
  int loop = -1;  // thread loop; -1 forever
  std::int64_t delay_us = 0;
  kernel::Policy policy = kernel::Policy::Normal;
  int nice = 0;
  std::vector<int> cpus;
  std::string taskgroup;
  std::vector<Phase> phases;
  bool has_timer = false;
};

struct Config {
  std::string path;
  std::int64_t duration_s = -1;
  std::int64_t pload_ns = kSimulatedPLoadNs;
  std::string logdir = "./";
  std::string log_basename = "rt-app";
  bool logs = true;
  bool cumulative_slack = false;
  std::vector<TaskDesc> tasks;
  std::vector<std::string> mutexes, conds, barriers, timers;  // global resources by name
  std::vector<int> barrier_users;
  int nr_threads = 0;
  // Notes for the front end to print: keys rt-app acts on that the model accepts without
  // effect ("FILE:L:C: \"util_min\": ...", the first place of each key), and tasks of no
  // threads.
  std::vector<std::string> ignored;
};

// Throws InputError "FILE:LINE:COL: ..." for anything rt-app would reject or that is not modelled.
Config parse(const JNode& root, const std::string& path, int nr_cpus);
Config parse_file(const std::string& path, int nr_cpus);

// One row of a thread's log.
struct LogRow {
  int idx;
  std::uint64_t perf, run, period, start, end, rel_st;
  std::int64_t slack;
  std::uint64_t c_duration, c_period, wu_lat;
};

struct ThreadResult {
  std::string task;  // the JSON key
  int idx;
  int fork_cpu;
  std::vector<LogRow> rows;
};

// What the Runner keeps of each log row. Full: every column, for write_logs() and results().
// SummaryOnly: just the two columns the run's summary reads (row_figures()), a few bytes a row,
// for runs that write no log file.
enum class RowDetail { Full, SummaryOnly };

// The columns of a log row that the run's summary reads (µs, as in the log).
struct RowFigures {
  std::uint64_t wu_lat;
  std::int64_t slack;
};

// Runs the task set on a kernel: creates the threads at time 0 from CPU 0 and keeps
// their state; results() after Kernel::run_until.
class Runner {
 public:
  Runner(const Config& cfg, kernel::Kernel& k, RowDetail detail = RowDetail::Full);
  ~Runner();
  Time end_time() const;  // duration, or kTimeNever when the file has none
  // Full rows of every thread (std::logic_error with RowDetail::SummaryOnly).
  std::vector<ThreadResult> results() const;
  // Writes <dir>/<log_basename>-<task>-<idx>.log for every thread (std::logic_error with
  // RowDetail::SummaryOnly).
  void write_logs(const std::string& dir) const;
  std::string log_header() const;

  // Thread by thread without copying every row (idx 0 .. nr_threads() - 1, numbered across
  // tasks in file order):
  int nr_threads() const;
  bool all_exited() const;  // every thread has ended (its loops are done)
  // "" once thread idx has ended; else what it was last doing: "lock", "wait" (a condition),
  // "barrier" or "suspend" when it sleeps on one of those, "running" otherwise (running,
  // runnable, or in a timer, sleep or delay that will end).
  std::string thread_wait(int idx) const;
  const std::string& thread_task(int idx) const;  // the JSON key
  // One sentence per thread that locked a mutex it already held, in the order it happened.
  std::vector<std::string> self_deadlocks() const;
  int thread_fork_cpu(int idx) const;
  // The kernel's accounting of thread idx (sched_info and se.sum_exec_runtime).
  const kernel::TaskStats& thread_sched_stats(int idx) const;
  std::size_t nr_rows(int idx) const;
  // wu_lat and slack of thread idx's rows, in row order (with either RowDetail).
  std::vector<RowFigures> row_figures(int idx) const;
  // Frees thread idx's rows; it has none afterwards.
  void release_rows(int idx);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string format_row(const LogRow& r);

}  // namespace schedtwin::workload::rtapp
