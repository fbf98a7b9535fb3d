#include "cli/host_exec.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "engine/error.h"

namespace schedtwin::cli::host {

namespace {

constexpr int kGuardedSignals[3] = {SIGINT, SIGTERM, SIGHUP};
// The one process-wide state: what a signal handler may write (sig_atomic_t), read back by
// the waits below.
volatile sig_atomic_t g_interrupted = 0;

void note_signal(int sig) { g_interrupted = sig; }

double monotonic_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool is_executable_file(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

// argv as the char* array execv wants; built before fork so that the child only makes
// async-signal-safe calls.
struct Argv {
  std::vector<std::string> strings;
  std::vector<char*> ptrs;
  explicit Argv(const std::vector<std::string>& a) : strings(a) {
    for (std::string& s : strings) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
};

std::string resolve(const std::vector<std::string>& argv) {
  if (argv.empty()) throw InputError("internal: empty command line");
  std::string path = find_in_path(argv[0]);
  if (path.empty()) throw InputError(fmt::format("{}: not found in PATH", argv[0]));
  return path;
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Kills the process group of `pid` and reaps `pid` (blocking).
int kill_and_reap(pid_t pid) {
  kill(-pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

}  // namespace

Interrupted::Interrupted(int sig)
    : std::runtime_error(fmt::format("interrupted by {}: host programs stopped, work directory "
                                     "removed",
                                     sig == SIGINT    ? "SIGINT"
                                     : sig == SIGTERM ? "SIGTERM"
                                                      : "SIGHUP")),
      sig_(sig) {}

InterruptGuard::InterruptGuard() {
  g_interrupted = 0;
  struct sigaction sa {};
  sa.sa_handler = note_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() and usleep() return at the signal
  for (int i = 0; i < 3; ++i) sigaction(kGuardedSignals[i], &sa, &old_[i]);
}

InterruptGuard::~InterruptGuard() {
  for (int i = 0; i < 3; ++i) sigaction(kGuardedSignals[i], &old_[i], nullptr);
  g_interrupted = 0;  // an Interrupted on its way out carries the signal
}

void throw_if_interrupted() {
  if (g_interrupted) throw Interrupted(g_interrupted);
}

std::string find_in_path(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return is_executable_file(program) ? program : "";
  const char* env = std::getenv("PATH");
  std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    // An empty PATH entry means the current directory.
    const std::string dir = end > start ? path.substr(start, end - start) : std::string(".");
    std::string candidate = dir + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

ExecResult run_program(const std::vector<std::string>& argv, double timeout_s,
                       const std::string& cwd) {
  throw_if_interrupted();
  const std::string path = resolve(argv);
  Argv args(argv);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw InputError(fmt::format("{}: pipe: {}", argv[0], std::strerror(errno)));
  const double t0 = monotonic_s();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw InputError(fmt::format("{}: fork: {}", argv[0], std::strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execv(path.c_str(), args.ptrs.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so that the group exists before any kill below
  close(fds[1]);
  ExecResult r;
  const double deadline = t0 + timeout_s;
  char buf[8192];
  for (;;) {
    const double left = deadline - monotonic_s();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ms = static_cast<int>(left * 1000) + 1;
    const int n = poll(&p, 1, ms);
    if (g_interrupted) {
      close(fds[0]);
      kill_and_reap(pid);
      throw Interrupted(g_interrupted);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // timeout: the loop checks the deadline
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: every writer (the program and its children) closed it
    if (r.output.size() < ExecResult::kMaxOutputBytes)
      r.output.append(buf, static_cast<std::size_t>(got));
  }
  close(fds[0]);
  // Wait (without reaping, so that its process group cannot be recycled) for the program to
  // exit, then kill whatever is left of its group and reap it. After the time limit, or when a
  // child kept the pipe open beyond the program's exit, the group is killed at once.
  if (!r.timed_out) {
    const double reap_deadline = monotonic_s() + 5;
    siginfo_t info{};
    for (;;) {
      info.si_pid = 0;
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid)
        break;
      if (monotonic_s() >= reap_deadline || g_interrupted) break;
      usleep(1000);
    }
  }
  const int st = kill_and_reap(pid);
  throw_if_interrupted();
  r.wall_s = monotonic_s() - t0;
  r.exit_status = WIFEXITED(st) && !r.timed_out ? WEXITSTATUS(st) : -1;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && r.output.empty())
    throw InputError(fmt::format("{}: could not be executed", command_text(argv)));
  return r;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv) {
  const std::string path = resolve(argv);
  Argv args(argv);
  pid_ = fork();
  if (pid_ < 0) throw InputError(fmt::format("{}: fork: {}", argv[0], std::strerror(errno)));
  if (pid_ == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execv(path.c_str(), args.ptrs.data());
    _exit(127);
  }
  setpgid(pid_, pid_);
}

BackgroundProcess::BackgroundProcess(BackgroundProcess&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0) kill_and_reap(pid_);
}

bool BackgroundProcess::running() {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == pid_) {
    kill_and_reap(pid_);
    pid_ = -1;
    return false;
  }
  return true;
}

TempDir::TempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (!mkdtemp(templ.data()))
    throw InputError(
        fmt::format("{}: cannot create a temporary directory: {}", templ, std::strerror(errno)));
  path_ = templ;
}

TempDir::~TempDir() {
  if (keep_ || path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace schedtwin::cli::host
