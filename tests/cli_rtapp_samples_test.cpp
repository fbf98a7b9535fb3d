// run_rtapp_config's ways of keeping the rows (issue 7: memory of large runs must not change
// results): the summary and the JSON are the same whether the outcome keeps every sample or
// not, and whether the rows are kept in full for the logs or only their summary columns.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/rtapp_cmd.h"
#include "cli_test_util.h"
#include "workload/json_relaxed.h"
#include "workload/rtapp.h"

namespace fs = std::filesystem;
using namespace schedtwin;

namespace {

// Timers unique and shared, a missed absolute timer (negative slack), a name given to two
// tasks (one sample for both) and a task without threads.
const char* kTaskSet = R"({"tasks": {
  "a": {"instance": 3, "run": 3000, "timer": {"ref": "unique", "period": 4000}},
  "b": {"instance": 2, "run": 100, "sleep": 500},
  "a": {"instance": 2, "run": 5000, "delay": 1500,
        "timer": {"ref": "unique1", "period": 4000, "mode": "absolute"}},
  "c": {"instance": 2, "run": 900, "timer": {"ref": "shared", "period": 1000}},
  "z": {"instance": 0, "run": 10, "timer": {"ref": "t", "period": 100}}},
 "global": {"duration": 1}})";

nlohmann::json without_wall(nlohmann::json j) {
  j.erase("wall_time_s");
  return j;
}

}  // namespace

TEST(RtAppSamples, SummaryAndJsonDoNotDependOnWhatIsKept) {
  cli::CommonOptions o;
  o.machine = "hikey";
  o.duration_s = 0.3;
  o.lb_stats = true;
  const workload::rtapp::Config cfg =
      workload::rtapp::parse(workload::parse_relaxed_json(kTaskSet, "t.json"), "t.json", 8);
  const cli::RtAppOutcome kept = cli::run_rtapp_config(o, cfg, "", false, true);
  const cli::RtAppOutcome lean = cli::run_rtapp_config(o, cfg, "", false, false);
  const std::string dir = testutil::temp_path("rtapp-samples", "logs");
  const cli::RtAppOutcome logged = cli::run_rtapp_config(o, cfg, dir, true, false);
  fs::remove_all(dir);

  EXPECT_EQ(lean.summary, kept.summary);
  EXPECT_EQ(logged.summary, kept.summary);
  EXPECT_EQ(without_wall(lean.json), without_wall(kept.json));
  EXPECT_EQ(without_wall(logged.json), without_wall(kept.json));
  EXPECT_NE(kept.summary.find("a wu_lat (us), 5 threads:"), std::string::npos);

  // Every task name has its samples, one per row of all its threads ("z" has none).
  for (const char* name : {"a", "b", "c", "z"}) {
    const auto n = kept.json.at("tasks").at(name).at("wu_lat_us").at("n").get<std::size_t>();
    ASSERT_EQ(kept.wu_lat_us.count(name), 1u) << name;
    EXPECT_EQ(kept.wu_lat_us.at(name).size(), n) << name;
    EXPECT_EQ(kept.slack_us.at(name).size(), n) << name;
  }
  EXPECT_TRUE(kept.wu_lat_us.at("z").empty());
  EXPECT_GT(kept.wu_lat_us.at("a").size(), 0u);
  EXPECT_TRUE(lean.wu_lat_us.empty());
  EXPECT_TRUE(lean.slack_us.empty());
  EXPECT_EQ(lean.fork_cpus, kept.fork_cpus);
  EXPECT_EQ(lean.fork_cpus.at("a").size(), 5u);
}

// --json's wu_lat_us.over_1ms_pct is the share of the log rows whose wu_lat exceeds 1000 µs:
// 16 threads of 3 ms every 4 ms, each on its own timer, want 12 of hikey's 8 CPUs and are
// late by more than 1 ms about half the time (wherever fork placed them).
TEST(RtAppSamples, Over1msPctIsTheShareOfRowsAbove1000us) {
  cli::CommonOptions o;
  o.machine = "hikey";
  o.duration_s = 0.3;
  const workload::rtapp::Config cfg = workload::rtapp::parse(
      workload::parse_relaxed_json(
          R"({"tasks": {"o": {"instance": 16, "run": 3000, "timer": {"ref": "unique", "period": 4000}}}})",
          "o.json"),
      "o.json", 8);
  const cli::RtAppOutcome r = cli::run_rtapp_config(o, cfg, "", false, true);
  const std::vector<double>& v = r.wu_lat_us.at("o");
  ASSERT_FALSE(v.empty());
  const auto over = std::count_if(v.begin(), v.end(), [](double x) { return x > 1000; });
  const double pct = r.json.at("tasks").at("o").at("wu_lat_us").at("over_1ms_pct").get<double>();
  EXPECT_DOUBLE_EQ(pct, 100.0 * static_cast<double>(over) / static_cast<double>(v.size()));
  EXPECT_GT(pct, 0.0);
  EXPECT_LT(pct, 100.0);
}
