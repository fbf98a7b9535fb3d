#include "workload/rtapp.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "engine/error.h"

namespace schedtwin::workload::rtapp {

namespace {

using kernel::Policy;
using kernel::Step;
using kernel::TaskId;

[[noreturn]] void fail(const Config& c, const JNode& n, const std::string& what) {
  throw InputError(fmt::format("{}:{}:{}: {}", c.path, n.line, n.col, what));
}

// Records, once per key, that a key rt-app acts on has no effect in the model, and why.
void note_ignored(Config& c, const JNode& n, const std::string& key) {
  const std::string quoted = fmt::format("\"{}\"", key);
  for (const std::string& s : c.ignored)
    if (s.find(quoted) != std::string::npos) return;
  const char* why =
      key == "nodes_membind" ? "memory placement is not modelled"
      : key == "gnuplot"     ? "no .plot files are written"
      : key == "priority"
          ? "rt-app sets a nice value for SCHED_OTHER threads only (_set_thread_cfs), so a "
            "SCHED_IDLE thread keeps nice 0"
          : "uclamp is not modelled (no frequency scaling, no EAS)";
  c.ignored.push_back(
      fmt::format("{}:{}:{}: {} has no effect here: {}", c.path, n.line, n.col, quoted, why));
}

std::int64_t get_int(const Config& c, const JNode& n, const std::string& key, std::int64_t lo,
                     std::int64_t hi) {
  // rt-app takes these with json_object_get_int after checking json_type_int: 0.1 is refused
  // there, not truncated to 0 (a whole number such as 1e15 goes on to the range check).
  if (!n.is_number() || (n.kind == JNode::Kind::Float && n.number() != std::floor(n.number())))
    fail(c, n,
         fmt::format("\"{}\": expected an integer, found {}", key,
                     n.kind == JNode::Kind::Float ? fmt::format("{}", n.number()) : n.kind_name()));
  double v = n.number();
  if (v < static_cast<double>(lo) || v > static_cast<double>(hi))
    fail(c, n, fmt::format("\"{}\": {} is out of range [{}, {}]", key, v, lo, hi));
  return static_cast<std::int64_t>(v);
}

std::string get_str(const Config& c, const JNode& n, const std::string& key) {
  if (n.kind != JNode::Kind::String)
    fail(c, n, fmt::format("\"{}\": expected a string, found {}", key, n.kind_name()));
  return n.s;
}

// Name -> index of the global resources, so that a file with many names parses in linear time.
struct Names {
  std::unordered_map<std::string, int> mutexes, conds, barriers, timers;
};

int intern(std::vector<std::string>& v, std::unordered_map<std::string, int>& index,
           const std::string& name) {
  auto [it, fresh] = index.emplace(name, static_cast<int>(v.size()));
  if (fresh) v.push_back(name);
  return it->second;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

Policy parse_policy(const Config& c, const JNode& n) {
  std::string p = get_str(c, n, "policy");
  if (p == "SCHED_OTHER") return Policy::Normal;
  if (p == "SCHED_BATCH") return Policy::Batch;
  if (p == "SCHED_IDLE") return Policy::Idle;
  if (p == "SCHED_FIFO" || p == "SCHED_RR" || p == "SCHED_DEADLINE")
    fail(c, n,
         fmt::format("policy {} is not modelled yet (schedtwin models the fair class: "
                     "SCHED_OTHER, SCHED_BATCH, SCHED_IDLE)",
                     p));
  fail(c, n,
       fmt::format("unknown policy \"{}\" (expected SCHED_OTHER, SCHED_BATCH or SCHED_IDLE)", p));
}

std::vector<int> parse_cpus(const Config& c, const JNode& n, int nr_cpus) {
  std::vector<int> out;
  if (n.kind != JNode::Kind::Array) fail(c, n, "\"cpus\": expected an array of CPU numbers");
  for (const JNode& x : n.items) {
    const auto cpu = static_cast<int>(get_int(c, x, "cpus", 0, INT32_MAX));
    if (cpu >= nr_cpus)
      fail(c, x,
           fmt::format("\"cpus\": CPU {} does not exist on the machine (CPUs 0-{})", cpu,
                       nr_cpus - 1));
    out.push_back(cpu);
  }
  if (out.empty()) fail(c, n, "\"cpus\": empty affinity");
  return out;
}

// One event key of a phase, matched by prefix as rt-app's parse_task_event_data does.
bool parse_event(Config& c, Names& nm, TaskDesc& t, Phase& ph, const std::string& key,
                 const JNode& v) {
  Event e{};
  if (starts_with(key, "runtime")) {
    e.type = EventType::Runtime;
    e.us = get_int(c, v, key, 0, kMaxEventUs);
  } else if (starts_with(key, "run")) {
    e.type = EventType::Run;
    e.us = get_int(c, v, key, -kMaxEventUs, kMaxEventUs);
    if (e.us < 0) e.us = -1;
  } else if (starts_with(key, "sleep")) {
    e.type = EventType::Sleep;
    e.us = get_int(c, v, key, 0, kMaxEventUs);
  } else if (starts_with(key, "timer")) {
    e.type = EventType::Timer;
    if (v.kind != JNode::Kind::Object)
      fail(c, v, "\"timer\": expected {\"ref\": name, \"period\": us}");
    std::string ref;
    bool has_period = false;
    for (const auto& [k, x] : v.members) {
      if (k == "ref")
        ref = get_str(c, x, "ref");
      else if (k == "period") {
        e.us = get_int(c, x, "period", INT64_MIN / 2, kMaxEventUs);
        if (e.us <= 0)
          fail(c, x, fmt::format("\"period\": timer period must be positive, got {}", e.us));
        has_period = true;
      } else if (k == "mode") {
        std::string m = get_str(c, x, "mode");
        if (m == "absolute")
          e.absolute = true;
        else if (m != "relative")
          fail(c, x, "\"mode\": expected \"relative\" or \"absolute\"");
      } else
        fail(c, x, fmt::format("timer: unknown key \"{}\" (expected ref, period, mode)", k));
    }
    if (ref.empty()) fail(c, v, "\"timer\": missing \"ref\"");
    if (!has_period) fail(c, v, "\"timer\": missing \"period\"");
    e.unique_timer = starts_with(ref, "unique");
    e.res = intern(c.timers, nm.timers, e.unique_timer ? t.name + "\x1f" + ref : ref);
    t.has_timer = true;
  } else if (starts_with(key, "lock")) {
    e.type = EventType::Lock;
    e.res = intern(c.mutexes, nm.mutexes, get_str(c, v, key));
  } else if (starts_with(key, "unlock")) {
    e.type = EventType::Unlock;
    e.res = intern(c.mutexes, nm.mutexes, get_str(c, v, key));
  } else if (starts_with(key, "wait") || starts_with(key, "sync")) {
    e.type = starts_with(key, "wait") ? EventType::Wait : EventType::Sync;
    if (v.kind != JNode::Kind::Object)
      fail(c, v, fmt::format("\"{}\": expected {{\"ref\": cond, \"mutex\": m}}", key));
    for (const auto& [k, x] : v.members) {
      if (k == "ref")
        e.res = intern(c.conds, nm.conds, get_str(c, x, "ref"));
      else if (k == "mutex")
        e.res2 = intern(c.mutexes, nm.mutexes, get_str(c, x, "mutex"));
      else
        fail(c, x, fmt::format("{}: unknown key \"{}\"", key, k));
    }
    if (e.res < 0 || e.res2 < 0)
      fail(c, v, fmt::format("\"{}\": needs \"ref\" and \"mutex\"", key));
  } else if (starts_with(key, "signal")) {
    e.type = EventType::Signal;
    e.res = intern(c.conds, nm.conds, get_str(c, v, key));
  } else if (starts_with(key, "broad")) {
    e.type = EventType::Broad;
    e.res = intern(c.conds, nm.conds, get_str(c, v, key));
  } else if (starts_with(key, "barrier")) {
    e.type = EventType::Barrier;
    e.res = intern(c.barriers, nm.barriers, get_str(c, v, key));
    if (static_cast<int>(c.barrier_users.size()) <= e.res)
      c.barrier_users.resize(static_cast<size_t>(e.res) + 1, 0);
    c.barrier_users[static_cast<size_t>(e.res)] += t.instance;
  } else if (starts_with(key, "suspend") || starts_with(key, "resume")) {
    // rt-app_parse_config.c (parse_task_event_data): both name a condition, the one wait,
    // signal and broad use by that name; suspend waits on it, resume broadcasts. A bare or
    // empty "suspend" is the task's own name, as rt-app's workgen fills it in (doc/tutorial.txt).
    e.type = starts_with(key, "suspend") ? EventType::Suspend : EventType::Resume;
    std::string name = e.type == EventType::Suspend && v.kind == JNode::Kind::Null
                           ? std::string()
                           : get_str(c, v, key);
    if (name.empty() && e.type == EventType::Suspend) name = t.name;
    e.res = intern(c.conds, nm.conds, name);
  } else if (starts_with(key, "yield")) {
    e.type = EventType::Yield;
  } else if (starts_with(key, "mem") || starts_with(key, "iorun") || starts_with(key, "fork") ||
             starts_with(key, "sem_")) {
    fail(c, v, fmt::format("event \"{}\" is not modelled yet", key));
  } else {
    return false;
  }
  ph.events.push_back(e);
  return true;
}

// rt-app's taskgroup: a cgroup path beginning with '/' (the cpu controller's hierarchy);
// returned without the root's "/" ("" for the root group).
std::string parse_taskgroup(const Config& c, const JNode& v) {
  std::string g = get_str(c, v, "taskgroup");
  if (g.empty() || g[0] != '/' || g.find("//") != std::string::npos ||
      (g.size() > 1 && g.back() == '/'))
    fail(c, v,
         fmt::format("\"taskgroup\": \"{}\" is not a cgroup path such as \"/tg1\" or \"/tg1/sub\"",
                     g));
  return g == "/" ? std::string() : g;
}

void parse_phase_body(Config& c, Names& nm, TaskDesc& t, Phase& ph, const JNode& obj,
                      bool task_level, int nr_cpus) {
  for (const auto& [key, v] : obj.members) {
    if (task_level) {
      if (key == "instance" || key == "loop" || key == "delay" || key == "policy" ||
          key == "priority" || key == "cpus" || key == "taskgroup" || key == "phases" ||
          key == "nodes_membind" || key == "util_min" || key == "util_max" || key == "dl-runtime" ||
          key == "dl-period" || key == "dl-deadline")
        continue;  // read by parse_task
    } else {
      if (key == "loop") {
        ph.loop = static_cast<int>(get_int(c, v, key, -1, 1'000'000'000));
        continue;
      }
      if (key == "cpus") {
        ph.cpus = parse_cpus(c, v, nr_cpus);
        continue;
      }
      if (key == "policy") {
        if (parse_policy(c, v) != t.policy)
          fail(c, v, "a phase that changes the policy is not modelled yet");
        continue;
      }
      if (key == "taskgroup") {
        ph.taskgroup = parse_taskgroup(c, v);
        continue;
      }
      if (key == "priority") {
        const int nice = static_cast<int>(get_int(c, v, key, -20, 19));
        if (t.policy == Policy::Idle)
          note_ignored(c, v, key);
        else
          ph.nice = nice;
        continue;
      }
      if (key == "nodes_membind" || key == "util_min" || key == "util_max") {
        note_ignored(c, v, key);
        continue;
      }
    }
    if (!parse_event(c, nm, t, ph, key, v))
      fail(c, v,
           fmt::format(
               "unknown key \"{}\" in {} (expected an event: run, runtime, sleep, timer, lock, "
               "unlock, wait, signal, broad, sync, barrier, suspend, resume, yield)",
               key, task_level ? "task " + t.name : "phase " + ph.name));
  }
}

TaskDesc parse_task(Config& c, Names& nm, const std::string& name, const JNode& obj,
                    Policy default_policy, int nr_cpus) {
  TaskDesc t;
  t.name = name;
  t.policy = default_policy;
  if (obj.kind != JNode::Kind::Object)
    fail(c, obj, fmt::format("task \"{}\": expected an object", name));
  bool has_loop = false, has_phases = false;
  const JNode* phases = nullptr;
  const JNode* priority = nullptr;
  for (const auto& [k, v] : obj.members) {
    if (k == "instance")
      t.instance = static_cast<int>(get_int(c, v, k, 0, kMaxThreads));
    else if (k == "loop") {
      t.loop = static_cast<int>(get_int(c, v, k, -1, 1'000'000'000));
      has_loop = true;
    } else if (k == "delay")
      t.delay_us = get_int(c, v, k, 0, kMaxEventUs);
    else if (k == "policy")
      t.policy = parse_policy(c, v);
    else if (k == "priority") {
      t.nice = static_cast<int>(get_int(c, v, k, -20, 19));
      priority = &v;
    } else if (k == "cpus")
      t.cpus = parse_cpus(c, v, nr_cpus);
    else if (k == "taskgroup")
      t.taskgroup = parse_taskgroup(c, v);
    else if (k == "phases") {
      if (v.kind != JNode::Kind::Object) fail(c, v, "\"phases\": expected an object of phases");
      phases = &v;
      has_phases = true;
    } else if (k == "nodes_membind" || k == "util_min" || k == "util_max") {
      note_ignored(c, v, k);
    } else if (k == "dl-runtime" || k == "dl-period" || k == "dl-deadline") {
      fail(c, v,
           fmt::format("\"{}\": SCHED_DEADLINE parameters and custom slices are not modelled yet",
                       k));
    }
  }
  if (priority && t.policy == Policy::Idle) {
    note_ignored(c, *priority, "priority");
    t.nice = 0;
  }
  if (has_phases) {
    for (const auto& [pname, pv] : phases->members) {
      if (pv.kind != JNode::Kind::Object)
        fail(c, pv, fmt::format("phase \"{}\": expected an object", pname));
      Phase ph;
      ph.name = pname;
      parse_phase_body(c, nm, t, ph, pv, false, nr_cpus);
      // As rt-app's parse_task_phase_data: a phase must have events.
      if (ph.events.empty())
        fail(c, pv, fmt::format("phase \"{}\" of task \"{}\" has no event", pname, name));
      t.phases.push_back(std::move(ph));
    }
    // Task-level events next to "phases" are not allowed by rt-app either.
    Phase dummy;
    parse_phase_body(c, nm, t, dummy, obj, true, nr_cpus);
    if (!dummy.events.empty())
      fail(c, obj, fmt::format("task \"{}\": events beside \"phases\"", name));
  } else {
    Phase ph;
    ph.name = "phase0";
    parse_phase_body(c, nm, t, ph, obj, true, nr_cpus);
    // Without phases a task-level loop is the phase's loop and the thread runs it once.
    if (has_loop) {
      ph.loop = t.loop;
      t.loop = 1;
    } else {
      t.loop = -1;
    }
    t.phases.push_back(std::move(ph));
  }
  bool any = false;
  for (const Phase& p : t.phases) any |= !p.events.empty();
  if (!any) fail(c, obj, fmt::format("task \"{}\" has no event", name));
  return t;
}

}  // namespace

Config parse(const JNode& root, const std::string& path, int nr_cpus) {
  Config c;
  Names nm;
  c.path = path;
  if (root.kind != JNode::Kind::Object)
    fail(c, root, "expected an object with \"tasks\" and \"global\"");
  const JNode* tasks = nullptr;
  Policy default_policy = Policy::Normal;
  for (const auto& [k, v] : root.members) {
    if (k == "tasks")
      tasks = &v;
    else if (k == "resources")
      continue;  // legacy, created on first reference
    else if (k == "global") {
      if (v.kind != JNode::Kind::Object) fail(c, v, "\"global\": expected an object");
      for (const auto& [g, x] : v.members) {
        if (g == "duration") {
          c.duration_s = get_int(c, x, g, -1, kMaxDurationS);
          if (c.duration_s == 0) fail(c, x, "\"duration\": must be positive, or -1 for no limit");
        } else if (g == "calibration") {
          if (x.is_number()) {
            c.pload_ns = get_int(c, x, g, 1, 1'000'000'000);
          } else {
            // "CPUn": rt-app calibrates on CPU n, which must exist.
            int cpu = -1;
            if (x.kind == JNode::Kind::String && starts_with(x.s, "CPU") && x.s.size() > 3 &&
                x.s.size() < 10 && std::all_of(x.s.begin() + 3, x.s.end(), [](char ch) {
                  return ch >= '0' && ch <= '9';
                }))
              cpu = std::stoi(x.s.substr(3));
            if (cpu < 0) fail(c, x, "\"calibration\": expected \"CPUn\" or ns per loop");
            if (cpu >= nr_cpus)
              fail(c, x,
                   fmt::format("\"calibration\": CPU{} does not exist (the machine has CPUs 0-{})",
                               cpu, nr_cpus - 1));
          }
        } else if (g == "default_policy")
          default_policy = parse_policy(c, x);
        else if (g == "logdir")
          c.logdir = get_str(c, x, g);
        else if (g == "log_basename") {
          c.log_basename = get_str(c, x, g);
          // rt-app opens <logdir>/<log_basename>-<task>-<n>.log: a '/' would need a directory
          // nobody creates, found only after the whole run.
          if (c.log_basename.empty() || c.log_basename.find('/') != std::string::npos)
            fail(c, x, "\"log_basename\": expected a file name prefix (not empty, no '/')");
        } else if (g == "log_size") {
          if (x.kind == JNode::Kind::String && x.s == "disable")
            c.logs = false;
          else if (!(x.is_number() ||
                     (x.kind == JNode::Kind::String && (x.s == "file" || x.s == "auto"))))
            fail(c, x, "\"log_size\": expected MB, \"file\", \"auto\" or \"disable\"");
        } else if (g == "cumulative_slack") {
          if (x.kind != JNode::Kind::Bool)
            fail(c, x, "\"cumulative_slack\": expected true or false");
          c.cumulative_slack = x.b;
        } else if (g == "gnuplot" && x.kind == JNode::Kind::Bool && x.b) {
          note_ignored(c, x, g);
        } else if (g == "pi_enabled" || g == "lock_pages" || g == "ftrace" || g == "gnuplot" ||
                   g == "io_device" || g == "mem_buffer_size" || g == "logsize" || g == "frag") {
          continue;  // accepted, no effect in simulation (logsize is not an rt-app key either)
        } else {
          fail(c, x, fmt::format("unknown global key \"{}\"", g));
        }
      }
    } else {
      fail(c, v, fmt::format("unknown top-level key \"{}\" (expected \"tasks\", \"global\")", k));
    }
  }
  if (!tasks) fail(c, root, "missing \"tasks\"");
  if (tasks->kind != JNode::Kind::Object) fail(c, *tasks, "\"tasks\": expected an object");
  if (tasks->members.empty()) fail(c, *tasks, "\"tasks\" is empty; expected at least one task");
  std::set<std::string> groups;
  for (const auto& [name, v] : tasks->members) {
    // The pre-2014 grammar: "exec", "period", "resources" with "access".
    if (v.kind == JNode::Kind::Object)
      for (const auto& [k, x] : v.members)
        if (k == "exec" || k == "lock_order" || k == "resources")
          fail(c, x,
               fmt::format(
                   "task \"{}\": \"{}\" belongs to the legacy pre-2014 rt-app grammar; expected "
                   "events such as \"run\" and \"timer\"",
                   name, k));
    c.tasks.push_back(parse_task(c, nm, name, v, default_policy, nr_cpus));
    const TaskDesc& t = c.tasks.back();
    if (t.instance == 0)
      c.ignored.push_back(
          fmt::format("{}:{}:{}: task \"{}\" has \"instance\": 0: it runs no thread", c.path,
                      v.line, v.col, name));
    if (!t.taskgroup.empty()) groups.insert(t.taskgroup);
    for (const Phase& ph : t.phases)
      if (ph.taskgroup && !ph.taskgroup->empty()) groups.insert(*ph.taskgroup);
    if (groups.size() > 32) fail(c, v, "more than 32 taskgroups (rt-app's limit)");
    c.nr_threads += c.tasks.back().instance;
    if (c.nr_threads > kMaxThreads)
      fail(c, v, fmt::format("more than {} threads in the task set", kMaxThreads));
  }
  if (c.nr_threads == 0) fail(c, *tasks, "no thread to run (every instance count is 0)");
  return c;
}

Config parse_file(const std::string& path, int nr_cpus) {
  return parse(read_relaxed_json_file(path), path, nr_cpus);
}

// ---------------------------------------------------------------------------
// Runtime

namespace {

struct Mutex {
  TaskId owner = kernel::kNoTask;
  std::deque<TaskId> waiters;
};

// A timer's next expiry (ns) before its first use, which starts it at the thread's first
// iteration; a started timer only ever holds times >= 0.
constexpr Time kTimerUnset = std::numeric_limits<Time>::min();

// A thread's log rows are kept as one byte string, each column a LEB128 varint (signed ones
// zigzag-coded), so that a row costs a few bytes rather than sizeof(LogRow): a run of 100 000
// threads has millions of rows.
void put_varint(std::vector<std::uint8_t>& b, std::uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<std::uint8_t>(v));
}

std::uint64_t get_varint(const std::uint8_t*& p) {
  std::uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const std::uint8_t byte = *p++;
    v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) return v;
  }
}

std::uint64_t zigzag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

std::int64_t unzigzag(std::uint64_t u) {
  return static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1);
}

// a - b and a + b modulo 2^64, so that a slack delta can never overflow.
std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

// RowDetail::Full: the ten columns after idx, in log order.
void put_full_row(std::vector<std::uint8_t>& b, const LogRow& r) {
  for (std::uint64_t v : {r.perf, r.run, r.period, r.start, r.end, r.rel_st}) put_varint(b, v);
  put_varint(b, zigzag(r.slack));
  for (std::uint64_t v : {r.c_duration, r.c_period, r.wu_lat}) put_varint(b, v);
}

LogRow get_full_row(const std::uint8_t*& p, int idx) {
  LogRow r;
  r.idx = idx;
  r.perf = get_varint(p);
  r.run = get_varint(p);
  r.period = get_varint(p);
  r.start = get_varint(p);
  r.end = get_varint(p);
  r.rel_st = get_varint(p);
  r.slack = unzigzag(get_varint(p));
  r.c_duration = get_varint(p);
  r.c_period = get_varint(p);
  r.wu_lat = get_varint(p);
  return r;
}

// RowDetail::SummaryOnly: wu_lat, then slack as the change from the thread's previous row
// (0 before the first), which is small for periodic threads.
void put_summary_row(std::vector<std::uint8_t>& b, std::uint64_t wu_lat, std::int64_t slack,
                     std::int64_t prev_slack) {
  put_varint(b, wu_lat);
  put_varint(b, zigzag(wrap_sub(slack, prev_slack)));
}

RowFigures get_summary_row(const std::uint8_t*& p, std::int64_t& prev_slack) {
  RowFigures f;
  f.wu_lat = get_varint(p);
  f.slack = prev_slack = wrap_add(prev_slack, unzigzag(get_varint(p)));
  return f;
}

}  // namespace

// The Impl is the kernel::TaskBody of every thread (found by TaskId), so that a thread needs
// neither a vtable nor a heap block of its own.
struct Runner::Impl : kernel::TaskBody {
  const Config& cfg;
  kernel::Kernel& k;
  const RowDetail detail;
  Time t_zero = 0;  // main's start: what rel_st and duration count from
  // rt-app's t_zero, the first thread's start: its timers and delays count from it.
  Time t_ref = 0;
  // The start barrier every thread passes before its first loop (threads_barrier).
  std::size_t start_arrived = 0;
  std::vector<TaskId> start_waiters;
  std::vector<Mutex> mutexes;
  std::vector<std::vector<TaskId>> cond_waiters;
  std::vector<std::vector<TaskId>> barrier_waiters;
  std::vector<int> barrier_arrived;
  std::map<std::string, int> group_of{{"", 0}};  // taskgroup path -> kernel task group
  // Threads that locked a mutex they held (a pthread mutex does not nest: rt-app's thread
  // waits on itself for ever, and so does the model's): (thread idx, mutex), in order.
  std::vector<std::pair<int, int>> relocks;

  // What the current wait of a thread is.
  enum class Wait : std::uint8_t {
    None,
    Run,
    Timer,
    Sleep,
    Lock,
    CondWait,
    CondRelock,
    Barrier,
    Suspend,
    Yield,
    Overhead,
    Delay,
    Start
  };

  // One rt-app thread; a run may have 100 000 of them, hence the 32-bit positions and the
  // packing (largest fields first).
  struct Thread {
    const TaskDesc* d = nullptr;
    const std::vector<int>* affinity = nullptr;  // as last applied (a list in cfg); empty = all
    Time it_start = 0;                           // the current iteration's start
    Time wait_ref = 0;  // Wait::Run: when the run began; Wait::Timer: the expiry waited for
    // the current iteration's figures
    std::int64_t perf = 0, run_ns = 0, slack = 0, wu_lat_ns = 0;
    std::int64_t c_duration = 0, c_period = 0;
    std::int64_t last_slack_us = 0;  // the last row's slack, for RowDetail::SummaryOnly
    std::vector<std::uint8_t> rows;  // encoded log rows, see put_full_row / put_summary_row
    TaskId id = kernel::kNoTask;
    int group = 0;                 // kernel task group
    std::uint32_t timer_slot = 0;  // its first entry in unique_timer_next
    std::uint32_t nr_rows = 0;
    // position
    int thread_loop = 0;
    int phase_loop = 0;
    std::uint32_t phase = 0;
    std::uint32_t ev = 0;
    bool started = false;
    Wait waiting = Wait::None;  // what the last step was
    bool took_time = false;     // the current iteration ran or blocked
    bool missed = false;
    bool exited = false;
  };

  std::vector<Thread> threads;      // by idx; reserved once, never reallocated
  std::size_t nr_exited = 0;
  std::vector<int> thread_of_task;  // TaskId -> idx (-1: not an rt-app thread)
  // Per task (index in cfg.tasks): its unique timers (Config::timers indices) in first use
  // order; each of its threads has their next expiries at unique_timer_next[timer_slot + i].
  std::vector<std::vector<int>> unique_timers;
  std::vector<Time> unique_timer_next;
  std::vector<Time> rt_timers;  // shared timers' next expiry, by Config::timers index
  std::int64_t total_rows = 0;

  Impl(const Config& c, kernel::Kernel& kern, RowDetail det) : cfg(c), k(kern), detail(det) {}

  Step next(TaskId self, Time now) override {
    return step(threads[static_cast<std::size_t>(thread_of_task[static_cast<std::size_t>(self)])],
                self, now);
  }

  std::size_t task_index(const Thread& t) const {
    return static_cast<std::size_t>(t.d - cfg.tasks.data());
  }

  // When the thread's loop starts: its unique and shared timers count from here.
  Time t_first(const Thread& t) const { return t_ref + t.d->delay_us * kNsPerUs; }

  Time& unique_timer(const Thread& t, int res) {
    const std::vector<int>& ids = unique_timers[task_index(t)];
    const auto i = static_cast<std::size_t>(std::find(ids.begin(), ids.end(), res) - ids.begin());
    return unique_timer_next[t.timer_slot + i];
  }

  void begin_iteration(Thread& t, Time now) {
    t.it_start = now;
    t.perf = t.run_ns = t.slack = t.wu_lat_ns = t.c_duration = t.c_period = 0;
    t.missed = false;
    t.took_time = false;
    // A phase's cpus apply for that phase; otherwise the task-level value is re-applied.
    const Phase& ph = t.d->phases[t.phase];
    const std::vector<int>& want = ph.cpus ? *ph.cpus : t.d->cpus;
    if (want != *t.affinity) {
      t.affinity = &want;
      k.set_affinity(t.id, want);
    }
    // A phase's priority: set_thread_param's setpriority() as the phase starts; the nice
    // stays for the phases after it, as a phase without one sets nothing.
    if (ph.nice) k.set_user_nice(t.id, *ph.nice);
    // A phase's taskgroup stays in force for the phases after it (rt-app example11).
    if (ph.taskgroup) {
      int g = group_of.at(*ph.taskgroup);
      if (g != t.group) {
        t.group = g;
        k.set_task_group(t.id, g);
      }
    }
  }

  static std::uint64_t to_us(Time ns) {
    return static_cast<std::uint64_t>(std::llround(static_cast<double>(ns) / 1000.0));
  }

  void end_iteration(Thread& t, Time now) {
    const std::int64_t max_rows = detail == RowDetail::SummaryOnly ? kMaxSummaryRows : kMaxLogRows;
    if (++total_rows > max_rows)
      throw InputError(fmt::format(
          "{}: more than {} log rows (loop iterations of all threads) in the run; expected a "
          "shorter \"duration\" (or --duration), fewer threads or longer iterations",
          cfg.path, max_rows));
    const auto slack =
        static_cast<std::int64_t>(std::llround(static_cast<double>(t.slack) / 1000.0));
    const std::uint64_t wu_lat = t.missed ? 0 : to_us(t.wu_lat_ns);
    ++t.nr_rows;
    // Grow by half rather than double: a thread's rows are most of what a long run keeps.
    // A row is at most 2 (SummaryOnly) or 10 (Full) varints of 10 bytes.
    const std::size_t max_row = detail == RowDetail::SummaryOnly ? 20 : 100;
    if (t.rows.capacity() - t.rows.size() < max_row)
      t.rows.reserve(t.rows.size() + t.rows.size() / 2 + max_row);
    if (detail == RowDetail::SummaryOnly) {
      put_summary_row(t.rows, wu_lat, slack, t.last_slack_us);
      t.last_slack_us = slack;
      return;
    }
    LogRow r;
    r.idx = 0;  // not stored: the thread's idx
    r.perf = static_cast<std::uint64_t>(t.perf);
    r.run = to_us(t.run_ns);
    r.period = to_us(now - t.it_start);
    r.start = to_us(t.it_start);
    r.end = to_us(now);
    r.rel_st = to_us(t.it_start - t_zero);
    r.slack = slack;
    r.c_duration = static_cast<std::uint64_t>(t.c_duration);
    r.c_period = static_cast<std::uint64_t>(t.c_period);
    r.wu_lat = wu_lat;
    put_full_row(t.rows, r);
  }

  // Advances past the end of the current phase iteration; false when the thread is done.
  bool advance_iteration(Thread& t, Time now) {
    end_iteration(t, now);
    t.ev = 0;
    const Phase& ph = t.d->phases[t.phase];
    if (ph.loop < 0 || ++t.phase_loop < ph.loop) {
      begin_iteration(t, now);
      return true;
    }
    t.phase_loop = 0;
    if (++t.phase >= t.d->phases.size()) {
      t.phase = 0;
      if (t.d->loop >= 0 && ++t.thread_loop >= t.d->loop) return false;
    }
    begin_iteration(t, now);
    return true;
  }

  void wake(TaskId t) { k.wake_up(t, kernel::WF_NONE); }

  void mutex_unlock(int m) {
    Mutex& mx = mutexes[static_cast<size_t>(m)];
    mx.owner = kernel::kNoTask;
    if (!mx.waiters.empty()) {
      mx.owner = mx.waiters.front();
      mx.waiters.pop_front();
      wake(mx.owner);
    }
  }

  Step step(Thread& t, TaskId self, Time now) {
    if (!t.started || t.waiting == Wait::Start) {
      if (!t.started) {
        t.started = true;
        // thread_body (rt-app master): the first thread reads t_zero; every thread then waits
        // at threads_barrier, whose last arrival wakes the others (glibc's futex wake, in
        // arrival order).
        if (&t == &threads.front()) t_ref = now;
        if (++start_arrived < threads.size()) {
          t.waiting = Wait::Start;
          start_waiters.push_back(self);
          return Step::block();
        }
        std::vector<TaskId> waiters;
        waiters.swap(start_waiters);
        for (TaskId w : waiters) wake(w);
      }
      t.waiting = Wait::None;
      // Then it sleeps until t_zero + delay (clock_nanosleep, TIMER_ABSTIME: not at all once
      // that has passed): the first row starts after it.
      if (t.d->delay_us > 0 && t_first(t) > now) {
        t.waiting = Wait::Delay;
        k.arm_timer(self, t_first(t));
        return Step::block();
      }
      begin_iteration(t, now);
    } else if (t.waiting == Wait::Delay) {
      t.waiting = Wait::None;
      begin_iteration(t, now);
    }
    // Completion of what the thread was doing. Anything but a yield ran or blocked.
    if (t.waiting != Wait::None && t.waiting != Wait::Yield) t.took_time = true;
    switch (t.waiting) {
      case Wait::Run:
        t.run_ns += now - t.wait_ref;
        break;
      case Wait::Timer:
        t.wu_lat_ns += now - t.wait_ref;
        break;
      case Wait::CondWait: {
        // Woken by signal: take the mutex back.
        const Event& e = t.d->phases[t.phase].events[t.ev - 1];
        Mutex& mx = mutexes[static_cast<size_t>(e.res2)];
        if (mx.owner != kernel::kNoTask && mx.owner != self) {
          mx.waiters.push_back(self);
          t.waiting = Wait::CondRelock;
          return Step::block();
        }
        mx.owner = self;
        break;
      }
      default:
        break;
    }
    t.waiting = Wait::None;
    for (;;) {
      const Phase& ph = t.d->phases[t.phase];
      if (t.ev >= ph.events.size()) {
        if (!t.took_time) {
          // Nothing in the iteration ran or blocked (e.g. only signal, unlock or run 0): rt-app
          // still spends CPU going round its loop. Charge that, so that simulated time moves on.
          t.took_time = true;
          t.waiting = Wait::Overhead;
          return Step::run(kEmptyIterationNs);
        }
        if (!advance_iteration(t, now)) {
          t.exited = true;
          ++nr_exited;
          return Step::exit();
        }
        continue;
      }
      const Event& e = ph.events[t.ev++];
      switch (e.type) {
        case EventType::Run:
          if (e.us == 0) break;  // nothing to do, as rt-app's run 0
          t.c_duration += e.us < 0 ? 0 : e.us;
          t.perf += e.us < 0 ? 0 : e.us * 1000 / cfg.pload_ns / 1000;
          t.waiting = Wait::Run;
          t.wait_ref = now;
          return Step::run(e.us < 0 ? kTimeNever / 4 : e.us * kNsPerUs);
        case EventType::Runtime:
          if (e.us == 0) break;
          t.c_duration += e.us;
          t.waiting = Wait::Run;
          t.wait_ref = now;
          return Step::run_until(now + e.us * kNsPerUs);
        case EventType::Sleep:
          t.waiting = Wait::Sleep;
          k.arm_timer(self, now + e.us * kNsPerUs);
          return Step::block();
        case EventType::Timer: {
          Time& t_next =
              e.unique_timer ? unique_timer(t, e.res) : rt_timers[static_cast<size_t>(e.res)];
          t.c_period += e.us;
          if (t_next == kTimerUnset) t_next = t_first(t);
          t_next += e.us * kNsPerUs;
          Time slack = t_next - now;
          t.slack = cfg.cumulative_slack ? t.slack + slack : slack;
          if (now < t_next) {
            t.wait_ref = t_next;
            t.waiting = Wait::Timer;
            k.arm_timer(self, t_next);
            return Step::block();
          }
          if (!e.absolute) t_next = now;
          t.missed = true;
          t.wu_lat_ns = 0;
          break;
        }
        case EventType::Lock: {
          Mutex& mx = mutexes[static_cast<size_t>(e.res)];
          if (mx.owner == kernel::kNoTask) {
            mx.owner = self;
            break;
          }
          if (mx.owner == self) relocks.emplace_back(thread_of_task[static_cast<size_t>(self)], e.res);
          mx.waiters.push_back(self);
          t.waiting = Wait::Lock;  // ownership is handed over by unlock
          return Step::block();
        }
        case EventType::Unlock:
          if (mutexes[static_cast<size_t>(e.res)].owner == self) mutex_unlock(e.res);
          break;
        case EventType::Sync:
          signal(e.res, false);
          [[fallthrough]];
        case EventType::Wait:
          if (mutexes[static_cast<size_t>(e.res2)].owner == self) mutex_unlock(e.res2);
          cond_waiters[static_cast<size_t>(e.res)].push_back(self);
          t.waiting = Wait::CondWait;
          return Step::block();
        case EventType::Signal:
          signal(e.res, false);
          break;
        case EventType::Broad:
          signal(e.res, true);
          break;
        case EventType::Barrier: {
          int& arrived = barrier_arrived[static_cast<size_t>(e.res)];
          if (++arrived >= cfg.barrier_users[static_cast<size_t>(e.res)]) {
            arrived = 0;
            auto& w = barrier_waiters[static_cast<size_t>(e.res)];
            std::vector<TaskId> list;
            list.swap(w);
            for (TaskId x : list) wake(x);
            break;
          }
          barrier_waiters[static_cast<size_t>(e.res)].push_back(self);
          t.waiting = Wait::Barrier;
          return Step::block();
        }
        case EventType::Suspend:
          cond_waiters[static_cast<size_t>(e.res)].push_back(self);
          t.waiting = Wait::Suspend;
          return Step::block();
        case EventType::Resume:
          signal(e.res, true);
          break;
        case EventType::Yield:
          t.waiting = Wait::Yield;
          return Step::yield();
      }
    }
  }

  void signal(int cond, bool all) {
    auto& w = cond_waiters[static_cast<size_t>(cond)];
    if (w.empty()) return;
    if (all) {
      std::vector<TaskId> list;
      list.swap(w);
      for (TaskId x : list) wake(x);
    } else {
      TaskId x = w.front();
      w.erase(w.begin());
      wake(x);
    }
  }

  const Thread& thread(int idx) const {
    if (idx < 0 || static_cast<std::size_t>(idx) >= threads.size())
      throw std::out_of_range(fmt::format("rt-app thread {} does not exist", idx));
    return threads[static_cast<std::size_t>(idx)];
  }

  void require_full(const char* what) const {
    if (detail != RowDetail::Full)
      throw std::logic_error(fmt::format("rt-app Runner::{} needs RowDetail::Full", what));
  }

  std::vector<LogRow> full_rows(int idx) const {
    const Thread& t = thread(idx);
    std::vector<LogRow> rows;
    rows.reserve(t.nr_rows);
    const std::uint8_t* p = t.rows.data();
    for (std::uint32_t i = 0; i < t.nr_rows; ++i) rows.push_back(get_full_row(p, idx));
    return rows;
  }
};

Runner::Runner(const Config& cfg, kernel::Kernel& k, RowDetail detail)
    : impl_(std::make_unique<Impl>(cfg, k, detail)) {
  Impl& r = *impl_;
  r.mutexes.resize(cfg.mutexes.size());
  r.cond_waiters.resize(cfg.conds.size());
  r.barrier_waiters.resize(cfg.barriers.size());
  r.barrier_arrived.assign(cfg.barriers.size(), 0);
  r.rt_timers.assign(cfg.timers.size(), kTimerUnset);
  r.t_zero = k.now();
  // taskgroup paths become task groups of default cpu.weight, parents first, as rt-app
  // creates the cgroup directories; a path that already exists (a scenario's group, or
  // another task set's in the same run) is that cgroup, as in the one cgroup hierarchy.
  auto group_for = [&](const std::string& path) {
    std::map<std::string, int>& group_of = r.group_of;
    int parent = 0;
    for (std::size_t pos = 1; pos <= path.size(); ++pos) {
      if (pos != path.size() && path[pos] != '/') continue;
      std::string prefix = path.substr(0, pos);
      auto it = group_of.find(prefix);
      if (it == group_of.end()) {
        int g = k.find_task_group(prefix);
        if (g < 0) g = k.create_task_group({.name = prefix, .parent = parent});
        it = group_of.emplace(prefix, g).first;
      }
      parent = it->second;
    }
    return parent;
  };
  std::size_t nr_threads = 0, nr_unique_timers = 0;
  for (const TaskDesc& d : cfg.tasks) {
    std::vector<int>& ids = r.unique_timers.emplace_back();
    for (const Phase& ph : d.phases)
      for (const Event& e : ph.events)
        if (e.type == EventType::Timer && e.unique_timer &&
            std::find(ids.begin(), ids.end(), e.res) == ids.end())
          ids.push_back(e.res);
    nr_threads += static_cast<std::size_t>(d.instance);
    nr_unique_timers += static_cast<std::size_t>(d.instance) * ids.size();
  }
  r.threads.reserve(nr_threads);  // Impl::next finds threads by index; no reallocation
  r.unique_timer_next.assign(nr_unique_timers, kTimerUnset);
  std::size_t timer_slot = 0;
  int idx = 0;
  for (const TaskDesc& d : cfg.tasks) {
    for (int i = 0; i < d.instance; ++i, ++idx) {
      Impl::Thread& th = r.threads.emplace_back();
      th.d = &d;
      th.affinity = &d.cpus;
      th.timer_slot = static_cast<std::uint32_t>(timer_slot);
      timer_slot += r.unique_timers[r.task_index(th)].size();
      kernel::TaskAttr attr;
      attr.name = fmt::format("{}-{}", d.name, idx);
      attr.policy = d.policy;
      attr.nice = d.nice;
      attr.cpus = d.cpus;
      attr.group = group_for(d.taskgroup);
      th.group = attr.group;
      for (const Phase& ph : d.phases)
        if (ph.taskgroup) group_for(*ph.taskgroup);
      // rt-app's threads are pthreads of one process; its main thread is not simulated, so
      // the first thread stands for the process.
      attr.thread_group = idx == 0 ? kernel::kNoTask : r.threads.front().id;
      th.id = k.create_task(attr, &r, 0);
      const auto id = static_cast<std::size_t>(th.id);
      if (r.thread_of_task.size() <= id) r.thread_of_task.resize(id + 1, -1);
      r.thread_of_task[id] = idx;
    }
  }
}

Runner::~Runner() = default;

Time Runner::end_time() const {
  return impl_->cfg.duration_s > 0 ? impl_->t_zero + impl_->cfg.duration_s * kNsPerSec : kTimeNever;
}

std::vector<ThreadResult> Runner::results() const {
  impl_->require_full("results");
  std::vector<ThreadResult> out;
  for (int i = 0; i < nr_threads(); ++i)
    out.push_back({thread_task(i), i, thread_fork_cpu(i), impl_->full_rows(i)});
  return out;
}

int Runner::nr_threads() const { return static_cast<int>(impl_->threads.size()); }
bool Runner::all_exited() const { return impl_->nr_exited == impl_->threads.size(); }

std::string Runner::thread_wait(int idx) const {
  const Impl::Thread& t = impl_->thread(idx);
  if (t.exited) return "";
  switch (t.waiting) {
    case Impl::Wait::Lock:
    case Impl::Wait::CondRelock:
      return "lock";
    case Impl::Wait::CondWait:
      return "wait";
    case Impl::Wait::Barrier:
    case Impl::Wait::Start:
      return "barrier";
    case Impl::Wait::Suspend:
      return "suspend";
    default:
      return "running";
  }
}

const std::string& Runner::thread_task(int idx) const { return impl_->thread(idx).d->name; }

std::vector<std::string> Runner::self_deadlocks() const {
  std::vector<std::string> out;
  for (const auto& [idx, mutex] : impl_->relocks) {
    int waiting = 0;
    for (TaskId w : impl_->mutexes[static_cast<size_t>(mutex)].waiters)
      if (w != impl_->thread(idx).id) ++waiting;
    out.push_back(fmt::format(
        "thread {}-{} locked \"{}\" while holding it: a pthread mutex does not nest, so it waits "
        "on itself for ever, as under rt-app{}",
        thread_task(idx), idx, impl_->cfg.mutexes[static_cast<size_t>(mutex)],
        waiting ? fmt::format(" ({} other thread{} on it too)", waiting,
                              waiting == 1 ? " waits" : "s wait")
                : ""));
  }
  return out;
}

int Runner::thread_fork_cpu(int idx) const {
  return impl_->k.task_stats(impl_->thread(idx).id).fork_cpu;
}

const kernel::TaskStats& Runner::thread_sched_stats(int idx) const {
  return impl_->k.task_stats(impl_->thread(idx).id);
}

std::size_t Runner::nr_rows(int idx) const { return impl_->thread(idx).nr_rows; }

std::vector<RowFigures> Runner::row_figures(int idx) const {
  const Impl::Thread& t = impl_->thread(idx);
  std::vector<RowFigures> out;
  out.reserve(t.nr_rows);
  const std::uint8_t* p = t.rows.data();
  std::int64_t prev_slack = 0;
  for (std::uint32_t i = 0; i < t.nr_rows; ++i) {
    if (impl_->detail == RowDetail::SummaryOnly) {
      out.push_back(get_summary_row(p, prev_slack));
    } else {
      const LogRow r = get_full_row(p, idx);
      out.push_back({r.wu_lat, r.slack});
    }
  }
  return out;
}

void Runner::release_rows(int idx) {
  impl_->thread(idx);  // range check
  Impl::Thread& t = impl_->threads[static_cast<std::size_t>(idx)];
  std::vector<std::uint8_t>().swap(t.rows);
  t.nr_rows = 0;
  t.last_slack_us = 0;  // the next row's delta starts afresh, as the decoder does
}

std::string Runner::log_header() const {
  return fmt::format("{} {:>8} {:>8} {:>8} {:>15} {:>15} {:>15} {:>10} {:>10} {:>10} {:>10}\n",
                     "#idx", "perf", "run", "period", "start", "end", "rel_st", "slack",
                     "c_duration", "c_period", "wu_lat");
}

std::string format_row(const LogRow& r) {
  return fmt::format("{:4d} {:8d} {:8d} {:8d} {:15d} {:15d} {:15d} {:10d} {:10d} {:10d} {:10d}\n",
                     r.idx, r.perf, r.run, r.period, r.start, r.end, r.rel_st, r.slack,
                     r.c_duration, r.c_period, r.wu_lat);
}

void Runner::write_logs(const std::string& dir) const {
  impl_->require_full("write_logs");
  std::vector<std::string> written;
  for (int i = 0; i < nr_threads(); ++i) {
    std::string path =
        fmt::format("{}/{}-{}-{}.log", dir, impl_->cfg.log_basename, thread_task(i), i);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (f) {
      written.push_back(path);
      f << log_header();
      for (const LogRow& r : impl_->full_rows(i)) f << format_row(r);
      f.flush();
    }
    if (!f) {
      // Nothing half-written: take back the logs of this run.
      std::error_code ec;
      for (const std::string& w : written) std::filesystem::remove(w, ec);
      throw InputError(fmt::format("{}: cannot write log file", path));
    }
  }
}

}  // namespace schedtwin::workload::rtapp
