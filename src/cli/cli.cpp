#include "cli/cli.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/host_exec.h"
#include "engine/error.h"
#include "engine/spelling.h"
#include "kernel/features.h"
#include "machine/machine.h"
#include "machine/machine_file.h"

namespace schedtwin::cli {

std::string parse_cost_override(const std::string& v, std::string& name, Time& ns) {
  const std::size_t eq = v.find('=');
  const std::vector<std::string_view> names = machine::cost_names();
  if (eq == std::string::npos)
    return fmt::format("expected NAME=NS, got '{}' (NAME one of {})", v, fmt::join(names, ", "));
  const std::string key = v.substr(0, eq);
  if (std::find(names.begin(), names.end(), key) == names.end())
    return fmt::format("unknown cost '{}'; {}known: {}", key,
                       engine::did_you_mean(key, names, '\''), fmt::join(names, ", "));
  const std::string val = v.substr(eq + 1);
  std::int64_t x = 0;
  const auto [end, ec] = std::from_chars(val.data(), val.data() + val.size(), x);
  if (val.empty() || ec != std::errc() || end != val.data() + val.size() || x < 0 ||
      x > machine::Machine::kMaxCostNs)
    return fmt::format("{}: expected an integer number of ns in 0..{} (10 ms), got '{}'", key,
                       machine::Machine::kMaxCostNs, val);
  name = key;
  ns = x;
  return "";
}

CLI::Validator file_name() {
  return CLI::Validator(
      [](std::string& v) { return v.empty() ? std::string("expected a path, got ''") : ""; }, "");
}

void add_common_options(CLI::App& sub, CommonOptions& o) {
  sub.add_option("--machine", o.machine, "Machine preset name or machine file (JSON)")
      ->type_name("NAME|FILE")
      ->capture_default_str();
  sub.add_option("--kernel", o.kernel,
                 fmt::format("Kernel profile: {}", fmt::join(kernel::profile_names(), ", ")))
      ->type_name("PROFILE")
      ->capture_default_str();
  sub.add_option("--features", o.features, kFeaturesHelp)->type_name("LIST");
  sub.add_option("--seed", o.seed, "Random seed (a non-negative integer)")
      ->check(CLI::Validator(
          [](std::string& v) {
            std::uint64_t seed = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
            if (!v.empty() && ec == std::errc() && end == v.data() + v.size()) return std::string();
            return ec == std::errc::result_out_of_range
                       ? "expected an integer below 2^64, got '" + v + "'"
                       : "expected a non-negative integer, got '" + v + "'";
          },
          ""))
      ->type_name("UINT")
      ->capture_default_str();
  sub.add_option("--hz", o.hz, "Override the machine kernel build's HZ")->check(range(100, 1000));
  sub.add_option("--cost", o.costs,
                 fmt::format("Replace one of the machine's cost figures, in ns at capacity 1024 "
                             "(again for another): {}; e.g. --cost idle_probe=100 to see how "
                             "much a result rests on that figure",
                             fmt::join(machine::cost_names(), ", ")))
      ->type_name("NAME=NS")
      ->allow_extra_args(false)  // one NAME=NS per --cost: a task set after it stays positional
      ->check(CLI::Validator(
          [](std::string& v) {
            std::string name;
            Time ns = 0;
            return parse_cost_override(v, name, ns);
          },
          ""));
  sub.add_option("--json", o.json_out,
                 "Write all figures of the run as one JSON document to FILE (\"-\": to stdout, "
                 "and the text report to stderr)")
      ->type_name("FILE")
      ->check(file_name());
  sub.add_flag("--lb-stats", o.lb_stats,
               "Print the load balancer's group classification counts (state x nr_running, as "
               "the runnable_avg series counted them) after the run; also in --json");
  // A flag that takes its file only as --explain=FILE: as an option with an optional value,
  // `rt-app --explain task.json --seed 2` took task.json for the log's file (and would have
  // written over it had another task set followed).
  sub.add_flag("--explain{-}", o.explain,  // bare: "-", stderr
               "Write the decision log: for each wakeup, fork and balance attempt, the candidates "
               "in the kernel's order, why each was taken or rejected, and the result (to "
               "stderr, or to FILE with --explain=FILE)")
      ->option_text("[=FILE]");
  sub.add_option("--explain-format", o.explain_format,
                 "Format of --explain: text (one line per decision) or jsonl")
      ->check(CLI::IsMember({"text", "jsonl"}))
      ->capture_default_str();
  sub.add_option("--explain-limit", o.explain_limit,
                 "Most --explain records written; later ones are counted")
      ->check(range(std::uint64_t{1}, std::uint64_t{100000000}))
      ->capture_default_str();
  sub.add_flag(
      "--check", o.check,
      "Verify the kernel model's invariants after every event (stops with a dump on a violation; "
      "counts wasted-core episodes)");
  sub.add_flag("--schedstat", o.schedstat,
               "Print /proc/schedstat (version 15) as it reads at the end of the run");
  sub.add_option(
         "--trace", o.trace_out,
         "Write a Perfetto trace (protobuf) to FILE: sched_switch, sched_waking, sched_wakeup, "
         "sched_wakeup_new, sched_migrate_task, task exit, cpu_idle, and "
         "util_avg/runnable_avg/load_avg counters per task and CPU (open in ui.perfetto.dev; at "
         "most --trace-limit events)")
      ->type_name("FILE")
      ->check(file_name());
  sub.add_option("--ftrace", o.ftrace_out,
                 "Write the same scheduler events as ftrace text to FILE (the layout of "
                 "/sys/kernel/tracing/trace; at most --trace-limit events)")
      ->type_name("FILE")
      ->check(file_name());
  sub.add_option_function<std::string>(
         "--trace-time",
         [&o](const std::string& v) {
           const std::string err = parse_trace_time(v, o.trace_from, o.trace_to);
           if (!err.empty()) throw CLI::ValidationError("--trace-time", err);
         },
         "Record in --trace, --ftrace and --explain only what happens in this window of "
         "simulated time, in seconds, as perf report --time takes it: START,STOP, START, "
         "(to the end) or ,STOP")
      ->type_name("START,STOP");
  sub.add_option("--trace-comm", o.trace_comms,
                 "Record in --trace and --ftrace only the events that name a task with one of "
                 "these comms (sched_switch: prev or next; cpu_idle, which names none, goes; "
                 "the per-CPU counters stay), and in --explain only these tasks' wakeups and "
                 "forks (comma-separated, exact comms as the trace shows them)")
      ->delimiter(',')
      ->allow_extra_args(false)  // one list per --trace-comm: a file after it stays positional
      ->type_name("COMM[,COMM...]");
  sub.add_option("--trace-limit", o.trace_limit,
                 "Most events written to each of --trace and --ftrace (one ftrace line or one "
                 "counter sample each; about 140 bytes of memory per ftrace line); later ones "
                 "are counted")
      ->check(range(std::uint64_t{1}, std::uint64_t{100000000}))
      ->capture_default_str();
}

std::string parse_trace_time(const std::string& v, Time& from, Time& to) {
  const std::string usage = fmt::format(
      "expected START,STOP in seconds of simulated time (either may be empty, e.g. 5,10 or "
      "5,), got '{}'",
      v);
  const std::size_t comma = v.find(',');
  if (comma == std::string::npos || v.find(',', comma + 1) != std::string::npos) return usage;
  auto seconds = [](std::string_view s, Time fallback, Time& out) {
    if (s.empty()) {
      out = fallback;
      return true;
    }
    double x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec != std::errc() || end != s.data() + s.size() || !(x >= 0) || x > 1e9) return false;
    out = static_cast<Time>(x * 1e9 + 0.5);
    return true;
  };
  Time f = 0, t = 0;
  if (!seconds(std::string_view(v).substr(0, comma), 0, f) ||
      !seconds(std::string_view(v).substr(comma + 1), kTimeNever, t))
    return usage;
  if (f >= t) return fmt::format("START must come before STOP, got '{}'", v);
  from = f;
  to = t;
  return {};
}

namespace {

std::vector<CLI::App*> subcommands_of(CLI::App& a) {
  return a.get_subcommands([](CLI::App*) { return true; });
}

std::string names_of(const std::vector<CLI::App*>& subs) {
  std::string out;
  for (const CLI::App* s : subs) out += (out.empty() ? "" : ", ") + s->get_name();
  return out;
}

// CLI11 answers both `schedtwin frobnicate` and `schedtwin machine` with "A subcommand is
// required". Walks the leading words of argv through the subcommand tree and returns the
// error line it should have been (naming the word and the choices), or "" where CLI11's own
// answer stands (an option comes first, or the words lead to a subcommand that needs none).
std::string subcommand_error(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = "schedtwin:";
  for (int i = 1; i <= argc; ++i) {
    const std::vector<CLI::App*> subs = subcommands_of(*at);
    if (subs.empty()) return "";
    if (i == argc)
      return fmt::format("{} a subcommand is required (one of: {})", path, names_of(subs));
    if (argv[i][0] == '-') return "";  // --help, --version, or CLI11's own error
    CLI::App* next = nullptr;
    for (CLI::App* s : subs)
      if (s->check_name(argv[i])) next = s;
    if (!next) {
      std::vector<std::string> names;
      for (const CLI::App* s : subs) names.push_back(s->get_name());
      const std::vector<std::string_view> known(names.begin(), names.end());
      return fmt::format("{} unknown subcommand '{}' ({}expected one of: {})", path, argv[i],
                         engine::did_you_mean(argv[i], known, '\''), names_of(subs));
    }
    at = next;
    path += " " + next->get_name() + ":";
  }
  return "";
}

// Options of the real tools that the model has no counterpart for: refused (a run cannot
// honour them), but not as a typo. Returns the options that are modelled, or nullptr when
// `flag` is not one of these. rt-tests hackbench 2.x: -F/--fifo (SCHED_FIFO main thread),
// -i/--inet (TCP sockets). schbench (2022-23 upstream, a superset of December 2021's):
// pipe mode, requests per second, auto modes, cache footprint, operations, no locking.
const char* real_tool_option(std::string_view tool, std::string_view flag) {
  struct Known {
    std::string_view tool;
    std::vector<std::string_view> flags;
    const char* modelled;
  };
  static const std::vector<Known> known = {
      {"hackbench", {"-F", "--fifo", "-i", "--inet"}, "-p -s -l -g -f -T -P"},
      {"schbench",
       {"-p", "--pipe", "-R", "--rps", "-A", "--auto-rps", "-a", "--auto", "-F",
        "--cache_footprint", "-n", "--operations", "-L", "--no-locking"},
       "-m -t -r -s -c -C -w -i -z"},
  };
  for (const Known& k : known)
    if (k.tool == tool && std::find(k.flags.begin(), k.flags.end(), flag) != k.flags.end())
      return k.modelled;
  return nullptr;
}

}  // namespace

std::string extra_arguments_text(const CLI::App& sub, const std::string& tool,
                                 const std::vector<std::string>& rest) {
  if (rest.empty()) return "unexpected arguments";
  const std::string& first = rest.front();
  const std::string tail =
      rest.size() > 1 ? fmt::format("; not expected: {}", fmt::join(rest, " ")) : "";
  const std::string_view flag = std::string_view(first).substr(0, first.find('='));
  if (const char* modelled = real_tool_option(tool, flag))
    return fmt::format("{} is an option of the real {} that the model does not have (modelled: {})",
                       flag, tool, modelled) +
           tail;
  if (first.size() > 1 && first[0] == '-') {
    std::vector<std::string> names;
    for (const CLI::Option* opt : sub.get_options())
      for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    const std::vector<std::string_view> known(names.begin(), names.end());
    const std::string near = engine::closest_spelling(std::string(flag), known);
    return fmt::format("unknown option {}{}", first,
                       near.empty() ? "" : fmt::format(" (did you mean {}?)", near)) +
           tail;
  }
  return fmt::format("argument{} not expected: {}", rest.size() > 1 ? "s" : "",
                     fmt::join(rest, " "));
}

namespace {

// CLI11 rejects `schedtwin compare --with v5.7 messaging -g 4` with "The following arguments
// were not expected: -g", which does not say that the benchmark's arguments go after `--`.
// Also: CLI11 2.3's ExtrasError lists the arguments in reverse ("not expected: 10 -p" for
// `-p 10`); the text is rebuilt from app.remaining(), which keeps the command line's order.
// The text names the subcommand and, for an unknown option, its nearest spelling.
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const CLI::App* sub = &app;
  std::string path;
  while (!sub->get_subcommands().empty()) {
    sub = sub->get_subcommands().front();
    path += (path.empty() ? "" : " ") + sub->get_name();
  }
  // "taskset is required" alone does not say which command wants it, nor what it is.
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !path.empty())
    return fmt::format("{}: {} (schedtwin {} --help says what it takes)", path, e.what(), path);
  const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
  if (!extras) return e.what();
  const std::vector<std::string> rest = app.remaining(true);
  std::string what = e.what();
  if (!rest.empty()) what = path + ": " + extra_arguments_text(*sub, path, rest);
  if (argc >= 2 && std::string_view(argv[1]) == "run" &&
      std::any_of(rest.begin(), rest.end(),
                  [](const std::string& r) { return r.rfind("--duration", 0) == 0; }))
    return what + "; run has no --duration: a scenario runs for its file's \"duration_s\"";
  if (argc < 2 || std::string_view(argv[1]) != "compare") return what;
  for (int i = 2; i < argc; ++i)
    if (std::string_view(argv[i]) == "--") {
      // A run's option given to compare itself (before "--"): say where it goes.
      const std::vector<std::string> run_options = common_option_names();
      for (int k = 2; k < i; ++k) {
        const std::string_view arg = argv[k];
        const std::string a(arg.substr(0, arg.find('=')));
        if (std::find(run_options.begin(), run_options.end(), a) == run_options.end()) continue;
        if (a == "--kernel" || a == "--features")
          return fmt::format(
              "compare: {} is said by --base and --with, each a SPEC (a profile, then flags): "
              "e.g. --base v6.6 --with v6.6,NO_SIS_PROP",
              a);
        if (a == "--seed") return "compare: --seed: compare runs seeds 1..N itself (--runs N)";
        if (a == "--machine" || a == "--hz" || a == "--cost")
          return fmt::format(
              "compare: {} is an option of the runs, not of compare: give it after \"--\" with "
              "the subcommand's arguments (e.g. compare --with NO_SIS_PROP -- messaging -g 4 {} "
              "...)",
              a, a);
      }
      return what;
    }
  return fmt::format(
      "compare: the subcommand and its arguments go after \"--\" (e.g. schedtwin compare "
      "--with v5.7 -- messaging -g 4); {}",
      what);
}

}  // namespace

std::vector<std::string> common_option_names() {
  CLI::App probe;
  CommonOptions defaults;
  add_common_options(probe, defaults);
  std::vector<std::string> names;
  for (const CLI::Option* opt : probe.get_options())
    if (opt != probe.get_help_ptr() && opt != probe.get_help_all_ptr())
      names.push_back(opt->get_name());
  return names;
}

namespace {

// CLI11 shows a flag that has a default value with it, as "--explain{-}"; the option text
// ("[=FILE]") already says what the flag takes.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (std::size_t open = name.find('{'); open != std::string::npos; open = name.find('{')) {
      const std::size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"schedtwin: a deterministic simulator of the Linux fair-class CPU scheduler"};
  app.name("schedtwin");
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands, which copy it
  app.require_subcommand(1);
  app.set_version_flag("--version", "schedtwin 0.1.0");
  // The main job and the A/B table first, then the workloads, then the machine tools.
  register_reproduce_command(app);
  register_compare_command(app);
  register_rtapp_command(app);
  register_messaging_commands(app);
  register_schbench_command(app);
  register_pingpong_command(app);
  register_run_command(app);
  register_machine_commands(app);
  register_domains_command(app);
  register_calibrate_command(app);
  register_validate_command(app);
  register_features_command(app);
  if (argc <= 1) {  // as perf and git do: what there is to run, rather than an error line
    fmt::print(stderr, "{}", app.help());
    return 2;
  }
  if (const std::string why = subcommand_error(app, argc, argv); !why.empty()) {
    fmt::print(stderr, "{}\n", why);
    return 2;
  }
  // CLI11 gives a flag written "--explain=" its bare value, stderr: a file name was meant.
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--explain=") {
      fmt::print(stderr,
                 "schedtwin: --explain=: expected a file name after '=' (--explain alone writes "
                 "to stderr)\n");
      return 2;
    }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "schedtwin: {}\n", parse_error_text(app, e, argc, argv));
    return 2;
  } catch (const UsageError& e) {
    fmt::print(stderr, "schedtwin: {}\n", e.what());
    return 2;
  } catch (const InputError& e) {
    fmt::print(stderr, "schedtwin: {}\n", e.what());
    return 1;
  } catch (const CheckFailed& e) {
    fmt::print(stderr, "schedtwin: {}\n", e.what());
    return 4;
  } catch (const host::Interrupted& e) {
    fmt::print(stderr, "schedtwin: {}\n", e.what());
    return 128 + e.signal();  // as a shell reports a process killed by the signal
  } catch (const std::exception& e) {
    fmt::print(stderr, "schedtwin: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace schedtwin::cli
