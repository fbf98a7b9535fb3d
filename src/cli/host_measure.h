// Small real experiments that measure this host's scheduling costs, for `schedtwin calibrate`
// (issue 9). Each figure is the median of repeated measurements (batches) with its spread;
// calibrated_machine() turns them into the cost model of the captured host machine, each
// number citing how it was measured and derived. All times are nanoseconds.
//
// Experiments (threads pinned with sched_setaffinity, clock_gettime(CLOCK_MONOTONIC)):
//   syscalls     one thread writes K 100-byte messages into a pipe / AF_UNIX stream socket
//                nobody waits on, then reads them back: per-message write and read cost
//   cross-CPU    the same with the writer on CPU A and the reader on CPU B taking turns (K
//                writes, then K reads of them): what a message costs when it crosses CPUs
//   pinned       two threads pinned to CPU A ping-pong 100-byte messages over two pipes:
//                half a round trip = write + wakeup + context switch + read
//   yield        sched_yield() alone on CPU A, and in turn with a thread / a process pinned
//                there: the difference is one context switch
//   busy wakeup  the reader is blocked on CPU B, which is kept busy by a SCHED_IDLE spinner:
//                time from the writer's clock read before write() on CPU A to the reader's
//                after its read() returns (the wakee preempts the spinner: IPI + switch), and
//                the duration of the waker's write() (the try_to_wake_up cost on the waker)
//   idle wakeup  the same with CPU B left idle for a gap before each message, one gap per
//                non-polling cpuidle state (about twice its target residency); the cpuidle
//                usage counters of CPU B say which state the gaps were spent in
//   timer        a thread on B sleeps to an absolute time (slack 1 ns), B busy or idle
//   cache line   two threads on A and B bounce one cache line (an atomic counter)
//   cache cold   a thread touches a 256 KiB buffer on A (warm), moves to B, touches it again
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "machine/machine.h"

namespace schedtwin::cli::host {

// Median and spread of repeated measurements of one figure (ns).
struct Figure {
  double median = 0, p25 = 0, p75 = 0, min = 0, max = 0;
  int n = 0;           // measurements the figure summarises (0: not measured)
  std::string method;  // how one measurement was taken
};
// Nearest-rank quartiles of `samples` (see metrics::percentile_nearest_rank).
Figure make_figure(std::vector<double> samples, std::string method);

// Wakeups of a reader on an idle CPU after `gap_ns` of idleness.
struct IdleProbe {
  std::int64_t gap_ns = 0;
  Figure latency;
  std::vector<std::string> state_names;  // the target CPU's cpuidle states, sysfs order
  std::vector<std::uint64_t> entries;    // entries into each during the probe (usage deltas)
  int dominant = -1;                     // index of the state entered most, -1 if none
  double dominant_share = 0;             // its share of all entries
};

struct CalibrateParams {
  int batches = 31;        // measurements per syscall / ping-pong / cache figure
  int per_batch = 400;     // operations per measurement
  int wake_samples = 600;  // wakeups per latency figure
};
// Fewer and smaller measurements: for tests and `validate --tiny`.
CalibrateParams quick_calibrate_params();

struct HostCalibration {
  std::string host;    // hostname
  std::string kernel;  // uname release
  std::string date;    // UTC date of the measurement, YYYY-MM-DD
  int cpu_a = 0;       // the waker's CPU (kernel numbering)
  int cpu_b = -1;      // the wakee's CPU, another core when there is one; -1: single CPU
  Figure pipe_write, pipe_read, socket_write, socket_read;          // per 100-byte message, one CPU
  Figure pipe_write_x, pipe_read_x, socket_write_x, socket_read_x;  // the same, CPU A -> B
  Figure pinned_half;         // pinned ping-pong, half a round trip
  Figure pinned_wake_write;   // the write() in it that wakes the partner on the same CPU
  Figure yield_alone;         // sched_yield() with nothing else runnable on the CPU
  Figure yield_pair;          // sched_yield() that switches to a partner thread on the CPU
  Figure yield_process_pair;  // sched_yield() that switches to a partner process on the CPU
  Figure busy_latency;        // cross-CPU wakeup latency, target busy (SCHED_IDLE spinner)
  Figure busy_wake_write;     // the waker's write() in that experiment
  std::vector<IdleProbe> idle;
  Figure cache_line;  // one-way cache-line transfer A <-> B
  // Timer wakeups (clock_nanosleep to an absolute time, slack 1 ns) on CPU B kept busy by a
  // SCHED_IDLE spinner (timer_irq is derived from it), and idle (reported only).
  Figure timer_busy, timer_idle;
  Figure cache_cold;                          // extra time of the 256 KiB pass after moving to B
  std::optional<machine::KernelBuild> build;  // from the kernel configuration, if readable
  std::string build_note;                     // why build is missing
};

// This host's kernel build (HZ, preemption model, NO_HZ idle) from /proc/config.gz (through
// gzip) or /boot/config-<release>, and /proc/cmdline (nohz=off, preempt=); nullopt when no
// configuration is readable.
std::optional<machine::KernelBuild> host_kernel_build(const std::string& release);
// This host's kernel release, as `uname -r` prints it.
std::string kernel_release();

// Runs the experiments (under a second with the default parameters on an idle host). Throws
// InputError when a thread cannot be pinned or a pipe / socket cannot be made.
HostCalibration measure_host(const CalibrateParams& p);

// `captured` (capture_sysfs() of this host) with the cost model, the idle states' real exit
// costs and the kernel build replaced by what `c` measured; each figure's source cites the
// measurement and its derivation:
//   pipe/socket write/read = the cross-CPU medians (the same-CPU medians on a single CPU)
//   context_switch = yield_process_pair - yield_alone (tasks of different mm, as in the model)
//   wakeup         = pinned_half - same-CPU pipe_write and pipe_read - (yield_pair - yield_alone)
//   ipi            = busy_latency - the pipe_write, context_switch and pipe_read written
//   timer_irq      = timer_busy - the wakeup and context_switch written
//   idle_probe     = cache_line;  cache_cold = cache_cold
//   real_exit_ns of a non-polling state = latency of the idle probe spent mostly (>= 60 % of
//                    the entries) in that state - busy_latency; states no probe reached get
//                    their kernel exit latency
// (negative results are clamped to 0). Figures that were not measured keep the values of
// `captured`, with a source saying why. Throws InputError if the result is not a valid machine.
machine::Machine calibrated_machine(const HostCalibration& c, machine::Machine captured);

// The measurements as a table (one line per figure: median, IQR, min-max, n, method) and the
// derived cost model; what `calibrate` prints.
std::string calibration_report(const HostCalibration& c, const machine::Machine& m);

}  // namespace schedtwin::cli::host
