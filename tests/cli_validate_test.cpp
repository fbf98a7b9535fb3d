// `schedtwin validate` (issue 9): the scorecard's arithmetic and layout, the task set both
// sides run, the parsers of the real tools' output, the one-line error when the tools are
// missing, and a --tiny run end to end when rt-app, perf, hackbench and chrt are installed
// (skipped otherwise). The tolerances are not asserted: a busy CI machine may miss them.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "cli/host_exec.h"
#include "cli/host_parse.h"
#include "cli/validate.h"
#include "cli_test_util.h"
#include "engine/error.h"
#include "machine/capture.h"
#include "workload/json_relaxed.h"
#include "workload/rtapp.h"

using namespace schedtwin;
using namespace schedtwin::cli;

namespace {

using schedtwin::testutil::slurp;

validate::Row row(double real, double sim, std::optional<validate::Tolerance> tol) {
  return {"w", "m", validate::spread_of({real}), validate::spread_of({sim}), tol};
}

// Runs the binary through the shell with `env` before it; returns {status, stderr}.
testutil::CliResult run_with_env(const std::string& env, const std::string& args) {
  testutil::CliResult r;
  const std::string cmd = env + " " + SCHEDTWIN_BIN + " " + args + " 2>&1 >/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  const int st = pclose(f);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace

// ---- the scorecard ----

TEST(ValidateScore, SpreadIsMedianAndRange) {
  validate::Spread odd = validate::spread_of({3, 1, 2});
  EXPECT_EQ(odd.median, 2);
  EXPECT_EQ(odd.min, 1);
  EXPECT_EQ(odd.max, 3);
  EXPECT_EQ(odd.values, (std::vector<double>{3, 1, 2}));     // run order kept
  EXPECT_EQ(validate::spread_of({4, 1, 3, 2}).median, 2.5);  // mean of the middle two
  EXPECT_EQ(validate::spread_of({}).median, 0);
}

TEST(ValidateScore, TolerancesIncludeTheirEnds) {
  const auto lat = validate::kWakeupLatencyTolerance;
  const auto msg = validate::kMessagingTolerance;
  // Wakeup latency within 2x either way: sim/real in [0.5, 2].
  EXPECT_EQ(row(100, 200, lat).result(), "PASS");
  EXPECT_EQ(row(100, 50, lat).result(), "PASS");
  EXPECT_EQ(row(100, 201, lat).result(), "MISS");
  EXPECT_EQ(row(100, 49, lat).result(), "MISS");
  // Messaging within 30 %: sim/real in [0.7, 1.3].
  EXPECT_EQ(row(1.0, 1.3, msg).result(), "PASS");
  EXPECT_EQ(row(1.0, 0.7, msg).result(), "PASS");
  EXPECT_EQ(row(1.0, 1.31, msg).result(), "MISS");
  EXPECT_EQ(row(1.0, 0.69, msg).result(), "MISS");
  EXPECT_DOUBLE_EQ(row(0.8, 1.0, msg).ratio(), 1.25);
  // A real median of 0 (every period missed): 0 against 0 is a match, anything else is not.
  EXPECT_EQ(row(0, 0, lat).ratio(), 1.0);
  EXPECT_TRUE(std::isinf(row(0, 52, lat).ratio()));
  EXPECT_EQ(row(0, 52, lat).result(), "MISS");
  // Rows without a tolerance are printed, not scored.
  EXPECT_EQ(row(100, 900, std::nullopt).result(), "-");
  EXPECT_FALSE(row(100, 100, std::nullopt).pass());
}

TEST(ValidateScore, ScorecardLinesEndInTheirResult) {
  std::vector<validate::Row> rows = {
      {"rt-app x", "wu_lat p50 (us)", validate::spread_of({60, 70, 65}),
       validate::spread_of({52, 52, 53}), validate::kWakeupLatencyTolerance},
      {"rt-app x", "wu_lat p99 (us)", validate::spread_of({900}), validate::spread_of({60}),
       std::nullopt},
      {"perf g1", "total time (s)", validate::spread_of({0.891}), validate::spread_of({0.585}),
       validate::kMessagingTolerance}};
  const std::string card = validate::format_scorecard({"title line"}, rows);
  std::istringstream in(card);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 8u);  // title, blank, column heads, 3 rows, blank, summary
  EXPECT_EQ(lines[0], "title line");
  EXPECT_EQ(lines[1], "");
  EXPECT_NE(lines[2].find("real median [min-max]"), std::string::npos);
  // 52/65 = 0.8 within 2x; 0.585/0.891 = 0.657 outside 30 %.
  EXPECT_TRUE(lines[3].ends_with("PASS")) << lines[3];
  EXPECT_NE(lines[3].find("65.00 [60.00-70.00]"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("0.800"), std::string::npos) << lines[3];
  EXPECT_TRUE(lines[4].ends_with("-")) << lines[4];
  EXPECT_TRUE(lines[4].starts_with("        ")) << "the workload is not repeated: " << lines[4];
  EXPECT_TRUE(lines[5].ends_with("MISS")) << lines[5];
  EXPECT_NE(lines[5].find("0.657"), std::string::npos) << lines[5];
  EXPECT_EQ(lines[7], "1 of 2 scored rows PASS");

  const nlohmann::json j = validate::scorecard_json(rows);
  EXPECT_EQ(j["scored"], 2);
  EXPECT_EQ(j["passed"], 1);
  EXPECT_EQ(j["rows"][0]["result"], "PASS");
  EXPECT_EQ(j["rows"][0]["tolerance"], nlohmann::json::array({0.5, 2.0}));
  EXPECT_EQ(j["rows"][1]["tolerance"], nullptr);
  EXPECT_EQ(j["rows"][2]["real"]["median"], 0.891);
}

TEST(ValidateScore, BothSidesRunTheSameTaskSet) {
  // The real side: no SCHED_IDLE task (rt-app 1.0 refuses the policy; chrt starts the loops).
  const std::string real = validate::rtapp_periodic_json(2, 0, 4, 18, "/tmp/x y");
  const auto cfg =
      workload::rtapp::parse(workload::parse_relaxed_json(real, "r.json"), "r.json", 2);
  ASSERT_EQ(cfg.tasks.size(), 1u);
  EXPECT_EQ(cfg.tasks[0].name, "cfs_thread");
  EXPECT_EQ(cfg.tasks[0].instance, 2);
  EXPECT_EQ(cfg.tasks[0].policy, kernel::Policy::Normal);
  ASSERT_EQ(cfg.tasks[0].phases.size(), 1u);
  const auto& ev = cfg.tasks[0].phases[0].events;
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].type, workload::rtapp::EventType::Run);
  EXPECT_EQ(ev[0].us, 5333);
  EXPECT_EQ(ev[1].type, workload::rtapp::EventType::Timer);
  EXPECT_EQ(ev[1].us, 7777);
  EXPECT_TRUE(ev[1].unique_timer);
  EXPECT_EQ(cfg.duration_s, 4);
  EXPECT_EQ(cfg.pload_ns, 18);
  EXPECT_EQ(cfg.logdir, "/tmp/x y");
  // The simulated side adds the two SCHED_IDLE busy loops.
  const std::string sim = validate::rtapp_periodic_json(2, 2, 4, 18, "./");
  const auto s = workload::rtapp::parse(workload::parse_relaxed_json(sim, "s.json"), "s.json", 2);
  ASSERT_EQ(s.tasks.size(), 2u);
  EXPECT_EQ(s.tasks[1].name, "idle_thread");
  EXPECT_EQ(s.tasks[1].instance, 2);
  EXPECT_EQ(s.tasks[1].policy, kernel::Policy::Idle);
  EXPECT_EQ(s.tasks[1].phases[0].events.size(), 1u);  // run 3000, no timer: a busy loop
}

// ---- the real tools' output ----

TEST(ValidateParse, RtAppOneZeroLog) {
  // rt-app 1.0 (Debian 12) starts with a policy line, then the header.
  const std::string log =
      "# Policy : SCHED_OTHER priority : 0\n"
      "#idx     perf      run   period           start             end          rel_st      "
      "slack c_duration   c_period     wu_lat\n"
      "   0   296277    11147    11169     33812348046     33812359215            2085      "
      "-5343       5333       7777          0\n"
      "   1   296277     5297     7851     33812489753     33812497605          143793       "
      "2476       5333       7777         78\n";
  const auto rows = host::parse_rtapp_log(log, "a.log");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].idx, 0);
  EXPECT_EQ(rows[0].perf, 296277u);
  EXPECT_EQ(rows[0].run, 11147u);
  EXPECT_EQ(rows[0].start, 33812348046u);
  EXPECT_EQ(rows[0].slack, -5343);
  EXPECT_EQ(rows[0].wu_lat, 0u);
  EXPECT_EQ(rows[1].idx, 1);
  EXPECT_EQ(rows[1].period, 7851u);
  EXPECT_EQ(rows[1].c_period, 7777u);
  EXPECT_EQ(rows[1].wu_lat, 78u);
}

TEST(ValidateParse, RtAppBadRowNamesFileAndLine) {
  try {
    host::parse_rtapp_log("#idx ...\n  0 1 2 3\n", "x/rt-app-t-0.log");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "x/rt-app-t-0.log:2: expected the 11 columns of an rt-app log row, got 4");
  }
  EXPECT_THROW(host::parse_rtapp_log("0 1 2 3 4 5 6 7 8 9 x\n", "f"), InputError);
}

TEST(ValidateParse, PerfAndHackbenchTimes) {
  EXPECT_EQ(host::parse_perf_total_time("# Running 'sched/messaging' benchmark:\n"
                                        "# 20 sender and receiver processes per group\n"
                                        "# 1 groups == 40 processes run\n\n"
                                        "     Total time: 0.891 [sec]\n"),
            0.891);
  EXPECT_EQ(host::parse_perf_total_time("0.308\n"), 0.308);  // perf bench -f simple
  EXPECT_FALSE(host::parse_perf_total_time("perf: 'bench' is not a perf-command.\n"));
  EXPECT_EQ(host::parse_hackbench_time("Running in process mode with 2 groups using 40 file "
                                       "descriptors each (== 80 tasks)\n"
                                       "Each sender will pass 200 messages of 100 bytes\n"
                                       "Time: 0.103\n"),
            0.103);
  EXPECT_FALSE(host::parse_hackbench_time("Running in process mode\n"));
}

TEST(ValidateParse, KernelConfig) {
  const std::string cfg =
      "CONFIG_NO_HZ_IDLE=y\n# CONFIG_PREEMPT_VOLUNTARY is not set\nCONFIG_PREEMPT_NONE=y\n"
      "CONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n";
  auto b = host::parse_kernel_config(cfg, "console=ttyS0 quiet", "/proc/config.gz");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->hz, 250);
  EXPECT_EQ(b->preempt, machine::Preemption::None);
  EXPECT_TRUE(b->nohz_idle);
  EXPECT_NE(b->source.find("/proc/config.gz"), std::string::npos);
  EXPECT_NE(b->source.find("boot default"), std::string::npos);
  // preempt= on the command line picks the dynamic mode.
  b = host::parse_kernel_config(cfg, "quiet preempt=full", "c");
  EXPECT_EQ(b->preempt, machine::Preemption::Full);
  b = host::parse_kernel_config("CONFIG_HZ=1000\nCONFIG_PREEMPT_VOLUNTARY=y\n", "", "c");
  EXPECT_EQ(b->hz, 1000);
  EXPECT_EQ(b->preempt, machine::Preemption::Voluntary);
  EXPECT_FALSE(b->nohz_idle);
  EXPECT_FALSE(host::parse_kernel_config("CONFIG_PREEMPT=y\n", "", "c"));  // no HZ
}

// ---- end to end ----

// Ctrl-C or a kill during validate (trial 13: the SCHED_IDLE busy loops spun on, orphaned,
// and the work directory stayed): the waiting run_program kills its program and throws
// Interrupted, and unwinding stops the background loops and removes the directory.
TEST(HostExec, ASignalStopsTheHostProgramsAndRemovesTheWorkDirectory) {
  auto guard = std::make_unique<host::InterruptGuard>();
  std::string dir;
  pid_t loop_pid = -1;
  const pthread_t self = pthread_self();
  std::thread sender([self] {
    usleep(200'000);
    pthread_kill(self, SIGTERM);  // to the waiting thread, as a terminal's signal would reach it
  });
  int sig = 0;
  try {
    host::TempDir tmp("schedtwin-interrupt-test-");
    dir = tmp.path();
    host::BackgroundProcess loop({"sh", "-c", "while :; do :; done"});
    loop_pid = loop.pid();
    host::run_program({"sleep", "30"}, 60);
  } catch (const host::Interrupted& e) {
    sig = e.signal();
  }
  sender.join();
  EXPECT_EQ(sig, SIGTERM);
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
  ASSERT_GT(loop_pid, 0);
  EXPECT_NE(kill(loop_pid, 0), 0);  // killed and reaped
  EXPECT_THROW(host::throw_if_interrupted(), host::Interrupted);
  guard.reset();
  EXPECT_NO_THROW(host::throw_if_interrupted());
}

TEST(ValidateCli, MissingToolsGiveOneLineNamingThePackages) {
  const testutil::CliResult r = run_with_env("PATH=/nonexistent-schedtwin-path", "validate --tiny");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out,
            "schedtwin: validate: rt-app (package rt-app), perf (package linux-perf), hackbench "
            "(package rt-tests), chrt (package util-linux) not found in PATH; install with: "
            "apt-get install rt-app linux-perf rt-tests util-linux\n");
}

TEST(ValidateCli, BadOptionsAreUsageErrors) {
  EXPECT_EQ(run_with_env("", "validate --repeats 0").rc, 2);
  EXPECT_EQ(run_with_env("", "validate --machine /nonexistent.json").rc, 1);
  EXPECT_EQ(run_with_env("", "validate --machine hikey --save-machine /tmp/x.json").rc, 2);
}

TEST(ValidateCli, TinyRunPrintsAScorecard) {
  for (const char* tool : {"rt-app", "perf", "hackbench", "chrt"})
    if (host::find_in_path(tool).empty())
      GTEST_SKIP() << tool << " is not installed (apt-get install rt-app linux-perf rt-tests)";
  const std::string json = testutil::temp_path("validate", "card.json");
  const std::string out = testutil::temp_path("validate", "card.txt");
  const std::string machine = testutil::temp_path("validate", "host.json");
  const testutil::CliResult r = testutil::run_bin("validate --tiny --json " + json + " --out " +
                                                  out + " --save-machine " + machine);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(slurp(out), r.out);
  // Nine scored lines end in PASS or MISS (wu_lat p50 and p90 of both rt-app cases, three
  // messaging times, the growth, hackbench); p99, mean and missed periods end in "-".
  int scored = 0, unscored = 0;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) {
    if ((l.ends_with("PASS") || l.ends_with("MISS")) && l.find("scored rows") == std::string::npos)
      ++scored;
    if (l.find("wu_lat p99") != std::string::npos || l.find("wu_lat mean") != std::string::npos ||
        l.find("missed periods") != std::string::npos) {
      EXPECT_TRUE(l.ends_with("  -")) << l;
      ++unscored;
    }
  }
  EXPECT_EQ(scored, 9);
  EXPECT_EQ(unscored, 6);
  EXPECT_NE(r.out.find(" of 9 scored rows PASS\n"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j["command"], "validate");
  EXPECT_EQ(j["repeats"], 1);
  EXPECT_EQ(j["messaging_loops"], 20);
  ASSERT_EQ(j["rows"].size(), 2u * 5 + 3 + 1 + 1);
  EXPECT_EQ(j["scored"], 9);
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["real"]["values"].size(), 1u);
    EXPECT_EQ(row["sim"]["values"].size(), 1u);
    if (row["scored"].get<bool>()) {
      EXPECT_TRUE(row["result"] == "PASS" || row["result"] == "MISS") << row.dump();
    } else {
      EXPECT_EQ(row["result"], "-");
    }
  }
  // The simulated messaging ran and the real perf printed a time.
  EXPECT_GT(j["rows"][10]["real"]["median"].get<double>(), 0);
  EXPECT_GT(j["rows"][10]["sim"]["median"].get<double>(), 0);
  // The calibrated machine was kept and simulates (it is a valid machine file).
  const testutil::CliResult m = testutil::run_bin("messaging -g 1 -l 5 --machine " + machine);
  EXPECT_EQ(m.rc, 0);
  // And validate takes it back with --machine (no calibration then).
  const testutil::CliResult again =
      testutil::run_bin("validate --tiny --machine " + machine + " --json " + json);
  EXPECT_EQ(again.rc, 0);
  EXPECT_NE(again.out.find("machine:    " + machine + " (--machine)"), std::string::npos);
  // Costs still marked as `machine capture` leaves them are counted on the machine line.
  nlohmann::json file = nlohmann::json::parse(slurp(machine));
  for (const char* cost : {"ipi", "wakeup"})
    file["costs"][cost]["source"] = std::string(machine::kUncalibrated) + " (test)";
  std::ofstream(machine) << file.dump(2);
  const testutil::CliResult uncalibrated =
      testutil::run_bin("validate --tiny --machine " + machine);
  EXPECT_EQ(uncalibrated.rc, 0) << uncalibrated.out;
  EXPECT_NE(uncalibrated.out.find(" (--machine); 2 of its 10 costs are uncalibrated defaults "
                                  "(machine capture)"),
            std::string::npos)
      << uncalibrated.out;
  for (const std::string& p : {json, out, machine}) std::filesystem::remove(p);
}

// validate simulates the host with the profile of its kernel: EEVDF from 6.6 on.
TEST(Validate, ProfileFollowsTheHostKernelRelease) {
  EXPECT_EQ(validate::profile_for_kernel_release("6.18.0-1-amd64"), "v6.6");
  EXPECT_EQ(validate::profile_for_kernel_release("6.6.0"), "v6.6");
  EXPECT_EQ(validate::profile_for_kernel_release("7.0.1"), "v6.6");
  EXPECT_EQ(validate::profile_for_kernel_release("6.5.13-generic"), "v6.0");
  // Before 6.6 the nearest CFS profile, counted in releases (5.19 is one before 6.0): a 5.15
  // host must not get v6.0's SIS_UTIL.
  EXPECT_EQ(validate::profile_for_kernel_release("6.1.0-27-amd64"), "v6.0");
  EXPECT_EQ(validate::profile_for_kernel_release("5.19.0"), "v6.0");
  EXPECT_EQ(validate::profile_for_kernel_release("5.18.1"), "v5.17");
  EXPECT_EQ(validate::profile_for_kernel_release("5.15.0-91-generic"), "v5.17");
  EXPECT_EQ(validate::profile_for_kernel_release("5.12.0"), "v5.17");  // a tie: the newer
  EXPECT_EQ(validate::profile_for_kernel_release("5.10.0-30-amd64"), "v5.7");
  EXPECT_EQ(validate::profile_for_kernel_release("5.5.19"), "v5.6");
  EXPECT_EQ(validate::profile_for_kernel_release("5.4.0-150-generic"), "v5.4");
  EXPECT_EQ(validate::profile_for_kernel_release("4.19.0"), "v5.3");
  EXPECT_EQ(validate::profile_for_kernel_release("garbage"), "v6.0");
}
