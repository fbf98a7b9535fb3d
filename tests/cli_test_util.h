// Running the schedtwin binary from end-to-end tests (cli_*_test.cpp).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace schedtwin::testutil {

struct CliResult {
  int rc = -1;      // exit status, -1 if the binary did not exit normally
  std::string out;  // its stdout, or its stderr with want_stderr
};

// Runs SCHEDTWIN_BIN with `args` through the shell, in directory `cwd` if given. Returns
// stdout (stderr discarded), or stderr (stdout discarded) when want_stderr is set.
inline CliResult run_bin(const std::string& args, bool want_stderr = false,
                         const std::string& cwd = "") {
  CliResult r;
  std::string cmd = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + std::string(SCHEDTWIN_BIN) + " " +
                    args + (want_stderr ? " 2>&1 >/dev/null" : " 2>/dev/null");
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  int st = pclose(f);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A path in the temporary directory unique to this test process (tests run in parallel
// processes): /tmp/schedtwin-cli-<prefix>-<pid>-<name>.
inline std::string temp_path(const std::string& prefix, const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("schedtwin-cli-" + prefix + "-" + std::to_string(getpid()) + "-" + name))
      .string();
}

// The whole contents of a file ("" if it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// An empty directory unique to this test process: /tmp/schedtwin-cli-<prefix>-<pid>.
inline std::filesystem::path fresh_dir(const std::string& prefix) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                  ("schedtwin-cli-" + prefix + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

struct CliRun {
  int status = -1;  // exit status, -1 if the binary did not exit normally
  std::string out, err;
};

// Runs SCHEDTWIN_BIN with `args` (from inside `dir` if cd is set), its stdout and stderr
// passed through dir/stdout.txt and dir/stderr.txt.
inline CliRun run_in(const std::string& args, const std::filesystem::path& dir, bool cd = false) {
  const std::filesystem::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd = (cd ? "cd " + dir.string() + " && " : std::string()) + SCHEDTWIN_BIN +
                          " " + args + " >" + out.string() + " 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
}

}  // namespace schedtwin::testutil
