// --explain and --check from the command line: a bad --explain path is one line and
// nothing written; the log is the same bytes for the same seed; --check reports its count.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_test_util.h"

using namespace schedtwin;
using testutil::run_bin;

namespace {

using schedtwin::testutil::slurp;

const std::string kArgs = "hackbench -g 1 -l 20 --machine hikey";

}  // namespace

TEST(CliExplain, ABadPathIsOneLineAndNothingIsWritten) {
  std::string dir = testutil::temp_path("explain", "missing-dir");
  auto r = run_bin(kArgs + " --explain=" + dir + "/x.txt", true);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("--explain"), std::string::npos) << r.out;
  EXPECT_EQ(run_bin(kArgs + " --explain=" + dir + "/x.txt").rc, 1);
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(run_bin(kArgs + " --explain-format yaml").rc, 2);
}

// The help names the flag as it is typed, with its optional file, not CLI11's "{-}" default.
TEST(CliExplain, TheHelpShowsTheFlagAsItIsTyped) {
  auto r = run_bin("hackbench --help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("--explain [=FILE]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("{-}"), std::string::npos) << r.out;
}

TEST(CliExplain, SameSeedSameLog) {
  std::string a = testutil::temp_path("explain", "a.jsonl"),
              b = testutil::temp_path("explain", "b.jsonl");
  ASSERT_EQ(run_bin(kArgs + " --seed 3 --explain-format jsonl --explain=" + a).rc, 0);
  ASSERT_EQ(run_bin(kArgs + " --seed 3 --explain-format jsonl --explain=" + b).rc, 0);
  std::string la = slurp(a);
  EXPECT_GT(la.size(), 100u);
  EXPECT_EQ(la, slurp(b));
  EXPECT_FALSE(std::filesystem::exists(a + ".tmp"));
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST(CliExplain, CheckReportsTheEventsItChecked) {
  auto r = run_bin(kArgs + " --check");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("--check: invariants held after "), std::string::npos) << r.out;
}

// --explain takes its file only as --explain=FILE: the word after a bare --explain is the
// subcommand's own (a trial found `rt-app --explain task.json --seed 2` taking task.json for
// the log's file, which a second task set would have overwritten).
TEST(CliExplain, ABareExplainNeverTakesTheNextWord) {
  const std::string logs = testutil::temp_path("explain", "logs");
  auto x = run_bin("rt-app --explain " SCHEDTWIN_SOURCE_DIR
                   "/examples/rt-app/lkml/sched-idle.json --seed 2 --duration 0.01 --logdir " +
                       logs,
                   true);
  ASSERT_EQ(x.rc, 0) << x.out;
  EXPECT_NE(x.out.find("cpu0 fork cfs_thread-0[1]"), std::string::npos) << x.out.substr(0, 500);
  std::filesystem::remove_all(logs);
  auto m = run_bin("messaging -g 1 -l 5 --explain out.txt", true);
  EXPECT_EQ(m.rc, 2);
  EXPECT_NE(m.out.find("argument not expected: out.txt"), std::string::npos) << m.out;
}

// Intel numbering: SMT siblings are n and n + 24, so a group's span is a CPU list, not a range.
TEST(CliExplain, GroupSpansAreCpuListsOnSmtMachines) {
  auto r = run_bin("messaging -g 1 -l 5 --machine xeon-e5-2650v4 --explain", true);
  ASSERT_EQ(r.rc, 0);
  // Some CPU n balances its MC domain newly idle: its local group is the core of n, the pair
  // n mod 24 and n mod 24 + 24.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m,
      std::regex(R"(cpu(\d+) balance: domain=MC type=newly_idle \| local (\d+),(\d+): )")))
      << r.out.substr(0, 3000);
  EXPECT_EQ(std::stoi(m[2]), std::stoi(m[1]) % 24);
  EXPECT_EQ(std::stoi(m[3]), std::stoi(m[1]) % 24 + 24);
  EXPECT_NE(r.out.find("domain=NUMA type=newly_idle | local 0-11,24-35: "), std::string::npos);
  EXPECT_EQ(r.out.find("| local 0-24:"), std::string::npos);
}

// --explain-format jsonl carries the figures the text gives inside its steps as JSON values:
// a wakeup's and a fork's target_cpu is the CPU its result names; a balance record's
// moved / busiest_cpu agree with its result, and its group statistics are numbers.
TEST(CliExplain, JsonlFieldsCarryTheDecisionsFigures) {
  std::string f = testutil::temp_path("explain", "figures.jsonl");
  ASSERT_EQ(run_bin(kArgs + " --explain-format jsonl --explain=" + f).rc, 0);
  std::istringstream in(slurp(f));
  int wakeups = 0, moves = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const nlohmann::json& fields = j.at("fields");
    const std::string result = j.at("result");
    const std::string kind = j.at("kind");
    if (kind == "wakeup" || kind == "fork") {
      ASSERT_TRUE(fields.at("target_cpu").is_number_integer()) << line;
      EXPECT_EQ(result.rfind("cpu" + std::to_string(fields.at("target_cpu").get<int>()), 0), 0u)
          << line;
      if (kind == "wakeup") {
        EXPECT_TRUE(fields.at("prev").is_number_integer()) << line;
        // true exactly when the result names the wake list and its IPI
        ASSERT_TRUE(fields.at("remote_wake_list").is_boolean()) << line;
        EXPECT_EQ(fields.at("remote_wake_list").get<bool>(),
                  result.find("wake list") != std::string::npos)
            << line;
        ++wakeups;
      }
    }
    if (kind == "balance" && fields.value("outcome", "") == "moved") {
      const int moved = fields.at("moved");
      const int busiest = fields.at("busiest_cpu");
      const std::string tasks = fields.at("moved_tasks");
      EXPECT_EQ(result, "moved " + std::to_string(moved) + " task(s) from cpu" +
                            std::to_string(busiest) + ": " + tasks)
          << line;
      // One space-separated task label per task moved.
      EXPECT_EQ(std::count(tasks.begin(), tasks.end(), ' '), moved - 1) << line;
      EXPECT_TRUE(fields.at("busiest_nr_running").is_number_integer()) << line;
      EXPECT_TRUE(fields.at("local_load").is_number_integer()) << line;
      EXPECT_TRUE(fields.at("imbalance").is_number_integer()) << line;
      ++moves;
    }
  }
  EXPECT_GT(wakeups, 10);
  EXPECT_GT(moves, 0);
  std::filesystem::remove(f);
}

// select_idle_core's "no idle core" says whether a scan ran: behind the LLC's has_idle_cores
// hint there is none; a scan that finds no idle core examined every CPU of the 24-CPU LLC.
TEST(CliExplain, NoIdleCoreSaysWhetherItScanned) {
  auto r = run_bin("messaging -g 2 -l 50 --machine xeon-e5-2650v4 --explain=/dev/stdout");
  ASSERT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("select_idle_core: the LLC's has_idle_cores hint is off: no scan"),
            std::string::npos);
  EXPECT_NE(r.out.find("select_idle_core: no idle core (24 CPUs examined; has_idle_cores "
                       "cleared)"),
            std::string::npos);
  // A CPU that a wakeup was sent to but that has not left its idle state is busy to
  // idle_cpu() (nr_running counts the queued task) and is labelled so.
  EXPECT_NE(r.out.find("busy (nr_running=1, still leaving idle)"), std::string::npos);
}
