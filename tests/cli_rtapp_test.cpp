// End-to-end tests of `schedtwin rt-app` and `schedtwin reproduce`: exit codes, one-line
// errors, no log directory on bad input, byte-identical output for a seed, log shape.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_test_util.h"

namespace fs = std::filesystem;

namespace {

using Result = schedtwin::testutil::CliRun;
using schedtwin::testutil::slurp;
using json = nlohmann::json;

Result run(const std::string& args, const fs::path& dir) {
  return schedtwin::testutil::run_in(args, dir);
}
fs::path tmpdir(const std::string& name) { return schedtwin::testutil::fresh_dir("rtapp-" + name); }

const std::string kSchedIdle =
    std::string(SCHEDTWIN_SOURCE_DIR) + "/examples/rt-app/lkml/sched-idle.json";

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST(CliRtApp, SchedIdleRunWritesRtAppLogsAndSummary) {
  fs::path d = tmpdir("logs");
  Result r = run("rt-app " + kSchedIdle + " --machine hikey --kernel v5.4 --logdir " +
                     (d / "logs").string() + " --json " + (d / "r.json").string(),
                 d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("cfs_thread wu_lat (us), 8 threads:\nN\tmin\tmax\tsum\tmean\tstddev\n"),
            std::string::npos);
  EXPECT_NE(r.out.find("   0 - 100  : "), std::string::npos);
  EXPECT_NE(r.out.find("idle_thread      CPUs "), std::string::npos);
  for (int i = 0; i < 13; ++i) {
    std::string name = i < 8 ? "cfs_thread" : "idle_thread";
    fs::path log = d / "logs" / ("rt-app-" + name + "-" + std::to_string(i) + ".log");
    ASSERT_TRUE(fs::exists(log)) << log;
    std::string text = slurp(log);
    EXPECT_EQ(text.substr(0, 5), "#idx ");
    if (i < 8) {
      // 5 s / 7.777 ms = 643 periods; the last incomplete one is not logged.
      int rows = count_lines(text) - 1;
      EXPECT_GE(rows, 611);
      EXPECT_LE(rows, 675);
    }
  }
  std::string json = slurp(d / "r.json");
  for (const char* key : {"\"schema_version\"", "\"wu_lat_us\"", "\"slack_us\"", "\"p99\"",
                          "\"events\"", "\"SIS_SCHED_IDLE_FALLBACK\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  fs::remove_all(d);
}

TEST(CliRtApp, SameSeedGivesByteIdenticalOutputAndLogs) {
  fs::path d = tmpdir("det");
  std::string common = "rt-app " + kSchedIdle + " --machine hikey --kernel v5.3 --seed 3 --logdir ";
  Result a = run(common + (d / "a").string(), d);
  Result b = run(common + (d / "b").string(), d);
  ASSERT_EQ(a.status, 0);
  ASSERT_EQ(b.status, 0);
  EXPECT_EQ(a.out, b.out);
  for (const auto& e : fs::directory_iterator(d / "a"))
    EXPECT_EQ(slurp(e.path()), slurp(d / "b" / e.path().filename())) << e.path();
  fs::remove_all(d);
}

// `rt-app -` reads the task set from standard input, as rt-app does: the same run, named
// <stdin>; and one that does not parse names <stdin> with line and column.
TEST(CliRtApp, ATaskSetOnStandardInput) {
  fs::path d = tmpdir("stdin");
  Result file = run("rt-app " + kSchedIdle + " --duration 0.2 --logdir " + (d / "a").string(), d);
  Result in = run("rt-app - --duration 0.2 --logdir " + (d / "b").string() + " < " + kSchedIdle, d);
  ASSERT_EQ(file.status, 0) << file.err;
  ASSERT_EQ(in.status, 0) << in.err;
  EXPECT_EQ(in.out.rfind("rt-app <stdin> on hikey", 0), 0u) << in.out;
  EXPECT_EQ(in.out.substr(in.out.find('\n')), file.out.substr(file.out.find('\n')));
  for (const auto& e : fs::directory_iterator(d / "a"))
    EXPECT_EQ(slurp(e.path()), slurp(d / "b" / e.path().filename())) << e.path();
  std::ofstream(d / "bad.json") << "{\"tasks\": ";
  Result bad =
      run("rt-app - --logdir " + (d / "c").string() + " < " + (d / "bad.json").string(), d);
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err.rfind("schedtwin: <stdin>:1:", 0), 0u) << bad.err;
  EXPECT_FALSE(fs::exists(d / "c"));
  fs::remove_all(d);
}

// Found by fresh-user trial 11: a task set without "duration" whose threads all end ran on to
// 60 s simulated. rt-app joins its threads and exits: the run ends within a millisecond of
// the last exit. One thread of 5 loops of 1 ms run and 1 ms sleep ends at about 10 ms.
TEST(CliRtApp, WithoutDurationTheRunEndsWithItsThreads) {
  fs::path d = tmpdir("ends");
  std::ofstream(d / "fin.json") << R"({"tasks": {"t": {"loop": 5, "run": 1000, "sleep": 1000}}})";
  Result r = run("rt-app " + (d / "fin.json").string() + " --json " + (d / "out.json").string(), d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");  // no warning: every thread ended
  const double sim = json::parse(slurp(d / "out.json"))["sim_time_s"].get<double>();
  EXPECT_GE(sim, 0.010);
  EXPECT_LE(sim, 0.012);
  EXPECT_NE(r.out.find(": 0.011 s simulated"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// Found by a fresh-user trial: util_min and nodes_membind were accepted without a word while
// dl-runtime is refused. A key rt-app acts on but the model cannot is named once, by place.
TEST(CliRtApp, KeysWithoutEffectAreNamedOnce) {
  fs::path d = tmpdir("ignored");
  std::ofstream(d / "u.json") << R"({"tasks": {"t": {"run": 100, "util_min": 512},
    "u": {"run": 100, "util_min": 256}}, "global": {"duration": 1}})";
  const std::string f = (d / "u.json").string();
  Result r = run("rt-app " + f + " --logdir " + (d / "l").string(), d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "schedtwin: note: " + f +
                       ":1:30: \"util_min\" has no effect here: uclamp is not modelled (no "
                       "frequency scaling, no EAS)\n");
  fs::remove_all(d);
}

// Found by a fresh-user trial: a task of "instance": 0 (rt-app starts no thread for it)
// printed an empty row without a word. It is still accepted, and named.
TEST(CliRtApp, ATaskOfNoThreadsIsNamed) {
  fs::path d = tmpdir("instance0");
  std::ofstream(d / "i.json") << R"({"tasks": {"t": {"run": 100},
    "off": {"instance": 0, "run": 100}}, "global": {"duration": 1}})";
  const std::string f = (d / "i.json").string();
  Result r = run("rt-app " + f + " --logdir " + (d / "l").string(), d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "schedtwin: note: " + f +
                       ":2:5: task \"off\" has \"instance\": 0: it runs no thread\n");
  fs::remove_all(d);
}

// Two threads that never sleep, both pinned to CPU 0, for 1 s: each runs while the other
// waits, so their summed run delay is close to their summed CPU time (1 s, less what the
// forks and switches take). They take turns in slices of 12 ms (hikey's sched_latency,
// 6 ms x (1 + ilog2(8)), split between two tasks), ended at the next 4 ms tick: 12-16 ms,
// so 62-84 switches in, and one more at the start: the first thread at rt-app's start
// barrier sleeps until the last arrives. A lone thread on CPU 1 never waits.
TEST(CliRtApp, RunDelayAndCpuTimePerTask) {
  fs::path d = tmpdir("rundelay");
  std::ofstream(d / "two.json") << R"({"tasks": {
      "pair": {"instance": 2, "cpus": [0], "run": 100000},
      "lone": {"cpus": [1], "run": 100000}}, "global": {"duration": 1}})";
  Result r = run("rt-app " + (d / "two.json").string() + " --machine hikey --json - --logdir " +
                     (d / "l").string(),
                 d);
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& pair = j.at("tasks").at("pair");
  const double runtime = pair.at("runtime_ms").get<double>();
  const double delay = pair.at("run_delay_ms").get<double>();
  EXPECT_GT(runtime, 990.0);
  EXPECT_LE(runtime, 1000.0);
  EXPECT_NEAR(delay, runtime, 10.0);
  EXPECT_GE(pair.at("switches").get<int>(), 1000 / 16);
  EXPECT_LE(pair.at("switches").get<int>(), 1000 / 12 + 3);
  EXPECT_EQ(pair.at("migrations").get<int>(), 0);
  const nlohmann::json& lone = j.at("tasks").at("lone");
  EXPECT_GT(lone.at("runtime_ms").get<double>(), 990.0);
  EXPECT_LT(lone.at("run_delay_ms").get<double>(), 1.0);
  EXPECT_NE(r.err.find("per task, over its threads"), std::string::npos) << r.err;
  fs::remove_all(d);
}

TEST(CliRtApp, AFileWithoutDurationWhoseThreadsNeverEndIsReported) {
  fs::path d = tmpdir("stuck");
  {
    // waiter waits for a resume nobody sends; worker runs 1 ms and ends.
    std::ofstream(d / "stuck.json") << R"({ "tasks": { "waiter": { "suspend": "waiter" },
      "worker": { "loop": 1, "run": 1000 } }, "global": { "logdir": "." } })";
    std::ofstream(d / "ends.json") << R"({ "tasks": { "worker": { "loop": 1, "run": 1000 } } })";
  }
  Result r = run("rt-app " + (d / "stuck.json").string() + " --logdir " + (d / "l1").string(), d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "schedtwin: warning: " + (d / "stuck.json").string() +
                       ": no \"duration\" (or -1), and 1 of 2 threads had not ended after 60 s, "
                       "where the run stops (rt-app would run on); asleep at the end: waiter-0 "
                       "(suspend)\n");
  EXPECT_NE(r.out.find("60.000 s simulated"), std::string::npos) << r.out;
  r = run("rt-app " + (d / "ends.json").string() + " --logdir " + (d / "l2").string(), d);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "");
  // --duration bounds the run: nothing to report.
  r = run(
      "rt-app " + (d / "stuck.json").string() + " --duration 0.1 --logdir " + (d / "l3").string(),
      d);
  EXPECT_EQ(r.err, "");
  fs::remove_all(d);
}

// A thread that locks a mutex it holds (a loop with lock and no unlock) waits on itself, as
// a pthread mutex makes rt-app's thread do; with a duration the run ends quietly otherwise, so
// it is said, with the threads stuck behind it. Both threads reach rt-app's start barrier at
// the same simulated nanosecond; equal times go in slot order, CPU 1's before CPU 5's, so t-1
// waits there and t-0, the last to arrive, goes on at once and takes the lock first; t-1 wakes
// to find it held.
TEST(CliRtApp, ALockTakenTwiceByOneThreadIsReported) {
  fs::path d = tmpdir("relock");
  std::ofstream(d / "relock.json")
      << R"({"global": {"duration": 1}, "tasks": {"t": {"instance": 2, "loop": -1, "lock": "m", "run": 100}}})";
  Result r = run("rt-app " + (d / "relock.json").string() + " --logdir " + (d / "l").string(), d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "schedtwin: warning: " + (d / "relock.json").string() +
                       ": thread t-0 locked \"m\" while holding it: a pthread mutex does not "
                       "nest, so it waits on itself for ever, as under rt-app (1 other thread "
                       "waits on it too)\n");
  fs::remove_all(d);
}

TEST(CliRtApp, BadInputIsOneLineWithStatusAndNoLogDir) {
  fs::path d = tmpdir("bad");
  fs::path bad = d / "bad.json";
  std::ofstream(bad) << "{\"tasks\": {\"t\": {\"run\": 5, \"bogus\": 1}}}";
  struct Case {
    std::string args;
    int status;
    std::string needle;
  };
  std::vector<Case> cases = {
      {"rt-app " + bad.string(), 1, "bad.json:1:28: unknown key \"bogus\""},
      {"rt-app " + (d / "missing.json").string(), 1, "missing.json: cannot open file"},
      {"rt-app " + kSchedIdle + " --machine nosuch", 1, "unknown"},
      {"rt-app " + kSchedIdle + " --features NO_SUCH_FLAG", 1,
       "--features: unknown feature 'NO_SUCH_FLAG'"},
      {"rt-app " + kSchedIdle + " --kernel v9.9", 1, "--kernel: unknown kernel profile 'v9.9'"},
      {"rt-app " + kSchedIdle + " --seed notanumber", 2, "--seed"},
      {"rt-app", 2, "taskset"},
      {"no-such-command", 2, ""},
  };
  for (const Case& c : cases) {
    Result r = run(c.args + " --logdir " + (d / "logs").string(), d);
    if (c.args == "no-such-command") r = run(c.args, d);
    EXPECT_EQ(r.status, c.status) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_FALSE(fs::exists(d / "logs")) << c.args;
  }
  // A --logdir that exists as a file.
  std::ofstream(d / "afile") << "x";
  Result r = run("rt-app " + kSchedIdle + " --logdir " + (d / "afile").string(), d);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("exists and is not a directory"), std::string::npos) << r.err;
  fs::remove_all(d);
}

TEST(CliReproduce, SchedIdleFallbackPrintsPublishedBesideSimulated) {
  fs::path d = tmpdir("repro");
  Result r = run("reproduce sched-idle-fallback --runs 1", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("8 CFS + 5 SCHED_IDLE, without change (v5.3)"), std::string::npos);
  EXPECT_NE(r.out.find("1116.7"), std::string::npos);
  EXPECT_NE(r.out.find("mean wu_lat falls with the change"), std::string::npos);
  // --json -: the document alone on stdout, saying what made it.
  r = run("reproduce sched-idle-fallback --runs 1 --json -", d);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* kv : {"\"command\": \"reproduce\"", "\"schema_version\": 1", "\"runs\": 1",
                         "\"scale\": \"quick\"", "\"series\": \"sched-idle-fallback\"",
                         "\"sched-idle-fallback\": {"})
    EXPECT_NE(r.out.find(kv), std::string::npos) << kv;
  EXPECT_NE(r.err.find("mean wu_lat falls with the change"), std::string::npos);
  fs::remove_all(d);
}

// The runs of a series go to --jobs threads; the figures and their order do not depend on how
// many (each simulation has its own kernel, and the means are taken in seed order). The
// invariant checker is off: it would make these 2 x 10 hackbench runs take minutes.
TEST(CliReproduce, JobsDoNotChangeTheFigures) {
  setenv("SCHEDTWIN_CHECK", "0", 1);
  fs::path d = tmpdir("repro-jobs");
  Result one = run("reproduce runnable-avg --runs 1 --jobs 1 --json -", d);
  ASSERT_EQ(one.status, 0) << one.err;
  Result three = run("reproduce runnable-avg --runs 1 --jobs 3 --json -", d);
  ASSERT_EQ(three.status, 0) << three.err;
  EXPECT_NE(one.out.find("\"has_spare_2plus_fall\""), std::string::npos) << one.out;
  // Every state the model counted has a published figure, the letter's implicit 0 included,
  // as the text's table prints it (the HTML report reads these).
  const json rep = json::parse(one.out)["runnable-avg"];
  for (const char* k : {"v5.6", "v5.7"})
    for (const auto& [type, buckets] : rep["classification"][k].items())
      for (const auto& [nr, count] : buckets.items()) {
        if (count.get<double>() == 0) continue;
        EXPECT_TRUE(rep["published_classification"]["v5.6"][type].contains(nr)) << type << nr;
        EXPECT_TRUE(rep["published_classification"]["v5.7"][type].contains(nr)) << type << nr;
      }
  EXPECT_EQ(one.out, three.out);
  EXPECT_EQ(one.err, three.err);
  Result bad = run("reproduce runnable-avg --jobs 0", d);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--jobs"), std::string::npos) << bad.err;
  fs::remove_all(d);
}

// --features goes after every configuration's own flags: taking the series' own flag back out
// leaves v5.3 and v5.4 the same model, so the fallback's directions all miss.
TEST(CliReproduce, AddedFeaturesApplyToEveryConfiguration) {
  fs::path d = tmpdir("repro-features");
  const std::string out = (d / "out.json").string();
  Result r =
      run("reproduce sched-idle-fallback --runs 1 --features NO_SIS_SCHED_IDLE_FALLBACK "
          "--fail-on-miss --json " +
              out,
          d);
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_EQ(r.out.rfind("every configuration below runs with --features "
                        "NO_SIS_SCHED_IDLE_FALLBACK after its own flags",
                        0),
            0u)
      << r.out;
  const json j = json::parse(slurp(d / "out.json"));
  EXPECT_EQ(j["features_added"], "NO_SIS_SCHED_IDLE_FALLBACK");
  EXPECT_EQ(j["directions_matched"], 0);
  const json& f = j["sched-idle-fallback"];
  EXPECT_EQ(f["without_change"]["mean_us"], f["with_change"]["mean_us"]);
  // The same runs without the flag: all four match there, so all four verdicts changed.
  EXPECT_NE(r.out.find("what --features NO_SIS_SCHED_IDLE_FALLBACK changed in the direction "
                       "checks (the same runs without it: 4 of 4 directions match):\nverdict "
                       "changed:\n"
                       "  sched-idle-fallback: mean wu_lat falls with the change: match -> MISS"),
            std::string::npos)
      << r.out;
  // What was compared is said: the direction lines, not the tables around them.
  EXPECT_NE(r.out.find("\ndirections unchanged in verdict and figures: 0 of 4 (only the "
                       "direction lines are compared; the tables' other figures may have "
                       "moved)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(j["without_features"]["directions_matched"], 4);
  ASSERT_EQ(j["changed_directions"].size(), 4u);
  EXPECT_EQ(j["changed_directions"][0]["verdict_without"], "match");
  EXPECT_EQ(j["changed_directions"][0]["verdict_with"], "MISS");
  // --skip-plain: no second set of runs, no section; and it needs --features.
  Result skip =
      run("reproduce sched-idle-fallback --runs 1 --features NO_SIS_SCHED_IDLE_FALLBACK "
          "--skip-plain",
          d);
  EXPECT_EQ(skip.status, 0) << skip.err;
  EXPECT_EQ(skip.out.find("what --features"), std::string::npos) << skip.out;
  EXPECT_EQ(run("reproduce sched-idle-fallback --runs 1 --skip-plain", d).status, 2);
  // An unknown flag is one line before anything runs.
  Result bad = run("reproduce --features NO_SUCH_FLAG --json " + out + "2", d);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("--features: unknown feature 'NO_SUCH_FLAG'"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(out + "2"));
  fs::remove_all(d);
}

TEST(CliReproduce, EveryVerdictInJsonAndSummaryAndFailOnMissExits4) {
  fs::path d = tmpdir("repro-verdicts");
  const std::string out = (d / "out.json").string();
  Result r = run("reproduce sched-idle-fallback --runs 1 --json " + out, d);
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(slurp(d / "out.json"));
  const json& ds = j["sched-idle-fallback"]["directions"];
  ASSERT_EQ(ds.size(), 4u);
  int missed = 0;
  for (const json& dir : ds) {
    const std::string v = dir["verdict"];
    ASSERT_TRUE(v == "match" || v == "MISS") << dir;
    missed += v == "MISS";
    // The printed line says the same: claim, simulated, [published], verdict.
    const std::string line = "  " + dir["claim"].get<std::string>() + ": " +
                             dir["simulated"].get<std::string>() + " [" +
                             dir["published"].get<std::string>() + "]  " + v + "\n";
    EXPECT_NE(r.out.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(j["directions_missed"], missed);
  EXPECT_EQ(j["directions_matched"], 4 - missed);
  EXPECT_NE(r.out.find(fmt::format("\nsummary: {} of 4 published directions match", 4 - missed)),
            std::string::npos)
      << r.out;
  // --fail-on-miss: the same outputs, then status 4 exactly when a direction missed.
  fs::remove(d / "out.json");
  Result f = run("reproduce sched-idle-fallback --runs 1 --json " + out + " --fail-on-miss", d);
  EXPECT_EQ(f.out, r.out);
  EXPECT_TRUE(fs::exists(d / "out.json"));
  EXPECT_EQ(f.status, missed > 0 ? 4 : 0) << f.err;
  if (missed > 0) {
    EXPECT_EQ(f.err, fmt::format("schedtwin: --fail-on-miss: {} of 4 published directions MISS\n",
                                 missed));
  }
  fs::remove_all(d);
}

// The noisy p99 check is a mean over seeds whose falls lie far apart: the direction line
// gives the seeds' range, and --json each seed's fall (baseline p99 / with p99).
TEST(CliReproduce, SchedIdleBalancingGivesEachSeedsFall) {
  setenv("SCHEDTWIN_CHECK", "0", 1);  // two 10 s scenarios per seed; the checker is for the model
  fs::path d = tmpdir("repro-sib");
  const std::string out = (d / "out.json").string();
  Result r = run("reproduce sched-idle-balancing --runs 2 --json " + out, d);
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(slurp(d / "out.json"))["sched-idle-balancing"];
  const json& falls = j["noisy_p99_fall_per_seed"];
  ASSERT_EQ(falls.size(), 2u);
  const double lo = std::min(falls[0].get<double>(), falls[1].get<double>());
  const double hi = std::max(falls[0].get<double>(), falls[1].get<double>());
  EXPECT_GT(lo, 0);
  EXPECT_NE(r.out.find(fmt::format("x (seeds: {:.1f}x .. {:.1f}x) [2364 -> 208 us", lo, hi)),
            std::string::npos)
      << r.out;
  fs::remove_all(d);
}
