// Running the schedtwin binary from end-to-end tests (cli_*_test.cpp).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
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

}  // namespace schedtwin::testutil
