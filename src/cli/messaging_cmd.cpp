// `schedtwin messaging [-g N] [-l L] [-p] [-t] [--format default|simple] [common]`
// `schedtwin hackbench [-p] [-s BYTES] [-l L] [-g G] [-f FDS] [-T|-P] [common]`
#include "cli/messaging_cmd.h"

#include <fmt/core.h>

#include <chrono>
#include <iostream>
#include <memory>

#include "cli/run_common.h"
#include "engine/error.h"
#include "kernel/kernel.h"

namespace schedtwin::cli {

namespace {

constexpr int kMaxGroups = 10000;
// The limits of workload::validate (messaging.cpp), checked here to name the options.
constexpr std::int64_t kMaxTasks = 100'000;
constexpr std::int64_t kMaxLoops = 4294967295LL;  // perf's OPT_UINTEGER
constexpr double kMaxMessages = 1e10;

const char* transport_name(workload::Transport t) {
  return t == workload::Transport::Pipe ? "pipe" : "unix-stream";
}

nlohmann::json stats_json(const workload::ChannelStats& s) {
  return {{"writes", s.writes},
          {"reads", s.reads},
          {"writer_blocks", s.writer_blocks},
          {"reader_blocks", s.reader_blocks},
          {"writer_wakeups", s.writer_wakeups},
          {"reader_wakeups", s.reader_wakeups},
          {"max_queued", s.max_queued}};
}

// Cross-option limits (single options are range-checked by CLI11): a usage error, exit 2.
// fds_opt is null where the fds are fixed (perf bench sched messaging: 20).
void check_size(const workload::MessagingParams& p, const char* groups_opt, const char* fds_opt,
                const char* loops_opt) {
  const std::int64_t tasks = 2 * static_cast<std::int64_t>(p.groups) * p.fds;
  if (tasks > kMaxTasks)
    throw UsageError(
        fds_opt ? fmt::format("{} {} x {} {}: {} tasks (2 x groups x fds) exceed the limit of {}",
                              groups_opt, p.groups, fds_opt, p.fds, tasks, kMaxTasks)
                : fmt::format("{} {}: {} tasks (2 x groups x {} fds) exceed the limit of {}",
                              groups_opt, p.groups, tasks, p.fds, kMaxTasks));
  const double msgs = static_cast<double>(p.groups) * p.fds * p.fds * static_cast<double>(p.loops);
  if (msgs > kMaxMessages)
    throw UsageError(
        fmt::format("{}: {} x {} x {} x {} = {:.4g} messages (groups x fds x fds x loops) exceed "
                    "the limit of {:.0e}",
                    loops_opt, p.groups, p.fds, p.fds, p.loops, msgs, kMaxMessages));
}

void emit(const CommonOptions& common, const MessagingOutcome& out) {
  emit_report(out.text, out.json, common.json_out);
}

}  // namespace

std::string seconds_ms_truncated(Time ns) {
  return fmt::format("{}.{:03}", ns / kNsPerSec, (ns % kNsPerSec) / kNsPerMs);
}

std::string perf_messaging_header(int groups, int fds, bool threads) {
  const char* what = threads ? "threads" : "processes";
  // builtin-bench.c prints the first line; sched-messaging.c the rest.
  return fmt::format(
      "# Running 'sched/messaging' benchmark:\n"
      "# {} sender and receiver {} per group\n"
      "# {} groups == {} {} run\n\n",
      fds, what, groups, static_cast<std::int64_t>(groups) * 2 * fds, what);
}

std::string perf_messaging_text(int groups, int fds, bool threads, Time total, bool simple) {
  if (simple) return seconds_ms_truncated(total) + "\n";
  // sched-messaging.c: " %14s: %lu.%03lu [sec]"
  return perf_messaging_header(groups, fds, threads) +
         fmt::format(" {:>14}: {} [sec]\n", "Total time", seconds_ms_truncated(total));
}

std::string hackbench_header(int groups, int fds, std::int64_t loops, int datasize, bool threads) {
  return fmt::format(
      "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)\n"
      "Each sender will pass {} messages of {} bytes\n",
      threads ? "threaded" : "process", groups, 2 * fds,
      static_cast<std::int64_t>(groups) * 2 * fds, loops, datasize);
}

std::string hackbench_text(int groups, int fds, std::int64_t loops, int datasize, bool threads,
                           Time total) {
  return hackbench_header(groups, fds, loops, datasize, threads) +
         fmt::format("Time: {}\n", seconds_ms_truncated(total));
}

MessagingOutcome run_messaging_command(const CommonOptions& o, const workload::MessagingParams& p,
                                       const std::string& command, bool simple_format) {
  Scenario s = make_scenario(o);
  kernel::Kernel k(s.machine, s.config);
  TraceOutputs traces = open_traces(o, k);
  const auto t0 = std::chrono::steady_clock::now();
  MessagingOutcome out;
  out.result = workload::run_messaging(k, p);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  traces.finish();
  const workload::MessagingResult& r = out.result;
  const Time total = r.total_time();
  out.text = command == "hackbench"
                 ? hackbench_text(p.groups, p.fds, p.loops, p.datasize, p.threads, total)
                 : perf_messaging_text(p.groups, p.fds, p.threads, total, simple_format);
  nlohmann::json& j = out.json;
  j = common_json(command, s, k, wall);
  j["sim_time_s"] = static_cast<double>(r.stop) / 1e9;  // when the parent reaped the last child
  j["total_time_s"] = static_cast<double>(total) / 1e9;
  j["total_time_ns"] = total;
  j["messages"] = r.messages;
  j["groups"] = p.groups;
  j["loops"] = p.loops;
  j["fds"] = p.fds;
  j["datasize"] = p.datasize;
  j["transport"] = transport_name(p.transport);
  j["mode"] = p.threads ? "thread" : "process";
  j["tasks"] = r.tasks;
  j["channel_capacity"] = r.channel_capacity;
  j["channels"] = stats_json(r.data);
  add_kernel_reports(o, k, out.text, j);
  return out;
}

void add_messaging_options(CLI::App& sub, MessagingArgs& a) {
  sub.add_option("-g,--group", a.p.groups,
                 "Number of groups (each of 20 senders and 20 receivers; at most 100000 tasks in "
                 "all, so 2500 groups)")
      ->capture_default_str()
      ->check(range(1, kMaxGroups));
  sub.add_option("-l,--nr_loops", a.p.loops, "Number of loops to run")
      ->capture_default_str()
      ->check(range(std::int64_t{1}, kMaxLoops));
  sub.add_flag("-p,--pipe", a.pipe, "Use pipe() instead of socketpair()");
  sub.add_flag("-t,--thread", a.threads, "Be multi thread instead of multi process");
  sub.add_option("--format", a.format,
                 "Output format: default, or simple (perf bench -f simple: the time alone)")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "simple"}));
  add_common_options(sub, a.common);
}

workload::MessagingParams messaging_params(const MessagingArgs& a) {
  workload::MessagingParams p = a.p;
  p.threads = a.threads;
  p.fds = 20;        // fixed in perf
  p.datasize = 100;  // DATASIZE
  p.transport = a.pipe ? workload::Transport::Pipe : workload::Transport::UnixStream;
  p.reap_in_order = false;  // wait() for any child; pthread_join in order in thread mode
  p.comm = "sched-messaging";
  check_size(p, "--group", nullptr, "--nr_loops");
  return p;
}

void add_hackbench_options(CLI::App& sub, MessagingArgs& a) {
  sub.add_flag("-p,--pipe", a.pipe, "Use pipe() instead of socketpair()");
  sub.add_option("-s,--datasize", a.p.datasize,
                 "Bytes per message (sockets: up to 3776, a linear skb; pipes: up to 4096). The "
                 "per-call costs of the machine are used whatever the size")
      ->capture_default_str()
      ->check(range(1, 4096));
  sub.add_option("-l,--loops", a.p.loops, "Messages each sender passes to each receiver")
      ->capture_default_str()
      ->check(range(std::int64_t{1}, std::int64_t{2147483647}));
  sub.add_option("-g,--groups", a.p.groups,
                 "Number of groups (2 x groups x fds tasks in all, at most 100000)")
      ->capture_default_str()
      ->check(range(1, kMaxGroups));
  sub.add_option("-f,--fds", a.p.fds,
                 "Senders and receivers per group (2 x groups x fds tasks in all, at most 100000)")
      ->capture_default_str()
      ->check(range(1, 100000));
  CLI::Option* t = sub.add_flag("-T,--threads", a.threads, "Use POSIX threads");
  CLI::Option* pr = sub.add_flag("-P,--process", a.process, "Use fork() (the default)");
  t->excludes(pr);
  add_common_options(sub, a.common);
}

workload::MessagingParams hackbench_params(const MessagingArgs& a) {
  workload::MessagingParams p = a.p;
  p.transport = a.pipe ? workload::Transport::Pipe : workload::Transport::UnixStream;
  p.threads = a.threads;
  p.reap_in_order = true;  // waitpid(child[i]) / pthread_join(child[i]) in creation order
  p.comm = "hackbench";
  if (p.transport == workload::Transport::UnixStream && p.datasize > 3776)
    throw UsageError(fmt::format(
        "--datasize {}: above 3776 bytes a socket write is a paged skb, which is not modelled "
        "(use -p for pipes, up to 4096)",
        p.datasize));
  check_size(p, "--groups", "--fds", "--loops");
  return p;
}

void register_messaging_commands(CLI::App& app) {
  // ---- perf bench sched messaging ----
  {
    auto o = std::make_shared<MessagingArgs>();
    CLI::App* sub = app.add_subcommand(
        "messaging",
        "perf bench sched messaging: groups of 20 senders each writing --nr_loops rounds of one\n"
        "100-byte message to each of the group's 20 receivers over AF_UNIX socket pairs (or "
        "pipes).\n"
        "Prints perf's lines, ending \"Total time: X.XXX [sec]\" (milliseconds truncated).");
    add_messaging_options(*sub, *o);
    sub->callback([o] {
      emit(o->common, run_messaging_command(o->common, messaging_params(*o), "messaging",
                                            o->format == "simple"));
    });
  }
  // ---- rt-tests hackbench ----
  {
    auto o = std::make_shared<MessagingArgs>();
    CLI::App* sub = app.add_subcommand(
        "hackbench",
        "rt-tests hackbench: groups of --fds senders each writing --loops rounds of one message\n"
        "to each of the group's --fds receivers over AF_UNIX socket pairs (or pipes).\n"
        "Prints hackbench's lines, ending \"Time: X.XXX\" (milliseconds truncated).");
    add_hackbench_options(*sub, *o);
    sub->callback([o] {
      emit(o->common, run_messaging_command(o->common, hackbench_params(*o), "hackbench"));
    });
  }
}

}  // namespace schedtwin::cli
