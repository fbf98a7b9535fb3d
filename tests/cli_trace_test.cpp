// End-to-end tests of --trace (Perfetto protobuf) and --ftrace (ftrace text): the files
// are decoded (the protobuf with Debian's protoc against proto/perfetto_trace_subset.proto)
// and checked against the run's own counters: every context switch of --json is in the
// trace, switches chain on each CPU, no task is current on two CPUs, both files carry the
// same switches, and tracing leaves the results byte-identical.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "cli_test_util.h"

namespace fs = std::filesystem;

namespace {

using Result = schedtwin::testutil::CliRun;
using schedtwin::testutil::slurp;

Result run(const std::string& args, const fs::path& dir) {
  return schedtwin::testutil::run_in(args, dir);
}
fs::path tmpdir(const std::string& name) { return schedtwin::testutil::fresh_dir("trace-" + name); }

const std::string kSource = SCHEDTWIN_SOURCE_DIR;
const std::string kSchedIdle = kSource + "/examples/rt-app/lkml/sched-idle.json";

// The --json document without wall_time_s (the only figure that may differ between runs).
std::string json_without_wall_time(const std::string& j) {
  return std::regex_replace(j, std::regex("\n *\"wall_time_s\": [^\n]*"), "");
}

std::uint64_t json_uint(const std::string& j, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(j, m, std::regex("\"" + key + "\": ([0-9]+)"))) {
    ADD_FAILURE() << "no " << key << " in " << j;
    return 0;
  }
  return std::stoull(m[1]);
}

// One sched event of either file; timestamps in µs (ftrace text's resolution).
struct Event {
  std::string name;  // sched_switch, sched_waking, ...
  int cpu = -1;
  std::uint64_t ts_us = 0;
  int common_pid = -1;
  std::string flags;  // irqs-off, need-resched, hardirq/softirq, preempt-depth: "d.h4"
  // sched_switch
  int prev_pid = -1, next_pid = -1;
  std::string prev_comm, next_comm, prev_state;
  // the others
  int pid = -1, target_cpu = -1, orig_cpu = -1, dest_cpu = -1;
  std::string comm;
  // cpu_idle
  std::int64_t idle_state = -2;  // 4294967295 on exit
  int cpu_id = -1;
};

// --ftrace: every line is a header comment or matches the kernel's layout for its event.
std::vector<Event> parse_ftrace(const std::string& text, int nr_cpus) {
  static const std::regex line(
      R"(^ *(.{1,16})-(\d+) +\[(\d{3})\] (\S{4}) +(\d+)\.(\d{6}): (\w+): (.*)$)");
  static const std::regex sw(
      R"(^prev_comm=(.+) prev_pid=(\d+) prev_prio=(\d+) prev_state=(R\+?|S|X|Z) ==> next_comm=(.+) next_pid=(\d+) next_prio=(\d+)$)");
  static const std::regex wake(R"(^comm=(.+) pid=(\d+) prio=(\d+) target_cpu=(\d{3})$)");
  static const std::regex mig(R"(^comm=(.+) pid=(\d+) prio=(\d+) orig_cpu=(\d+) dest_cpu=(\d+)$)");
  static const std::regex ex(R"(^comm=(.+) pid=(\d+) prio=(\d+)$)");
  static const std::regex idle(R"(^state=(\d+) cpu_id=(\d+)$)");
  std::vector<Event> events;
  std::istringstream in(text);
  std::string l;
  EXPECT_TRUE(std::getline(in, l) && l == "# tracer: nop") << l;
  std::uint64_t last_us = 0;
  while (std::getline(in, l)) {
    if (!l.empty() && l[0] == '#') continue;
    std::smatch m, f;
    if (!std::regex_match(l, m, line)) {
      ADD_FAILURE() << "not an ftrace line: " << l;
      continue;
    }
    Event e;
    e.common_pid = std::stoi(m[2]);
    e.cpu = std::stoi(m[3]);
    e.flags = m[4];
    e.ts_us = std::stoull(m[5]) * 1000000 + std::stoull(m[6]);
    e.name = m[7];
    EXPECT_LT(e.cpu, nr_cpus) << l;
    EXPECT_GE(e.ts_us, last_us) << "out of time order: " << l;
    last_us = e.ts_us;
    const std::string fields = m[8];
    if (e.name == "sched_switch" && std::regex_match(fields, f, sw)) {
      e.prev_comm = f[1];
      e.prev_pid = std::stoi(f[2]);
      e.prev_state = f[4];
      e.next_comm = f[5];
      e.next_pid = std::stoi(f[6]);
      EXPECT_EQ(e.common_pid, e.prev_pid) << l;
    } else if ((e.name == "sched_waking" || e.name == "sched_wakeup" ||
                e.name == "sched_wakeup_new") &&
               std::regex_match(fields, f, wake)) {
      e.comm = f[1];
      e.pid = std::stoi(f[2]);
      e.target_cpu = std::stoi(f[4]);
      EXPECT_LT(e.target_cpu, nr_cpus) << l;
    } else if (e.name == "sched_migrate_task" && std::regex_match(fields, f, mig)) {
      e.comm = f[1];
      e.pid = std::stoi(f[2]);
      e.orig_cpu = std::stoi(f[4]);
      e.dest_cpu = std::stoi(f[5]);
      EXPECT_NE(e.orig_cpu, e.dest_cpu) << l;
    } else if (e.name == "sched_process_exit" && std::regex_match(fields, f, ex)) {
      e.comm = f[1];
      e.pid = std::stoi(f[2]);
    } else if (e.name == "cpu_idle" && std::regex_match(fields, f, idle)) {
      e.idle_state = std::stoll(f[1]);
      e.cpu_id = std::stoi(f[2]);
      EXPECT_EQ(e.cpu_id, e.cpu) << l;
      EXPECT_EQ(e.common_pid, 0) << l;  // traced by the idle task
    } else {
      ADD_FAILURE() << "unexpected event fields: " << l;
      continue;
    }
    events.push_back(e);
  }
  return events;
}

// What protoc --decode printed, as events (ftrace bundles) and counter samples per track name.
struct Decoded {
  std::vector<Event> events;  // bundle order
  std::string release;
  std::map<std::uint64_t, std::string> track_name;
  std::map<std::string, std::vector<std::int64_t>> samples;  // by track name
  std::set<int> thread_tracks;                               // pids with a thread track
  std::map<int, int> ppid;                                   // process_tree: pid -> ppid
  std::map<int, int> tgid;                                   // process_tree: tid -> tgid
};

std::string unquote(const std::string& v) {
  return v.size() >= 2 && v[0] == '"' ? v.substr(1, v.size() - 2) : v;
}

Decoded parse_protoc_text(const std::string& text) {
  static const std::regex open(R"(^ *(\w+) \{$)"), close(R"(^ *\}$)"), field(R"(^ *(\w+): (.*)$)");
  Decoded d;
  std::vector<std::string> stack;
  int bundle_cpu = -1;
  int proc_pid = -1, thread_tid = -1;
  Event ev;
  std::uint64_t te_track = 0, td_uuid = 0;
  std::int64_t te_value = 0;
  std::string td_name;
  std::istringstream in(text);
  std::smatch m;
  for (std::string l; std::getline(in, l);) {
    if (std::regex_match(l, m, open)) {
      stack.push_back(m[1]);
      if (m[1] == "event") ev = Event{.cpu = bundle_cpu};
      if (m[1] == "track_descriptor") td_uuid = 0, td_name.clear();
      if (m[1] == "track_event") te_track = 0, te_value = 0;
      continue;
    }
    if (std::regex_match(l, close)) {
      if (stack.empty()) {
        ADD_FAILURE() << "unbalanced }";
        break;
      }
      const std::string done = stack.back();
      stack.pop_back();
      if (done == "event") d.events.push_back(ev);
      if (done == "track_descriptor" && !td_name.empty()) d.track_name[td_uuid] = td_name;
      if (done == "track_event" && te_track)
        d.samples[d.track_name.count(te_track) ? d.track_name[te_track] : "?"].push_back(te_value);
      continue;
    }
    if (!std::regex_match(l, m, field) || stack.empty()) {
      ADD_FAILURE() << "unexpected protoc output: " << l;
      continue;
    }
    const std::string key = m[1], val = m[2], top = stack.back();
    if (top == "utsname" && key == "release") d.release = unquote(val);
    if (top == "ftrace_events" && key == "cpu") bundle_cpu = std::stoi(val);
    if (top == "event" && key == "timestamp") ev.ts_us = (std::stoull(val) + 500) / 1000;
    if (top == "event" && key == "pid") ev.common_pid = std::stoi(val);
    if (stack.size() >= 2 && stack[stack.size() - 2] == "event") {
      ev.name = top;
      if (key == "prev_pid") ev.prev_pid = std::stoi(val);
      if (key == "next_pid") ev.next_pid = std::stoi(val);
      if (key == "prev_comm") ev.prev_comm = unquote(val);
      if (key == "next_comm") ev.next_comm = unquote(val);
      if (key == "prev_state")
        ev.prev_state = val == "0"     ? "R"
                        : val == "256" ? "R+"
                        : val == "1"   ? "S"
                        : val == "16"  ? "X"
                        : val == "32"  ? "Z"
                                       : "?" + val;
      if (key == "pid") ev.pid = std::stoi(val);
      if (key == "comm") ev.comm = unquote(val);
      if (key == "target_cpu") ev.target_cpu = std::stoi(val);
      if (key == "orig_cpu") ev.orig_cpu = std::stoi(val);
      if (key == "dest_cpu") ev.dest_cpu = std::stoi(val);
      if (key == "state") ev.idle_state = std::stoll(val);
      if (key == "cpu_id") ev.cpu_id = std::stoi(val);
    }
    if (top == "track_descriptor" && key == "uuid") td_uuid = std::stoull(val);
    if (top == "track_descriptor" && key == "name") td_name = unquote(val);
    if (top == "thread" && key == "tid") d.thread_tracks.insert(std::stoi(val));
    if (top == "processes" && key == "pid") proc_pid = std::stoi(val);
    if (top == "processes" && key == "ppid") d.ppid[proc_pid] = std::stoi(val);
    if (top == "threads" && key == "tid") thread_tid = std::stoi(val);
    if (top == "threads" && key == "tgid") d.tgid[thread_tid] = std::stoi(val);
    if (top == "track_event" && key == "track_uuid") te_track = std::stoull(val);
    if (top == "track_event" && key == "counter_value") te_value = std::stoll(val);
  }
  EXPECT_TRUE(stack.empty());
  return d;
}

Decoded decode_trace(const fs::path& file, const fs::path& dir) {
  const fs::path out = dir / "decoded.txt";
  const std::string cmd = std::string(SCHEDTWIN_PROTOC) + " --decode=perfetto.protos.Trace -I " +
                          kSource + "/proto " + kSource + "/proto/perfetto_trace_subset.proto <" +
                          file.string() + " >" + out.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return parse_protoc_text(slurp(out));
}

std::vector<Event> switches(const std::vector<Event>& v) {
  std::vector<Event> s;
  for (const Event& e : v)
    if (e.name == "sched_switch") s.push_back(e);
  return s;
}

// Per CPU the switches chain (prev of each = next of the one before; CPUs start idle) and,
// in the file's global order, no task is current on two CPUs at once.
void check_switch_consistency(const std::vector<Event>& sw, int nr_cpus, bool global_order) {
  std::vector<int> curr(static_cast<size_t>(nr_cpus), 0);
  std::map<int, int> running_on;  // pid -> CPU
  for (const Event& e : sw) {
    ASSERT_GE(e.cpu, 0);
    ASSERT_LT(e.cpu, nr_cpus);
    int& c = curr[static_cast<size_t>(e.cpu)];
    ASSERT_EQ(e.prev_pid, c) << "CPU " << e.cpu << " at " << e.ts_us << " us: switch from pid "
                             << e.prev_pid << " but pid " << c << " was running";
    ASSERT_NE(e.prev_pid, e.next_pid);
    if (e.prev_pid == 0) {
      EXPECT_EQ(e.prev_state, "R");
    }
    if (global_order) {
      if (e.prev_pid) running_on.erase(e.prev_pid);
      if (e.next_pid) {
        ASSERT_EQ(running_on.count(e.next_pid), 0u)
            << "pid " << e.next_pid << " switched in on CPU " << e.cpu << " at " << e.ts_us
            << " us while current on CPU " << running_on[e.next_pid];
        running_on[e.next_pid] = e.cpu;
      }
    }
    c = e.next_pid;
  }
}

bool stopper_pid(int pid) { return pid > 4194303 - 4096; }  // migration/<cpu>

// The switches the model counts as context_switches: those that put a task on a CPU. The
// stopper of an active balance is traced as the kernel shows it (task ==> migration/N ==>
// next) but not counted: neither the switch into it nor its return to the task it preempted.
std::size_t count_if_next_task(const std::vector<Event>& sw) {
  std::map<int, int> preempted_by_stopper;  // CPU -> pid the stopper took the CPU from
  std::size_t n = 0;
  for (const Event& e : sw) {
    if (stopper_pid(e.next_pid)) {
      preempted_by_stopper[e.cpu] = e.prev_pid;
      continue;
    }
    if (e.next_pid == 0) continue;
    if (stopper_pid(e.prev_pid) && preempted_by_stopper[e.cpu] == e.next_pid) continue;
    ++n;
  }
  return n;
}

// Active balances run the stopper as the kernel does: sched_waking of migration/N from the
// CPU executing the balance (never one inside an idle state: a NOHZ idle balance runs on the
// idle load balancer), sched_wakeup there too if it shares N's LLC, else from N's IPI
// (hardirq); then on N the running task leaves "R" for migration/N (preempted on its way
// back to user space, __schedule(false)), the stopper migrates a
// task in its own context and leaves "S". Returns how many times a stopper ran.
template <class ShareLlc>
std::size_t check_stopper_runs(const std::vector<Event>& text, int nr_cpus, ShareLlc share_llc) {
  std::size_t runs = 0;
  std::vector<int> in_stopper(static_cast<std::size_t>(nr_cpus), 0);
  std::vector<int> idle_state(static_cast<std::size_t>(nr_cpus), -1);
  std::map<int, int> waker;  // stopper's CPU -> CPU that woke it, until its sched_wakeup
  for (const Event& e : text) {
    int& in = in_stopper[static_cast<std::size_t>(e.cpu)];
    if (e.name == "cpu_idle") {
      idle_state[static_cast<std::size_t>(e.cpu)] =
          e.idle_state == 4294967295 ? -1 : static_cast<int>(e.idle_state);
    } else if (e.name == "sched_waking" && stopper_pid(e.pid)) {
      EXPECT_EQ(idle_state[static_cast<std::size_t>(e.cpu)], -1)
          << "migration/" << e.target_cpu << " woken at " << e.ts_us << " us by cpu " << e.cpu
          << ", which is in an idle state";
      EXPECT_EQ(e.comm, "migration/" + std::to_string(e.target_cpu));
      waker[e.target_cpu] = e.cpu;
    } else if (e.name == "sched_wakeup" && stopper_pid(e.pid)) {
      EXPECT_EQ(waker.count(e.target_cpu), 1u) << "sched_wakeup without sched_waking";
      if (waker.count(e.target_cpu) == 0) continue;
      const int from = waker[e.target_cpu];
      waker.erase(e.target_cpu);
      if (share_llc(from, e.target_cpu)) {
        EXPECT_EQ(e.cpu, from) << e.ts_us;
        EXPECT_EQ(e.flags.substr(0, 4), "d..4") << e.ts_us;
      } else {
        EXPECT_EQ(e.cpu, e.target_cpu) << e.ts_us;
        EXPECT_EQ(e.flags.substr(0, 4), "d.h4") << e.ts_us;  // sched_ttwu_pending in the IPI
      }
    } else if (e.name == "sched_switch" && stopper_pid(e.next_pid)) {
      EXPECT_EQ(waker.count(e.cpu), 0u) << "migration/" << e.cpu << " runs before its wakeup";
      EXPECT_EQ(e.next_comm, "migration/" + std::to_string(e.cpu));
      EXPECT_EQ(e.prev_state, "R");
      EXPECT_EQ(e.next_pid, 4194303 - e.cpu);
      in = 1;
      ++runs;
    } else if (e.name == "sched_switch" && stopper_pid(e.prev_pid)) {
      EXPECT_EQ(in, 1);
      EXPECT_EQ(e.prev_state, "S");
      in = 0;
    } else if (in) {
      EXPECT_EQ(e.name, "sched_migrate_task");  // nothing else runs in the stopper here
      EXPECT_EQ(e.common_pid, 4194303 - e.cpu);
      EXPECT_EQ(e.orig_cpu, e.cpu);
    }
  }
  return runs;
}

// The switches of both files are the same, CPU by CPU.
void check_same_switches(const std::vector<Event>& a, const std::vector<Event>& b, int nr_cpus) {
  for (int cpu = 0; cpu < nr_cpus; ++cpu) {
    std::vector<const Event*> x, y;
    for (const Event& e : a)
      if (e.cpu == cpu) x.push_back(&e);
    for (const Event& e : b)
      if (e.cpu == cpu) y.push_back(&e);
    ASSERT_EQ(x.size(), y.size()) << "CPU " << cpu;
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x[i]->ts_us, y[i]->ts_us) << "CPU " << cpu << " switch " << i;
      ASSERT_EQ(x[i]->prev_pid, y[i]->prev_pid);
      ASSERT_EQ(x[i]->next_pid, y[i]->next_pid);
      ASSERT_EQ(x[i]->prev_comm, y[i]->prev_comm);
      ASSERT_EQ(x[i]->next_comm, y[i]->next_comm);
      ASSERT_EQ(x[i]->prev_state, y[i]->prev_state);
    }
  }
}

std::size_t count_named(const std::vector<Event>& v, const std::string& name) {
  return static_cast<std::size_t>(
      std::count_if(v.begin(), v.end(), [&](const Event& e) { return e.name == name; }));
}

}  // namespace

TEST(CliTrace, RtAppTracesMatchTheRunAndLeaveResultsUnchanged) {
  if (std::string(SCHEDTWIN_PROTOC).empty()) GTEST_SKIP() << "protoc not found at configure time";
  fs::path d = tmpdir("rtapp");
  const std::string args =
      "rt-app " + kSchedIdle + " --machine hikey --kernel v5.4 --logdir " + (d / "logs").string();
  Result plain = run(args + " --json " + (d / "a.json").string(), d);
  ASSERT_EQ(plain.status, 0) << plain.err;
  Result traced = run(args + " --json " + (d / "b.json").string() + " --trace " +
                          (d / "t.pftrace").string() + " --ftrace " + (d / "t.txt").string(),
                      d);
  ASSERT_EQ(traced.status, 0) << traced.err;
  EXPECT_EQ(traced.err, "");  // no truncation warning
  EXPECT_EQ(traced.out, plain.out);
  const std::string ja = slurp(d / "a.json"), jb = slurp(d / "b.json");
  EXPECT_EQ(json_without_wall_time(ja), json_without_wall_time(jb));
  const std::uint64_t context_switches = json_uint(jb, "context_switches");
  ASSERT_GT(context_switches, 1000u);
  const int nr_cpus = 8;  // hikey

  const std::vector<Event> text = parse_ftrace(slurp(d / "t.txt"), nr_cpus);
  const std::vector<Event> tsw = switches(text);
  EXPECT_EQ(count_if_next_task(tsw), context_switches);
  check_switch_consistency(tsw, nr_cpus, true);
  // hikey: an LLC per cluster of four.
  EXPECT_GT(check_stopper_runs(text, nr_cpus, [](int a, int b) { return a / 4 == b / 4; }), 0u);
  // 8 cfs_thread + 5 idle_thread, all forked at the start; none exits within the 5 s.
  EXPECT_EQ(count_named(text, "sched_wakeup_new"), 13u);
  EXPECT_EQ(count_named(text, "sched_process_exit"), 0u);
  // Every cfs_thread period ends in a timer wakeup: hundreds of sched_waking per thread.
  EXPECT_GT(count_named(text, "sched_waking"), 8u * 600u);
  // Each of them puts the task on a run queue: one sched_wakeup each (none was running).
  EXPECT_EQ(count_named(text, "sched_wakeup"), count_named(text, "sched_waking"));
  // The SCHED_IDLE hogs, busy loops in user space, are preempted by the waking cfs_threads
  // on the way back from the interrupt: "R" (__schedule(false)), never "R+", which marks a
  // preemption inside the kernel (a real trace of a user busy loop shows "R" too).
  std::size_t preempted = 0;
  for (const Event& e : tsw) {
    EXPECT_NE(e.prev_state, "R+") << e.prev_comm << " at " << e.ts_us;
    preempted += e.prev_pid != 0 && e.prev_state == "R";
  }
  EXPECT_GT(preempted, 100u);
  for (const Event& e : text) {
    if (e.name == "sched_wakeup_new" || e.name == "sched_waking" || e.name == "sched_wakeup") {
      if (stopper_pid(e.pid)) continue;  // an active balance's migration/N
      EXPECT_GE(e.pid, 1);
      EXPECT_LE(e.pid, 13);
    }
  }

  Decoded pb = decode_trace(d / "t.pftrace", d);
  EXPECT_EQ(pb.release, "5.4.0-schedtwin");
  const std::vector<Event> psw = switches(pb.events);
  EXPECT_EQ(psw.size(), tsw.size());
  EXPECT_EQ(count_if_next_task(psw), context_switches);
  check_switch_consistency(psw, nr_cpus, false);  // bundles are per CPU: chain only
  check_same_switches(tsw, psw, nr_cpus);
  EXPECT_EQ(count_named(pb.events, "sched_waking"), count_named(text, "sched_waking"));
  EXPECT_EQ(count_named(pb.events, "sched_wakeup"), count_named(text, "sched_wakeup"));
  EXPECT_EQ(count_named(pb.events, "sched_migrate_task"), count_named(text, "sched_migrate_task"));
  EXPECT_EQ(count_named(pb.events, "sched_wakeup_new"), 13u);
  // Each stopper is a kernel thread of the process tree.
  for (const Event& e : psw)
    if (stopper_pid(e.next_pid)) {
      EXPECT_EQ(pb.tgid.count(e.next_pid), 1u) << e.next_pid;
    }
  // PELT counters: a thread track per task, util_avg within [0, 1024] (capacity 1024).
  EXPECT_EQ(pb.thread_tracks.size(), 13u);
  ASSERT_FALSE(pb.samples["util_avg"].empty());
  for (std::int64_t v : pb.samples["util_avg"]) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 1024);
  }
  EXPECT_FALSE(pb.samples["runnable_avg"].empty());
  EXPECT_FALSE(pb.samples["load_avg"].empty());
  EXPECT_FALSE(pb.samples["cpu0 util_avg"].empty());
  EXPECT_FALSE(pb.samples["cpu7 load_avg"].empty());
  fs::remove_all(d);
}

// xeon-2s-88 has an LLC per socket (CPUs 0-21 and 44-65, 22-43 and 66-87): its active
// balances wake stoppers both within an LLC and across, from busy and idle balancers.
TEST(CliTrace, AnActiveBalanceWakesTheStopperFromTheBalancingCpu) {
  fs::path d = tmpdir("stopper");
  Result r = run("rt-app " + kSchedIdle + " --machine xeon-2s-88 --kernel v5.4 --logdir " +
                     (d / "logs").string() + " --ftrace " + (d / "t.txt").string(),
                 d);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<Event> text = parse_ftrace(slurp(d / "t.txt"), 88);
  const auto socket = [](int cpu) { return cpu % 44 / 22; };
  std::size_t across = 0;
  for (const Event& e : text)
    across += e.name == "sched_wakeup" && stopper_pid(e.pid) && e.cpu == e.target_cpu;
  EXPECT_GT(check_stopper_runs(text, 88, [&](int a, int b) { return socket(a) == socket(b); }), 4u);
  EXPECT_GT(across, 0u);  // some across sockets, through the IPI

  // A stopper's comm selects its events, as a task's does, and is no unknown comm.
  Result one = run("rt-app " + kSchedIdle + " --machine xeon-2s-88 --kernel v5.4 --logdir " +
                       (d / "logs2").string() + " --ftrace " + (d / "m.txt").string() +
                       " --trace-comm migration/22",
                   d);
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.err, "");
  const std::vector<Event> sel = parse_ftrace(slurp(d / "m.txt"), 88);
  EXPECT_GT(sel.size(), 0u);
  for (const Event& e : sel)
    EXPECT_TRUE(e.comm == "migration/22" || e.prev_comm == "migration/22" ||
                e.next_comm == "migration/22")
        << e.name << " at " << e.ts_us;
}

TEST(CliTrace, MessagingTracesForksExitsAndEverySwitch) {
  if (std::string(SCHEDTWIN_PROTOC).empty()) GTEST_SKIP() << "protoc not found at configure time";
  fs::path d = tmpdir("messaging");
  const std::string args = "messaging -g 2 -l 10 --machine hikey";
  Result plain = run(args + " --json " + (d / "a.json").string(), d);
  ASSERT_EQ(plain.status, 0) << plain.err;
  Result traced = run(args + " --json " + (d / "b.json").string() + " --trace " +
                          (d / "m.pftrace").string() + " --ftrace " + (d / "m.txt").string(),
                      d);
  ASSERT_EQ(traced.status, 0) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  const std::string jb = slurp(d / "b.json");
  EXPECT_EQ(json_without_wall_time(slurp(d / "a.json")), json_without_wall_time(jb));
  const std::uint64_t context_switches = json_uint(jb, "context_switches");

  const std::vector<Event> text = parse_ftrace(slurp(d / "m.txt"), 8);
  const std::vector<Event> tsw = switches(text);
  EXPECT_EQ(count_if_next_task(tsw), context_switches);
  check_switch_consistency(tsw, 8, true);
  // perf bench sched messaging -g 2: 2 x (20 senders + 20 receivers) and the parent; every
  // one is forked, exits once, and its last switch leaves in Z: each is a process, a zombie
  // until its parent's wait() (EXIT_ZOMBIE).
  const std::size_t tasks = 2 * 40 + 1;
  EXPECT_EQ(count_named(text, "sched_wakeup_new"), tasks);
  EXPECT_EQ(count_named(text, "sched_process_exit"), tasks);
  std::set<int> exited;
  for (const Event& e : text) {
    if (e.name == "sched_process_exit") {
      EXPECT_TRUE(exited.insert(e.pid).second) << "pid " << e.pid << " exits twice";
      EXPECT_EQ(e.common_pid, e.pid);
    }
    if (e.name == "sched_switch" && e.prev_state == "Z") {
      EXPECT_EQ(exited.count(e.prev_pid), 1u);
    }
    if (e.name == "sched_switch") {
      EXPECT_EQ(exited.count(e.next_pid), 0u) << "pid " << e.next_pid << " runs after exit";
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(std::count_if(
                tsw.begin(), tsw.end(), [](const Event& e) { return e.prev_state == "Z"; })),
            tasks);

  // power:cpu_idle: a CPU enters a state right after switching to the idle task, leaves it
  // (4294967295, PWR_EVENT_EXIT) before its next switch, and never enters twice. CPUs boot
  // idle, so a CPU's first event may be an exit.
  enum class Idle { Unknown, In, Out };
  std::map<int, Idle> idle;
  std::map<int, std::string> last_switch_to;
  std::size_t entries = 0, exits = 0;
  for (const Event& e : text) {
    if (e.name == "sched_switch") {
      EXPECT_NE(idle[e.cpu], Idle::In)
          << "switch inside a C-state on CPU " << e.cpu << " at " << e.ts_us;
      idle[e.cpu] = Idle::Out;
      last_switch_to[e.cpu] = e.next_comm;
    }
    if (e.name != "cpu_idle") continue;
    if (e.idle_state == 4294967295) {
      EXPECT_NE(idle[e.cpu], Idle::Out) << "exit outside a C-state on CPU " << e.cpu;
      idle[e.cpu] = Idle::Out;
      ++exits;
    } else {
      EXPECT_LT(e.idle_state, 3);  // hikey: WFI, cpu-sleep, cluster-sleep
      EXPECT_NE(idle[e.cpu], Idle::In) << "second entry on CPU " << e.cpu << " at " << e.ts_us;
      EXPECT_EQ(last_switch_to[e.cpu], "swapper/" + std::to_string(e.cpu));
      idle[e.cpu] = Idle::In;
      ++entries;
    }
  }
  EXPECT_GT(exits, 0u);
  EXPECT_GT(entries, 0u);

  const Decoded pb = decode_trace(d / "m.pftrace", d);
  // The same cpu_idle events in both files.
  std::vector<std::tuple<int, std::uint64_t, std::int64_t>> idle_text, idle_pb;
  for (const Event& e : text)
    if (e.name == "cpu_idle") idle_text.emplace_back(e.cpu, e.ts_us, e.idle_state);
  for (const Event& e : pb.events)
    if (e.name == "cpu_idle") {
      EXPECT_EQ(e.cpu_id, e.cpu);
      idle_pb.emplace_back(e.cpu, e.ts_us, e.idle_state);
    }
  std::sort(idle_text.begin(), idle_text.end());
  std::sort(idle_pb.begin(), idle_pb.end());
  EXPECT_EQ(idle_text, idle_pb);
  const std::vector<Event> psw = switches(pb.events);
  EXPECT_EQ(count_if_next_task(psw), context_switches);
  check_switch_consistency(psw, 8, false);
  check_same_switches(tsw, psw, 8);
  EXPECT_EQ(count_named(pb.events, "sched_process_exit"), tasks);
  EXPECT_EQ(count_named(pb.events, "sched_wakeup_new"), tasks);
  // The parent (pid 1) forks every sender and receiver; it has no parent task itself.
  ASSERT_EQ(pb.ppid.size(), tasks);
  EXPECT_EQ(pb.ppid.at(1), 0);
  for (int pid = 2; pid <= static_cast<int>(tasks); ++pid) EXPECT_EQ(pb.ppid.at(pid), 1) << pid;
  for (int pid = 1; pid <= static_cast<int>(tasks); ++pid) EXPECT_EQ(pb.tgid.at(pid), pid) << pid;
  fs::remove_all(d);
}

// A trace file named .json would be taken for Perfetto's JSON form: a note says what it is.
TEST(CliTrace, AJsonNamedTraceGetsANote) {
  fs::path d = tmpdir("json-named");
  Result r = run("messaging -g 1 -l 5 --trace " + (d / "t.json").string(), d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("note: --trace writes Perfetto's protobuf format, not JSON"),
            std::string::npos)
      << r.err;
  Result plain = run("messaging -g 1 -l 5 --trace " + (d / "t.pftrace").string(), d);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.err, "");
}

// perf bench sched messaging -t: the senders and receivers are pthreads of the parent, so
// the trace shows one process (pid 1) of 81 threads; the threads reap themselves at exit (X,
// EXIT_DEAD) while the parent, a process, leaves as a zombie (Z).
TEST(CliTrace, MessagingThreadsAreOneProcess) {
  if (std::string(SCHEDTWIN_PROTOC).empty()) GTEST_SKIP() << "protoc not found at configure time";
  fs::path d = tmpdir("messaging-t");
  Result r = run("messaging -t -g 2 -l 10 --machine hikey --trace " + (d / "m.pftrace").string() +
                     " --ftrace " + (d / "m.txt").string(),
                 d);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::size_t tasks = 2 * 40 + 1;
  const Decoded pb = decode_trace(d / "m.pftrace", d);
  EXPECT_EQ(pb.ppid.size(), 1u);
  EXPECT_EQ(pb.ppid.at(1), 0);
  ASSERT_EQ(pb.tgid.size(), tasks);
  for (const auto& [tid, tgid] : pb.tgid) EXPECT_EQ(tgid, 1) << tid;
  const std::vector<Event> tsw = switches(parse_ftrace(slurp(d / "m.txt"), 8));
  for (const Event& e : tsw) {
    if (e.prev_state == "Z") {
      EXPECT_EQ(e.prev_pid, 1);
    }
    if (e.prev_state == "X") {
      EXPECT_NE(e.prev_pid, 1);
    }
  }
  EXPECT_EQ(
      std::count_if(tsw.begin(), tsw.end(), [](const Event& e) { return e.prev_state == "X"; }),
      static_cast<std::ptrdiff_t>(tasks - 1));
  fs::remove_all(d);
}

TEST(CliTrace, BadTracePathsFailBeforeSimulating) {
  fs::path d = tmpdir("bad");
  Result r = run("rt-app " + kSchedIdle + " --logdir " + (d / "logs").string() + " --trace " +
                     (d / "missing" / "t.pftrace").string(),
                 d);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--trace " + (d / "missing" / "t.pftrace").string() + ": directory"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(d / "logs"));

  r = run("messaging -g 1 -l 1 --ftrace " + d.string(), d);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--ftrace " + d.string() + ": is a directory"), std::string::npos) << r.err;

  r = run("messaging -g 1 -l 1 --trace " + (d / "x").string() + " --ftrace " + (d / "x").string(),
          d);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("one file for two outputs"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / "x"));
  fs::remove_all(d);
}

// Found by a fresh-user trial: output went to PATH.tmp renamed onto PATH, which replaced a
// symbolic link by a file and, run as root, a device such as /dev/null by a regular file.
// A link is followed (it stays a link), a device is written in place: /dev/full's ENOSPC
// reaches the user as a failed write.
TEST(CliTrace, OutputsFollowLinksAndWriteDevicesInPlace) {
  fs::path d = tmpdir("links");
  fs::create_symlink("target.json", d / "link.json");
  fs::create_symlink("target.ftrace", d / "link.ftrace");
  const std::string link = (d / "link.json").string();
  Result r =
      run("messaging -g 1 -l 1 --json " + link + " --ftrace " + (d / "link.ftrace").string(), d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(d / "link.json"));
  EXPECT_TRUE(fs::is_symlink(d / "link.ftrace"));
  EXPECT_NE(slurp(d / "target.json").find("\"total_time_s\""), std::string::npos);
  EXPECT_NE(slurp(d / "target.ftrace").find("sched_switch"), std::string::npos);
  EXPECT_FALSE(fs::exists(d / "target.json.tmp"));

  // The link and its target are one file.
  r = run("messaging -g 1 -l 1 --json " + link + " --trace " + (d / "target.json").string(), d);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("one file for two outputs"), std::string::npos) << r.err;

  if (fs::is_character_file("/dev/full")) {
    r = run("messaging -g 1 -l 1 --json /dev/full", d);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--json /dev/full: write failed"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  }
  fs::remove_all(d);
}

// --trace-time and --trace-comm select what the three logs record, and leave the results
// alone: messaging -g 1 on hikey, the receivers' wakeups between 1 and 2 ms.
TEST(CliTrace, TimeWindowAndCommsSelectWhatIsRecorded) {
  fs::path d = tmpdir("window");
  const std::string args = "messaging -g 1 -l 20 --machine hikey";
  Result plain = run(args, d);
  ASSERT_EQ(plain.status, 0) << plain.err;
  Result r = run(args + " --trace-time 0.001,0.002 --trace-comm sched-messaging --ftrace " +
                     (d / "f.txt").string() + " --explain=" + (d / "e.txt").string(),
                 d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  const std::vector<Event> text = parse_ftrace(slurp(d / "f.txt"), 8);
  ASSERT_FALSE(text.empty());
  for (const Event& e : text) {
    EXPECT_GE(e.ts_us, 1000u) << e.name;
    EXPECT_TRUE(e.comm == "sched-messaging" || e.prev_comm == "sched-messaging" ||
                e.next_comm == "sched-messaging")
        << e.name;
    EXPECT_LT(e.ts_us, 2000u) << e.name;
  }
  std::istringstream ex(slurp(d / "e.txt"));
  int records = 0;
  for (std::string line; std::getline(ex, line); ++records) {
    const double t = std::stod(line.substr(1, line.find(']') - 1));
    EXPECT_GE(t, 0.001) << line;
    EXPECT_LT(t, 0.002) << line;
    EXPECT_NE(line.find(" sched-messaging["), std::string::npos) << line;  // no balance records
  }
  EXPECT_GT(records, 0);

  for (const char* bad : {"5", "2,1", "1,,2", "x,", "-1,2", "1,2s"}) {
    Result b = run(args + " --trace-time " + bad, d);
    EXPECT_EQ(b.status, 2) << bad;
    EXPECT_NE(b.err.find("--trace-time"), std::string::npos) << b.err;
    EXPECT_EQ(b.out, "") << bad;
  }
  Result lim = run(args + " --trace-limit 0", d);
  EXPECT_EQ(lim.status, 2);
  EXPECT_NE(lim.err.find("--trace-limit"), std::string::npos) << lim.err;

  // Without a log to select from, the options are usage errors; a selection that leaves the
  // logs empty is a warning naming what there was.
  for (const char* alone : {"--trace-time 1,2", "--trace-comm x", "--trace-limit 5"}) {
    Result a = run(args + " " + alone, d);
    EXPECT_EQ(a.status, 2) << alone;
    EXPECT_EQ(a.out, "") << alone;
    EXPECT_NE(a.err.find("give one of them"), std::string::npos) << a.err;
  }
  for (const char* alone : {"--explain-format jsonl", "--explain-limit 5"}) {
    Result a = run(args + " " + alone, d);
    EXPECT_EQ(a.status, 2) << alone;
    EXPECT_EQ(a.out, "") << alone;
    EXPECT_NE(a.err.find("give --explain too"), std::string::npos) << a.err;
  }
  const std::string f = " --ftrace " + (d / "g.txt").string();
  Result late = run(args + f + " --trace-time 50,", d);
  EXPECT_EQ(late.status, 0) << late.err;
  EXPECT_NE(late.err.find("warning: --trace-time: the run ended at"), std::string::npos)
      << late.err;
  Result nocomm = run(args + f + " --trace-comm sched-messagin", d);
  EXPECT_EQ(nocomm.status, 0) << nocomm.err;
  EXPECT_NE(nocomm.err.find("warning: --trace-comm sched-messagin: no task of the run has this "
                            "comm (they are sched-messaging)"),
            std::string::npos)
      << nocomm.err;
  fs::remove_all(d);
}

TEST(CliTrace, CompareRefusesTraceOptionsInItsArgs) {
  fs::path d = tmpdir("compare");
  for (const char* opt : {"--trace", "--ftrace"}) {
    Result r = run(std::string("compare --runs 1 --with v5.3 -- messaging -g 1 -l 1 ") + opt + " " +
                       (d / "t").string(),
                   d);
    EXPECT_EQ(r.status, 2) << opt;
    EXPECT_NE(r.err.find(std::string("compare: ") + opt + " in the messaging ARGS"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(d / "t"));
  }
  fs::remove_all(d);
}
