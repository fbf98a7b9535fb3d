// `schedtwin compare`: the table and JSON against single runs of the subcommand worked by hand,
// independence of --jobs, logs only under --logdir, exit codes of bad usage and bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/compare_cmd.h"
#include "cli_test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Result = schedtwin::testutil::CliRun;
using schedtwin::testutil::slurp;

// Runs the binary in `dir` (so that logs written to "./" would show up there).
Result run(const std::string& args, const fs::path& dir) {
  return schedtwin::testutil::run_in(args, dir, true);
}
fs::path tmpdir(const std::string& name) {
  return schedtwin::testutil::fresh_dir("compare-" + name);
}

// Files in `dir` other than the captured stdout/stderr.
std::vector<std::string> stray_files(const fs::path& dir,
                                     const std::vector<std::string>& expected) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n == "stdout.txt" || n == "stderr.txt") continue;
    if (std::find(expected.begin(), expected.end(), n) == expected.end()) v.push_back(n);
  }
  return v;
}

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

const std::string kSchedIdle =
    std::string(SCHEDTWIN_SOURCE_DIR) + "/examples/rt-app/lkml/sched-idle.json";
const std::string kRtAppArgs = "-- rt-app " + kSchedIdle + " --duration 0.5";

}  // namespace

TEST(CliCompare, RtAppTableAndJsonMatchTheSingleRuns) {
  fs::path d = tmpdir("rtapp");
  Result r = run("compare --runs 2 --base v5.3 --with v5.4 --json c.json " + kRtAppArgs, d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // Header lines, then the table.
  EXPECT_EQ(
      r.out.rfind("compare: rt-app " + kSchedIdle +
                      " --duration 0.5\nmachine: hikey\nbase:    v5.3 = kernel v5.3, features ",
                  0),
      0u)
      << r.out;
  EXPECT_NE(
      r.out.find(
          "\nchange:  kernel v5.3 -> v5.4 (its code paths as well); +SIS_SCHED_IDLE_FALLBACK\n"),
      std::string::npos)
      << r.out;
  // features.h's flags first, then the series' flags the kernel does not have; no other flag
  // is on, so no "model flags".
  EXPECT_NE(r.out.find("\nwith:    v5.4 = kernel v5.4, features GENTLE_FAIR_SLEEPERS,"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(",UTIL_EST; series flags SIS_SCHED_IDLE_FALLBACK,SIS_CORE\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nruns:    2 per configuration, seeds 1..2;"), std::string::npos);
  EXPECT_NE(r.out.find("\nmetric    "), std::string::npos);
  for (const char* row : {"\ncfs_thread.wu_lat_us.mean ", "\ncfs_thread.wu_lat_us.p99 ",
                          "\ncfs_thread.wu_lat_us.over_1ms_pct ", "\ncfs_thread.slack_us.mean ",
                          "\nidle_thread.loops "})
    EXPECT_NE(r.out.find(row), std::string::npos) << row;
  EXPECT_EQ(r.out.find("idle_thread.wu_lat"), std::string::npos);  // no timer, no wakeup latency

  // The same runs one by one: compare's figures are their mean and sample sd.
  double v[2][2];  // [config][seed-1] cfs_thread wu_lat mean
  const char* kernels[2] = {"v5.3", "v5.4"};
  for (int c = 0; c < 2; ++c)
    for (int s = 1; s <= 2; ++s) {
      Result one = run("rt-app " + kSchedIdle + " --duration 0.5 --logdir logs-single --kernel " +
                           kernels[c] + " --seed " + std::to_string(s) + " --json one.json",
                       d);
      ASSERT_EQ(one.status, 0) << one.err;
      v[c][s - 1] = json::parse(slurp(d / "one.json"))["tasks"]["cfs_thread"]["wu_lat_us"]["mean"]
                        .get<double>();
    }
  json j = json::parse(slurp(d / "c.json"));
  // Columns that differ: no note after the table (CliCompare.ColumnsThatAreTheSameRunsGetANote).
  EXPECT_EQ(j["identical_runs"], false);
  EXPECT_EQ(r.out.find("\nnote: --with made no difference"), std::string::npos) << r.out;
  const json& m = j["metrics"]["cfs_thread.wu_lat_us.mean"];
  const double mb = (v[0][0] + v[0][1]) / 2, mw = (v[1][0] + v[1][1]) / 2;
  EXPECT_DOUBLE_EQ(m["base"]["mean"].get<double>(), mb);
  EXPECT_DOUBLE_EQ(m["with"]["mean"].get<double>(), mw);
  // n = 2: sd = |a - b| / sqrt(2).
  EXPECT_NEAR(m["base"]["sd"].get<double>(), std::fabs(v[0][0] - v[0][1]) / std::sqrt(2.0), 1e-9);
  EXPECT_EQ(m["base"]["n"], 2);
  EXPECT_NEAR(m["diff_pct"].get<double>(), 100 * (mw - mb) / mb, 1e-9);
  ASSERT_TRUE(m["ci95_pct"].is_array());
  ASSERT_EQ(m["ci95_pct"].size(), 2u);
  // Paired by seed: differences d_s = with_s - base_s, sd = |d_1 - d_2| / sqrt(2), se = sd /
  // sqrt(2) = |d_1 - d_2| / 2, df 1, t(0.975, 1) = 12.7062047.
  const double d1 = v[1][0] - v[0][0], d2 = v[1][1] - v[0][1];
  const double half = 12.7062047 * std::fabs(d1 - d2) / 2;
  EXPECT_NEAR(m["ci95_pct"][0].get<double>(), 100 * ((mw - mb) - half) / mb, 1e-5);
  EXPECT_NEAR(m["ci95_pct"][1].get<double>(), 100 * ((mw - mb) + half) / mb, 1e-5);
  EXPECT_EQ(m["pairs"], 2);
  // The direction the series reports: the fallback cuts the CFS threads' wakeup latency.
  EXPECT_LT(mw, mb);

  // Common keys and the resolved configurations.
  for (const char* k : {"schema_version", "command", "machine", "kernel", "features", "seed",
                        "sim_time_s", "wall_time_s", "events"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["command"], "compare");
  EXPECT_EQ(j["kernel"], "v5.3");
  EXPECT_EQ(j["with"]["kernel"], "v5.4");
  EXPECT_EQ(j["subcommand"], "rt-app");
  EXPECT_EQ(j["metric_order"][0], "cfs_thread.wu_lat_us.mean");
  // No logs anywhere without compare's --logdir (the file says logdir "./").
  EXPECT_EQ(stray_files(d, {"c.json", "one.json", "logs-single"}), std::vector<std::string>{});
  fs::remove_all(d);
}

TEST(CliCompare, HackbenchOptionsMeanWhatTheyMeanInHackbench) {
  fs::path d = tmpdir("hackbench");
  Result r =
      run("compare --runs 3 --base v5.3 --with sched-idle-fallback --json c.json -- hackbench -g 2 "
          "-l 20 -p",
          d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nchange:  +SIS_SCHED_IDLE_FALLBACK\n"), std::string::npos) << r.out;
  // --with without a profile applies on the base profile.
  json j = json::parse(slurp(d / "c.json"));
  EXPECT_EQ(j["with"]["kernel"], "v5.3");
  double x[3], cs[3], mig[3];
  std::uint64_t events = 0, dispatched = 0;  // summed over the base runs (the with runs too)
  for (int s = 1; s <= 3; ++s) {
    Result one = run(
        "hackbench -g 2 -l 20 -p --kernel v5.3 --seed " + std::to_string(s) + " --json one.json",
        d);
    ASSERT_EQ(one.status, 0) << one.err;
    const json o = json::parse(slurp(d / "one.json"));
    events += o["events"].get<std::uint64_t>();
    dispatched += o["dispatched_events"].get<std::uint64_t>();
    x[s - 1] = o["total_time_s"].get<double>();
    cs[s - 1] = o["context_switches"].get<double>();
    mig[s - 1] = o["migrations"].get<double>();
  }
  // The document sums both counts over its six runs: more than the base runs alone, and
  // hackbench's receivers read lazily, so fewer dispatched than events.
  EXPECT_GT(j["events"].get<std::uint64_t>(), events);
  EXPECT_GT(j["dispatched_events"].get<std::uint64_t>(), dispatched);
  EXPECT_LT(j["dispatched_events"].get<std::uint64_t>(), j["events"].get<std::uint64_t>());
  EXPECT_LT(dispatched, events);
  const double mean = (x[0] + x[1] + x[2]) / 3;
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  const json& m = j["metrics"]["total_time_s"]["base"];
  EXPECT_NEAR(m["mean"].get<double>(), mean, 1e-15);
  EXPECT_NEAR(m["sd"].get<double>(), std::sqrt(ss / 2), 1e-15);
  EXPECT_EQ(m["n"], 3);
  // Each seed's own figure, seed 1 first: the runs behind the mean.
  EXPECT_EQ(m["values"], json::array({x[0], x[1], x[2]}));
  EXPECT_EQ(j["metrics"]["context_switches"]["base"]["values"][2].get<double>(), cs[2]);
  // The run-wide counters follow the subcommand's figures, from the same runs.
  EXPECT_EQ(j["metric_order"],
            json::array({"total_time_s", "context_switches", "migrations", "lb_migrations"}));
  EXPECT_NEAR(j["metrics"]["context_switches"]["base"]["mean"].get<double>(),
              (cs[0] + cs[1] + cs[2]) / 3, 1e-9);
  EXPECT_NEAR(j["metrics"]["migrations"]["base"]["mean"].get<double>(),
              (mig[0] + mig[1] + mig[2]) / 3, 1e-9);
  EXPECT_GT(cs[0], 0);
  fs::remove_all(d);
}

TEST(CliCompare, ResultsDoNotDependOnJobs) {
  fs::path d = tmpdir("jobs");
  Result a =
      run("compare --runs 3 --base v5.3 --with v5.4 --jobs 1 --json a.json " + kRtAppArgs, d);
  Result b =
      run("compare --runs 3 --base v5.3 --with v5.4 --jobs 2 --json b.json " + kRtAppArgs, d);
  Result c =
      run("compare --runs 3 --base v5.3 --with v5.4 --jobs 7 --json c.json " + kRtAppArgs, d);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out, c.out);
  // Byte-identical documents but for the wall-clock time.
  auto without_wall = [&](const char* f) {
    json j = json::parse(slurp(d / f));
    j.erase("wall_time_s");
    return j.dump(2);
  };
  EXPECT_EQ(without_wall("a.json"), without_wall("b.json"));
  EXPECT_EQ(without_wall("a.json"), without_wall("c.json"));
  fs::remove_all(d);
}

// compare -- run: the scenario file's machine, kernel and features are the base that --with
// changes, and each workload's figures match the single `run` with the same seed.
TEST(CliCompare, ScenarioRunsPerWorkloadFigures) {
  fs::path d = tmpdir("run");
  std::ofstream(d / "s.json") << R"({"machine": "hikey", "kernel": "v5.17",
    "features": "sched-idle-balancing", "duration_s": 0.5,
    "groups": {"n": {}, "noise": {"cpu.idle": 1}},
    "workloads": [{"group": "n", "schbench": ["-m", "1", "-t", "2", "-w", "0"]},
                  {"group": "noise", "messaging": ["-g", "1", "-l", "20"]}]})";
  Result r = run("compare --runs 1 --with NO_SIB_BALANCE --json c.json -- run s.json", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("machine: hikey"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel v5.17"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("change:  -SIB_BALANCE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("base:    (the scenario file's) = kernel v5.17"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("w0.schbench.wakeup_latency_us.p99 "), std::string::npos) << r.out;
  const json j = json::parse(slurp(d / "c.json"));
  EXPECT_EQ(j["subcommand"], "run");
  // The base is what `run s.json` runs: v5.17 with the file's sched-idle-balancing.
  Result plain = run("run s.json --seed 1 --json plain.json", d);
  ASSERT_EQ(plain.status, 0) << plain.err;
  const json q = json::parse(slurp(d / "plain.json"));
  EXPECT_EQ(j["base"]["features"], q["features"]);
  EXPECT_DOUBLE_EQ(j["metrics"]["w1.messaging.total_time_s"]["base"]["mean"].get<double>(),
                   q["workloads"][1]["total_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["metrics"]["w0.schbench.wakeup_latency_us.p50"]["base"]["mean"].get<double>(),
                   q["workloads"][0]["wakeup_latency_us"]["p50"].get<double>());
  // A profile named in --base replaces the file's kernel and features.
  Result v54 =
      run("compare --runs 1 --base v5.4 --with SIB_BALANCE --json e.json -- run s.json", d);
  ASSERT_EQ(v54.status, 0) << v54.err;
  const json e = json::parse(slurp(d / "e.json"));
  EXPECT_EQ(e["base"]["kernel"], "v5.4");
  const auto& bf = e["base"]["features"];
  EXPECT_EQ(std::find(bf.begin(), bf.end(), "SIB_BALANCE"), bf.end()) << bf.dump();
  Result missing = run("compare --with SIB_BALANCE -- run nope.json", d);
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("nope.json"), std::string::npos) << missing.err;
  fs::remove_all(d);
}

TEST(CliCompare, LogsOnlyUnderLogdirPerConfigurationAndSeed) {
  fs::path d = tmpdir("logs");
  Result r = run("compare --runs 2 --with v5.3 --jobs 2 --logdir L " + kRtAppArgs, d);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* config : {"base", "with"})
    for (int s = 1; s <= 2; ++s) {
      const fs::path dir = d / "L" / config / ("seed-" + std::to_string(s));
      int files = 0;
      for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
      EXPECT_EQ(files, 13) << dir;  // 8 cfs_thread + 5 idle_thread instances
      const std::string log = slurp(dir / "rt-app-cfs_thread-0.log");
      EXPECT_EQ(log.substr(0, 5), "#idx ");
      // 0.5 s / 7.777 ms = 64 periods; v5.3 loses up to a quarter of them to latency
      // behind the SCHED_IDLE threads.
      EXPECT_GT(count_lines(log), 40);
    }
  EXPECT_EQ(stray_files(d, {"L"}), std::vector<std::string>{});
  EXPECT_EQ(stray_files(d / "L", {"base", "with"}), std::vector<std::string>{});
  fs::remove_all(d);
}

TEST(CliCompare, AWithThatChangesNothingIsSaidAndALongSpecIsShortened) {
  fs::path d = tmpdir("same");
  Result r = run("compare --runs 1 --base v5.17 --with '' -- messaging -g 1 -l 10", d);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err,
            "schedtwin: warning: --with '' leaves the model as --base has it: both columns are "
            "the same runs, every diff is 0\n");
  EXPECT_NE(r.out.find("change:  same as base\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nnote: --with made no difference on any seed: every run's figures equal "
                       "base's (it leaves the model as base has it)\n"),
            std::string::npos)
      << r.out;
  // Seed N of both columns is the same run: every paired difference is 0, so is the interval.
  r = run("compare --runs 3 --base v5.17 --with '' --json c.json -- messaging -g 1 -l 10", d);
  EXPECT_EQ(r.status, 0) << r.err;
  const json same = json::parse(slurp(d / "c.json"))["metrics"]["total_time_s"];
  EXPECT_GT(same["base"]["sd"].get<double>(), 0);        // the seeds differ ...
  EXPECT_EQ(same["ci95_pct"], json::array({0.0, 0.0}));  // ... and the pairs do not
  EXPECT_NE(r.out.find("[+0.00%, +0.00%]"), std::string::npos) << r.out;
  // A flag the profile does not read (CFS's GENTLE_FAIR_SLEEPERS under v6.6's EEVDF) is a
  // change on paper only: the same warning.
  r = run("compare --runs 1 --base v6.6 --with GENTLE_FAIR_SLEEPERS -- messaging -g 1 -l 10", d);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("schedtwin: warning: --with 'GENTLE_FAIR_SLEEPERS' leaves the model as "
                       "--base has it"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("change:  +GENTLE_FAIR_SLEEPERS\n"), std::string::npos) << r.out;
  // A machine's features line: its first items and the count; the change is still exact.
  r =
      run("compare --runs 1 --base v5.17 --with 'GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY "
          "LAST_BUDDY CACHE_HOT_BUDDY WAKEUP_PREEMPTION NO_SIS_PROP' -- messaging -g 1 -l 10",
          d);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("with:    'GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY ...' (7 items) = "
                       "kernel v5.17,"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("change:  -SIS_PROP\n"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// A flag the model reads that changes nothing on this machine (SIS_CORE on hikey, which has no
// SMT) gives byte-identical columns: a note after the table says so and where to look, and the
// JSON says it per point.
TEST(CliCompare, ColumnsThatAreTheSameRunsGetANote) {
  fs::path d = tmpdir("identical");
  Result r = run(
      "compare --runs 2 --base NO_SIS_CORE --with SIS_CORE --json c.json -- messaging -g 1 -l 10",
      d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");  // not the same model: SIS_CORE is read, it just never finds an idle core
  EXPECT_NE(r.out.find("\nnote: --with made no difference on any seed: every run's figures equal "
                       "base's; check with --explain that the change is read on this kernel "
                       "profile and machine (hikey has no SMT: no idle-core or SMT-sibling search "
                       "to change)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(json::parse(slurp(d / "c.json"))["identical_runs"], true);
  // v5.17's select_idle_sibling never calls select_idle_core: said too.
  r = run("compare --runs 1 --base v5.17,NO_SIS_CORE --with SIS_CORE -- messaging -g 1 -l 10", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(hikey has no SMT: no idle-core or SMT-sibling search to change; v5.17+ "
                       "profiles take v5.13's select_idle_sibling, which never calls "
                       "select_idle_core or select_idle_smt)\n"),
            std::string::npos)
      << r.out;
  // A sweep names the points where the columns are alike; on an SMT machine the flag counts.
  r = run(
      "compare --runs 2 --base NO_SIS_CORE --with SIS_CORE --sweep machine=hikey,xeon-e5-2650v4 "
      "--json s.json -- messaging -g 2 -l 20",
      d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nnote: --with made no difference on any seed at --machine hikey: every "
                       "run's figures equal base's; check with --explain that the change is read "
                       "on this kernel profile and machine (hikey has no SMT: no idle-core or "
                       "SMT-sibling search to change)\n"),
            std::string::npos)
      << r.out;
  const json s = json::parse(slurp(d / "s.json"));
  EXPECT_EQ(s["points"][0]["identical_runs"], true);
  EXPECT_EQ(s["points"][1]["identical_runs"], false);
  EXPECT_FALSE(s.contains("identical_runs"));  // per point under a sweep
  // A flag outside the idle-core and SMT-sibling searches gets no SMT hint (trial 7: it was
  // given for NO_SIS_PROP too).
  r = run("compare --runs 1 --with NO_SIS_PROP -- messaging -g 1 -l 10", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nnote: --with made no difference on any seed: every run's figures equal "
                       "base's; check with --explain that the change is read on this kernel "
                       "profile and machine\n"),
            std::string::npos)
      << r.out;
  fs::remove_all(d);
}

// The header's flags in three groups: the release's features.h flags, the four series' flags,
// and any other flag of the model (a flag you add, or another release's such as SIS_UTIL on
// v5.4) after "model flags", not among the series'.
TEST(CliCompare, TheHeaderKeepsOtherFlagsApartFromTheSeriesFlags) {
  fs::path d = tmpdir("header");
  Result r = run("compare --runs 1 --base v5.4 --with SIS_UTIL -- messaging -g 1 -l 10", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nwith:    SIS_UTIL = kernel v5.4, features GENTLE_FAIR_SLEEPERS,"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(",UTIL_EST; series flags SIS_SCHED_IDLE_FALLBACK,SIS_CORE; model flags "
                       "SIS_UTIL\nchange:  +SIS_UTIL\n"),
            std::string::npos)
      << r.out;
  fs::remove_all(d);
}

TEST(CompareFigures, SeriesFlagsAreTheFourSeriesAndNoMainlineFlag) {
  using namespace schedtwin::kernel;
  const std::vector<Feature>& series = schedtwin::kernel::series_flags();
  auto is_series = [&](Feature f) {
    return std::find(series.begin(), series.end(), f) != series.end();
  };
  for (const SeriesAlias& a : series_aliases())
    for (Feature f : a.flags) EXPECT_TRUE(is_series(f)) << a.name << " " << feature_name(f);
  for (const std::string& v : profile_names())
    for (const MainlineFlag& m : mainline_features(make_profile(v).version))
      if (m.feature != Feature::COUNT) {
        EXPECT_FALSE(is_series(m.feature)) << v << " " << m.name;
      }
  Profile p = make_profile("v5.4");
  apply_features(p.features, "SIS_UTIL,latency-nice,NO_SIS_PROP", "test");
  EXPECT_EQ(schedtwin::cli::describe_profile(p),
            "kernel v5.4, features GENTLE_FAIR_SLEEPERS,START_DEBIT,LAST_BUDDY,CACHE_HOT_BUDDY,"
            "WAKEUP_PREEMPTION,TTWU_QUEUE,WA_IDLE,WA_WEIGHT,WA_BIAS,UTIL_EST; series flags "
            "SIS_SCHED_IDLE_FALLBACK,LATENCY_NICE_SIS,SIS_CORE,SIS_ROTATE,SIS_SMT_FIRST; model "
            "flags SIS_UTIL");
}

// --sweep g=1,2 is the two comparisons with -g 1 and -g 2 after ARGS, one row block each.
TEST(CliCompare, SweepIsOneComparisonPerValue) {
  fs::path d = tmpdir("sweep");
  Result r = run(
      "compare --runs 2 --jobs 2 --base v5.6 --with v5.7 --sweep g=1,2 --json s.json -- hackbench "
      "-l 30",
      d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nsweep:   -g 1, 2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n-g  metric "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n2   total_time_s "), std::string::npos) << r.out;
  const json s = json::parse(slurp(d / "s.json"));
  EXPECT_EQ(s["sweep"], json::array({{{"option", "-g"}, {"values", {"1", "2"}}}}));
  EXPECT_EQ(s["machines"], json::array({"hikey", "hikey"}));
  ASSERT_EQ(s["points"].size(), 2u);
  EXPECT_FALSE(s.contains("metrics"));
  for (int g = 1; g <= 2; ++g) {
    Result one =
        run("compare --runs 2 --base v5.6 --with v5.7 --json one.json -- hackbench -l 30 "
            "-g " +
                std::to_string(g),
            d);
    ASSERT_EQ(one.status, 0) << one.err;
    const json o = json::parse(slurp(d / "one.json"));
    const json& pt = s["points"][static_cast<std::size_t>(g - 1)];
    EXPECT_EQ(pt["value"], std::to_string(g));
    EXPECT_EQ(pt["args"], json::array({"-g", std::to_string(g)}));
    EXPECT_EQ(pt["metric_order"], o["metric_order"]);
    EXPECT_EQ(pt["metrics"], o["metrics"]) << g;
  }
  EXPECT_NE(s["points"][0]["metrics"], s["points"][1]["metrics"]);
  // Two --sweep options go value by value: (-g 2, -l 15) is the second point.
  r =
      run("compare --runs 2 --base v5.6 --with v5.7 --sweep g=1,2 --sweep l=30,15 --json z.json -- "
          "hackbench",
          d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nsweep:   -g 1, 2\n         -l 30, 15\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n2/15   total_time_s "), std::string::npos) << r.out;
  Result one =
      run("compare --runs 2 --base v5.6 --with v5.7 --json one.json -- hackbench -g 2 -l 15", d);
  ASSERT_EQ(one.status, 0) << one.err;
  const json z = json::parse(slurp(d / "z.json"));
  EXPECT_EQ(z["points"][1]["args"], json::array({"-g", "2", "-l", "15"}));
  EXPECT_EQ(z["points"][1]["metrics"], json::parse(slurp(d / "one.json"))["metrics"]);
  // Errors are one line, before anything runs.
  const std::pair<std::string, std::string> bad[] = {
      {"--sweep g -- hackbench -l 1", "no '='"},
      {"--sweep '' -- hackbench -l 1", "--sweep '': no '='"},
      {"--sweep g=1,,2 -- hackbench -l 1", "an empty value"},
      {"--sweep g=1,1 -- hackbench -l 1", "value 1 given twice"},
      {"--sweep 9=1 -- hackbench -l 1", "NAME is not an option name"},
      {"--sweep zz=1,2 -- hackbench -l 1", "hackbench has no option --zz"},
      {"--sweep g=1,2 -- hackbench -l 1 -g 3", "-g is also in the hackbench ARGS"},
      {"--sweep g=1,x -- hackbench -l 1", "--sweep -g x: --groups: expected an integer"},
      {"--sweep seed=1,2 -- hackbench -l 1", "--seed in the hackbench ARGS"},
      {"--sweep g=1,2 --sweep l=5 -- hackbench", "1 value, but --sweep g=1,2 has 2"},
      {"--sweep g=1,2 --sweep groups=3,4 -- hackbench", "--groups is swept twice"},
      {"--sweep g=1,2 --sweep g=3,4 -- hackbench", "--groups is swept twice"},
  };
  for (const auto& [args, msg] : bad) {
    Result e = run("compare --with v5.7 --json bad.json " + args, d);
    EXPECT_EQ(e.status, 2) << args << "\n" << e.err;
    EXPECT_EQ(count_lines(e.err), 1) << args << "\n" << e.err;
    EXPECT_NE(e.err.find(msg), std::string::npos) << args << "\n" << e.err;
    EXPECT_FALSE(fs::exists(d / "bad.json")) << args;
  }
  // A swept machine that cannot be loaded is bad input, named with its sweep point.
  Result e =
      run("compare --with v5.7 --json bad.json --sweep machine=hikey,nope.json -- hackbench", d);
  EXPECT_EQ(e.status, 1) << e.err;
  EXPECT_EQ(count_lines(e.err), 1) << e.err;
  EXPECT_NE(e.err.find("compare: --sweep --machine nope.json: --machine: nope.json: cannot read"),
            std::string::npos)
      << e.err;
  EXPECT_FALSE(fs::exists(d / "bad.json"));
  fs::remove_all(d);
}

TEST(CliCompare, BadUsageAndBadInputExitCodes) {
  fs::path d = tmpdir("errors");
  struct Case {
    std::string args;
    int status;
    std::string in_message;
  };
  const Case cases[] = {
      {"--runs 2 " + kRtAppArgs, 2, "--with"},  // missing --with
      {"--with v5.4", 2, "SUBCOMMAND"},         // no ARGS
      {"--with v5.4,NO_SUCH_FEATURE " + kRtAppArgs, 1, "--with: unknown feature 'NO_SUCH_FEATURE'"},
      {"--base v5.3,BOGUS --with v5.4 " + kRtAppArgs, 1, "--base: unknown feature 'BOGUS'"},
      {"--with v9.9 " + kRtAppArgs, 1, "--with: unknown kernel profile 'v9.9' (known: v5.3"},
      {"--with v5.4 messaging -g 1 -l 10", 2, "its arguments go after \"--\""},
      {"--with v5.4 " + kRtAppArgs + " --seed 3", 2, "--seed in the rt-app ARGS"},
      {"--with v5.4 " + kRtAppArgs + " --kernel v5.3", 2, "--kernel in the rt-app ARGS"},
      {"--with v5.4 " + kRtAppArgs + " --features SIS_PROP", 2, "--features in the rt-app ARGS"},
      {"--with v5.4 " + kRtAppArgs + " --json x.json", 2, "--json in the rt-app ARGS"},
      {"--with v5.4 " + kRtAppArgs + " --logdir x", 2, "--logdir in the rt-app ARGS"},
      {"--with v5.4 " + kRtAppArgs + " --no-such-option", 2, "rt-app ARGS"},
      {"--with v5.4 -- no-such-bench", 2, "unknown subcommand 'no-such-bench'"},
      {"--with v5.4 --jobs 0 " + kRtAppArgs, 2, "--jobs"},
      {"--with v5.4 --runs 0 " + kRtAppArgs, 2, "--runs"},
      {"--with v5.4 --logdir L -- hackbench -g 1 -l 1", 2, "hackbench writes no logs"},
      {"--with v5.4 -- hackbench -s 5000", 2, "--datasize"},
      {"--with v5.4 -- rt-app missing.json", 1, "missing.json"},
      {"--with v5.4 -- rt-app " + kSchedIdle + " --machine no-such-machine", 1, "no-such-machine"},
  };
  for (const Case& c : cases) {
    // --json before "--" is compare's: it must not be written when the command fails.
    Result r = run("compare --json out.json " + c.args, d);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.in_message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
  EXPECT_EQ(stray_files(d, {}), std::vector<std::string>{});  // nothing written on error
  fs::remove_all(d);
}

TEST(CompareFigures, RtAppMetricsFromTheRunDocument) {
  schedtwin::cli::RtAppOutcome o;  // as compare runs it: the samples are not kept
  o.task_order = {"t", "idle"};
  o.timer_tasks = {"t"};
  o.json = json::parse(R"({"sim_time_s": 1.5, "wall_time_s": 0.1, "events": 42, "tasks": {
      "t": {"wu_lat_us": {"n": 5, "mean": 1020, "p50": 1000, "p90": 2000, "p99": 2000,
                          "over_1ms_pct": 40}, "slack_us": {"mean": -7.5}, "runtime_ms": 40, "run_delay_ms": 3.25,
            "switches": 6, "migrations": 1, "wakeups": 5},
      "idle": {"wu_lat_us": {"n": 2, "mean": 0, "p50": 0, "p90": 0, "p99": 0, "over_1ms_pct": 0},
               "slack_us": {"mean": 0}, "runtime_ms": 900, "run_delay_ms": 12,
               "switches": 3, "migrations": 0, "wakeups": 0}}})");
  schedtwin::cli::RunFigures f = schedtwin::cli::rtapp_figures(o);
  const std::vector<std::pair<std::string, double>> expected = {{"t.wu_lat_us.mean", 1020},
                                                                {"t.wu_lat_us.p50", 1000},
                                                                {"t.wu_lat_us.p90", 2000},
                                                                {"t.wu_lat_us.p99", 2000},
                                                                {"t.wu_lat_us.over_1ms_pct", 40},
                                                                {"t.slack_us.mean", -7.5},
                                                                {"t.loops", 5},
                                                                {"t.runtime_ms", 40},
                                                                {"t.run_delay_ms", 3.25},
                                                                {"t.switches", 6},
                                                                {"t.migrations", 1},
                                                                {"t.wakeups", 5},
                                                                {"idle.loops", 2},
                                                                {"idle.runtime_ms", 900},
                                                                {"idle.run_delay_ms", 12},
                                                                {"idle.switches", 3},
                                                                {"idle.migrations", 0},
                                                                {"idle.wakeups", 0}};
  EXPECT_EQ(f.metrics, expected);
  EXPECT_DOUBLE_EQ(f.sim_time_s, 1.5);
  EXPECT_EQ(f.events, 42u);
}

TEST(CompareFigures, DispatchTableNamesTheSupportedSubcommands) {
  EXPECT_EQ(schedtwin::cli::compare_subcommands(),
            (std::vector<std::string>{"rt-app", "messaging", "hackbench", "schbench", "pingpong",
                                      "run"}));
}

// A signed cell keeps the value's sign when its digits round to zero (fresh-user trial 7: a
// paired interval of [-0.0374, -0.0374] % printed as [+0.0%, +0.0%] beside a diff of -0.04 %).
TEST(CliCompare, ASignedCellKeepsTheSignOfAValueThatRoundsToZero) {
  using schedtwin::cli::fixed_point;
  EXPECT_EQ(fixed_point(-0.0374, 1, true), "-0.0");
  EXPECT_EQ(fixed_point(0.0374, 1, true), "+0.0");
  EXPECT_EQ(fixed_point(0.0, 1, true), "+0.0");
  EXPECT_EQ(fixed_point(-0.0374, 2, true), "-0.04");
  EXPECT_EQ(fixed_point(-0.001, 2), "0.00");  // a mean or sd: never "-0.00"
  EXPECT_EQ(fixed_point(12.345, 2), "12.35");
}

// The runs' own notes (here each configuration's warning that cpu.idle came with v5.15) are
// collected and said in run order: with --runs 1 the two configurations' first runs start at
// once on two threads, and the lines came in whichever order they printed.
TEST(CliCompare, RunNotesComeInRunOrderWhateverTheJobs) {
  fs::path d = tmpdir("notes");
  std::ofstream(d / "s.json") << R"({ "machine": "hikey", "kernel": "v5.4", "duration_s": 0.05,
  "groups": { "normal": {}, "bg": { "cpu.idle": 1 } },
  "workloads": [ { "group": "normal", "messaging": ["-g", "1", "-l", "20"] },
                 { "group": "bg", "messaging": ["-g", "1", "-l", "20"] } ] })";
  const std::string cmd = " --runs 1 --base v5.4 --with v5.7 -- run s.json";
  Result one = run("compare --jobs 1" + cmd, d);
  ASSERT_EQ(one.status, 0) << one.err;
  const std::string v54 = "kernel v5.4 has no such file", v57 = "kernel v5.7 has no such file";
  ASSERT_NE(one.err.find(v54), std::string::npos) << one.err;
  EXPECT_LT(one.err.find(v54), one.err.find(v57)) << one.err;
  for (int i = 0; i < 5; ++i) {
    Result two = run("compare --jobs 2" + cmd, d);
    ASSERT_EQ(two.status, 0) << two.err;
    EXPECT_EQ(two.err, one.err);
  }
  fs::remove_all(d);
}
