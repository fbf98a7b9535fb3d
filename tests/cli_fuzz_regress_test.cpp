// Inputs the fuzzers of fuzz/ (issue 8) found, kept as regression tests. Bad inputs that must
// give one error line are rows of cli_bad_input_test.cpp ("Found by fuzz/..."); here are the
// findings on valid inputs, and the parser-level checks. Several of these only fail under the
// sanitizers (scripts/sanitize.sh), where undefined behaviour aborts the program.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "machine/machine.h"

namespace {

using schedtwin::testutil::run_bin;
using schedtwin::testutil::temp_path;

// capture_fuzz: "2147483646-2147483647" incremented an int past INT_MAX (an endless loop
// in an optimised build, which the 2^20-CPU bound did not stop: it is checked per range).
TEST(CliFuzzRegress, CpuListRangeEndingAtIntMax) {
  EXPECT_EQ(schedtwin::machine::parse_cpu_list("2147483646-2147483647"),
            (std::vector<int>{2147483646, 2147483647}));
  EXPECT_EQ(schedtwin::machine::parse_cpu_list("2147483647"), (std::vector<int>{2147483647}));
}

// scenario_fuzz (the seed fuzz/corpus/scenario/mixed-groups.json with "-m", "2"): an idle
// period that ended before it began (on_idle_exit, src/kernel/core.cpp, passed a negative
// idle duration to cpuidle_reflect) made get_typical_interval
// (src/kernel/idle.cpp) square a difference of about 2^61 us: signed overflow, which UBSan
// reports and which corrupts the menu governor's prediction in an ordinary build.
TEST(CliFuzzRegress, ScenarioWithNegativeIdlePeriodRunsClean) {
  const std::string file = temp_path("fuzz-regress", "idle.json");
  std::ofstream(file) << R"({
  "machine": "hikey", "kernel": "v5.17", "features": "latency-nice,NO_SIS_CORE", "seed": 3,
  "duration_s": 0.02,
  "groups": {"fg": {"cpu.weight": 200, "cpu.latency-nice": 1}, "bg": {"cpu.idle": 1}},
  "workloads": [
    {"group": "fg", "schbench": ["-m", "2", "-t", "4"]},
    {"group": "bg", "messaging": ["-g", "1", "-l", "5", "-p"]},
    {"hackbench": ["-g", "1", "-l", "4", "-T"]}
  ]
})";
  const auto r = run_bin("run " + file + " --check", true);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out, "") << "nothing on stderr";
  std::filesystem::remove(file);
}

}  // namespace
