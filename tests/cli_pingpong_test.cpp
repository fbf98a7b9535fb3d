// `schedtwin pingpong`: uperf's number formatting (print_decimal's units, rounding and its
// width-1 truncation), its summary line, size parsing, the output text, the JSON document,
// exit statuses for bad options, determinism of the binary, and the compare entry.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli/pingpong_cmd.h"
#include "cli_test_util.h"
#include "engine/error.h"

using namespace schedtwin;
using namespace schedtwin::cli;

namespace {

using Result = testutil::CliResult;
using testutil::run_bin;

std::string temp_path(const std::string& name) { return testutil::temp_path("pp", name); }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A short run: 2 connections on the 8-CPU hikey preset for 20 ms (its first wakeups leave deep
// idle states, about 1 ms each, until the menu governor has seen the short idle periods).
const char* kShortRun = "pingpong --threads 2 --size 8k -r 0.02 --machine hikey";

}  // namespace

TEST(UperfNumbers, DecimalUnitsAndRounding) {
  EXPECT_EQ(uperf_decimal(0, 8, false), "       0 ");
  EXPECT_EQ(uperf_decimal(0, 12, true), "           0 ");
  EXPECT_EQ(uperf_decimal(512, 8, false), " 512.00B ");
  // Bytes divide by 1024 while above it: 8192 B = 8.00KB; 1.5 GiB = 1.50GB.
  EXPECT_EQ(uperf_decimal(8192, 8, false), "  8.00KB ");
  EXPECT_EQ(uperf_decimal(1.5 * (1 << 30), 8, false), "  1.50GB ");
  // Bits divide by 1000: 32.768e9 b/s = 32.77Gb/s; 999 b/s stays b/s.
  EXPECT_EQ(uperf_decimal(32.768e9, 12, true), "   32.77Gb/s ");
  EXPECT_EQ(uperf_decimal(999, 12, true), "   999.00b/s ");
  EXPECT_EQ(uperf_decimal(1000, 12, true), "  1000.00b/s ");  // "while (value > div)"
  EXPECT_EQ(uperf_decimal(1001, 12, true), "    1.00Kb/s ");
}

// uperf passes the field width as snprintf's buffer size: at most width - 1 characters.
TEST(UperfNumbers, WidthMinusOneTruncation) {
  EXPECT_EQ(uperf_decimal(223.52 * (1u << 30), 8, false), " 223.52G ");  // "223.52GB"
  EXPECT_EQ(uperf_decimal(1024, 8, false), " 1024.00 ");  // "1024.00B": 1024 is not above 1024
  EXPECT_EQ(uperf_decimal(123.456e9, 12, true), "  123.46Gb/s ");
  EXPECT_EQ(uperf_decimal(1e12, 12, true), " 1000.00Gb/s ");  // 11 characters: still whole
}

TEST(UperfNumbers, SummaryLine) {
  // 1e6 ops of 8192 B in 2 s: 8.192e9 B = 7.63 GiB, 32.77 Gb/s, 500000 op/s.
  EXPECT_EQ(uperf_summary_line("Total", 8.192e9, 1e6, sec(2)),
            "Total      7.63GB /   2.00(s) =    32.77Gb/s      500000op/s \n");
  EXPECT_EQ(uperf_summary_line("Transaction", 0, 3, ms(1500)),
            "Transact        0 /   1.50(s) =            0           2op/s \n");
  EXPECT_EQ(uperf_summary_line("Txn2", 1, 1, 0), "");  // uperf prints nothing for time <= 0
}

TEST(UperfNumbers, SizeSyntax) {
  EXPECT_EQ(parse_uperf_size("64"), 64);
  EXPECT_EQ(parse_uperf_size("8k"), 8192);
  EXPECT_EQ(parse_uperf_size("8K"), 8192);
  EXPECT_EQ(parse_uperf_size("1m"), 1 << 20);
  EXPECT_EQ(parse_uperf_size("1g"), 1 << 30);
  EXPECT_EQ(parse_uperf_size("100b"), 100);
  for (const char* bad : {"", "k", "-1", "1.5k", "8kb", "8 k", "8x", "0x10"})
    EXPECT_EQ(parse_uperf_size(bad), -1) << bad;
}

TEST(PingpongText, UperfLines) {
  workload::PingpongParams p;
  p.connections = 8;
  workload::PingpongResult r;
  r.elapsed = sec(2);
  r.ops = 1'000'000;
  r.bytes = 8'192'000'000;
  const std::string rule(79, '-');
  EXPECT_EQ(pingpong_text(p, r),
            "Starting 8 threads running profile:tcp pingpong ...   0.00 seconds\n"
            "Txn2       7.63GB /   2.00(s) =    32.77Gb/s      500000op/s \n" +
                rule + "\nTotal      7.63GB /   2.00(s) =    32.77Gb/s      500000op/s \n");
}

TEST(PingpongParamsCli, SizeAndRuntime) {
  PingpongArgs a;
  a.threads = 3;
  a.size = "64";
  a.runtime_s = 0.0015;
  workload::PingpongParams p = pingpong_params(a);
  EXPECT_EQ(p.connections, 3);
  EXPECT_EQ(p.msg_bytes, 64);
  EXPECT_EQ(p.duration, us(1500));
  a.size = "2g";
  EXPECT_THROW(pingpong_params(a), UsageError);
  a.size = "8k";
  a.runtime_s = 0;
  EXPECT_THROW(pingpong_params(a), UsageError);
}

// The text is the tool's shape and agrees with the JSON document's figures.
TEST(PingpongCli, OutputAndJson) {
  const std::string json = temp_path("run.json");
  Result r = run_bin(std::string(kShortRun) + " --json " + json);
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::regex shape(
      "Starting 2 threads running profile:tcp pingpong \\.\\.\\.   0\\.00 seconds\n"
      "Txn2     [ 0-9.KMGB]{8} /   0\\.02\\(s\\) = [ 0-9.KMGb/s]{12}  {0,9}[0-9]+op/s \n"
      "-{79}\n"
      "Total    [ 0-9.KMGB]{8} /   0\\.02\\(s\\) = [ 0-9.KMGb/s]{12}  {0,9}[0-9]+op/s \n");
  EXPECT_TRUE(std::regex_match(r.out, shape)) << r.out;
  const nlohmann::json j = read_json(json);
  for (const char* key :
       {"schema_version", "command", "machine", "kernel", "features", "seed", "sim_time_s",
        "wall_time_s", "events", "throughput_gbps", "ops_per_s", "threads"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["command"], "pingpong");
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["size_bytes"], 8192);
  EXPECT_DOUBLE_EQ(j["duration_s"].get<double>(), 0.02);
  const double ops = j["ops"].get<double>();
  const double bytes = j["bytes"].get<double>();
  EXPECT_GT(ops, 0);
  EXPECT_DOUBLE_EQ(bytes, ops * 8192);
  EXPECT_DOUBLE_EQ(j["throughput_gbps"].get<double>(), bytes * 8 / 0.02 / 1e9);
  EXPECT_DOUBLE_EQ(j["ops_per_s"].get<double>(), ops / 0.02);
  EXPECT_NE(r.out.find(uperf_summary_line("Total", bytes, ops, ms(20))), std::string::npos);
  std::filesystem::remove(json);
}

TEST(PingpongCli, Deterministic) {
  const std::string j1 = temp_path("a.json"), j2 = temp_path("b.json");
  Result a = run_bin(std::string(kShortRun) + " --seed 7 --json " + j1);
  Result b = run_bin(std::string(kShortRun) + " --seed 7 --json " + j2);
  ASSERT_EQ(a.rc, 0);
  EXPECT_EQ(a.out, b.out);
  nlohmann::json x = read_json(j1), y = read_json(j2);
  x.erase("wall_time_s");
  y.erase("wall_time_s");
  EXPECT_EQ(x, y);
  std::filesystem::remove(j1);
  std::filesystem::remove(j2);
}

TEST(PingpongCli, BadOptionsExitTwo) {
  for (const char* bad : {"--threads 0", "--threads 50001", "--threads x", "--size 0", "--size 8x",
                          "--size 2g", "--size -1", "-r 0", "-r -1", "-r nan", "-r 86401", "-r x",
                          "--no-such-option", "extra-positional"}) {
    Result r = run_bin(std::string("pingpong ") + bad + " --machine hikey");
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_EQ(r.out, "") << bad;
  }
}

// -r takes uperf's duration syntax too: 0.002, 0.002s and 2ms are the same run.
TEST(PingpongCli, RuntimeInUperfSyntax) {
  const std::string a = run_bin("pingpong --threads 2 -r 0.002 --machine hikey").out;
  EXPECT_NE(a.find("0.00(s)"), std::string::npos) << a;
  EXPECT_EQ(run_bin("pingpong --threads 2 -r 0.002s --machine hikey").out, a);
  EXPECT_EQ(run_bin("pingpong --threads 2 -r 2ms --machine hikey").out, a);
  Result r = run_bin("pingpong --threads 2 -r 30x --machine hikey", true);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--runtime: expected seconds, e.g. 30, 30s, 500ms"), std::string::npos)
      << r.out;
}

TEST(PingpongCli, BadInputExitsOneAndWritesNothing) {
  const std::string json = temp_path("never.json");
  EXPECT_EQ(run_bin("pingpong -r 0.001 --machine no-such-machine --json " + json).rc, 1);
  EXPECT_EQ(run_bin("pingpong -r 0.001 --machine hikey --features NO_SUCH_FEATURE").rc, 1);
  EXPECT_FALSE(std::filesystem::exists(json));
}

TEST(PingpongCli, CompareRunsIt) {
  const std::string json = temp_path("cmp.json");
  Result r = run_bin("compare --runs 2 --with NO_WA_IDLE --json " + json +
                     " -- pingpong --threads 2 -r 0.001 --machine hikey");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("throughput_gbps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ops_per_s"), std::string::npos) << r.out;
  const nlohmann::json j = read_json(json);
  EXPECT_EQ(j["metrics"]["throughput_gbps"]["base"]["n"], 2);
  EXPECT_EQ(j["metrics"]["ops_per_s"]["with"]["n"], 2);
  EXPECT_EQ(run_bin("compare --runs 2 --with NO_WA_IDLE -- pingpong --seed 3").rc, 2);
  std::filesystem::remove(json);
}

// --cost replaces one machine figure (not adds to it): the preset's own 45 ns idle-search
// probe gives the same bytes as no --cost; 200 ns makes v5.3's 43-CPU scans dearer and the
// throughput falls. 128 connections keep every CPU busy, so every wakeup scans (at 48 the
// start can split the pairs over two CPUs each, and then hardly any wakeup scans). compare
// takes it in ARGS and sweeps it.
TEST(PingpongCli, CostReplacesAMachineFigure) {
  const std::string run = "pingpong --threads 128 -r 0.005 --machine xeon-2s-88 --kernel v5.3";
  const std::string json = temp_path("cost.json"), plain_json = temp_path("plain.json");
  Result plain = run_bin(run + " --json " + plain_json);
  Result same = run_bin(run + " --cost idle_probe=45 --json " + plain_json);
  Result dear = run_bin(run + " --cost idle_probe=200 --json " + json);
  ASSERT_EQ(dear.rc, 0) << dear.out;
  EXPECT_EQ(plain.out, same.out);
  const nlohmann::json j = read_json(json);
  EXPECT_EQ(j["costs_overridden"], nlohmann::json({{"idle_probe", 200}}));
  const double gbps = j["throughput_gbps"];
  EXPECT_LT(gbps, 0.8 * read_json(plain_json)["throughput_gbps"].get<double>());
  for (const char* bad : {"--cost idle_probe", "--cost idle_prob=1", "--cost idle_probe=-1",
                          "--cost idle_probe=10000001", "--cost ipi=1 --cost ipi=2"}) {
    Result r = run_bin(std::string("pingpong -r 0.001 --machine hikey ") + bad, true);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.out.find("--cost"), std::string::npos) << r.out;
  }
  EXPECT_NE(run_bin("pingpong --cost idle_prob=1", true).out.find("did you mean 'idle_probe'"),
            std::string::npos);
  Result sweep = run_bin(
      "compare --runs 1 --base v5.3 --with latency-nice --sweep cost=idle_probe=25,idle_probe=200 "
      "-- " +
      run.substr(0, run.find(" --kernel")));
  ASSERT_EQ(sweep.rc, 0) << sweep.out;
  EXPECT_NE(sweep.out.find("idle_probe=200  throughput_gbps"), std::string::npos) << sweep.out;
  std::filesystem::remove(json);
}
