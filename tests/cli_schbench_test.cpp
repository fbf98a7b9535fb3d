// `schedtwin schbench`: show_latencies' text byte for byte (the December 2021 shape, with the
// values of a table quoted in reference/workloads.md §2.3), the order of what a run prints, the
// JSON document, exit statuses, determinism of the binary, and the compare entry.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/compare_cmd.h"
#include "cli/schbench_cmd.h"
#include "cli_test_util.h"

using namespace schedtwin;
using namespace schedtwin::cli;

namespace {

using Result = testutil::CliResult;
using testutil::run_bin;

std::string temp_path(const std::string& name) { return testutil::temp_path("schbench", name); }

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

workload::SchbenchTable table(std::uint64_t runtime, std::uint64_t samples,
                              const std::vector<std::pair<std::uint64_t, std::uint64_t>>& rows,
                              std::uint64_t min, std::uint64_t max) {
  workload::SchbenchTable t;
  t.runtime_s = runtime;
  t.samples = samples;
  for (std::size_t i = 0; i < rows.size(); ++i)
    t.rows.push_back({workload::kSchbenchPercentiles[i], rows[i].first, rows[i].second});
  t.min_us = min;
  t.max_us = max;
  return t;
}

constexpr const char* kRunArgs = "schbench -m 1 -t 2 -r 2 --machine hikey";

}  // namespace

// show_latencies(): "Latency percentiles (usec) runtime %llu (s) (%lu total samples)", rows
// "\t%s%2.1fth: %-10u (%lu samples)" with "* " on the 99th, "\t  min=%u, max=%u". The values
// 95872 (345 samples), 135424 (25 samples) and min=26024, max=138760 are those of the
// December 2021 table quoted in the reference; the other rows are bucket midpoints in between.
TEST(SchbenchText, ShowLatenciesByteForByte) {
  const auto t = table(30, 690,
                       {{95872, 345},
                        {99968, 172},
                        {119936, 104},
                        {127104, 34},
                        {135424, 25},
                        {137472, 6},
                        {139008, 3}},
                       26024, 138760);
  EXPECT_EQ(schbench_table_text(t),
            "Latency percentiles (usec) runtime 30 (s) (690 total samples)\n"
            "\t  50.0th: 95872      (345 samples)\n"
            "\t  75.0th: 99968      (172 samples)\n"
            "\t  90.0th: 119936     (104 samples)\n"
            "\t  95.0th: 127104     (34 samples)\n"
            "\t* 99.0th: 135424     (25 samples)\n"
            "\t  99.5th: 137472     (6 samples)\n"
            "\t  99.9th: 139008     (3 samples)\n"
            "\t  min=26024, max=138760\n");
  // A value wider than the %-10u field pushes the count right, as printf does.
  const auto wide = table(1, 1,
                          {{67043328, 1},
                           {67043328, 0},
                           {67043328, 0},
                           {67043328, 0},
                           {67043328, 0},
                           {67043328, 0},
                           {67043328, 0}},
                          67043328, 67043328);
  EXPECT_NE(schbench_table_text(wide).find("\t  50.0th: 67043328   (1 samples)\n"),
            std::string::npos);
}

TEST(SchbenchText, RunOutputInOrder) {
  workload::SchbenchResult r;
  workload::SchbenchOutputItem interval;
  interval.table = table(10, 3, {{7, 2}, {9, 1}, {9, 0}, {9, 0}, {9, 0}, {9, 0}, {9, 0}}, 7, 9);
  workload::SchbenchOutputItem warm;
  warm.warmup_done = true;
  r.output = {interval, warm};
  r.final_table = table(30, 0, {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}}, 0, 0);
  EXPECT_EQ(schbench_text(r),
            "Latency percentiles (usec) runtime 10 (s) (3 total samples)\n"
            "\t  50.0th: 7          (2 samples)\n"
            "\t  75.0th: 9          (1 samples)\n"
            "\t  90.0th: 9          (0 samples)\n"
            "\t  95.0th: 9          (0 samples)\n"
            "\t* 99.0th: 9          (0 samples)\n"
            "\t  99.5th: 9          (0 samples)\n"
            "\t  99.9th: 9          (0 samples)\n"
            "\t  min=7, max=9\n"
            "warmup done, zeroing stats\n"
            "Latency percentiles (usec) runtime 30 (s) (0 total samples)\n"
            "\t  50.0th: 0          (0 samples)\n"
            "\t  75.0th: 0          (0 samples)\n"
            "\t  90.0th: 0          (0 samples)\n"
            "\t  95.0th: 0          (0 samples)\n"
            "\t* 99.0th: 0          (0 samples)\n"
            "\t  99.5th: 0          (0 samples)\n"
            "\t  99.9th: 0          (0 samples)\n"
            "\t  min=0, max=0\n");
}

TEST(SchbenchCli, PrintsTheFinalTable) {
  const Result r = run_bin(kRunArgs);
  ASSERT_EQ(r.rc, 0);
  const std::regex shape(
      "Latency percentiles \\(usec\\) runtime 2 \\(s\\) \\([0-9]+ total samples\\)\n"
      "\t  50\\.0th: [0-9 ]{10} \\([0-9]+ samples\\)\n"
      "\t  75\\.0th: [0-9 ]{10} \\([0-9]+ samples\\)\n"
      "\t  90\\.0th: [0-9 ]{10} \\([0-9]+ samples\\)\n"
      "\t  95\\.0th: [0-9 ]{10} \\([0-9]+ samples\\)\n"
      "\t\\* 99\\.0th: [0-9 ]{10} \\([0-9]+ samples\\)\n"
      "\t  99\\.5th: [0-9 ]{10} \\([0-9]+ samples\\)\n"
      "\t  99\\.9th: [0-9 ]{10} \\([0-9]+ samples\\)\n"
      "\t  min=[0-9]+, max=[0-9]+\n");
  EXPECT_TRUE(std::regex_match(r.out, shape)) << r.out;
}

// -r 7 -i 3: main polls about every second; the table at ~3 s (runtime 3), the warmup reset at
// the first poll past 5 s (which skips the interval check), the table at ~6 s (3 s after the
// previous one), the final table (runtime 7).
TEST(SchbenchCli, WarmupAndIntervalTablesInOrder) {
  const Result r = run_bin("schbench -m 1 -t 1 -r 7 -i 3 --machine hikey");
  ASSERT_EQ(r.rc, 0);
  std::vector<std::string> heads;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '\t')
      heads.push_back(line.substr(0, line.find(" total samples)")));
  const std::regex head("Latency percentiles \\(usec\\) runtime ([0-9]+) \\(s\\) \\([0-9]+");
  for (std::string& h : heads) h = std::regex_replace(h, head, "runtime $1");
  const std::vector<std::string> want = {"runtime 3", "warmup done, zeroing stats", "runtime 6",
                                         "runtime 7"};
  EXPECT_EQ(heads, want) << r.out;
}

TEST(SchbenchCli, JsonDocument) {
  const std::string path = temp_path("run.json");
  const Result r = run_bin(std::string(kRunArgs) + " --json " + path);
  ASSERT_EQ(r.rc, 0);
  const nlohmann::json j = read_json(path);
  std::filesystem::remove(path);
  EXPECT_EQ(j.at("command"), "schbench");
  EXPECT_EQ(j.at("machine"), "hikey");
  EXPECT_EQ(j.at("seed"), 1);
  for (const char* k : {"schema_version", "kernel", "features", "sim_time_s", "wall_time_s",
                        "events", "samples", "loops", "message_threads", "worker_threads"})
    EXPECT_TRUE(j.contains(k)) << k;
  const nlohmann::json& w = j.at("wakeup_latency_us");
  for (const char* k : {"p50", "p75", "p90", "p95", "p99", "p99_5", "p99_9", "min", "max"})
    EXPECT_TRUE(w.contains(k)) << k;
  // The document and the text agree.
  const std::string samples = std::to_string(j.at("samples").get<std::uint64_t>());
  EXPECT_NE(r.out.find("(" + samples + " total samples)"), std::string::npos);
  const std::string p99 = std::to_string(w.at("p99").get<std::uint64_t>());
  EXPECT_NE(r.out.find("\t* 99.0th: " + p99 + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max=" + std::to_string(w.at("max").get<std::uint64_t>()) + "\n"),
            std::string::npos);
  EXPECT_EQ(j.at("message_threads"), 1);
  EXPECT_EQ(j.at("worker_threads"), 2);
  EXPECT_GT(j.at("sim_time_s").get<double>(), 2.0);
}

TEST(SchbenchCli, SameSeedSameBytes) {
  const std::string a = temp_path("a.json"), b = temp_path("b.json");
  const std::string args = "schbench -m 2 -t 3 -r 3 --machine xeon-e5-2650v4 --seed 7 --json ";
  const Result ra = run_bin(args + a);
  const Result rb = run_bin(args + b);
  ASSERT_EQ(ra.rc, 0);
  ASSERT_EQ(rb.rc, 0);
  EXPECT_EQ(ra.out, rb.out);
  nlohmann::json ja = read_json(a), jb = read_json(b);
  std::filesystem::remove(a);
  std::filesystem::remove(b);
  ja.erase("wall_time_s");
  jb.erase("wall_time_s");
  EXPECT_EQ(ja.dump(), jb.dump());
}

// -C is accepted and has no effect, as in that schbench (it notes so on stderr).
TEST(SchbenchCli, MessageCputimeIsIgnored) {
  const Result plain = run_bin(kRunArgs);
  const Result with_c = run_bin(std::string(kRunArgs) + " -C 0");
  ASSERT_EQ(with_c.rc, 0);
  EXPECT_EQ(plain.out, with_c.out);
}

TEST(SchbenchCli, ExitStatuses) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"schbench -m 0", 2},
      {"schbench -t 0", 2},
      {"schbench -r 0", 2},  // schbench's "forever" would never finish
      {"schbench -r x", 2},
      {"schbench -c -5", 2},
      {"schbench -s 100000001", 2},
      {"schbench -m 1000 -t 100", 2},  // 101001 threads
      {"schbench --no-such-option", 2},
      {"schbench extra", 2},
      {"schbench -r 1 --machine no-such-machine", 1},
      {"schbench -r 1 --machine hikey --features NO_SUCH_FEATURE", 1},
  };
  for (const auto& [args, rc] : cases) EXPECT_EQ(run_bin(args).rc, rc) << args;
  const std::string path = temp_path("never.json");
  EXPECT_EQ(run_bin("schbench -r 0 --json " + path).rc, 2);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SchbenchCompare, EntryReportsThePercentiles) {
  const auto names = compare_subcommands();
  EXPECT_NE(std::find(names.begin(), names.end(), "schbench"), names.end());
  const std::string path = temp_path("compare.json");
  const Result r =
      run_bin("compare --runs 2 --with NO_WA_IDLE --json " + path + " -- " + std::string(kRunArgs));
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json j = read_json(path);
  std::filesystem::remove(path);
  for (const char* k : {"min", "p50", "p75", "p90", "p95", "p99", "p99_5", "p99_9", "max"}) {
    const std::string m = std::string("wakeup_latency_us.") + k;
    EXPECT_TRUE(j.at("metrics").contains(m)) << m;
    EXPECT_NE(r.out.find(m), std::string::npos) << m;
  }
  // In schbench's order (min first, max last), then its sample count and the counters.
  const nlohmann::json& order = j.at("metric_order");
  ASSERT_EQ(order.size(), 13u) << order;
  EXPECT_EQ(order[0], "wakeup_latency_us.min");
  EXPECT_EQ(order[8], "wakeup_latency_us.max");
  EXPECT_EQ(order[9], "samples");
  EXPECT_EQ(order[10], "context_switches");
  EXPECT_EQ(order[12], "lb_migrations");
  EXPECT_EQ(order[11], "migrations");
  EXPECT_GT(j.at("metrics").at("samples").at("base").at("mean").get<double>(), 0);
}
