#include "cli/host_measure.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "cli/host_exec.h"
#include "cli/host_parse.h"
#include "engine/error.h"
#include "machine/capture.h"
#include "machine/machine_file.h"
#include "metrics/summary.h"

namespace schedtwin::cli::host {

namespace {

constexpr int kMsgBytes = 100;                  // perf/hackbench DATASIZE
constexpr std::size_t kColdBytes = 256 * 1024;  // cache-cold working set (see header)
constexpr std::int64_t kBusyGapNs = 100'000;    // lets the reader block again between wakeups

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_ns(std::int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
  }
}

void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw InputError(
        fmt::format("calibrate: cannot pin a thread to CPU {}: {}", cpu, std::strerror(errno)));
}

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

struct Channel {
  Channel(int r, int w) : rd(r), wr(w) {}
  Fd rd, wr;
};

// A pipe (or an AF_UNIX stream socket pair) as read end / write end.
std::unique_ptr<Channel> make_channel(bool socket, bool nonblocking) {
  int fds[2];
  const int rc =
      socket ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) : pipe2(fds, O_CLOEXEC);
  if (rc != 0)
    throw InputError(fmt::format("calibrate: cannot create a {}: {}",
                                 socket ? "socket pair" : "pipe", std::strerror(errno)));
  // socketpair: fds[0] reads what fds[1] writes, as with a pipe's ends.
  auto c = std::make_unique<Channel>(fds[0], fds[1]);
  if (nonblocking) {
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
  }
  return c;
}

bool read_msg(int fd, char* buf) {
  int got = 0;
  while (got < kMsgBytes) {
    const ssize_t n = read(fd, buf + got, static_cast<std::size_t>(kMsgBytes - got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<int>(n);
  }
  return true;
}

bool write_msg(int fd, const char* buf) {
  ssize_t n;
  do n = write(fd, buf, kMsgBytes);
  while (n < 0 && errno == EINTR);
  return n == kMsgBytes;
}

// Runs the functions on their own threads and joins them; the first exception thrown in any
// of them is rethrown here.
void run_threads(const std::vector<std::function<void()>>& fns) {
  std::vector<std::exception_ptr> errors(fns.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < fns.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        fns[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

std::string cpu_dir(int cpu) { return fmt::format("/sys/devices/system/cpu/cpu{}", cpu); }

// ---- the experiments ----

void syscall_costs(bool socket, int cpu, const CalibrateParams& p, Figure& wf, Figure& rf) {
  std::vector<double> ws, rs;
  // A socket charges each message at its skb truesize against 208 KiB of sndbuf: 100 in
  // flight fit; a pipe holds 655 messages of 100 bytes in its 64 KiB.
  const int k = std::min(p.per_batch, socket ? 100 : 400);
  run_threads({[&] {
    pin_self(cpu);
    auto ch = make_channel(socket, true);
    char msg[kMsgBytes] = {};
    char buf[kMsgBytes];
    for (int b = -1; b < p.batches; ++b) {  // batch -1 warms up
      const std::int64_t t0 = now_ns();
      int n = 0;
      while (n < k && write(ch->wr.get(), msg, kMsgBytes) == kMsgBytes) ++n;
      const std::int64_t t1 = now_ns();
      for (int i = 0; i < n; ++i)
        if (read(ch->rd.get(), buf, kMsgBytes) != kMsgBytes) break;
      const std::int64_t t2 = now_ns();
      if (b < 0 || n == 0) continue;
      ws.push_back(static_cast<double>(t1 - t0) / n);
      rs.push_back(static_cast<double>(t2 - t1) / n);
    }
  }});
  const char* what = socket ? "AF_UNIX stream socket pair" : "pipe";
  wf = make_figure(ws, fmt::format("one thread pinned to CPU {} times {} non-blocking write()s "
                                   "of 100 bytes into a {} nobody waits on; per message",
                                   cpu, k, what));
  rf = make_figure(rs, fmt::format("the same thread then times the {} read()s of 100 bytes that "
                                   "empty the {} again; per message",
                                   k, what));
}

// The same calls with the two ends on different CPUs, taking turns: a thread pinned to cpu_a
// writes K messages while the reader waits, then a thread pinned to cpu_b reads them while the
// writer waits; each batch timed. This is how the modelled benchmarks use a channel (a
// receiver drains what senders on other CPUs wrote while it was not running): the messages'
// cache lines, and for a socket its skbs and the writer's send-buffer accounting, cross the
// CPUs, but the two ends do not contend for the channel's lock at the same moment.
void cross_cpu_costs(bool socket, int cpu_a, int cpu_b, const CalibrateParams& p, Figure& wf,
                     Figure& rf) {
  auto ch = make_channel(socket, true);
  const int k = std::min(p.per_batch, socket ? 100 : 400);
  std::atomic<int> turn{0};  // 0: the writer's, 1: the reader's, 2: done
  std::vector<double> ws, rs;
  auto wait_for = [&](int t) {
    while (turn.load(std::memory_order_acquire) != t) sched_yield();
  };
  run_threads({[&] {
                 pin_self(cpu_b);
                 char buf[kMsgBytes];
                 for (int b = -1; b < p.batches; ++b) {
                   wait_for(1);
                   const std::int64_t t0 = now_ns();
                   int n = 0;
                   while (n < k && read(ch->rd.get(), buf, kMsgBytes) == kMsgBytes) ++n;
                   const std::int64_t t1 = now_ns();
                   if (b >= 0 && n > 0) rs.push_back(static_cast<double>(t1 - t0) / n);
                   turn.store(b + 1 < p.batches ? 0 : 2, std::memory_order_release);
                 }
               },
               [&] {
                 pin_self(cpu_a);
                 char msg[kMsgBytes] = {};
                 for (int b = -1; b < p.batches; ++b) {
                   wait_for(0);
                   const std::int64_t t0 = now_ns();
                   int n = 0;
                   while (n < k && write(ch->wr.get(), msg, kMsgBytes) == kMsgBytes) ++n;
                   const std::int64_t t1 = now_ns();
                   if (b >= 0 && n > 0) ws.push_back(static_cast<double>(t1 - t0) / n);
                   turn.store(1, std::memory_order_release);
                 }
               }});
  const char* what = socket ? "AF_UNIX stream socket pair" : "pipe";
  wf = make_figure(ws, fmt::format("a thread pinned to CPU {} times {} non-blocking write()s of "
                                   "100 bytes into a {} whose reader, pinned to CPU {}, has just "
                                   "emptied it (the two take turns); per message",
                                   cpu_a, k, what, cpu_b));
  rf = make_figure(rs, fmt::format("in the same experiment, the reader on CPU {} times the {} "
                                   "read()s of what the writer on CPU {} has just written; per "
                                   "message",
                                   cpu_b, k, cpu_a));
}

Figure pinned_ping_pong(int cpu, const CalibrateParams& p, Figure& wake_write) {
  auto ab = make_channel(false, false), ba = make_channel(false, false);
  std::vector<double> halves, writes;
  run_threads({[&] {
                 pin_self(cpu);
                 char buf[kMsgBytes];
                 while (read_msg(ab->rd.get(), buf) && buf[0] == 0) write_msg(ba->wr.get(), buf);
               },
               [&] {
                 pin_self(cpu);
                 char msg[kMsgBytes] = {};
                 char buf[kMsgBytes];
                 const int m = p.per_batch;
                 for (int b = -1; b < p.batches; ++b) {
                   std::int64_t in_write = 0;
                   const std::int64_t t0 = now_ns();
                   for (int i = 0; i < m; ++i) {
                     const std::int64_t w0 = now_ns();
                     write_msg(ab->wr.get(), msg);
                     in_write += now_ns() - w0;
                     read_msg(ba->rd.get(), buf);
                   }
                   const std::int64_t t1 = now_ns();
                   if (b >= 0) {
                     halves.push_back(static_cast<double>(t1 - t0) / (2.0 * m));
                     writes.push_back(static_cast<double>(in_write) / m);
                   }
                 }
                 msg[0] = 1;  // stop
                 write_msg(ab->wr.get(), msg);
               }});
  wake_write = make_figure(writes, fmt::format("in the same experiment, the duration of the "
                                               "write() that wakes the partner on the same CPU"));
  return make_figure(halves, fmt::format("two threads pinned to CPU {} pass a 100-byte message "
                                         "back and forth over two pipes, {} round trips per "
                                         "measurement; half a round trip",
                                         cpu, p.per_batch));
}

// sched_yield() alone on the CPU (a system call that finds nobody to switch to), and two
// threads pinned to the CPU yielding to each other (a system call plus a context switch).
void yield_costs(int cpu, const CalibrateParams& p, Figure& alone, Figure& pair) {
  const int m = p.per_batch;
  std::vector<double> solo;
  run_threads({[&] {
    pin_self(cpu);
    for (int b = -1; b < p.batches; ++b) {
      const std::int64_t t0 = now_ns();
      for (int i = 0; i < m; ++i) sched_yield();
      const std::int64_t t1 = now_ns();
      if (b >= 0) solo.push_back(static_cast<double>(t1 - t0) / m);
    }
  }});
  alone = make_figure(solo, fmt::format("one thread pinned to CPU {} calls sched_yield() {} times "
                                        "per measurement with nothing else to run there; per call",
                                        cpu, m));
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::vector<double> per_switch;
  run_threads({[&] {
                 pin_self(cpu);
                 ready++;
                 while (!stop.load(std::memory_order_relaxed)) sched_yield();
               },
               [&] {
                 pin_self(cpu);
                 ready++;
                 while (ready.load() < 2) sched_yield();
                 for (int b = -1; b < p.batches; ++b) {
                   const std::int64_t t0 = now_ns();
                   for (int i = 0; i < m; ++i) sched_yield();
                   const std::int64_t t1 = now_ns();
                   // Each of this thread's yields runs the partner once: two switches.
                   if (b >= 0) per_switch.push_back(static_cast<double>(t1 - t0) / (2.0 * m));
                 }
                 stop = true;
               }});
  pair = make_figure(per_switch,
                     fmt::format("two threads pinned to CPU {} call sched_yield() in turn, {} "
                                 "calls of one thread per measurement; its time per call / 2 = "
                                 "one sched_yield() and one switch",
                                 cpu, m));
}

// The same between two processes (different mm: the switch also changes the address space),
// a forked child yielding on the CPU until it is killed.
Figure yield_process_pair(int cpu, const CalibrateParams& p) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0)
    throw InputError(fmt::format("calibrate: cannot create a pipe: {}", std::strerror(errno)));
  Fd rd(ready[0]), wr(ready[1]);
  const pid_t child = fork();
  if (child < 0) throw InputError(fmt::format("calibrate: fork: {}", std::strerror(errno)));
  if (child == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    const char ok = sched_setaffinity(0, sizeof set, &set) == 0 ? 1 : 0;
    if (write(wr.get(), &ok, 1) != 1 || !ok) _exit(1);
    for (;;) sched_yield();
  }
  std::vector<double> per_switch;
  char ok = 0;
  const bool started = read(rd.get(), &ok, 1) == 1 && ok;
  if (started)
    run_threads({[&] {
      pin_self(cpu);
      const int m = p.per_batch;
      for (int b = -1; b < p.batches; ++b) {
        const std::int64_t t0 = now_ns();
        for (int i = 0; i < m; ++i) sched_yield();
        const std::int64_t t1 = now_ns();
        if (b >= 0) per_switch.push_back(static_cast<double>(t1 - t0) / (2.0 * m));
      }
    }});
  kill(child, SIGKILL);
  int st = 0;
  while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  if (!started) throw InputError(fmt::format("calibrate: cannot pin a process to CPU {}", cpu));
  return make_figure(per_switch,
                     fmt::format("a thread and a forked process, both pinned to CPU {}, call "
                                 "sched_yield() in turn, {} calls per measurement; time per call "
                                 "/ 2 = one sched_yield() and one switch between processes",
                                 cpu, p.per_batch));
}

// A wakeup message: the writer's send time and a stop mark in the first 16 of 100 bytes.
struct WakeMsg {
  char bytes[kMsgBytes] = {};
  void set(std::int64_t t0, std::int64_t stop) {
    std::memcpy(bytes, &t0, sizeof t0);
    std::memcpy(bytes + sizeof t0, &stop, sizeof stop);
  }
  std::int64_t t0() const {
    std::int64_t v;
    std::memcpy(&v, bytes, sizeof v);
    return v;
  }
  bool stop() const {
    std::int64_t v;
    std::memcpy(&v, bytes + sizeof v, sizeof v);
    return v != 0;
  }
};

// Reader blocked on cpu_b, writer on cpu_a sending one message after every gap.
void wake_latency(int cpu_a, int cpu_b, std::int64_t gap_ns, int samples, bool busy_target,
                  std::vector<double>& latency, std::vector<double>& wake_write) {
  auto ch = make_channel(false, false);
  std::atomic<bool> stop_spinner{false};
  latency.clear();
  wake_write.clear();
  latency.reserve(static_cast<std::size_t>(samples) + 8);
  const int warmup = 5;
  std::vector<std::function<void()>> fns;
  fns.push_back([&] {
    pin_self(cpu_b);
    WakeMsg m{};
    int seen = 0;
    while (read_msg(ch->rd.get(), m.bytes) && !m.stop()) {
      const std::int64_t t1 = now_ns();
      if (seen++ >= warmup) latency.push_back(static_cast<double>(t1 - m.t0()));
    }
    stop_spinner = true;
  });
  if (busy_target)
    fns.push_back([&] {
      pin_self(cpu_b);
      sched_param sp{};
      sp.sched_priority = 0;
      if (sched_setscheduler(0, SCHED_IDLE, &sp) != 0)
        throw InputError(
            fmt::format("calibrate: cannot make a thread SCHED_IDLE: {}", std::strerror(errno)));
      while (!stop_spinner.load(std::memory_order_relaxed)) {
      }
    });
  fns.push_back([&] {
    pin_self(cpu_a);
    WakeMsg m{};
    for (int i = 0; i < samples + warmup; ++i) {
      sleep_ns(gap_ns);
      const std::int64_t t0 = now_ns();
      m.set(t0, 0);
      write_msg(ch->wr.get(), m.bytes);
      const std::int64_t t1 = now_ns();
      if (i >= warmup) wake_write.push_back(static_cast<double>(t1 - t0));
    }
    sleep_ns(gap_ns);
    m.set(0, 1);
    write_msg(ch->wr.get(), m.bytes);
  });
  run_threads(fns);
}

// A thread on `cpu` sleeps to an absolute CLOCK_MONOTONIC time `gap_ns` ahead with timer
// slack 1 ns and reads the clock when it runs again: the hrtimer interrupt's delivery, the
// wakeup and the switch, on a CPU kept busy by a SCHED_IDLE spinner or left idle.
Figure timer_latency(int cpu, std::int64_t gap_ns, int samples, bool busy) {
  std::atomic<bool> stop{false};
  std::vector<double> lat;
  std::vector<std::function<void()>> fns;
  fns.push_back([&] {
    pin_self(cpu);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    for (int i = -5; i < samples; ++i) {
      const std::int64_t target = now_ns() + gap_ns;
      timespec ts{static_cast<time_t>(target / 1'000'000'000),
                  static_cast<long>(target % 1'000'000'000)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
      }
      const std::int64_t woke = now_ns();
      if (i >= 0) lat.push_back(static_cast<double>(woke - target));
    }
    stop = true;
  });
  if (busy)
    fns.push_back([&] {
      pin_self(cpu);
      sched_param sp{};
      if (sched_setscheduler(0, SCHED_IDLE, &sp) != 0)
        throw InputError(
            fmt::format("calibrate: cannot make a thread SCHED_IDLE: {}", std::strerror(errno)));
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  run_threads(fns);
  return make_figure(lat, fmt::format("a thread pinned to CPU {}{} sleeps with clock_nanosleep("
                                      "TIMER_ABSTIME) to {} us ahead, timer slack 1 ns: clock "
                                      "read after waking minus the programmed time",
                                      cpu, busy ? ", kept busy by a SCHED_IDLE thread," : " (idle)",
                                      gap_ns / 1000));
}

struct IdleStateInfo {
  std::string name;
  std::int64_t residency_ns = 0;
  bool polling = false, disabled = false;
};

std::vector<IdleStateInfo> idle_states_of(int cpu) {
  std::vector<IdleStateInfo> out;
  for (int k = 0;; ++k) {
    const std::string d = fmt::format("{}/cpuidle/state{}", cpu_dir(cpu), k);
    if (!std::filesystem::exists(d)) break;
    IdleStateInfo s;
    s.name = read_text(d + "/name");
    s.residency_ns = std::atoll(read_text(d + "/residency").c_str()) * 1000;
    s.polling = s.name == "POLL";
    s.disabled = read_text(d + "/disable") == "1";
    out.push_back(s);
  }
  return out;
}

std::vector<std::uint64_t> idle_usage(int cpu, std::size_t n) {
  std::vector<std::uint64_t> u(n);
  for (std::size_t k = 0; k < n; ++k)
    u[k] = std::strtoull(
        read_text(fmt::format("{}/cpuidle/state{}/usage", cpu_dir(cpu), k)).c_str(), nullptr, 10);
  return u;
}

std::vector<IdleProbe> idle_probes(int cpu_a, int cpu_b, const CalibrateParams& p) {
  const std::vector<IdleStateInfo> states = idle_states_of(cpu_b);
  std::vector<std::int64_t> gaps;
  for (const IdleStateInfo& s : states) {
    if (s.polling || s.disabled) continue;
    // Long enough for the governor to pick the state (twice its target residency), at least
    // 200 us so that the reader has blocked, at most 10 ms to keep the run short.
    gaps.push_back(std::clamp<std::int64_t>(2 * s.residency_ns + 100'000, 200'000, 10'000'000));
  }
  if (states.empty()) gaps.push_back(1'000'000);
  std::sort(gaps.begin(), gaps.end());
  gaps.erase(std::unique(gaps.begin(), gaps.end()), gaps.end());
  std::vector<IdleProbe> out;
  for (std::int64_t gap : gaps) {
    IdleProbe probe;
    probe.gap_ns = gap;
    for (const IdleStateInfo& s : states) probe.state_names.push_back(s.name);
    const int samples = std::min(p.wake_samples, std::max(30, static_cast<int>(400'000'000 / gap)));
    const std::vector<std::uint64_t> before = idle_usage(cpu_b, states.size());
    std::vector<double> lat, ww;
    wake_latency(cpu_a, cpu_b, gap, samples, false, lat, ww);
    const std::vector<std::uint64_t> after = idle_usage(cpu_b, states.size());
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < states.size(); ++k) {
      probe.entries.push_back(after[k] - before[k]);
      total += after[k] - before[k];
      if (probe.dominant < 0 ||
          probe.entries[k] > probe.entries[static_cast<std::size_t>(probe.dominant)])
        probe.dominant = static_cast<int>(k);
    }
    if (total == 0) probe.dominant = -1;
    if (probe.dominant >= 0)
      probe.dominant_share =
          static_cast<double>(probe.entries[static_cast<std::size_t>(probe.dominant)]) /
          static_cast<double>(total);
    probe.latency = make_figure(
        lat, fmt::format("a reader blocked on CPU {} left idle {} us before each 100-byte pipe "
                         "message from CPU {}: from the writer's clock read before write() to "
                         "the reader's after read() returned",
                         cpu_b, gap / 1000, cpu_a));
    out.push_back(std::move(probe));
  }
  return out;
}

Figure cache_line_transfer(int cpu_a, int cpu_b, const CalibrateParams& p) {
  struct alignas(64) Ball {
    std::atomic<std::uint64_t> v{0};
  };
  Ball ball;
  std::atomic<bool> stop{false};
  std::vector<double> one_way;
  const int m = p.per_batch * 5;
  run_threads({[&] {
                 pin_self(cpu_b);
                 while (!stop.load(std::memory_order_relaxed)) {
                   const std::uint64_t v = ball.v.load(std::memory_order_acquire);
                   if (v & 1) ball.v.store(v + 1, std::memory_order_release);
                 }
               },
               [&] {
                 pin_self(cpu_a);
                 for (int b = -1; b < p.batches; ++b) {
                   // A batch is dropped if the partner is not running (a shared host): after 50 ms.
                   const std::int64_t deadline = now_ns() + 50'000'000;
                   bool ok = true;
                   std::uint64_t v;
                   long spins = 0;
                   while (((v = ball.v.load(std::memory_order_acquire)) & 1) && ok)
                     if (++spins % 1024 == 0 && now_ns() > deadline) ok = false;
                   const std::int64_t t0 = now_ns();
                   for (int i = 0; i < m && ok; ++i) {
                     ball.v.store(v + 1, std::memory_order_release);
                     while (ball.v.load(std::memory_order_acquire) != v + 2)
                       if (++spins % 1024 == 0 && now_ns() > deadline) {
                         ok = false;
                         break;
                       }
                     v += 2;
                   }
                   const std::int64_t t1 = now_ns();
                   if (ok && b >= 0) one_way.push_back(static_cast<double>(t1 - t0) / (2.0 * m));
                 }
                 stop = true;
               }});
  return make_figure(one_way,
                     fmt::format("threads pinned to CPUs {} and {} hand an atomic counter back "
                                 "and forth (spinning), {} round trips per measurement; half a "
                                 "round trip",
                                 cpu_a, cpu_b, m));
}

Figure cache_cold_cost(int cpu_a, int cpu_b, const CalibrateParams& p) {
  std::vector<double> extra;
  run_threads({[&] {
    std::vector<std::uint64_t> buf(kColdBytes / sizeof(std::uint64_t), 1);
    volatile std::uint64_t* data = buf.data();
    auto pass = [&] {
      const std::int64_t t0 = now_ns();
      for (std::size_t i = 0; i < buf.size(); i += 8) data[i] = data[i] + 1;  // one per line
      return now_ns() - t0;
    };
    int here = cpu_a, there = cpu_b;
    pin_self(here);
    const int rounds = std::max(5, p.batches / 2);
    for (int b = 0; b < rounds; ++b) {
      pass();
      pass();
      const std::int64_t warm = pass();
      pin_self(there);  // returns once this thread runs on `there`
      const std::int64_t cold = pass();
      extra.push_back(static_cast<double>(cold - warm));
      std::swap(here, there);
    }
  }});
  return make_figure(extra, fmt::format("a thread writes one word per cache line of a 256 KiB "
                                        "buffer on one CPU (warm pass timed), moves to the other "
                                        "of CPUs {} and {} and times the same pass; cold minus "
                                        "warm",
                                        cpu_a, cpu_b));
}

std::vector<int> allowed_online_cpus() {
  std::vector<int> online;
  try {
    online = machine::parse_cpu_list(read_text("/sys/devices/system/cpu/online"));
  } catch (const std::exception&) {
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> out;
  for (int c : online)
    if (c < CPU_SETSIZE && CPU_ISSET(c, &set)) out.push_back(c);
  if (out.empty()) out.push_back(sched_getcpu() >= 0 ? sched_getcpu() : 0);
  return out;
}

std::string utc_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string ns_text(double ns) { return fmt::format("{:.0f}", ns); }

std::string figure_text(const Figure& f) {
  return fmt::format("median {} ns (IQR {}-{}, min {}, max {}, n {})", ns_text(f.median),
                     ns_text(f.p25), ns_text(f.p75), ns_text(f.min), ns_text(f.max), f.n);
}

}  // namespace

Figure make_figure(std::vector<double> samples, std::string method) {
  Figure f;
  f.method = std::move(method);
  if (samples.empty()) return f;
  std::sort(samples.begin(), samples.end());
  f.n = static_cast<int>(samples.size());
  f.median = metrics::percentile_nearest_rank(samples, 50);
  f.p25 = metrics::percentile_nearest_rank(samples, 25);
  f.p75 = metrics::percentile_nearest_rank(samples, 75);
  f.min = samples.front();
  f.max = samples.back();
  return f;
}

CalibrateParams quick_calibrate_params() {
  return {.batches = 9, .per_batch = 100, .wake_samples = 60};
}

HostCalibration measure_host(const CalibrateParams& p) {
  HostCalibration c;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  c.host = host;
  c.kernel = kernel_release();
  c.date = utc_date();

  const std::vector<int> cpus = allowed_online_cpus();
  c.cpu_a = cpus.front();
  std::vector<int> siblings;
  try {
    siblings =
        machine::parse_cpu_list(read_text(cpu_dir(c.cpu_a) + "/topology/thread_siblings_list"));
  } catch (const std::exception&) {
  }
  for (int cpu : cpus)
    if (cpu != c.cpu_a && std::find(siblings.begin(), siblings.end(), cpu) == siblings.end()) {
      c.cpu_b = cpu;
      break;
    }
  if (c.cpu_b < 0 && cpus.size() > 1) c.cpu_b = cpus[1];

  // Pin once to each CPU first: the experiments' threads wait for each other, so a thread
  // that could not pin itself must not be found out half-way through one.
  run_threads({[&] { pin_self(c.cpu_a); }});
  if (c.cpu_b >= 0) run_threads({[&] { pin_self(c.cpu_b); }});

  syscall_costs(false, c.cpu_a, p, c.pipe_write, c.pipe_read);
  syscall_costs(true, c.cpu_a, p, c.socket_write, c.socket_read);
  c.pinned_half = pinned_ping_pong(c.cpu_a, p, c.pinned_wake_write);
  yield_costs(c.cpu_a, p, c.yield_alone, c.yield_pair);
  c.yield_process_pair = yield_process_pair(c.cpu_a, p);
  if (c.cpu_b >= 0) {
    std::vector<double> lat, ww;
    wake_latency(c.cpu_a, c.cpu_b, kBusyGapNs, p.wake_samples, true, lat, ww);
    c.busy_latency = make_figure(
        lat, fmt::format("a reader blocked on CPU {}, which a SCHED_IDLE thread keeps busy, "
                         "gets a 100-byte pipe message from CPU {} every {} us: from the "
                         "writer's clock read before write() to the reader's after read()",
                         c.cpu_b, c.cpu_a, kBusyGapNs / 1000));
    c.busy_wake_write = make_figure(
        ww, fmt::format("in the same experiment, the duration of the writer's write() on CPU {}, "
                        "which wakes the reader (try_to_wake_up and the reschedule IPI's send)",
                        c.cpu_a));
    cross_cpu_costs(false, c.cpu_a, c.cpu_b, p, c.pipe_write_x, c.pipe_read_x);
    cross_cpu_costs(true, c.cpu_a, c.cpu_b, p, c.socket_write_x, c.socket_read_x);
    c.idle = idle_probes(c.cpu_a, c.cpu_b, p);
    c.cache_line = cache_line_transfer(c.cpu_a, c.cpu_b, p);
    c.timer_busy = timer_latency(c.cpu_b, kBusyGapNs, p.wake_samples / 2, true);
    c.timer_idle = timer_latency(c.cpu_b, 2 * kBusyGapNs, p.wake_samples / 2, false);
    c.cache_cold = cache_cold_cost(c.cpu_a, c.cpu_b, p);
  }

  c.build = host_kernel_build(c.kernel);
  if (!c.build)
    c.build_note = fmt::format(
        "no kernel configuration readable (/proc/config.gz, /boot/config-{})", c.kernel);
  return c;
}

std::string kernel_release() {
  utsname u{};
  uname(&u);
  return u.release;
}

std::optional<machine::KernelBuild> host_kernel_build(const std::string& release) {
  // /proc/config.gz (CONFIG_IKCONFIG_PROC), else /boot/config-<release>.
  const std::string cmdline = read_text("/proc/cmdline");
  std::string config, source;
  if (std::filesystem::exists("/proc/config.gz") && !find_in_path("gzip").empty()) {
    ExecResult r = run_program({"gzip", "-dc", "/proc/config.gz"}, 10);
    if (r.exit_status == 0) {
      config = r.output;
      source = "/proc/config.gz";
    }
  }
  if (config.empty()) {
    source = "/boot/config-" + release;
    config = read_text(source);
  }
  if (config.empty()) return std::nullopt;
  return parse_kernel_config(config, cmdline, source);
}

machine::Machine calibrated_machine(const HostCalibration& c, machine::Machine m) {
  const std::string stamp = fmt::format(
      "measured by schedtwin calibrate on {} on host '{}' (Linux {})", c.date, c.host, c.kernel);
  m.description += fmt::format("; cost model {}", stamp.substr(std::string("measured by ").size()));
  auto ns = [](double v) { return static_cast<Time>(std::llround(std::max(0.0, v))); };
  auto cite = [&](const Figure& f, const std::string& derivation) {
    return fmt::format("{}: {}; method: {}{}", stamp, figure_text(f), f.method,
                       derivation.empty() ? "" : "; " + derivation);
  };
  machine::CostModel& k = m.costs;
  // System calls per message: the cross-CPU figures when there is a second CPU (in the
  // modelled benchmarks the two ends of a pipe or socket mostly run on different CPUs), else
  // the same-CPU ones; the source gives both.
  auto syscall = [&](machine::Cost& cost, const Figure& same, const Figure& cross) {
    if (cross.n) {
      cost = {ns(cross.median),
              cite(cross, fmt::format("on one CPU, with nobody waiting, the same call takes {}: "
                                      "{}",
                                      figure_text(same), same.method))};
    } else if (same.n) {
      cost = {ns(same.median), cite(same, "")};
    }
  };
  syscall(k.pipe_write, c.pipe_write, c.pipe_write_x);
  syscall(k.pipe_read, c.pipe_read, c.pipe_read_x);
  syscall(k.socket_write, c.socket_write, c.socket_write_x);
  syscall(k.socket_read, c.socket_read, c.socket_read_x);
  // The same-CPU figures take the calls out of the same-CPU ping-pong below.
  const double pw = c.pipe_write.median, pr = c.pipe_read.median;

  // context_switch (the model's: between tasks of different mm, as perf's and hackbench's
  // processes): a sched_yield() that switches to another process minus one that does not.
  // The switch between threads is used to take the local wakeup out of the thread ping-pong.
  double cs_threads = 0;
  if (c.yield_pair.n && c.yield_alone.n)
    cs_threads = std::max(0.0, c.yield_pair.median - c.yield_alone.median);
  if (c.yield_process_pair.n && c.yield_alone.n) {
    const double cs = std::max(0.0, c.yield_process_pair.median - c.yield_alone.median);
    k.context_switch = {
        ns(cs), cite(c.yield_process_pair,
                     fmt::format("figure = that median minus sched_yield() alone ({}); between "
                                 "two threads instead: {} ns ({})",
                                 figure_text(c.yield_alone), ns_text(cs_threads),
                                 figure_text(c.yield_pair)))};
  }
  const double cs = static_cast<double>(k.context_switch.ns);
  // wakeup: half a pinned ping-pong round trip is write + try_to_wake_up (local) + switch +
  // read; the waker's write() itself cannot be timed apart, since the wakee runs before that
  // write() returns to user space (preemption at the system call's exit).
  double wakeup = static_cast<double>(k.wakeup.ns);
  if (c.pinned_half.n && c.pipe_write.n && c.pipe_read.n && c.yield_pair.n) {
    wakeup = std::max(0.0, c.pinned_half.median - pw - pr - cs_threads);
    k.wakeup = {ns(wakeup),
                cite(c.pinned_half,
                     fmt::format("figure = that median minus pipe_write ({}), pipe_read ({}) and "
                                 "the switch between threads ({}) ns: a wakeup on the waker's "
                                 "own CPU",
                                 ns_text(pw), ns_text(pr), ns_text(cs_threads)))};
  }
  // ipi: the model's wakeup of a busy remote CPU takes pipe_write + ipi + context_switch +
  // pipe_read from the writer's clock read to the reader's; ipi is what remains of the
  // measured latency (it includes the waker's remote enqueue up to the IPI's send).
  if (c.busy_latency.n) {
    const double mpw = static_cast<double>(k.pipe_write.ns),
                 mpr = static_cast<double>(k.pipe_read.ns);
    const double ipi = std::max(0.0, c.busy_latency.median - mpw - cs - mpr);
    std::string sender;
    if (c.busy_wake_write.n)
      sender = fmt::format(
          "; not in the model: the waker's write() that wakes a remote CPU took {} ns, {} ns "
          "more than pipe_write + wakeup (the remote enqueue and the IPI's send, paid by the "
          "waker)",
          ns_text(c.busy_wake_write.median), ns_text(c.busy_wake_write.median - mpw - wakeup));
    k.ipi = {ns(ipi),
             cite(c.busy_latency,
                  fmt::format("figure = that median minus pipe_write ({}), context_switch ({}) "
                              "and pipe_read ({}) ns, the rest of the model's path{}",
                              ns_text(mpw), ns_text(cs), ns_text(mpr), sender))};
  }
  // timer_irq: a timer wakeup on a busy CPU (a SCHED_IDLE spinner, preempted at once) takes
  // timer_irq + wakeup + context_switch in the model, from expiry to the task running.
  if (c.timer_busy.n) {
    const double irq = std::max(0.0, c.timer_busy.median - wakeup - cs);
    k.timer_irq = {
        ns(irq),
        cite(c.timer_busy, fmt::format("figure = that median minus wakeup ({}) and "
                                       "context_switch ({}) ns; the same on an idle CPU: "
                                       "{} (its exit cost included)",
                                       ns_text(wakeup), ns_text(cs), figure_text(c.timer_idle)))};
  }
  if (c.cache_line.n) k.idle_probe = {ns(c.cache_line.median), cite(c.cache_line, "")};
  if (c.cache_cold.n)
    k.cache_cold = {
        ns(c.cache_cold.median),
        cite(c.cache_cold, std::string("the working set (256 KiB) is an assumption, that of the "
                                       "presets' derivation") +
                               (c.cache_cold.median < 0
                                    ? "; the median is negative, below this host's noise: 0 written"
                                    : ""))};
  if (c.cpu_b < 0) {
    const std::string why = fmt::format("{}: one CPU only, no cross-CPU experiment; kept: ", stamp);
    for (machine::Cost* x : {&k.ipi, &k.idle_probe, &k.cache_cold}) x->source = why + x->source;
  }

  // Idle states: the real exit cost of a state = wakeup latency after gaps spent in it minus
  // the latency to a busy CPU (the model adds real_exit_ns to the IPI for a non-polling state).
  for (machine::IdleState& s : m.idle_states) {
    if (s.polling) {
      s.real_exit_source = fmt::format(
          "{}: a polling state, nothing to exit and no IPI needed (by construction)", stamp);
      continue;
    }
    const IdleProbe* best = nullptr;
    for (const IdleProbe& p : c.idle) {
      if (p.dominant < 0 || p.state_names[static_cast<std::size_t>(p.dominant)] != s.name) continue;
      if (p.dominant_share < 0.6 || !p.latency.n) continue;
      if (!best || p.dominant_share > best->dominant_share) best = &p;
    }
    if (best && c.busy_latency.n) {
      s.real_exit_ns = ns(best->latency.median - c.busy_latency.median);
      s.real_exit_source = fmt::format(
          "{}: wakeup latency after {} us idle gaps {} minus the busy-CPU wakeup latency ({} "
          "ns); state {} took {:.0f} % of CPU {}'s idle entries during the probe (cpuidle usage "
          "counters); method: {}",
          stamp, best->gap_ns / 1000, figure_text(best->latency), ns_text(c.busy_latency.median),
          s.name, 100 * best->dominant_share, c.cpu_b, best->latency.method);
    } else {
      std::string tried;
      for (const IdleProbe& p : c.idle)
        tried += fmt::format(
            "{}{} us -> {}", tried.empty() ? "" : ", ", p.gap_ns / 1000,
            p.dominant < 0 ? "no entries" : p.state_names[static_cast<std::size_t>(p.dominant)]);
      s.real_exit_ns = s.exit_latency_ns;
      s.real_exit_source = fmt::format(
          "{}: not reached in most idle periods of any probe (gaps: {}); taken equal to the "
          "kernel's exit latency",
          stamp, tried.empty() ? "none" : tried);
    }
  }

  // No cpuidle states (a VM booted without a cpuidle driver): the idle loop's default_idle
  // halts the CPU, and waking it costs what the probe measured beyond a busy CPU. The kernel
  // sees no state (exit latency 0, residency 0); the model needs one to charge that cost.
  if (m.idle_states.empty() && c.busy_latency.n) {
    for (const IdleProbe& p : c.idle) {
      if (p.dominant >= 0 || !p.latency.n) continue;
      machine::IdleState halt;
      halt.name = "default_idle";
      halt.source = fmt::format(
          "{}: no cpuidle states in sysfs, so the idle loop runs default_idle (x86: HLT; "
          "arm64: WFI); the kernel knows no exit latency or residency for it",
          stamp);
      halt.real_exit_ns = ns(p.latency.median - c.busy_latency.median);
      halt.real_exit_source = fmt::format(
          "{}: wakeup latency after {} us idle gaps {} minus the busy-CPU wakeup latency ({} "
          "ns); method: {}",
          stamp, p.gap_ns / 1000, figure_text(p.latency), ns_text(c.busy_latency.median),
          p.latency.method);
      m.idle_states.push_back(std::move(halt));
      break;
    }
  }
  if (c.build) {
    m.build = *c.build;
  } else {
    m.build.source = fmt::format("{}: {}; kept: {}", stamp, c.build_note, m.build.source);
  }
  machine::validate_machine(m, "schedtwin calibrate");
  return m;
}

std::string calibration_report(const HostCalibration& c, const machine::Machine& m) {
  std::string s = fmt::format(
      "schedtwin calibrate: host '{}', Linux {}, {}; waker on CPU {}, wakee on CPU {}\n\n", c.host,
      c.kernel, c.date, c.cpu_a, c.cpu_b < 0 ? std::string("(none)") : std::to_string(c.cpu_b));
  s += fmt::format("{:<44} {:>9} {:>17} {:>19} {:>4}\n", "measurement (ns)", "median", "IQR",
                   "min-max", "n");
  auto row = [&](const std::string& name, const Figure& f) {
    if (!f.n) {
      s += fmt::format("{:<44} {:>9}\n", name, "-");
      return;
    }
    s += fmt::format("{:<44} {:>9} {:>17} {:>19} {:>4}\n", name, ns_text(f.median),
                     ns_text(f.p25) + "-" + ns_text(f.p75), ns_text(f.min) + "-" + ns_text(f.max),
                     f.n);
  };
  row("pipe write, 100 B, no waiter", c.pipe_write);
  row("pipe read, 100 B", c.pipe_read);
  row("socket write, 100 B, no waiter", c.socket_write);
  row("socket read, 100 B", c.socket_read);
  row("pipe write, 100 B, cross-CPU turns", c.pipe_write_x);
  row("pipe read, 100 B, cross-CPU turns", c.pipe_read_x);
  row("socket write, 100 B, cross-CPU turns", c.socket_write_x);
  row("socket read, 100 B, cross-CPU turns", c.socket_read_x);
  row("pinned pipe ping-pong, half round trip", c.pinned_half);
  row("waker's write() in that experiment", c.pinned_wake_write);
  row("sched_yield() alone on the CPU", c.yield_alone);
  row("sched_yield() between two pinned threads", c.yield_pair);
  row("sched_yield() between two pinned processes", c.yield_process_pair);
  row("cross-CPU wakeup latency, busy target", c.busy_latency);
  row("waker's write() in that experiment", c.busy_wake_write);
  for (const IdleProbe& p : c.idle) {
    const std::string st =
        p.dominant < 0
            ? "no idle entries"
            : fmt::format("{} {:.0f}%", p.state_names[static_cast<std::size_t>(p.dominant)],
                          100 * p.dominant_share);
    row(fmt::format("wakeup latency after {} us idle ({})", p.gap_ns / 1000, st), p.latency);
  }
  row("timer wakeup latency, busy CPU", c.timer_busy);
  row("timer wakeup latency, idle CPU (reported only)", c.timer_idle);
  row("cache-line transfer between the CPUs", c.cache_line);
  row("cache cold: 256 KiB pass after a move", c.cache_cold);
  s += "\ncost model written (ns):";
  const std::pair<const char*, Time> costs[] = {{"context_switch", m.costs.context_switch.ns},
                                                {"ipi", m.costs.ipi.ns},
                                                {"idle_probe", m.costs.idle_probe.ns},
                                                {"cache_cold", m.costs.cache_cold.ns},
                                                {"wakeup", m.costs.wakeup.ns},
                                                {"pipe_write", m.costs.pipe_write.ns},
                                                {"pipe_read", m.costs.pipe_read.ns},
                                                {"socket_write", m.costs.socket_write.ns},
                                                {"socket_read", m.costs.socket_read.ns},
                                                {"timer_irq", m.costs.timer_irq.ns}};
  int col = 0;
  for (const auto& [name, v] : costs) {
    s += fmt::format("{}{} {}", col++ % 5 == 0 ? "\n  " : ", ", name, v);
  }
  s += "\nidle states (real exit ns):";
  for (const machine::IdleState& st : m.idle_states)
    s += fmt::format(" {} {};", st.name, st.real_exit_ns);
  if (!s.empty() && s.back() == ';') s.pop_back();
  s += fmt::format("\nkernel build: HZ {}, preemption {}, NO_HZ_IDLE {} ({})\n", m.build.hz,
                   m.build.preempt == machine::Preemption::Full        ? "full"
                   : m.build.preempt == machine::Preemption::Voluntary ? "voluntary"
                                                                       : "none",
                   m.build.nohz_idle ? "on" : "off",
                   c.build ? "from the kernel configuration" : c.build_note);
  if (c.cpu_b < 0)
    s += "note: one CPU only (the affinity mask): ipi, idle_probe and cache_cold are the "
         "defaults, not measured\n";
  if (c.cache_cold.n && c.cache_cold.median < 0)
    s += fmt::format(
        "note: cache_cold's median ({} ns) is negative: the cost of a move is below this "
        "host's noise; 0 written\n",
        ns_text(c.cache_cold.median));
  return s;
}

}  // namespace schedtwin::cli::host
