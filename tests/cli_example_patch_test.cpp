// tests/example_patch_check.sh (the ctest ExamplePatch.YourIdeaAppliesToThisTree) on a small
// git repository of its own: what it says to someone who followed README's "Trying your own
// idea" and edited, then committed, the lines the example patch touches.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.h"

namespace fs = std::filesystem;

namespace {

const std::string kScript = std::string(SCHEDTWIN_SOURCE_DIR) + "/tests/example_patch_check.sh";

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// Runs `cmd` in `dir` through the shell; returns its exit status, its stdout and stderr in `out`.
int sh(const fs::path& dir, const std::string& cmd, std::string* out = nullptr) {
  const fs::path log = dir / ".." / "out.txt";
  const int rc = std::system(
      ("cd '" + dir.string() + "' && (" + cmd + ") >'" + log.string() + "' 2>&1").c_str());
  if (out) *out = schedtwin::testutil::slurp(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

const std::string kGit = "git -c user.name=t -c user.email=t@example.org -c commit.gpgsign=false";

}  // namespace

TEST(ExamplePatchCheck, SaysWhichFilesClashAndWhatACommittedClashMeans) {
  if (std::system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no git";
  const fs::path top = schedtwin::testutil::fresh_dir("example-patch");
  const fs::path repo = top / "repo";
  fs::create_directories(repo);
  ASSERT_EQ(sh(repo, kGit + " init -q ."), 0);
  write(repo / "a.txt", "one\ntwo\nthree\n");
  write(repo / "b.txt", "alpha\nbeta\n");
  ASSERT_EQ(sh(repo, kGit + " add a.txt b.txt && " + kGit + " commit -q -m base"), 0);
  // The example patch: a change to both files.
  write(repo / "a.txt", "one\nTWO\nthree\n");
  write(repo / "b.txt", "alpha\nBETA\n");
  ASSERT_EQ(sh(repo, kGit + " diff > ../idea.patch && " + kGit + " checkout -q -- ."), 0);
  const std::string check = "sh '" + kScript + "' git ../idea.patch";

  std::string out;
  EXPECT_EQ(sh(repo, check, &out), 0) << out;  // applies

  // Your own idea at the same line of a.txt, not committed: skipped, naming a.txt only.
  write(repo / "a.txt", "one\nmine\nthree\n");
  EXPECT_EQ(sh(repo, check, &out), 77) << out;
  EXPECT_EQ(out, "skipped: uncommitted changes to a.txt touch the lines of the example patch\n");

  // Committed: a failure, whose first line says why that is expected here (raw git next).
  ASSERT_EQ(sh(repo, kGit + " commit -q -am mine"), 0);
  EXPECT_EQ(sh(repo, check, &out), 1) << out;
  EXPECT_EQ(out.rfind("the example patch ../idea.patch no longer applies to this tree (nor is it "
                      "applied): expected if you committed your own change at the same lines "
                      "(see README.md, \"Trying your own idea\"); otherwise the patch is stale "
                      "and must be refreshed (examples/your-idea/README.md says how). git apply "
                      "says:\n",
                      0),
            0u)
      << out;
  EXPECT_NE(out.find("error: patch failed: a.txt"), std::string::npos) << out;
  fs::remove_all(top);
}
