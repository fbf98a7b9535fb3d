// End-to-end: `schedtwin features` prints the flags as /sys/kernel/debug/sched/features does.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>

#include "cli_test_util.h"

namespace {

using schedtwin::testutil::run_bin;

// v5.4's kernel/sched/features.h defaults for the mainline flags (NEXT_BUDDY and SIS_AVG_CPU
// off, the rest on), the sched-idle fallback that v5.4 merged, every later or RFC flag off
// except SIS_CORE, the latency-nice RFC's default. Written out by hand from features.h.
const std::string kV54 =
    "GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY LAST_BUDDY CACHE_HOT_BUDDY "
    "WAKEUP_PREEMPTION TTWU_QUEUE NO_SIS_AVG_CPU SIS_PROP NO_SIS_UTIL WA_IDLE WA_WEIGHT WA_BIAS "
    "UTIL_EST NO_UTIL_EST_FASTUP NO_ALT_PERIOD NO_BASE_SLICE NO_PLACE_LAG "
    "NO_PLACE_DEADLINE_INITIAL NO_RUN_TO_PARITY "
    "SIS_SCHED_IDLE_FALLBACK "
    "NO_SCHED_IDLE_CONSISTENT NO_LATENCY_NICE_SIS SIS_CORE NO_SIS_ROTATE NO_SIS_SMT_FIRST "
    "NO_RUNNABLE_AVG_CLASSIFY NO_SIB_OVERLOAD_MASK NO_SIB_BALANCE NO_SIB_LAST_NONIDLE "
    "NO_SIB_SIS_FILTER NO_SIB_IDLE_TASK_SPREAD \n";

bool has_word(const std::string& line, const std::string& w) {
  return (" " + line).find(" " + w + " ") != std::string::npos;
}

TEST(CliFeatures, DefaultProfileLineIsTheKernelsShape) {
  auto r = run_bin("features");
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, kV54);
  EXPECT_EQ(run_bin("features --kernel v5.4").out, kV54);
}

TEST(CliFeatures, ProfilesDifferWhereTheirReleasesDid) {
  const std::string v53 = run_bin("features --kernel v5.3").out;
  EXPECT_TRUE(has_word(v53, "NO_SIS_SCHED_IDLE_FALLBACK")) << v53;
  const std::string v60 = run_bin("features --kernel v6.0").out;
  EXPECT_TRUE(has_word(v60, "NO_SIS_PROP") && has_word(v60, "SIS_UTIL")) << v60;
  EXPECT_TRUE(has_word(v60, "RUNNABLE_AVG_CLASSIFY") && has_word(v60, "SCHED_IDLE_CONSISTENT"));
  // v5.5 added UTIL_EST_FASTUP.
  EXPECT_TRUE(has_word(run_bin("features --kernel v5.6").out, "UTIL_EST_FASTUP"));
  // v5.13 added ALT_PERIOD and BASE_SLICE; v6.6's EEVDF removed them.
  const std::string v517 = run_bin("features --kernel v5.17").out;
  EXPECT_TRUE(has_word(v517, "ALT_PERIOD") && has_word(v517, "BASE_SLICE")) << v517;
  const std::string v66 = run_bin("features --kernel v6.6").out;
  for (const char* w : {"PLACE_LAG", "RUN_TO_PARITY", "NO_START_DEBIT", "NO_GENTLE_FAIR_SLEEPERS",
                        "NO_ALT_PERIOD", "NO_BASE_SLICE"})
    EXPECT_TRUE(has_word(v66, w)) << w << ": " << v66;
}

TEST(CliFeatures, FeatureListAppliesLeftToRightWithSeriesNames) {
  const std::string s = run_bin("features --kernel v5.3 --features latency-nice,NO_SIS_CORE").out;
  for (const char* w : {"LATENCY_NICE_SIS", "SIS_ROTATE", "SIS_SMT_FIRST", "NO_SIS_CORE"})
    EXPECT_TRUE(has_word(s, w)) << w << ": " << s;
  const std::string back = run_bin("features --features latency-nice,NO_latency-nice").out;
  EXPECT_EQ(back, kV54);
}

TEST(CliFeatures, SeriesListsEachAliasWithItsFlags) {
  auto r = run_bin("features --series");
  ASSERT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("latency-nice          LATENCY_NICE_SIS SIS_ROTATE SIS_SMT_FIRST\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("sched-idle-balancing  SIB_OVERLOAD_MASK SIB_BALANCE SIB_LAST_NONIDLE "
                       "SIB_SIS_FILTER SIB_IDLE_TASK_SPREAD\n"),
            std::string::npos)
      << r.out;
}

// The debugfs line of each release's kernel/sched/features.h with its defaults, written out
// by hand from the file's blobs (2410db5e9a35 for v5.4, 1cf435bbcd9c for v5.17, ee7f23c76bd3
// for v6.0, f770168230ae for v6.6) for a kernel without PREEMPT_RT.
const std::string kMainlineV54 =
    "GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY LAST_BUDDY CACHE_HOT_BUDDY WAKEUP_PREEMPTION "
    "NO_HRTICK NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE NO_SIS_AVG_CPU SIS_PROP "
    "NO_WARN_DOUBLE_CLOCK RT_PUSH_IPI RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE "
    "WA_WEIGHT WA_BIAS UTIL_EST \n";
const std::string kMainlineV517 =
    "GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY LAST_BUDDY CACHE_HOT_BUDDY WAKEUP_PREEMPTION "
    "NO_HRTICK NO_HRTICK_DL NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE SIS_PROP "
    "NO_WARN_DOUBLE_CLOCK RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE "
    "WA_WEIGHT WA_BIAS UTIL_EST UTIL_EST_FASTUP NO_LATENCY_WARN ALT_PERIOD BASE_SLICE \n";
const std::string kMainlineV60 =
    "GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY LAST_BUDDY CACHE_HOT_BUDDY WAKEUP_PREEMPTION "
    "NO_HRTICK NO_HRTICK_DL NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE NO_SIS_PROP SIS_UTIL "
    "NO_WARN_DOUBLE_CLOCK RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE "
    "WA_WEIGHT WA_BIAS UTIL_EST UTIL_EST_FASTUP NO_LATENCY_WARN ALT_PERIOD BASE_SLICE \n";
const std::string kMainlineV66 =
    "PLACE_LAG PLACE_DEADLINE_INITIAL RUN_TO_PARITY NO_NEXT_BUDDY CACHE_HOT_BUDDY "
    "WAKEUP_PREEMPTION NO_HRTICK NO_HRTICK_DL NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE "
    "NO_SIS_PROP SIS_UTIL NO_WARN_DOUBLE_CLOCK RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN "
    "ATTACH_AGE_LOAD WA_IDLE WA_WEIGHT WA_BIAS UTIL_EST UTIL_EST_FASTUP NO_LATENCY_WARN HZ_BW \n";

TEST(CliFeatures, MainlinePrintsTheReleasesFeaturesFile) {
  EXPECT_EQ(run_bin("features --kernel v5.3 --mainline").out, kMainlineV54);
  EXPECT_EQ(run_bin("features --kernel v5.4 --mainline").out, kMainlineV54);
  // v5.5 appended UTIL_EST_FASTUP; v5.6 and v5.7 left the file alone.
  const std::string v55 = kMainlineV54.substr(0, kMainlineV54.size() - 1) + "UTIL_EST_FASTUP \n";
  EXPECT_EQ(run_bin("features --kernel v5.6 --mainline").out, v55);
  EXPECT_EQ(run_bin("features --kernel v5.7 --mainline").out, v55);
  EXPECT_EQ(run_bin("features --kernel v5.17 --mainline").out, kMainlineV517);
  EXPECT_EQ(run_bin("features --kernel v6.0 --mainline").out, kMainlineV60);
  EXPECT_EQ(run_bin("features --kernel v6.6 --mainline").out, kMainlineV66);
}

TEST(CliFeatures, MainlineShowsFlagsAsFeaturesSetThem) {
  // A modelled flag and an unmodelled one, comma- and space-separated.
  const auto r = run_bin("features --kernel v6.0 --mainline --features 'NO_WA_BIAS LB_MIN,HRTICK'");
  EXPECT_EQ(r.rc, 0);
  std::string want = kMainlineV60;
  for (auto [from, to] :
       {std::pair{"WA_BIAS", "NO_WA_BIAS"}, {"NO_LB_MIN", "LB_MIN"}, {"NO_HRTICK ", "HRTICK "}})
    want.replace(want.find(from), std::string(from).size(), to);
  EXPECT_EQ(r.out, want);
  // The series' and the model's own flags are not in the mainline line.
  EXPECT_EQ(run_bin("features --kernel v6.6 --mainline --features latency-nice").out, kMainlineV66);
}

TEST(CliFeatures, AMachinesLineGivenAsItIsRunsWithoutAWarning) {
  // What `cat /sys/kernel/debug/sched/features` prints on a v5.17 machine, trailing space and
  // newline included: accepted whole, every flag at v5.17's default, so nothing to say.
  const std::string line = kMainlineV517;
  auto r = run_bin("messaging -g 1 -l 20 --kernel v5.17 --features '" + line + "'", true);
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "");
  // The same line from a v6.6 machine on the v5.17 profile: its EEVDF flags are the model's but
  // a v5.17 run does not read them; HZ_BW is no flag of v5.17. Each is named.
  r = run_bin("messaging -g 1 -l 20 --kernel v5.17 --features '" + kMainlineV66 + "'", true);
  EXPECT_EQ(r.rc, 0);
  const std::string unread =
      ": the v5.17 profile does not read this flag (an EEVDF flag); the run "
      "is as without it\n";
  EXPECT_EQ(r.out, "schedtwin: warning: --features: PLACE_LAG" + unread +
                       "schedtwin: warning: --features: PLACE_DEADLINE_INITIAL" + unread +
                       "schedtwin: warning: --features: RUN_TO_PARITY" + unread +
                       "schedtwin: warning: --features: HZ_BW: v5.17's kernel/sched/features.h "
                       "has no such flag, and the model does not read it; ignored\n");
}

TEST(CliFeatures, AnUnmodelledFlagAwayFromItsDefaultIsAWarningAndChangesNothing) {
  const auto plain = run_bin("messaging -g 1 -l 50 --kernel v5.4 --json -");
  const auto r =
      run_bin("messaging -g 1 -l 50 --kernel v5.4 --features LB_MIN,NO_ATTACH_AGE_LOAD", true);
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out,
            "schedtwin: warning: --features: LB_MIN: a flag the model does not read; the run "
            "simulates v5.4's default, NO_LB_MIN\n"
            "schedtwin: warning: --features: NO_ATTACH_AGE_LOAD: a flag the model does not read; "
            "the run simulates v5.4's default, ATTACH_AGE_LOAD\n");
  const auto same =
      run_bin("messaging -g 1 -l 50 --kernel v5.4 --features LB_MIN,NO_ATTACH_AGE_LOAD --json -");
  auto strip_wall = [](std::string s) {
    const auto at = s.find("\"wall_time_s\"");
    return at == std::string::npos ? s : s.substr(0, at);
  };
  EXPECT_EQ(strip_wall(same.out), strip_wall(plain.out));
  // A flag at its default says nothing.
  EXPECT_EQ(run_bin("messaging -g 1 -l 50 --kernel v5.4 --features NO_LB_MIN", true).out, "");
  // compare says it once per configuration, not once per run.
  const auto c =
      run_bin("compare --runs 2 --base v5.4 --with v5.4,HRTICK,NO_SIS_PROP -- messaging -g 1 -l 20",
              true);
  EXPECT_EQ(c.rc, 0);
  EXPECT_EQ(c.out,
            "schedtwin: warning: --with: HRTICK: a flag the model does not read; the run simulates "
            "v5.4's default, NO_HRTICK\n");
}

TEST(CliFeatures, AFlagTheProfileDoesNotReadIsAWarning) {
  // v6.0 (CFS) does not read EEVDF's flags, v6.6 (EEVDF) not CFS's slice and placement flags.
  auto r = run_bin("messaging -g 1 -l 20 --kernel v6.0 --features PLACE_LAG", true);
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out,
            "schedtwin: warning: --features: PLACE_LAG: the v6.0 profile does not read this flag "
            "(an EEVDF flag); the run is as without it\n");
  r = run_bin("messaging -g 1 -l 20 --kernel v6.0 --features SIS_AVG_CPU", true);
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out,
            "schedtwin: warning: --features: SIS_AVG_CPU: the v6.0 profile does not read this "
            "flag (removed in v5.12); the run is as without it\n");
  // A v6.0 machine's line on the v6.6 profile: its CFS flags are named, HZ_BW's absence is not.
  r = run_bin("features --kernel v6.6 --mainline --features '" + kMainlineV60 + "'", true);
  EXPECT_EQ(r.rc, 0);
  for (const char* f :
       {"GENTLE_FAIR_SLEEPERS", "START_DEBIT", "LAST_BUDDY", "ALT_PERIOD", "BASE_SLICE"})
    EXPECT_NE(r.out.find(std::string("--features: ") + f + ": the v6.6 profile does not read"),
              std::string::npos)
        << f << ": " << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 5) << r.out;
  // rt-app resolves the machine before reading its task set, then the whole scenario: still once.
  const std::string dir = schedtwin::testutil::temp_path("features", "rtapp");
  std::filesystem::create_directories(dir);  // the task set writes its logs to ./
  r = run_bin("rt-app " + std::string(SCHEDTWIN_SOURCE_DIR) +
                  "/examples/rt-app/lkml/sched-idle.json --duration 0.01 --kernel v6.0 "
                  "--features PLACE_LAG",
              true, dir);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out,
            "schedtwin: warning: --features: PLACE_LAG: the v6.0 profile does not read this flag "
            "(an EEVDF flag); the run is as without it\n");
  // compare: once, naming the configuration.
  r = run_bin(
      "compare --runs 2 --base v6.6 --with v6.6,NO_BASE_SLICE,ALT_PERIOD -- messaging -g 1 "
      "-l 20",
      true);
  EXPECT_EQ(r.rc, 0);
  // ... and, as nothing v6.6 reads changed, that the two columns are the same runs.
  EXPECT_EQ(r.out,
            "schedtwin: warning: --with: ALT_PERIOD: the v6.6 profile does not read this flag (a "
            "CFS flag EEVDF replaced); the run is as without it\n"
            "schedtwin: warning: --with 'v6.6,NO_BASE_SLICE,ALT_PERIOD' leaves the model as "
            "--base has it: both columns are the same runs, every diff is 0\n");
}

TEST(CliFeatures, BadNamesGiveOneLineAndExitOne) {
  auto r = run_bin("features --kernel v9.9", true);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out,
            "schedtwin: --kernel: unknown kernel profile 'v9.9' (known: v5.3, v5.4, v5.6, v5.7, "
            "v5.17, v6.0, v6.6)\n");
  // A release number without its 'v' (or with 'V') names the profile meant.
  r = run_bin("features --kernel 5.4", true);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out,
            "schedtwin: --kernel: unknown kernel profile '5.4' (did you mean v5.4? known: v5.3, "
            "v5.4, v5.6, v5.7, v5.17, v6.0, v6.6)\n");
  r = run_bin("features --features SIS_PROPP", true);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--features: unknown feature 'SIS_PROPP'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("`schedtwin features` lists the flags"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  // A near miss is named, with NO_ kept; nothing near lists the series instead.
  r = run_bin("features --features NO_sis_prop", true);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out,
            "schedtwin: --features: unknown feature 'NO_sis_prop'; did you mean NO_SIS_PROP? "
            "(`schedtwin features` lists the flags)\n");
  r = run_bin("features --features no_sis_prop", true);
  EXPECT_NE(r.out.find("did you mean NO_SIS_PROP?"), std::string::npos) << r.out;
  // Every unknown name at once, each with its near miss.
  r = run_bin("features --features FOO,SIS_PORP,BAR", true);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("--features: unknown features 'FOO', 'SIS_PORP' (did you mean SIS_PROP?), "
                       "'BAR' (expected"),
            std::string::npos)
      << r.out;
  r = run_bin("features --features latency-nise", true);
  EXPECT_NE(r.out.find("did you mean latency-nice?"), std::string::npos) << r.out;
  r = run_bin("features --features FOO", true);
  EXPECT_EQ(r.out.find("did you mean"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("or a series: sched-idle-fallback,"), std::string::npos) << r.out;
  // A release number among the flags is named as one.
  r = run_bin("features --features NO_TTWU_QUEUE,v6.0", true);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out,
            "schedtwin: --features: 'v6.0' is a kernel profile, not a feature (a compare SPEC "
            "names its profile first; elsewhere give --kernel)\n");
  for (const char* spec : {"V6.0,NO_TTWU_QUEUE", "6.0,NO_TTWU_QUEUE"}) {
    r = run_bin(
        std::string("compare --runs 1 --base v6.0 --with ") + spec + " -- messaging -g 1 -l 10",
        true);
    EXPECT_EQ(r.rc, 1) << spec;
    EXPECT_NE(r.out.find("--with: unknown kernel profile '" +
                         std::string(spec).substr(0, std::string(spec).find(',')) + "'"),
              std::string::npos)
        << r.out;
  }
  // --series lists every series whatever the profile: a profile beside it is a usage error.
  r = run_bin("features --series --kernel v6.6", true);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("excludes --series"), std::string::npos) << r.out;
}

}  // namespace

// A later kernel's line (the SCHED_FEAT lines of a v6.12-era features.h, as the debugfs file
// prints them at their defaults, non-PREEMPT_RT) runs on v6.6: the flags v6.6 does not have
// are named in warnings and ignored; nothing else is said.
TEST(CliFeatures, ALaterKernelsLineRunsWithTheNewFlagsNamed) {
  const std::string line =
      "PLACE_LAG PLACE_DEADLINE_INITIAL PLACE_REL_DEADLINE RUN_TO_PARITY PREEMPT_SHORT "
      "NO_NEXT_BUDDY CACHE_HOT_BUDDY DELAY_DEQUEUE DELAY_ZERO WAKEUP_PREEMPTION NO_HRTICK "
      "NO_HRTICK_DL NO_DOUBLE_TICK NONTASK_CAPACITY TTWU_QUEUE SIS_UTIL NO_WARN_DOUBLE_CLOCK "
      "RT_PUSH_IPI NO_RT_RUNTIME_SHARE NO_LB_MIN ATTACH_AGE_LOAD WA_IDLE WA_WEIGHT WA_BIAS "
      "UTIL_EST NO_LATENCY_WARN";
  const auto r = run_bin("messaging -g 1 -l 20 --kernel v6.6 --features '" + line + "'", true);
  EXPECT_EQ(r.rc, 0);
  std::string want;
  for (const char* f : {"PLACE_REL_DEADLINE", "PREEMPT_SHORT", "DELAY_DEQUEUE", "DELAY_ZERO"})
    want += std::string("schedtwin: warning: --features: ") + f +
            ": a flag of releases after v6.6, the newest profile; the model does not read it; "
            "ignored\n";
  EXPECT_EQ(r.out, want);
}
