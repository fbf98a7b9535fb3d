// Opening an HTML page in headless Chromium (Debian's `chromium`) from tests: the DOM after
// the page's scripts ran (--dump-dom) and a screenshot. Tests skip when Chromium is not
// installed (scripts/install-deps.sh installs it).
#pragma once
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace schedtwin::testutil {

inline constexpr const char* kChromium = "/usr/bin/chromium";

inline bool chromium_available() { return access(kChromium, X_OK) == 0; }

struct ChromiumResult {
  int rc = -1;      // exit status; -1 if it did not exit normally
  std::string dom;  // the serialized DOM (--dump-dom), empty with a screenshot
};

// Opens `html_path` (a file) with a fresh profile and no network (every host name fails to
// resolve, so the page must carry everything it needs). With `screenshot` set, saves a PNG
// of width x height there instead of dumping the DOM. Scripts get 10 s of virtual time; the
// whole run is bounded by `timeout 120`.
inline ChromiumResult run_chromium(const std::string& html_path, const std::string& screenshot = "",
                                   int width = 1200, int height = 4000) {
  ChromiumResult r;
  char tmpl[] = "/tmp/schedtwin-chromium-XXXXXX";
  const char* profile = mkdtemp(tmpl);
  if (!profile) return r;
  std::string cmd = std::string("timeout 120 ") + kChromium +
                    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                    " --disable-background-networking --disable-component-update --disable-sync"
                    " --user-data-dir=" +
                    profile +
                    " '--host-resolver-rules=MAP * ~NOTFOUND' --hide-scrollbars"
                    " --virtual-time-budget=10000 ";
  if (screenshot.empty())
    cmd += "--dump-dom";
  else
    cmd += "--window-size=" + std::to_string(width) + "," + std::to_string(height) +
           " '--screenshot=" + screenshot + "'";
  cmd += " 'file://" + std::filesystem::absolute(html_path).string() + "' 2>/dev/null";
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[65536];
    std::size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.dom.append(buf, n);
    const int st = pclose(f);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::error_code ec;
  std::filesystem::remove_all(profile, ec);
  return r;
}

// The <title> of a dumped DOM ("" if none).
inline std::string dom_title(const std::string& dom) {
  const auto a = dom.find("<title>");
  const auto b = dom.find("</title>");
  if (a == std::string::npos || b == std::string::npos || b < a) return "";
  return dom.substr(a + 7, b - a - 7);
}

}  // namespace schedtwin::testutil
