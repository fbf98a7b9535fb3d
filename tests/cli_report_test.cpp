// End-to-end tests of `schedtwin reproduce --report FILE.html`: the path is checked before
// any simulation, the report changes no figure, the page is deterministic, and headless
// Chromium (Debian's chromium; the rendering tests skip without it) renders every chart
// with no script error, offline. Screenshots are saved in the working directory (the
// build tree's tests folder under ctest): cli_report_<name>.png.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli_test_util.h"
#include "headless_chromium.h"

namespace fs = std::filesystem;
using schedtwin::testutil::run_bin;
using schedtwin::testutil::temp_path;

namespace {

using schedtwin::testutil::slurp;

// The number of charts the page says it draws (<meta name="schedtwin-charts">).
int declared_charts(const std::string& page) {
  std::smatch m;
  if (!std::regex_search(page, m,
                         std::regex("<meta name=\"schedtwin-charts\" content=\"([0-9]+)\">")))
    return -1;
  return std::stoi(m[1]);
}

// A binary built without report/node_modules refuses --report with one line; the tests
// that need a page check that line and skip.
bool built_without_assets(const std::string& args, const std::string& page_path) {
  auto r = run_bin(args, true);
  if (r.rc == 1 && r.out.find("scripts/install-deps.sh") != std::string::npos) {
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_NE(r.out.find("--report"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(page_path));
    return true;
  }
  EXPECT_EQ(r.rc, 0) << r.out;
  return false;
}

// Renders `page` in Chromium: expects "charts-ok N" for the N charts the page declares, an
// SVG in every chart element, and saves a screenshot as cli_report_<name>.png.
void expect_all_charts_render(const std::string& page, const std::string& name, int expected_charts,
                              int screenshot_height) {
  const std::string html = slurp(page);
  ASSERT_EQ(declared_charts(html), expected_charts);
  schedtwin::testutil::ChromiumResult c = schedtwin::testutil::run_chromium(page);
  ASSERT_EQ(c.rc, 0);
  EXPECT_EQ(schedtwin::testutil::dom_title(c.dom),
            "schedtwin reproduce: charts-ok " + std::to_string(expected_charts));
  // Each chart element of the page now holds the SVG vega-embed drew.
  const std::string key = "<div class=\"chart\" id=\"";
  int charts = 0;
  for (std::size_t p = 0; (p = html.find(key, p)) != std::string::npos;) {
    p += key.size();
    const std::string id = html.substr(p, html.find('"', p) - p);
    ++charts;
    const auto at = c.dom.find("id=\"" + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    const auto tag_end = c.dom.find('>', at);
    EXPECT_EQ(c.dom.compare(tag_end + 1, 4, "<svg"), 0) << id << " drew no SVG";
  }
  EXPECT_EQ(charts, expected_charts);

  const std::string png = fs::absolute("cli_report_" + name + ".png").string();
  fs::remove(png);
  schedtwin::testutil::ChromiumResult s =
      schedtwin::testutil::run_chromium(page, png, 1200, screenshot_height);
  EXPECT_EQ(s.rc, 0);
  const std::string bytes = slurp(png);
  ASSERT_GT(bytes.size(), 10000u) << png;
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::cout << "screenshot: " << png << "\n";
}

TEST(CliReport, BadPathFailsBeforeAnySimulation) {
  auto r = run_bin("reproduce all --runs 1 --report /nonexistent-schedtwin-dir/r.html", true);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("--report"), std::string::npos) << r.out;
  const std::string same = temp_path("report", "same.html");
  r = run_bin("reproduce sched-idle-fallback --runs 1 --json " + same + " --report " + same, true);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_FALSE(fs::exists(same));
}

TEST(CliReport, ReportChangesNoFigureAndIsDeterministic) {
  const std::string plain = temp_path("report", "plain.json"),
                    with = temp_path("report", "with.json");
  const std::string page = temp_path("report", "a.html"), page2 = temp_path("report", "b.html");
  auto a = run_bin("reproduce sched-idle-fallback --runs 2 --json " + plain);
  ASSERT_EQ(a.rc, 0);
  if (built_without_assets(
          "reproduce sched-idle-fallback --runs 2 --json " + with + " --report " + page, page)) {
    fs::remove(plain);
    GTEST_SKIP() << "built without report/node_modules";
  }
  auto b = run_bin("reproduce sched-idle-fallback --runs 2 --json " + with + " --report " + page);
  EXPECT_EQ(b.rc, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(slurp(plain), slurp(with));
  ASSERT_EQ(run_bin("reproduce sched-idle-fallback --runs 2 --report " + page2).rc, 0);
  EXPECT_EQ(slurp(page), slurp(page2));
  EXPECT_FALSE(fs::exists(page + ".tmp"));
  for (const auto& p : {plain, with, page, page2}) fs::remove(p);
}

TEST(CliReport, SchedIdleFallbackChartsRender) {
  if (!schedtwin::testutil::chromium_available())
    GTEST_SKIP() << "no " << schedtwin::testutil::kChromium;
  const std::string page = temp_path("report", "fallback.html");
  if (built_without_assets("reproduce sched-idle-fallback --runs 1 --report " + page, page))
    GTEST_SKIP() << "built without report/node_modules";
  const std::string html = slurp(page);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-fallback-histogram\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-fallback-occupancy\""), std::string::npos);
  expect_all_charts_render(page, "sched_idle_fallback", 2, 1600);
  fs::remove(page);
}

// The check must catch a chart that fails: the same page with one spec broken.
TEST(CliReport, BrokenChartIsReported) {
  if (!schedtwin::testutil::chromium_available())
    GTEST_SKIP() << "no " << schedtwin::testutil::kChromium;
  const std::string page = temp_path("report", "broken.html");
  if (built_without_assets("reproduce sched-idle-fallback --runs 1 --report " + page, page))
    GTEST_SKIP() << "built without report/node_modules";
  std::string html = slurp(page);
  const std::string mark = "\"mark\":{\"type\":\"rect\"}";
  const auto at = html.find(mark);
  ASSERT_NE(at, std::string::npos);
  html.replace(at, mark.size(), "\"mark\":{\"type\":\"no-such-mark\"}");
  std::ofstream(page, std::ios::binary | std::ios::trunc) << html;
  schedtwin::testutil::ChromiumResult c = schedtwin::testutil::run_chromium(page);
  ASSERT_EQ(c.rc, 0);
  EXPECT_EQ(schedtwin::testutil::dom_title(c.dom).rfind("schedtwin reproduce: charts-error", 0), 0u)
      << schedtwin::testutil::dom_title(c.dom);
  fs::remove(page);
}

// Every series with seed 1 (quick scale). The kernel-model invariant checker the suite turns
// on (SCHEDTWIN_CHECK=1) is off here: it multiplies this run's ~15 s many times over, and
// this test is about the page.
TEST(CliReport, AllSeriesChartsRender) {
  if (!schedtwin::testutil::chromium_available())
    GTEST_SKIP() << "no " << schedtwin::testutil::kChromium;
  setenv("SCHEDTWIN_CHECK", "0", 1);
  const std::string page = temp_path("report", "all.html");
  const bool skip = built_without_assets("reproduce all --runs 1 --report " + page, page);
  if (skip) GTEST_SKIP() << "built without report/node_modules";
  const std::string html = slurp(page);
  for (const char* id :
       {"sched-idle-fallback", "latency-nice", "runnable-avg", "sched-idle-balancing"})
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\">"), std::string::npos) << id;
  expect_all_charts_render(page, "all", 7, 5200);
  fs::remove(page);
}

}  // namespace
