// The README's examples are real runs: every "$ schedtwin ..." line of a code block whose
// subcommand is cheap (below) is run from the repository root and must print exactly the
// lines that follow it, up to the next "$ " line or the end of the block. The costly ones
// (reproduce, compare, run, validate, calibrate) are re-run by hand when the model changes.
// A deliberate change of results means re-running the example and pasting its output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

struct Example {
  std::string command;  // without "$ schedtwin "
  std::string output;
  int line = 0;  // of the command in README.md
};

bool cheap(const std::string& command) {
  for (const char* sub :
       {"messaging ", "hackbench ", "schbench ", "pingpong ", "machine ", "rt-app ", "features "})
    if (command.rfind(sub, 0) == 0) return true;
  return false;
}

std::vector<Example> readme_examples() {
  std::ifstream in(std::string(SCHEDTWIN_SOURCE_DIR) + "/README.md");
  std::vector<Example> out;
  std::string line;
  bool in_block = false;
  Example* cur = nullptr;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      cur = nullptr;
    } else if (in_block && line.rfind("$ ", 0) == 0) {
      cur = nullptr;
      const std::string prefix = "$ schedtwin ";
      if (line.rfind(prefix, 0) == 0 && cheap(line.substr(prefix.size()))) {
        out.push_back({line.substr(prefix.size()), "", n});
        cur = &out.back();
      }
    } else if (cur) {
      cur->output += line + "\n";
    }
  }
  return out;
}

TEST(Readme, CheapExamplesPrintWhatTheReadmeShows) {
  // The examples show what a user sees; the invariant checker ctest turns on for every run
  // (SCHEDTWIN_CHECK=1) would take minutes on the 88-CPU pingpong and is covered elsewhere.
  unsetenv("SCHEDTWIN_CHECK");
  const std::vector<Example> examples = readme_examples();
  ASSERT_GE(examples.size(), 5u) << "README.md examples not found";
  const std::string logs = schedtwin::testutil::temp_path("readme", "logs");
  std::filesystem::create_directories(logs);
  for (Example e : examples) {
    SCOPED_TRACE("README.md:" + std::to_string(e.line) + ": " + e.command);
    // The rt-app example writes its logs to /tmp/logs; this test writes them elsewhere.
    for (std::size_t p; (p = e.command.find("/tmp/logs")) != std::string::npos;)
      e.command.replace(p, 9, logs);
    // An example that shows only what goes to stderr ends in "2>&1 >/dev/null".
    const std::string stderr_only = " 2>&1 >/dev/null";
    const bool want_stderr = e.command.ends_with(stderr_only);
    if (want_stderr) e.command.resize(e.command.size() - stderr_only.size());
    const schedtwin::testutil::CliResult r =
        schedtwin::testutil::run_bin(e.command, want_stderr, SCHEDTWIN_SOURCE_DIR);
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, e.output);
  }
  std::filesystem::remove_all(logs);
}

}  // namespace
