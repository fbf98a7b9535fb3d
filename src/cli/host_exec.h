// Running real programs on this host for `schedtwin validate` / `calibrate` (issue 9): find
// them in PATH, run them with their output captured and a time limit, and keep background
// busy loops alive for the length of a run. Linux only (fork/exec, process groups).
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace schedtwin::cli::host {

// The full path of `program` found in $PATH (an executable regular file), or "" when it is
// absent. A name containing '/' is checked as given.
std::string find_in_path(const std::string& program);

struct ExecResult {
  int exit_status = -1;    // the program's exit status; -1 if it was killed by a signal
  bool timed_out = false;  // killed after the time limit
  std::string output;      // stdout and stderr interleaved as written (at most kMaxOutputBytes)
  double wall_s = 0;       // CLOCK_MONOTONIC from fork to reap, seconds
  static constexpr std::size_t kMaxOutputBytes = 4 << 20;
};

// Runs argv[0] (looked up in PATH) with argv, in `cwd` when not empty, in a process group of
// its own with stdin from /dev/null and stdout+stderr captured. After timeout_s seconds the
// whole group is killed (SIGKILL) and timed_out is set; the group is also killed when the
// program exits so that nothing it forked outlives it. Throws InputError if it cannot start.
ExecResult run_program(const std::vector<std::string>& argv, double timeout_s,
                       const std::string& cwd = "");

// A program running in the background (its own process group, output discarded) for as long
// as the object lives: the destructor kills its group with SIGKILL and reaps it. Used for the
// SCHED_IDLE busy loops that run beside rt-app (`chrt --idle 0 sh -c 'while :; do :; done'`).
class BackgroundProcess {
 public:
  explicit BackgroundProcess(const std::vector<std::string>& argv);  // throws InputError
  ~BackgroundProcess();
  BackgroundProcess(BackgroundProcess&& o) noexcept;
  BackgroundProcess& operator=(BackgroundProcess&&) = delete;
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  pid_t pid() const { return pid_; }
  // True while the process has not exited (it is reaped here if it has).
  bool running();

 private:
  pid_t pid_ = -1;
};

// Creates a fresh directory under $TMPDIR (or /tmp) named <prefix>XXXXXX; removed with all its
// content by the destructor unless keep() was called.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

// SIGINT, SIGTERM or SIGHUP arrived while a command ran host programs: thrown by
// run_program (its wait is interrupted; the program's group is killed first) and by
// throw_if_interrupted, so that the destructors of BackgroundProcess and TempDir stop the
// busy loops and remove the work directory on the way out.
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int sig);
  int signal() const { return sig_; }

 private:
  int sig_;
};

// For the life of the guard those three signals only note their arrival (no SA_RESTART, so a
// blocking wait returns early); the previous dispositions come back with its destruction,
// which also forgets the signal.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction old_[3];
};

// Throws Interrupted if a guarded signal has arrived.
void throw_if_interrupted();

}  // namespace schedtwin::cli::host
