// `schedtwin run SCENARIO.json`: two workloads in two groups, their own output shapes, the
// JSON document, overrides from the command line, and one clear line for bad scenarios.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_test_util.h"

using namespace schedtwin;
namespace fs = std::filesystem;

namespace {

using Result = testutil::CliResult;
using testutil::run_bin;

// This test process's files, in one directory removed when the process exits.
const std::filesystem::path& scratch_dir() {
  static const struct Dir {
    std::filesystem::path path = testutil::fresh_dir("run");
    ~Dir() { std::filesystem::remove_all(path); }
  } dir;
  return dir.path;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string p = (scratch_dir() / name).string();
  std::ofstream(p) << text;
  return p;
}

const char* kScenario = R"({
  "machine": "hikey", "kernel": "v5.17", "features": "sched-idle-balancing", "duration_s": 1,
  "groups": { "normal": {}, "noise": { "cpu.idle": 1 } },
  "workloads": [ { "group": "normal", "schbench": ["-m", "1", "-t", "2", "-w", "0"] },
                 { "group": "noise", "messaging": ["-g", "1", "-l", "100000"] } ] })";

}  // namespace

TEST(CliRun, TwoWorkloadsInTheirGroups) {
  std::string f = write_temp("s.json", kScenario);
  std::string j = write_temp("out.json", "");
  std::filesystem::remove(j);
  Result r = run_bin("run " + f + " --json " + j);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("== workload 0: schbench in group \"normal\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Latency percentiles (usec) runtime 1 (s)"), std::string::npos);
  EXPECT_NE(r.out.find("== workload 1: messaging in group \"noise\""), std::string::npos);
  // 1 s is too short for 100000 loops: perf's header, printed at the start, then the count.
  EXPECT_NE(r.out.find("== workload 1: messaging in group \"noise\"\n"
                       "# Running 'sched/messaging' benchmark:\n"
                       "# 20 sender and receiver processes per group\n"
                       "# 1 groups == 40 processes run\n\n"
                       "did not finish: "),
            std::string::npos)
      << r.out;
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(j));
  EXPECT_EQ(doc["command"], "run");
  EXPECT_EQ(doc["kernel"], "v5.17");
  EXPECT_TRUE(doc["workloads"][0].contains("wakeup_latency_us"));
  EXPECT_FALSE(doc["workloads"][1]["finished"].get<bool>());
  EXPECT_GT(doc["workloads"][1]["messages"].get<double>(), 0);
  // --features on the command line overrides the file; same seed, same bytes.
  Result base = run_bin("run " + f + " --features NO_SIB_BALANCE");
  EXPECT_EQ(base.rc, 0);
  EXPECT_EQ(run_bin("run " + f).out, r.out);
}

// A workload without a group runs in the root group, named "/" in the text and in --json,
// as the scenario file may name it.
TEST(CliRun, TheRootGroupIsSlashInTextAndJson) {
  std::string f =
      write_temp("root.json",
                 R"({"duration_s": 0.05, "workloads": [{"schbench": ["-m", "1", "-t", "1"]},
                                            {"group": "/", "schbench": ["-m", "1", "-t", "1"]}]})");
  std::string j = write_temp("root-out.json", "");
  Result r = run_bin("run " + f + " --json " + j);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("== workload 0: schbench in group \"/\""), std::string::npos) << r.out;
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(j));
  EXPECT_EQ(doc["workloads"][0]["group"], "/");
  EXPECT_EQ(doc["workloads"][1]["group"], "/");
}

// A workload's own output options apply: messaging's --format simple prints the time alone,
// as `perf bench --format simple sched messaging` does (trial 13: it was ignored).
TEST(CliRun, MessagingFormatSimpleInAWorkload) {
  std::string f = write_temp(
      "simple.json",
      R"({"duration_s": 1, "workloads": [{"messaging": ["-g", "1", "-l", "5", "--format", "simple"]}]})");
  Result r = run_bin("run " + f);
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string after = r.out.substr(r.out.find("== workload 0: messaging in group \"/\"\n"));
  EXPECT_EQ(after.find("Total time"), std::string::npos) << r.out;
  EXPECT_EQ(after.find("# Running"), std::string::npos) << r.out;
}

TEST(CliRun, BadScenariosGetOneLineWithPosition) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {R"({"duration_s": 1})", "\"workloads\" is missing"},
      {R"({"duration_s": 0, "workloads": [{"schbench": []}]})",
       "1:2: \"duration_s\": expected seconds"},
      {R"({"duration_s": 1, "workloads": [{"group": "x", "schbench": []}]})", "no group \"x\""},
      {R"({"duration_s": 1, "groups": {"a": {}}, "workloads": [{"group": "/a", "schbench": []}]})",
       "no group \"/a\" in \"groups\" (a group is named without the root's \"/\": \"a\")"},
      // Found by a fresh-user trial: a misspelt group got no suggestion.
      {R"({"duration_s": 1, "groups": {"noise": {}}, "workloads": [{"group": "nosie", "schbench": []}]})",
       "no group \"nosie\" in \"groups\" (did you mean \"noise\"?)"},
      {R"({"duration_s": 1, "workloads": [{"fio": []}]})", "unknown workload key \"fio\""},
      {R"({"duration_s": 1, "groups": {"g": {"cpu.idle": 2}}, "workloads": [{"schbench": []}]})",
       "\"cpu.idle\" is 0 or 1"},
      {R"({"duration_s": 1, "groups": {"g": {"cpu.latency-nice": 0}}, "workloads": [{"schbench": []}]})",
       "\"cpu.latency-nice\" 0 is outside 1..100"},
      // The value as written, not clamped to what an int holds.
      {R"({"duration_s": 1, "groups": {"g": {"cpu.weight": -100}}, "workloads": [{"schbench": []}]})",
       "group \"g\": \"cpu.weight\" -100 is outside 1..10000"},
      {R"({"duration_s": 1, "groups": {"g": {"cpu.weight": 18446744073709551615}},
          "workloads": [{"schbench": []}]})",
       "\"cpu.weight\" 18446744073709551615 is outside 1..10000"},
      {R"({"duration_s": 1, "workloads": [{"schbench": ["-m", "x"]}]})", "schbench arguments:"},
      {R"({"duration_s": 1, "workloads": [{"messaging": ["--help"]}]})",
       "messaging arguments: --help is not a workload's argument"},
      // Unknown words in the file's order (CLI11's own message lists them reversed).
      {R"({"duration_s": 1, "workloads": [{"schbench": ["-q", "2", "-m", "1"]}]})",
       "schbench arguments: unknown option -q; not expected: -q 2"},
      // An option of the real tool is named as such, as on the command line.
      {R"({"duration_s": 1, "workloads": [{"schbench": ["-R", "10"]}]})",
       "schbench arguments: -R is an option of the real schbench that the model does not have "
       "(modelled: "},
      {R"({"duration_s": 1, "bogus": 1, "workloads": [{"schbench": []}]})",
       "unknown key \"bogus\""},
      {R"({"global": {"duration": 1}, "tasks": {"t": {"run": 100}}})",
       "unknown key \"global\" (expected machine, kernel, features, seed, duration_s, groups, "
       "workloads); an rt-app task set runs with `schedtwin rt-app`"},
      // The file's machine, kernel and features are named by their place in it.
      {R"({"duration_s": 1, "kernel": "v5.5", "workloads": [{"schbench": []}]})",
       ":1:19: \"kernel\": unknown kernel profile 'v5.5' (known: v5.3"},
      {R"({"duration_s": 1, "machine": "nope", "workloads": [{"schbench": []}]})",
       ":1:19: \"machine\": unknown machine 'nope'"},
      {R"({"duration_s": 1, "features": "FOO", "workloads": [{"schbench": []}]})",
       ":1:19: \"features\": unknown feature 'FOO'"},
      // Duplicate keys (the reader keeps them, as rt-app files need) are refused here.
      {R"({"duration_s": 1, "machine": "hikey", "machine": "xeon-2s-88", "workloads": [{"schbench": []}]})",
       ":1:39: \"machine\" appears twice (first at 1:19)"},
      {R"({"duration_s": 1, "groups": {"g": {}, "g": {}}, "workloads": [{"schbench": []}]})",
       "\"g\" appears twice"},
      // The run length is the file's.
      {R"({"duration_s": 1, "workloads": [{"pingpong": ["--threads", "2", "-r", "5"]}]})",
       "pingpong arguments: -r/--runtime: every workload of a scenario runs for the file's "
       "\"duration_s\""},
      {R"({"duration_s": 1, "workloads": [{"schbench": ["--runtime", "5"]}]})",
       "schbench arguments: -r/--runtime"},
      // A group is one directory under the root: "" would read as the root, "a/b" as nesting.
      {R"({"duration_s": 1, "groups": {"": {"cpu.weight": 5}}, "workloads": [{"schbench": []}]})",
       "group \"\": a group name is one cgroup directory name"},
      {R"({"duration_s": 1, "groups": {"a/b": {}}, "workloads": [{"schbench": []}]})",
       "group \"a/b\": a group name is one cgroup directory name"},
      {R"({"duration_s": 1, "groups": {"..": {}}, "workloads": [{"schbench": []}]})",
       "group \"..\": a group name"},
      // An rt-app task set runs for the scenario's duration and writes no logs.
      {R"({"duration_s": 1, "workloads": [{"rt-app": ["t.json", "--duration", "2"]}]})",
       "rt-app arguments: --duration: every workload of a scenario runs for the file's"},
      {R"({"duration_s": 1, "workloads": [{"rt-app": ["t.json", "--logdir", "x"]}]})",
       "rt-app arguments: --logdir: a scenario writes no rt-app logs"},
      {R"({"duration_s": 1, "workloads": [{"rt-app": []}]})", "rt-app arguments:"},
      {R"({"duration_s": 1, "workloads": [{"rt-app": ["missing.json"]}]})",
       "1:34: rt-app arguments: "},
      {R"({"duration_s": 1, "workloads": [{"rt-app": ["/dev/zero"]}]})",
       "rt-app arguments: /dev/zero: not a regular file"},
      // An unsupported cgroup key is unknown whatever its value.
      {R"({"duration_s": 1, "groups": {"g": {"cpu.max": "1 2"}}, "workloads": [{"schbench": []}]})",
       "group \"g\": unknown key \"cpu.max\""},
  };
  int i = 0;
  for (const Case& c : cases) {
    std::string f = write_temp("bad" + std::to_string(i++) + ".json", c.text);
    Result r = run_bin("run " + f, true);
    EXPECT_NE(r.out.find(c.want), std::string::npos) << c.text << " -> " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    Result rc = run_bin("run " + f);
    EXPECT_EQ(rc.rc, 1) << c.text;
  }
}

// An rt-app task set (found beside the scenario file) joins its workload's group: the
// sched-idle fallback's experiment in one file. Four 1 ms-every-10 ms threads beside a
// hackbench that keeps every CPU busy: with the hackbench in a cpu.idle group the threads
// wake onto sched-idle CPUs and preempt at once; in a normal group they wait their turn. The
// report is rt-app's, and compare names its metrics as rt-app's own.
TEST(CliRun, AnRtAppTaskSetRunsInItsGroup) {
  write_temp("lat.json", R"({ // comments, as real task sets have
    "tasks": { "lat": { "instance": 4, "run": 1000, "timer": { "ref": "unique", "period": 10000 } } },
    "global": { "duration": 2 } })");
  auto scenario = [](const char* noise) {
    return fmt::format(R"({{ "machine": "hikey", "kernel": "v5.4", "duration_s": 0.5,
      "groups": {{ "normal": {{}}, "noise": {} }},
      "workloads": [ {{ "group": "normal", "rt-app": ["lat.json"] }},
                     {{ "group": "noise", "hackbench": ["-g", "2", "-l", "100000"] }} ] }})",
                       noise);
  };
  const std::string idle = write_temp("rt-idle.json", scenario(R"({ "cpu.idle": 1 })"));
  const std::string normal = write_temp("rt-normal.json", scenario("{}"));
  Result r = run_bin("run " + idle + " --json -");
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& w = doc.at("workloads").at(0);
  EXPECT_EQ(w.at("kind"), "rt-app");
  EXPECT_EQ(w.at("timer_tasks"), nlohmann::json::array({"lat"}));
  const nlohmann::json& lat = w.at("tasks").at("lat");
  // 49 periods of 4 threads in 0.5 s (kept short: the sanitizer step runs it with --check)
  EXPECT_EQ(lat.at("wu_lat_us").at("n").get<int>(), 196);
  const double idle_delay = lat.at("run_delay_ms").get<double>();
  Result n = run_bin("run " + normal + " --json -");
  ASSERT_EQ(n.rc, 0) << n.out;
  const double normal_delay = nlohmann::json::parse(n.out)
                                  .at("workloads")
                                  .at(0)
                                  .at("tasks")
                                  .at("lat")
                                  .at("run_delay_ms")
                                  .get<double>();
  EXPECT_LT(idle_delay * 5, normal_delay) << idle_delay << " " << normal_delay;
  // The text and the note that the task set's own duration gives way.
  Result t = run_bin("run " + idle);
  EXPECT_NE(t.out.find("== workload 0: rt-app in group \"normal\""), std::string::npos) << t.out;
  EXPECT_EQ(run_bin("run " + idle).out, t.out);  // same seed, same bytes
  EXPECT_NE(t.out.find("per task, over its threads"), std::string::npos);
  Result e = run_bin("run " + idle, true);
  EXPECT_NE(e.out.find("its \"duration\" (2 s) gives way to the scenario's \"duration_s\""),
            std::string::npos)
      << e.out;
  EXPECT_NE(e.out.find("group \"noise\": \"cpu.idle\" came with v5.15; kernel v5.4 has no such "
                       "file"),
            std::string::npos)
      << e.out;
  // compare says the notes once, and the group's warning once per configuration.
  Result cn = run_bin("compare --runs 3 --with v5.3 -- run " + idle, true);
  auto count = [&](const std::string& what) {
    int n = 0;
    for (std::size_t at = cn.out.find(what); at != std::string::npos;
         at = cn.out.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("gives way to the scenario's"), 1) << cn.out;
  EXPECT_EQ(count("\"cpu.idle\" came with v5.15; kernel v5.4"), 1) << cn.out;
  EXPECT_EQ(count("\"cpu.idle\" came with v5.15; kernel v5.3"), 1) << cn.out;
  Result c = run_bin("compare --runs 1 --with v5.3 -- run " + idle);
  ASSERT_EQ(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("w0.rt-app.lat.wu_lat_us.mean"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("w0.rt-app.lat.run_delay_ms"), std::string::npos);
}

// schbench -r takes whole seconds, so beside one a 0.3 s scenario runs on to 1 s; pingpong's
// report still covers the 0.3 s the file asked for.
TEST(CliRun, ReportsCoverDurationEvenWhenSchbenchRunsAWholeSecond) {
  std::string f = write_temp("short.json", R"({ "machine": "hikey", "duration_s": 0.3,
    "groups": { "a": {} }, "workloads": [ { "group": "a", "pingpong": ["--threads", "1"] },
                                          { "group": "a", "schbench": ["-m", "1", "-t", "1"] } ] })");
  Result r = run_bin("run " + f);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("Total "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/   0.30(s) ="), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("/   1.00(s) ="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(schbench -r takes whole seconds: it ran 1 s)"), std::string::npos);
}

// A machine file named in a scenario is found beside the scenario file, whatever the working
// directory; one found nowhere is named with the scenario's place and the path looked at.
TEST(CliRun, AMachineFileIsFoundBesideTheScenario) {
  const fs::path dir = scratch_dir() / "beside";
  fs::create_directories(dir);
  ASSERT_EQ(run_bin("machine show hikey --json > " + (dir / "m.json").string()).rc, 0);
  std::ofstream(dir / "s.json")
      << R"({"machine": "m.json", "duration_s": 0.05, "workloads": [{"schbench": ["-m", "1", "-t", "2"]}]})";
  std::ofstream(dir / "t.json")
      << R"({"machine": "none.json", "duration_s": 0.05, "workloads": [{"schbench": ["-m", "1"]}]})";
  Result r = run_bin("run beside/s.json", false, scratch_dir().string());
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out.rfind("scenario beside/s.json on hikey (8 CPUs)", 0), 0u) << r.out;
  r = run_bin("run " + (dir / "t.json").string(), true, "/");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "schedtwin: " + (dir / "t.json").string() + ":1:2: \"machine\": " +
                       (dir / "none.json").string() + ": cannot read machine file (no such file)\n");
}

// A scenario's first tasks are forked with the traces already open: their sched_wakeup_new
// and fork records are there, as for a subcommand's.
TEST(CliRun, TheFirstTasksOfEachWorkloadAreTracedAndExplained) {
  const std::string ft = (scratch_dir() / "first.ft").string();
  const std::string ex = (scratch_dir() / "first.ex").string();
  Result r = run_bin("run " + std::string(SCHEDTWIN_SOURCE_DIR) +
                     "/tests/fixtures/golden-scenario.json --ftrace " + ft + " --explain=" + ex);
  ASSERT_EQ(r.rc, 0);
  std::ifstream f(ft), e(ex);
  std::stringstream fs_, es;
  fs_ << f.rdbuf();
  es << e.rdbuf();
  EXPECT_NE(fs_.str().find("sched_wakeup_new: comm=schbench pid=1 "), std::string::npos);
  EXPECT_NE(fs_.str().find("sched_wakeup_new: comm=sched-messaging pid=2 "), std::string::npos);
  EXPECT_NE(es.str().find("] cpu0 fork schbench[1]: "), std::string::npos);
}

// --trace-comm takes one comma-separated list: the scenario file after it stays the file.
TEST(CliRun, TraceCommBeforeTheFileLeavesTheFile) {
  const std::string ft = (scratch_dir() / "comm.ft").string();
  Result r = run_bin("run --trace-comm schbench " + std::string(SCHEDTWIN_SOURCE_DIR) +
                     "/tests/fixtures/golden-scenario.json --ftrace " + ft);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::ifstream f(ft);
  int events = 0;
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++events;
    EXPECT_NE(line.find("comm=schbench"), std::string::npos) << line;
  }
  EXPECT_GT(events, 0);
}

// A group that no workload names is said (a misspelt "group" key is the usual cause).
TEST(CliRun, AGroupNoWorkloadUsesIsAWarning) {
  const std::string f = write_temp(
      "unused.json",
      R"({"duration_s": 0.05, "groups": {"used": {}, "spare": {}}, "workloads": [{"group": "used", "schbench": ["-m", "1", "-t", "1"]}]})");
  Result r = run_bin("run " + f, true);
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "schedtwin: warning: " + f + ":1:45: group \"spare\": no workload runs in it\n");
}

// An rt-app "taskgroup" names a cgroup path of the one hierarchy: the scenario's group of that
// path, and the same group for every task set that names it. On one CPU a root hog against two
// hogs in "/heavy" (cpu.weight 300) gets a quarter: the two share the group's three quarters.
TEST(CliRun, AnRtAppTaskgroupIsTheScenariosGroupOfThatPath) {
  auto hog = [](const char* file, const char* name, const char* group) {
    write_temp(file, fmt::format(R"({{ "tasks": {{ "{}": {{ "instance": 1, "run": -1,
      "cpus": [0]{} }} }}, "global": {{ "duration": 1 }} }})",
                                 name, group));
  };
  hog("tg-root.json", "hogA", "");
  hog("tg-heavy1.json", "hogT", R"(, "taskgroup": "/heavy")");
  hog("tg-heavy2.json", "hogU", R"(, "taskgroup": "/heavy")");
  const std::string scenario = write_temp("tg-scenario.json", R"({ "machine": "hikey",
    "kernel": "v5.17", "duration_s": 1, "groups": { "heavy": { "cpu.weight": 300 } },
    "workloads": [ { "rt-app": ["tg-root.json"] }, { "rt-app": ["tg-heavy1.json"] },
                   { "rt-app": ["tg-heavy2.json"] } ] })");
  Result e = run_bin("run " + scenario, true);
  ASSERT_EQ(e.rc, 0) << e.out;
  EXPECT_EQ(e.out.find("no workload runs in it"), std::string::npos) << e.out;
  Result r = run_bin("run " + scenario + " --json -");
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  auto runtime = [&](int w, const char* task) {
    return doc.at("workloads").at(w).at("tasks").at(task).at("runtime_ms").get<double>();
  };
  const double root = runtime(0, "hogA"), heavy = runtime(1, "hogT") + runtime(2, "hogU");
  EXPECT_NEAR(heavy / root, 3.0, 0.3) << root << " " << heavy;
  EXPECT_NEAR(runtime(1, "hogT") / runtime(2, "hogU"), 1.0, 0.1);
}

// A scenario's "seed" takes the whole u64 range, as --seed does (it was clamped to 2^63 - 1).
TEST(CliRun, AScenarioSeedAboveInt64IsKept) {
  const std::string s = write_temp("seed.json", R"({ "machine": "hikey", "duration_s": 0.05,
    "seed": 18446744073709551615, "workloads": [ { "schbench": ["-m", "1", "-t", "1"] } ] })");
  Result r = run_bin("run " + s);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("seed 18446744073709551615"), std::string::npos) << r.out;
}

// A cgroup directory name is at most NAME_MAX (255) bytes.
TEST(CliRun, AGroupNameLongerThanNameMaxIsRefused) {
  const std::string s =
      write_temp("longname.json", fmt::format(R"({{ "duration_s": 1, "groups": {{ "{}": {{}} }},
      "workloads": [ {{ "schbench": [] }} ] }})",
                                              std::string(256, 'g')));
  Result r = run_bin("run " + s, true);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("at most 255 bytes (NAME_MAX)"), std::string::npos) << r.out;
}

// cpu.latency-nice changes nothing unless LATENCY_NICE_SIS reads it: the run says so.
TEST(CliRun, LatencyNiceWithoutItsFeatureIsAWarning) {
  const std::string s = write_temp("ln.json", R"({ "machine": "hikey", "duration_s": 0.01,
    "groups": { "lat": { "cpu.latency-nice": 50 } },
    "workloads": [ { "group": "lat", "schbench": ["-m", "1", "-t", "1"] } ] })");
  const char* warning = "\"cpu.latency-nice\" is read only by LATENCY_NICE_SIS";
  Result off = run_bin("run " + s, true);
  ASSERT_EQ(off.rc, 0) << off.out;
  EXPECT_NE(off.out.find(warning), std::string::npos) << off.out;
  Result on = run_bin("run " + s + " --features latency-nice", true);
  ASSERT_EQ(on.rc, 0) << on.out;
  EXPECT_EQ(on.out.find(warning), std::string::npos) << on.out;
}
