// Golden runs (issue 7's rule: optimisation never changes results). Each case runs the binary
// with a fixed seed and compares every byte it writes — stdout, rt-app logs, --json, ftrace text
// — with tests/golden/<case>/. Only the JSON's "wall_time_s" line differs between runs of the
// same input and is left out of the comparison. Each case also runs with every step ending in a
// dispatched event (SCHEDTWIN_PLAIN_STEPS=1: no lazy repeated steps, src/kernel/repeat.cpp)
// and must write the same bytes.
//
// A deliberate change of results regenerates the files:
//   SCHEDTWIN_UPDATE_GOLDEN=1 ctest --test-dir build -R CliGolden
// and the commit says why the numbers moved.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli_test_util.h"

namespace fs = std::filesystem;
using schedtwin::testutil::run_bin;
using schedtwin::testutil::temp_path;

namespace {

using schedtwin::testutil::slurp;

const std::string kSrc = SCHEDTWIN_SOURCE_DIR;

struct GoldenCase {
  const char* name;
  std::string args;  // {dir} is the run's output directory
};

// `text` without the JSON lines of `key`: wall_time_s measures the host, not the simulation;
// dispatched_events says how the run was computed (lazy or plain steps), not what.
std::string drop_key_lines(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line))
    if (line.find("\"" + key + "\"") == std::string::npos) out += line + "\n";
  return out;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

// The files of `dir`, with the paths of this checkout and of the run's directory written
// as {src} and {dir} so that the recorded files hold wherever the repository is cloned.
std::map<std::string, std::string> read_dir(const fs::path& dir, const fs::path& run_dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string text = drop_key_lines(slurp(e.path()), "wall_time_s");
    replace_all(text, run_dir.string(), "{dir}");
    replace_all(text, kSrc, "{src}");
    files[e.path().filename().string()] = std::move(text);
  }
  return files;
}

class CliGolden : public ::testing::TestWithParam<GoldenCase> {};

// The files one run of `c` writes (its directory is removed again), with plain steps or not.
std::map<std::string, std::string> run_case(const GoldenCase& c, const fs::path& dir, bool plain) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string args = c.args;
  replace_all(args, "{dir}", dir.string());
  replace_all(args, "{src}", kSrc);
  if (plain) setenv("SCHEDTWIN_PLAIN_STEPS", "1", 1);
  auto r = run_bin(args + " --check > " + (dir / "stdout.txt").string());
  unsetenv("SCHEDTWIN_PLAIN_STEPS");
  EXPECT_EQ(r.rc, 0) << args << (plain ? " (plain steps)" : "");
  auto files = read_dir(dir, dir);
  fs::remove_all(dir);
  return files;
}

TEST_P(CliGolden, SameBytesAsRecorded) {
  const GoldenCase& c = GetParam();
  const fs::path dir = temp_path("golden", c.name);
  const fs::path want_dir = fs::path(kSrc) / "tests" / "golden" / c.name;
  auto got = run_case(c, dir, false);
  // Only how many events were dispatched may differ (the JSON's "dispatched_events").
  for (const auto& [name, text] : run_case(c, dir, true)) {
    auto it = got.find(name);
    EXPECT_TRUE(it != got.end() && drop_key_lines(it->second, "dispatched_events") ==
                                       drop_key_lines(text, "dispatched_events"))
        << c.name << "/" << name << " differs between lazy and plain steps";
  }
  if (const char* u = std::getenv("SCHEDTWIN_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    fs::remove_all(want_dir);
    fs::create_directories(want_dir);
    for (const auto& [name, text] : got) std::ofstream(want_dir / name, std::ios::binary) << text;
    GTEST_SKIP() << "regenerated " << want_dir;
  }
  ASSERT_TRUE(fs::is_directory(want_dir))
      << want_dir << " missing: run with SCHEDTWIN_UPDATE_GOLDEN=1";
  auto want = read_dir(want_dir, dir);
  std::string got_names, want_names;
  for (const auto& [name, _] : got) got_names += name + " ";
  for (const auto& [name, _] : want) want_names += name + " ";
  EXPECT_EQ(got_names, want_names);
  for (const auto& [name, text] : want) {
    auto it = got.find(name);
    if (it == got.end()) continue;
    if (it->second == text) continue;
    // Name the first differing line rather than dumping megabytes.
    std::istringstream a(text), b(it->second);
    std::string la, lb;
    int line = 1;
    while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
    ADD_FAILURE() << c.name << "/" << name << " differs first at line " << line
                  << ":\n  recorded: " << la << "\n  now:      " << lb;
  }
}

// Small runs that still take every path the benchmarks take: fork placement, wakeups with
// and without the idle search, periodic / newly idle / NOHZ balancing, SMT, NUMA, groups.
INSTANTIATE_TEST_SUITE_P(
    Runs, CliGolden,
    ::testing::Values(
        GoldenCase{
            "rtapp_sched_idle_hikey",
            "rt-app {src}/examples/rt-app/lkml/sched-idle.json --machine hikey --kernel v5.4 "
            "--duration 0.3 --logdir {dir} --json {dir}/run.json --schedstat --lb-stats"},
        GoldenCase{"messaging_xeon",
                   "messaging -g 2 -l 200 --machine xeon-e5-2650v4 --kernel v5.7 --seed 3 "
                   "--json {dir}/run.json --schedstat --lb-stats"},
        GoldenCase{"messaging_thread_pipe_thunderx2",
                   "messaging -t -p -g 2 -l 10 --machine thunderx2 --kernel v5.6 "
                   "--json {dir}/run.json --lb-stats"},
        GoldenCase{"messaging_ftrace_hikey",
                   "messaging -g 1 -l 5 --machine hikey --ftrace {dir}/trace.txt"},
        GoldenCase{"schbench_v517_sib",
                   "schbench -m 2 -t 4 -r 2 -w 1 --machine xeon-e5-2650v4 --kernel v5.17 "
                   "--features sched-idle-balancing --json {dir}/run.json --schedstat"},
        GoldenCase{"pingpong_latency_nice",
                   "pingpong --threads 12 -r 0.01 --machine xeon-e5-2650v4 --kernel v5.7 "
                   "--features latency-nice --json {dir}/run.json"},
        GoldenCase{"run_noisy_scenario",
                   "run {src}/tests/fixtures/golden-scenario.json "
                   "--json {dir}/run.json"}),
    [](const ::testing::TestParamInfo<GoldenCase>& i) { return std::string(i.param.name); });

}  // namespace
