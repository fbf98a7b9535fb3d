// `schedtwin run SCENARIO.json`: several workloads at once on one simulated machine, each in
// its task group (issue 5). The file:
//   { "machine": "xeon-e5-2650v4", "kernel": "v5.17", "features": "sched-idle-balancing",
//     "duration_s": 10,
//     "groups": { "normal": {}, "noise": { "cpu.idle": 1 } },
//     "workloads": [ { "group": "normal", "schbench": ["-m", "2", "-t", "24"] },
//                    { "group": "noise", "messaging": ["-g", "1", "-l", "4000000"] } ] }
// groups: name -> { "cpu.weight": 1..10000, "cpu.idle": 0|1, "cpu.latency-nice": 1..100 },
// children of the root. A workload is its subcommand's own arguments (schbench, messaging,
// hackbench, pingpong); its tasks join the group (and tasks they fork inherit it).
// duration_s ends every workload: schbench and pingpong run that long; messaging that has
// not finished reports what it did (their -r/--runtime is refused). --machine, --kernel,
// --features and --seed on the command line replace the file's.
#include "cli/run_cmd.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/messaging_cmd.h"
#include "cli/pingpong_cmd.h"
#include "cli/rtapp_cmd.h"
#include "cli/run_common.h"
#include "cli/schbench_cmd.h"
#include "engine/error.h"
#include "engine/spelling.h"
#include "machine/machine_file.h"
#include "workload/json_relaxed.h"
#include "workload/messaging.h"
#include "workload/pingpong.h"
#include "workload/rtapp.h"
#include "workload/schbench.h"

namespace schedtwin::cli {

namespace {

using workload::JNode;

struct Workload {
  std::string kind, group;
  int group_id = 0;
  std::unique_ptr<workload::Schbench> schbench;
  std::unique_ptr<workload::Messaging> messaging;
  std::unique_ptr<workload::Pingpong> pingpong;
  // rt-app: the task set (the runner keeps a reference to it) and its runner.
  std::unique_ptr<workload::rtapp::Config> rtapp_cfg;
  std::unique_ptr<workload::rtapp::Runner> rtapp;
  workload::MessagingParams mp;
  workload::PingpongParams pp;
  bool hackbench = false;
  bool simple_format = false;  // messaging's --format simple
  // What messaging / pingpong had done when duration_s ended: their report covers exactly
  // that window, even when a schbench keeps the run going to its next whole second.
  workload::MessagingResult messaging_at_end;
  bool messaging_finished = false;
  workload::PingpongResult pingpong_at_end;
};

[[noreturn]] void bad(const std::string& file, const JNode& n, const std::string& what) {
  throw InputError(fmt::format("{}:{}:{}: {}", file, n.line, n.col, what));
}

// The relaxed JSON reader keeps duplicate keys (rt-app's grammar gives them a meaning); in a
// scenario one is a slip that would silently take the last value, so it is refused.
void refuse_duplicate_keys(const std::string& file, const JNode& obj) {
  std::map<std::string, const JNode*> seen;
  for (const auto& [key, v] : obj.members) {
    auto [it, fresh] = seen.emplace(key, &v);
    if (!fresh)
      bad(file, v,
          fmt::format("\"{}\" appears twice (first at {}:{})", key, it->second->line,
                      it->second->col));
  }
}

// Parses a workload's arguments with its subcommand's own option definitions.
template <typename Args, typename Define>
void parse_args(const std::string& file, const JNode& arr, const std::string& kind, Args& a,
                Define define) {
  CLI::App app{kind};
  define(app, a);
  app.allow_extras();  // reported below in the file's order (CLI11 lists them reversed)
  std::vector<std::string> args;
  for (const JNode& x : arr.items) {
    if (x.kind != JNode::Kind::String)
      bad(file, x, fmt::format("{} arguments: expected strings", kind));
    args.push_back(x.s);
  }
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::Success&) {  // --help or --help-all: CLI11 signals them as success
    bad(file, arr,
        fmt::format("{} arguments: --help is not a workload's argument (`schedtwin {} --help` "
                    "lists them)",
                    kind, kind));
  } catch (const CLI::ParseError& e) {
    bad(file, arr, fmt::format("{} arguments: {}", kind, e.what()));
  }
  if (const std::vector<std::string> rest = app.remaining(); !rest.empty())
    bad(file, arr, fmt::format("{} arguments: {}", kind, extra_arguments_text(app, kind, rest)));
  // schbench's and pingpong's run time is the scenario's duration_s: -r would be dropped.
  if (const CLI::Option* r = app.get_option_no_throw("--runtime"); r && r->count() > 0)
    bad(file, arr,
        fmt::format("{} arguments: -r/--runtime: every workload of a scenario runs for the "
                    "file's \"duration_s\"",
                    kind));
  // The subcommand's parser knows the common options, but in a scenario they are the whole
  // run's: taken here, they would be dropped without a word.
  static constexpr const char* kFileKeys[] = {"--machine", "--kernel", "--features", "--seed"};
  for (const std::string& n : common_option_names()) {
    if (app.count(n) == 0) continue;
    const bool file_key =
        std::find(std::begin(kFileKeys), std::end(kFileKeys), n) != std::end(kFileKeys);
    bad(file, arr,
        fmt::format(
            "{} arguments: {} is an option of the whole run, not of one workload: {}", kind, n,
            file_key
                ? fmt::format("set the file's \"{}\" or give it to `schedtwin run`", n.substr(2))
                : "give it to `schedtwin run`"));
  }
}

// The limits a subcommand checks after parsing its options (UsageError on its command line)
// and workload::validate, as errors at the workload's arguments in the file.
template <typename F>
auto checked(const std::string& file, const JNode& args, const std::string& kind, F f) {
  try {
    return f();
  } catch (const UsageError& e) {
    bad(file, args, fmt::format("{} arguments: {}", kind, e.what()));
  } catch (const InputError& e) {
    bad(file, args, fmt::format("{} arguments: {}", kind, e.what()));
  }
}

// A file named in a scenario (a machine file, an rt-app task set) is looked for beside the
// scenario file first (so that they can be moved together), then from the working
// directory. Found in neither place, the place looked at first is named.
std::string file_beside(const std::string& scenario_file, const std::string& name) {
  const std::filesystem::path p(name);
  if (p.is_absolute()) return name;
  const std::filesystem::path beside = std::filesystem::path(scenario_file).parent_path() / p;
  std::error_code ec;
  if (std::filesystem::exists(beside, ec) || !std::filesystem::exists(p, ec))
    return beside.lexically_normal().string();
  return name;
}

// Presets stay names; a machine "name" that is no path at all is left for load_machine to
// answer with the list of presets.
std::string machine_beside(const std::string& scenario_file, const std::string& machine) {
  const auto presets = machine::preset_names();  // "host" included
  if (std::find(presets.begin(), presets.end(), machine) != presets.end()) return machine;
  const std::string found = file_beside(scenario_file, machine);
  std::error_code ec;
  if (!std::filesystem::exists(found, ec) && !machine::looks_like_machine_path(machine))
    return machine;
  return found;
}

}  // namespace

ScenarioOutcome run_scenario(const workload::JNode& root, const std::string& file, CommonOptions c,
                             const ScenarioOverrides& ov) {
  if (root.kind != JNode::Kind::Object) bad(file, root, "expected an object");
  refuse_duplicate_keys(file, root);
  double duration_s = 0;
  const JNode* groups = nullptr;
  const JNode* workloads = nullptr;
  // The file's machine / kernel / features, when they stand (no command-line override): an
  // error in one names its place in the file, not the option it stands for.
  InputLabels where;
  for (const auto& [k, v] : root.members) {
    auto str = [&file, &k = k, &v = v] {  // clang 14 cannot capture structured bindings
      if (v.kind != JNode::Kind::String) bad(file, v, fmt::format("\"{}\": expected a string", k));
      return v.s;
    };
    auto place = [&file, &k = k, &v = v] {
      return fmt::format("{}:{}:{}: \"{}\"", file, v.line, v.col, k);
    };
    if (k == "machine") {
      if (!ov.machine) {
        c.machine = machine_beside(file, str());
        where.machine = place();
      }
    } else if (k == "kernel") {
      if (!ov.kernel) c.kernel = str(), where.kernel = place();
    } else if (k == "features") {
      if (!ov.features) c.features = str(), where.features = place();
    } else if (k == "seed") {
      if (v.kind != JNode::Kind::Int || v.i < 0)
        bad(file, v, "\"seed\": expected a non-negative integer");
      if (!ov.seed) c.seed = v.u;  // the whole u64 range, as --seed takes it
    } else if (k == "duration_s") {
      if (!v.is_number() || !(v.number() > 0) || v.number() > 3600)
        bad(file, v, "\"duration_s\": expected seconds in (0, 3600]");
      duration_s = v.number();
    } else if (k == "groups") {
      if (v.kind != JNode::Kind::Object) bad(file, v, "\"groups\": expected an object of groups");
      groups = &v;
    } else if (k == "workloads") {
      if (v.kind != JNode::Kind::Array || v.items.empty())
        bad(file, v, "\"workloads\": expected a non-empty array");
      workloads = &v;
    } else {
      // An rt-app task set ("tasks", "global") given to run by mistake.
      const bool rtapp = k == "tasks" || k == "global";
      bad(file, v,
          fmt::format(
              "unknown key \"{}\" (expected machine, kernel, features, seed, duration_s, groups, "
              "workloads){}",
              k, rtapp ? "; an rt-app task set runs with `schedtwin rt-app`" : ""));
    }
  }
  if (!workloads) bad(file, root, "\"workloads\" is missing");
  if (duration_s <= 0) bad(file, root, "\"duration_s\" is missing");

  Scenario s = make_scenario(c, where);
  kernel::Kernel k(s.machine, s.config);
  std::map<std::string, int> group_ids{{"", 0}, {"/", 0}};
  if (groups) {
    refuse_duplicate_keys(file, *groups);
    for (const auto& [name, g] : groups->members) {
      // One cgroup directory under the root: mkdir refuses "", ".", ".." and a '/' would nest.
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
          name.size() > 255)
        bad(file, g,
            fmt::format("group \"{}\": a group name is one cgroup directory name (not empty, "
                        "not . or .., no '/', at most 255 bytes (NAME_MAX); groups are children "
                        "of the root)",
                        name));
      if (g.kind != JNode::Kind::Object)
        bad(file, g, fmt::format("group \"{}\": expected an object", name));
      refuse_duplicate_keys(file, g);
      kernel::TaskGroupAttr a;
      a.name = "/" + name;
      const JNode* weight = nullptr;
      for (const auto& [key, v] : g.members) {
        if (key != "cpu.weight" && key != "cpu.idle" && key != "cpu.latency-nice")
          bad(file, v,
              fmt::format(
                  "group \"{}\": unknown key \"{}\" (cpu.weight, cpu.idle, cpu.latency-nice)", name,
                  key));
        if (!v.is_number() || v.kind == JNode::Kind::Float)
          bad(file, v, fmt::format("group \"{}\": \"{}\" expects an integer", name, key));
        // Out-of-range values are refused here, where the message can quote them whole.
        // (Structured bindings are passed, not captured: clang before 16 cannot capture them.)
        auto in_range = [&file](const JNode& x, const std::string& group, const std::string& k,
                                std::int64_t lo, std::int64_t hi) {
          if (x.above_int64 || x.i < lo || x.i > hi)
            bad(file, x,
                fmt::format("group \"{}\": \"{}\" {} is outside {}..{}", group, k,
                            x.above_int64 ? fmt::format("{}", x.u) : fmt::format("{}", x.i), lo,
                            hi));
          return static_cast<int>(x.i);
        };
        if (key == "cpu.weight") {
          a.weight = in_range(v, name, key, 1, 10000);
          weight = &v;
        } else if (key == "cpu.idle") {
          if (v.i != 0 && v.i != 1)
            bad(file, v, fmt::format("group \"{}\": \"cpu.idle\" is 0 or 1", name));
          a.idle = v.i == 1;
        } else {
          a.latency_nice = in_range(v, name, key, kernel::kLatencyNiceMin, kernel::kLatencyNiceMax);
        }
      }
      // sched_group_set_shares refuses a weight written to an idle group (EINVAL), and
      // cpu.idle overrides one written before: either way the weight has no effect.
      if (a.idle && weight)
        bad(file, *weight,
            fmt::format("group \"{}\": \"cpu.weight\" has no effect on a \"cpu.idle\" group "
                        "(the kernel refuses it once the group is idle and overrides it when "
                        "cpu.idle is set after it; an idle group's weight is the minimum)",
                        name));
      // cpu.latency-nice is the RFC's: only its scan budget (LATENCY_NICE_SIS) reads it.
      const bool ln_given = std::any_of(g.members.begin(), g.members.end(), [](const auto& m) {
        return m.first == "cpu.latency-nice";
      });
      if (ln_given && !s.config.profile.features.has(kernel::Feature::LATENCY_NICE_SIS) &&
          c.profile_notes)
        say_note(c, fmt::format("schedtwin: warning: {}:{}:{}: group \"{}\": \"cpu.latency-nice\" "
                                "is read only by LATENCY_NICE_SIS (--features latency-nice), "
                                "which this run has off: it changes nothing\n",
                                file, g.line, g.col, name));
      // cpu.idle (304000390f88) came with v5.15; an earlier profile applies it as v5.15 does.
      if (a.idle && s.config.profile.version < 515 && c.profile_notes)
        say_note(c, fmt::format("schedtwin: warning: {}:{}:{}: group \"{}\": \"cpu.idle\" came "
                                "with v5.15; kernel {} has no such file, and the model applies it "
                                "as v5.15 does\n",
                                file, g.line, g.col, name, s.config.profile.name));
      try {
        group_ids[name] = k.create_task_group(a);
      } catch (const InputError& e) {
        bad(file, g, e.what());
      }
    }
  }

  // Before the workloads start, so that their first tasks' forks are traced and explained
  // as a subcommand's are (nothing is written if a workload's arguments are then refused).
  TraceOutputs traces = open_traces(c, k);
  std::vector<Workload> ws;
  const int whole_s = std::max(1, static_cast<int>(std::ceil(duration_s)));
  for (const JNode& w : workloads->items) {
    if (w.kind != JNode::Kind::Object) bad(file, w, "a workload is an object");
    refuse_duplicate_keys(file, w);
    Workload x;
    const JNode* args = nullptr;
    for (const auto& [key, v] : w.members) {
      if (key == "group") {
        if (v.kind != JNode::Kind::String) bad(file, v, "\"group\": expected a group name");
        if (!group_ids.count(v.s)) {
          // "/a" is rt-app's path of group "a": groups are named without the root's "/".
          const bool path = v.s.size() > 1 && v.s[0] == '/' && group_ids.count(v.s.substr(1));
          std::vector<std::string_view> known;
          for (const auto& [name, id] : group_ids)
            if (!name.empty() && name != "/") known.push_back(name);
          const std::string near = engine::closest_spelling(v.s, known);
          bad(file, v,
              fmt::format("\"group\": no group \"{}\" in \"groups\"{}", v.s,
                          path ? fmt::format(" (a group is named without the root's \"/\": \"{}\")",
                                             v.s.substr(1))
                          : !near.empty() ? fmt::format(" (did you mean \"{}\"?)", near)
                                          : std::string()));
        }
        x.group = v.s;
        x.group_id = group_ids[v.s];
      } else if (key == "schbench" || key == "messaging" || key == "hackbench" ||
                 key == "pingpong" || key == "rt-app") {
        if (!x.kind.empty()) bad(file, v, "one subcommand per workload");
        if (v.kind != JNode::Kind::Array)
          bad(file, v, fmt::format("\"{}\": expected its arguments as an array", key));
        x.kind = key;
        args = &v;
      } else {
        bad(file, v,
            fmt::format("unknown workload key \"{}\" (group, schbench, messaging, hackbench, "
                        "pingpong, rt-app)",
                        key));
      }
    }
    if (!args)
      bad(file, w,
          "the workload names no subcommand (schbench, messaging, hackbench, pingpong, rt-app)");
    k.set_spawn_group(x.group_id);
    if (x.kind == "schbench") {
      SchbenchArgs a;
      parse_args(file, *args, x.kind, a, add_schbench_options);
      a.p.runtime_s = whole_s;
      const workload::SchbenchParams p = checked(file, *args, x.kind, [&] {
        workload::SchbenchParams q = schbench_params(a);
        q.seed = s.config.seed;
        workload::validate(q);
        return q;
      });
      x.schbench = std::make_unique<workload::Schbench>(k, p);
      x.schbench->start();
    } else if (x.kind == "messaging" || x.kind == "hackbench") {
      MessagingArgs a;
      x.hackbench = x.kind == "hackbench";
      parse_args(file, *args, x.kind, a,
                 x.hackbench ? add_hackbench_options : add_messaging_options);
      x.mp = checked(file, *args, x.kind, [&] {
        workload::MessagingParams q = x.hackbench ? hackbench_params(a) : messaging_params(a);
        workload::validate(q);
        return q;
      });
      x.simple_format = !x.hackbench && a.format == "simple";
      x.messaging = std::make_unique<workload::Messaging>(k, x.mp);
      x.messaging->start();
    } else if (x.kind == "rt-app") {
      RtAppArgs a;
      parse_args(file, *args, x.kind, a, add_rtapp_options);
      if (a.common.duration_s > 0)
        bad(file, *args,
            "rt-app arguments: --duration: every workload of a scenario runs for the file's "
            "\"duration_s\"");
      if (!a.logdir.empty())
        bad(file, *args,
            "rt-app arguments: --logdir: a scenario writes no rt-app logs (its report and "
            "--json summarise them; `schedtwin rt-app` writes them)");
      const std::string path = file_beside(file, a.taskset);
      // A task set's own errors name their place in it; one that cannot be read is named at
      // the workload that asked for it.
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path, ec))
        bad(file, *args,
            fmt::format("rt-app arguments: {}: {}", path,
                        std::filesystem::exists(path, ec) ? "not a regular file"
                                                          : "no such file (looked for beside the "
                                                            "scenario, then from here)"));
      x.rtapp_cfg = std::make_unique<workload::rtapp::Config>(
          workload::rtapp::parse_file(path, s.machine.nr_cpus()));
      if (c.input_notes)
        for (const std::string& note : x.rtapp_cfg->ignored)
          say_note(c, fmt::format("schedtwin: note: {}\n", note));
      if (c.input_notes && x.rtapp_cfg->duration_s > 0 && x.rtapp_cfg->duration_s != duration_s)
        say_note(c, fmt::format("schedtwin: note: {}: its \"duration\" ({} s) gives way to the "
                                "scenario's \"duration_s\" ({} s): every workload of a scenario "
                                "runs for it\n",
                                path, x.rtapp_cfg->duration_s, duration_s));
      x.rtapp = std::make_unique<workload::rtapp::Runner>(*x.rtapp_cfg, k,
                                                          workload::rtapp::RowDetail::SummaryOnly);
    } else {
      PingpongArgs a;
      parse_args(file, *args, x.kind, a, add_pingpong_options);
      a.runtime_s = duration_s;
      x.pp = checked(file, *args, x.kind, [&] {
        workload::PingpongParams q = pingpong_params(a);
        workload::validate(q);
        return q;
      });
      x.pingpong = std::make_unique<workload::Pingpong>(k, x.pp);
      x.pingpong->start();
    }
    ws.push_back(std::move(x));
  }
  // A group no workload names and no task entered (an rt-app "taskgroup" of its path) is most
  // likely a misspelt "group" key elsewhere. One pass over the tasks and groups, not one per
  // group: a scenario may hold 100 000 of each.
  std::vector<bool> entered(static_cast<std::size_t>(k.nr_task_groups()), false);
  for (kernel::TaskId t = 0; t < k.nr_tasks(); ++t)
    entered[static_cast<std::size_t>(k.task_group_of(t))] = true;
  for (int h = 1; h < k.nr_task_groups(); ++h)
    entered[static_cast<std::size_t>(k.task_group(h).parent)] = true;
  if (groups)
    for (const auto& [name, g] : groups->members)
      if (std::none_of(ws.begin(), ws.end(),
                       [&n = name](const Workload& w) { return w.group == n; }) &&
          !entered[static_cast<std::size_t>(group_ids.at(name))])
        fmt::print(stderr,
                   "schedtwin: warning: {}:{}:{}: group \"{}\": no workload runs in it\n", file,
                   g.line, g.col, name);
  k.set_spawn_group(0);
  const auto t0 = std::chrono::steady_clock::now();
  const Time end = static_cast<Time>(duration_s * 1e9);
  k.run_until(end);
  for (Workload& w : ws) {
    if (w.messaging) {
      w.messaging_finished = w.messaging->finished();
      w.messaging_at_end = w.messaging->result();
    }
    if (w.pingpong) w.pingpong_at_end = w.pingpong->result();
  }
  // schbench ends at the main thread's next once-a-second check and joins its threads:
  // let the run go on (at most a few seconds) until those that ran the duration finish.
  // The other workloads go on meanwhile, as background; their reports stop at `end`.
  for (int extra = 0; extra < 50; ++extra) {
    bool pending = false;
    for (const Workload& w : ws) pending |= w.schbench && !w.schbench->finished();
    if (!pending) break;
    k.run_until(k.now() + kNsPerSec / 10);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  traces.finish();

  std::string text =
      fmt::format("scenario {} on {} ({} CPUs), kernel {}{}{}, seed {}: {} s\n", file,
                  s.machine.name, s.machine.nr_cpus(), s.config.profile.name,
                  c.features.empty() ? "" : " + ", c.features, s.config.seed, duration_s);
  nlohmann::json j = common_json("run", s, k, wall);
  for (size_t i = 0; i < ws.size(); ++i) {
    Workload& w = ws[i];
    // The root group as the scenario file may name it.
    const std::string group = w.group.empty() ? "/" : w.group;
    text += fmt::format("\n== workload {}: {} in group \"{}\"\n", i, w.kind, group);
    nlohmann::json& jw = j["workloads"][i];
    jw["kind"] = w.kind;
    jw["group"] = group;
    if (w.schbench) {
      workload::SchbenchResult r = w.schbench->result();
      if (whole_s != duration_s)
        text += fmt::format("(schbench -r takes whole seconds: it ran {} s)\n", whole_s);
      text += schbench_text(r);
      jw["runtime_s"] = whole_s;
      jw["wakeup_latency_us"] = schbench_latency_json(r.final_table);
      jw["samples"] = r.final_table.samples;
    } else if (w.rtapp) {
      for (const std::string& d : w.rtapp->self_deadlocks())
        fmt::print(stderr, "schedtwin: warning: {}: {}\n", w.rtapp_cfg->path, d);
      RtAppOutcome r;
      rtapp_task_report(*w.rtapp_cfg, *w.rtapp, read_kernel_figures(*w.rtapp), false, false, r,
                        jw["tasks"]);
      text += fmt::format("rt-app {}\n", w.rtapp_cfg->path) + r.summary;
      jw["taskset"] = w.rtapp_cfg->path;
      jw["timer_tasks"] = r.timer_tasks;
    } else if (w.messaging) {
      const workload::MessagingResult& r = w.messaging_at_end;
      if (w.messaging_finished) {
        text += w.hackbench ? hackbench_text(w.mp.groups, w.mp.fds, w.mp.loops, w.mp.datasize,
                                             w.mp.threads, r.total_time())
                            : perf_messaging_text(w.mp.groups, w.mp.fds, w.mp.threads,
                                                  r.total_time(), w.simple_format);
        jw["total_time_s"] = static_cast<double>(r.total_time()) / 1e9;
      } else {
        // What the tool has printed when it is stopped before the end: its header lines.
        text += w.hackbench ? hackbench_header(w.mp.groups, w.mp.fds, w.mp.loops, w.mp.datasize,
                                               w.mp.threads)
                            : perf_messaging_header(w.mp.groups, w.mp.fds, w.mp.threads);
        text += fmt::format("did not finish: {} messages in {} s\n", r.messages, duration_s);
      }
      jw["messages"] = r.messages;
      jw["finished"] = w.messaging_finished;
    } else {
      const workload::PingpongResult& r = w.pingpong_at_end;
      text += pingpong_text(w.pp, r);
      jw["throughput_gbps"] = r.throughput_bps() / 1e9;
      jw["ops_per_s"] = r.ops_per_s();
    }
  }
  add_kernel_reports(c, k, text, j);
  ScenarioOutcome out;
  out.text = std::move(text);
  out.json = std::move(j);
  return out;
}

void register_run_command(CLI::App& app) {
  struct Opts {
    CommonOptions common;
    std::string scenario;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Run a scenario: several workloads (schbench, messaging, hackbench, pingpong, rt-app) at\n"
      "once, each in a task group with cpu.weight / cpu.idle / cpu.latency-nice, for the\n"
      "file's duration_s (see README, \"Scenarios\").");
  sub->add_option("scenario", o->scenario, "Scenario file (JSON)")->required();
  add_common_options(*sub, o->common);
  // The file's own keys stand unless the option is given: the help says so, with the
  // defaults that apply to a file without the key.
  for (const auto& [opt, key, fallback] :
       {std::tuple{"--machine", "machine", "hikey"}, std::tuple{"--kernel", "kernel", "v5.4"},
        std::tuple{"--features", "features", "the profile's flags"},
        std::tuple{"--seed", "seed", "1"}}) {
    CLI::Option* option = sub->get_option(opt);
    option->default_str("");
    option->description(fmt::format("{}; replaces the file's \"{}\" (without either: {})",
                                    option->get_description(), key, fallback));
  }
  sub->callback([o, sub] {
    ScenarioOverrides ov;
    ov.machine = sub->get_option("--machine")->count() > 0;
    ov.kernel = sub->get_option("--kernel")->count() > 0;
    ov.features = sub->get_option("--features")->count() > 0;
    ov.seed = sub->get_option("--seed")->count() > 0;
    ScenarioOutcome out =
        run_scenario(workload::read_relaxed_json_file(o->scenario), o->scenario, o->common, ov);
    emit_report(out.text, out.json, o->common.json_out);
  });
}

}  // namespace schedtwin::cli
