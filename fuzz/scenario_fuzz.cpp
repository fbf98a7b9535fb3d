// libFuzzer harness: scenario files of `schedtwin run` (cli/run_cmd run_scenario, which
// parses and runs in one go). Before running, the parsed tree is bounded so that one input
// stays cheap and touches no file:
//   - "duration_s" in (0, 3600] becomes at most 0.02 (other values stay, to reach the errors);
//   - "machine" must be a compiled-in preset other than "host" (which reads this machine's
//     /sys); any other string becomes "no-such-machine" (the unknown-machine error), so that
//     no path is opened;
//   - an rt-app workload's task set becomes "no-such-taskset.json" (the cannot-open error),
//     so that no path is opened (rtapp_fuzz covers task sets);
//   - at most kMaxWorkloads workloads; no pingpong beside a schbench (run_scenario runs on
//     until schbench's once-a-second check ends it, and pingpong keeps going meanwhile, about
//     a million events a second), and a messaging or hackbench beside one without a loops
//     option gets "-l 9" (its default of 100 loops ran the whole second);
//   - in workload arguments every number collapses to its first digit ("24" -> "2",
//     "--threads=100" -> "--threads=1", "0x40" -> "0", "1e9" -> "1"), so schbench, messaging
//     and pingpong create a few hundred tasks at most.
// The invariant checker (--check) costs O(CPUs + tasks) after every event, about 30 times
// more under ASan: it is on only on the hikey preset (the default, 8 CPUs), without a
// schbench (which stretches the run to 1 s), and then for at most kMaxCheckedDurationS.
// See README.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/run_cmd.h"
#include "fuzz_sim.h"

namespace {

using schedtwin::workload::JNode;

constexpr std::size_t kMaxWorkloads = 4;
constexpr double kMaxDurationS = 0.02;
constexpr double kMaxCheckedDurationS = 0.002;

bool is_number_char(char ch) {
  return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') ||
         ch == 'x' || ch == 'X' || ch == '.' || ch == '+';
}

std::string collapse_numbers(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    out += s[i];
    if (s[i] >= '0' && s[i] <= '9') {
      ++i;
      while (i < s.size() && is_number_char(s[i])) ++i;
    } else {
      ++i;
    }
  }
  return out;
}

bool allowed_machine(const std::string& name) {
  if (name == "host") return false;
  for (const auto& [stem, text] : schedtwin::machine::embedded_presets())
    if (stem == name) return true;
  return false;
}

// Beside a schbench a messaging or hackbench run keeps going for schbench's whole second: one
// left at its default of 100 loops took 7 s under ASan. Without a loops option it gets
// "-l 9", the most a collapsed number allows.
void bound_default_loops(JNode& args) {
  for (const JNode& a : args.items)
    if (a.kind == JNode::Kind::String &&
        (a.s.rfind("-l", 0) == 0 || a.s.rfind("--nr_loops", 0) == 0 ||
         a.s.rfind("--loops", 0) == 0))
      return;
  for (const char* s : {"-l", "9"}) {
    JNode x;
    x.kind = JNode::Kind::String;
    x.s = s;
    x.line = args.line;
    x.col = args.col;
    args.items.push_back(x);
  }
}

// Bounds root in place; returns whether the run may afford --check.
bool bound(JNode& root) {
  if (root.kind != JNode::Kind::Object) return true;
  bool small_machine = true;
  bool schbench = false;
  JNode* duration = nullptr;
  for (auto& [key, v] : root.members) {
    if (key == "duration_s" && v.is_number()) {
      duration = &v;
      if (v.number() > kMaxDurationS && v.number() <= 3600) {
        v.kind = JNode::Kind::Float;
        v.f = kMaxDurationS;
      }
    } else if (key == "machine" && v.kind == JNode::Kind::String) {
      if (!allowed_machine(v.s)) v.s = "no-such-machine";
      small_machine = v.s == "hikey";  // the last "machine" key wins in run_scenario
    } else if (key == "workloads" && v.kind == JNode::Kind::Array) {
      if (v.items.size() > kMaxWorkloads) v.items.resize(kMaxWorkloads);
      for (JNode& w : v.items)
        for (auto& [wk, args] : w.members) {
          schbench |= wk == "schbench";
          for (JNode& a : args.items)
            if (a.kind == JNode::Kind::String)
              a.s = wk == "rt-app" && !a.s.starts_with('-') ? "no-such-taskset.json"
                                                            : collapse_numbers(a.s);
        }
      if (schbench) {
        std::erase_if(v.items, [](const JNode& w) {
          return std::any_of(w.members.begin(), w.members.end(),
                             [](const auto& m) { return m.first == "pingpong"; });
        });
        for (JNode& w : v.items)
          for (auto& [wk, args] : w.members)
            if ((wk == "messaging" || wk == "hackbench") && args.kind == JNode::Kind::Array)
              bound_default_loops(args);
      }
    }
  }
  const bool check = small_machine && !schbench;
  if (check && duration && duration->number() > kMaxCheckedDurationS &&
      duration->number() <= kMaxDurationS) {
    duration->kind = JNode::Kind::Float;
    duration->f = kMaxCheckedDurationS;
  }
  return check;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedtwin;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    JNode root = workload::parse_relaxed_json(text, "fuzz-scenario.json");
    cli::CommonOptions c;  // machine hikey, kernel v5.4, seed 1, no output files
    c.check = bound(root);
    const cli::ScenarioOutcome out = cli::run_scenario(root, "fuzz-scenario.json", c, {});
    if (out.text.empty() || out.json.dump().empty()) fuzz::finding("empty scenario output");
  } catch (const InputError&) {
    // The expected outcome for bad input.
  }
  return 0;
}
