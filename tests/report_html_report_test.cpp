// The reproduce report page from hand-made figures (no simulation): the chart data and
// tables carry the simulated figures beside the published ones, the page is self-contained
// and deterministic, text is escaped, and every chart (the --full-only messaging chart
// included) renders in headless Chromium when it is installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "headless_chromium.h"
#include "report/assets.h"
#include "report/html_report.h"

namespace schedtwin {
namespace {

using nlohmann::json;

json histogram(double first, double last, json pub_first, json pub_last) {
  json h = json::array();
  for (int b = 0; b < 11; ++b)
    h.push_back({{"bin", b == 10 ? std::string(">1000")
                                 : std::to_string(b * 100) + "-" + std::to_string(b * 100 + 100)},
                 {"count", b == 0    ? first
                           : b == 10 ? last
                                     : 0.0},
                 {"published", b == 0    ? pub_first
                               : b == 10 ? pub_last
                                         : json(nullptr)}});
  return h;
}

report::ReproduceReport make_report() {
  report::ReproduceReport r;
  r.command = "schedtwin reproduce all --runs 2";
  r.runs = 2;
  json& f = r.figures;
  f["sched-idle-fallback"] = {{"without_change",
                               {{"n", 4300},
                                {"max_us", 12000},
                                {"mean_us", 2000.25},
                                {"over_1ms_pct", 27.0},
                                {"published_n", 4710},
                                {"published_max_us", 67664},
                                {"published_mean_us", 1116.68},
                                {"published_over_1ms_pct", 25.9},
                                {"wu_lat_histogram", histogram(3000, 1100, 3102, 1218)}}},
                              {"with_change",
                               {{"n", 5136},
                                {"max_us", 306},
                                {"mean_us", 145.0},
                                {"over_1ms_pct", 0.0},
                                {"published_n", 5095},
                                {"published_max_us", 7773},
                                {"published_mean_us", 102.683},
                                {"published_over_1ms_pct", 0.8},
                                {"wu_lat_histogram", histogram(5136, 0, 5042, 40)}}},
                              {"no_sched_idle",
                               {{"n", 5136},
                                {"max_us", 305},
                                {"mean_us", 105.0},
                                {"over_1ms_pct", 0.0},
                                {"published_n", 5136},
                                {"published_max_us", 2452},
                                {"published_mean_us", 104.358},
                                {"published_over_1ms_pct", 0.3},
                                {"wu_lat_histogram", histogram(5136, 0, 3688, 17)}}},
                              {"mean_ratio", 13.79}};
  r.occupancy = {
      {"bin_ms", 50.0},
      {"end_s", 0.1},
      {"cpus", 2},
      {"classes", {"SCHED_OTHER", "idle"}},
      {"run", "test run </script> <!--"},
      {"rows", json::array({{{"cpu", 0}, {"t_s", 0.0}, {"SCHED_OTHER", 0.5}, {"idle", 0.5}},
                            {{"cpu", 1}, {"t_s", 0.0}, {"SCHED_OTHER", 1.0}, {"idle", 0.0}},
                            {{"cpu", 0}, {"t_s", 0.05}, {"SCHED_OTHER", 0.25}, {"idle", 0.75}},
                            {{"cpu", 1}, {"t_s", 0.05}, {"SCHED_OTHER", 0.0}, {"idle", 1.0}}})}};
  f["latency-nice"] = {{"8",
                        {{"v5.3_gbps", 90.0},
                         {"latency_nice_gbps", 91.0},
                         {"latency_nice_no_sis_core_gbps", 92.0},
                         {"gain_pct", 1.0},
                         {"gain_no_sis_core_pct", 2.0},
                         {"published_gain_pct", -0.43},
                         {"published_gain_no_sis_core_pct", 0.2},
                         {"published_v5.3_gbps", 64.66},
                         {"published_latency_nice_gbps", 64.38},
                         {"published_latency_nice_no_sis_core_gbps", 64.79}}},
                       {"48",
                        {{"v5.3_gbps", 500.0},
                         {"latency_nice_gbps", 700.0},
                         {"latency_nice_no_sis_core_gbps", 710.0},
                         {"gain_pct", 40.0},
                         {"gain_no_sis_core_pct", 42.0},
                         {"published_gain_pct", 15.45},
                         {"published_gain_no_sis_core_pct", 15.3},
                         {"published_v5.3_gbps", 278.56},
                         {"published_latency_nice_gbps", 321.6},
                         {"published_latency_nice_no_sis_core_gbps", 321.2}}},
                       {"run_s", 0.5},
                       {"mid_gain", true},
                       {"ends_flat", true}};
  json cls56, cls57;
  for (const char* s :
       {"has_spare", "fully_busy", "misfit_task", "asym_packing", "imbalanced", "overloaded"})
    for (const char* n : {"0", "1", "2", "3", "4+"}) cls56[s][n] = cls57[s][n] = 0.0;
  cls56["has_spare"]["2"] = 100.0;
  cls57["has_spare"]["2"] = 10.0;
  cls57["misfit_task"]["1"] = 3.0;  // simulated only: a row without published figures
  f["runnable-avg"] = {{"classification", {{"v5.6", cls56}, {"v5.7", cls57}}},
                       {"published_classification",
                        {{"v5.6", {{"has_spare", {{"2", 369}}}, {"fully_busy", {{"1", 546}}}}},
                         {"v5.7", {{"has_spare", {{"2", 18}}}, {"fully_busy", {{"1", 1018}}}}}}},
                       {"hackbench",
                        {{"1",
                          {{"v5.6_mean_s", 0.8},
                           {"v5.7_mean_s", 0.75},
                           {"improvement_pct", 6.25},
                           {"published_improvement_pct", 6.03},
                           {"published_v5.6_s", 1.327},
                           {"published_v5.7_s", 1.247}}},
                         {"16",
                          {{"v5.6_mean_s", 0.6},
                           {"v5.7_mean_s", 0.6},
                           {"improvement_pct", 0.0},
                           {"published_improvement_pct", 0.16},
                           {"published_v5.6_s", 1.221},
                           {"published_v5.7_s", 1.219}}}}}};
  json pct = {{"p50", 140.0}, {"p75", 142.0},   {"p90", 143.0},   {"p95", 143.0},
              {"p99", 143.0}, {"p99_5", 143.0}, {"p99_9", 150.0}, {"max_us", 160.0}};
  json noisy_base = pct, noisy_with = pct;
  noisy_base["p99"] = 10000.0;
  noisy_with["p99"] = 2500.0;
  f["sched-idle-balancing"] = {
      {"quiet",
       {{"baseline", {{"p50", 140.0}, {"p99", 143.0}, {"p99_9", 150.0}}},
        {"with", {{"p50", 140.0}, {"p99", 143.0}, {"p99_9", 150.0}}},
        {"percentiles_us", {{"baseline", pct}, {"with", pct}}}}},
      {"noisy",
       {{"baseline", {{"p50", 140.0}, {"p99", 10000.0}, {"p99_9", 150.0}}},
        {"with", {{"p50", 140.0}, {"p99", 2500.0}, {"p99_9", 150.0}}},
        {"percentiles_us", {{"baseline", noisy_base}, {"with", noisy_with}}}}},
      {"messaging",
       {{"1", {{"baseline_s", 1.0}, {"with_s", 0.98}, {"improvement_pct", 2.0}}},
        {"20", {{"baseline_s", 3.0}, {"with_s", 2.85}, {"improvement_pct", 5.0}}}}}};
  r.text["latency-nice"] = "a </script> b & c\n";
  return r;
}

// The rows of one chart whose `key` equals `value`.
std::vector<json> rows_where(const json& spec, const std::string& key, const json& value) {
  std::vector<json> out;
  for (const json& row : spec["data"]["values"])
    if (row.value(key, json()) == value) out.push_back(row);
  return out;
}

TEST(ReproduceReport, OneChartPerFigureSet) {
  json specs = report::reproduce_report_specs(make_report());
  std::vector<std::string> ids;
  for (auto it = specs.begin(); it != specs.end(); ++it) ids.push_back(it.key());
  EXPECT_EQ(ids,
            (std::vector<std::string>{
                "chart-fallback-histogram", "chart-fallback-occupancy", "chart-latency-nice-gain",
                "chart-latency-nice-throughput", "chart-runnable-avg-classification",
                "chart-runnable-avg-hackbench", "chart-sched-idle-balancing-messaging",
                "chart-sched-idle-balancing-percentiles"}));
  // A series that did not run has no chart; without occupancy there is no occupancy chart.
  report::ReproduceReport r = make_report();
  r.figures.erase("latency-nice");
  r.figures["runnable-avg"] = nullptr;
  r.occupancy = nullptr;
  EXPECT_EQ(report::reproduce_report_specs(r).size(), 3u);  // histogram, percentiles, messaging
}

TEST(ReproduceReport, HistogramRowsBesideThePublishedCounts) {
  json h = report::reproduce_report_specs(make_report())["chart-fallback-histogram"];
  ASSERT_EQ(h["data"]["values"].size(), 33u);  // 3 cases x 11 bins
  std::vector<json> base = rows_where(h, "case", "without change (v5.3)");
  ASSERT_EQ(base.size(), 11u);
  EXPECT_EQ(base[0]["bin"], "0-100");
  EXPECT_EQ(base[0]["count"], 3000.0);
  EXPECT_EQ(base[0]["published"], 3102.0);
  EXPECT_TRUE(base[5]["published"].is_null());  // the post quotes no count there
  EXPECT_EQ(base[10]["bin"], ">1000");
  EXPECT_EQ(base[10]["published"], 1218.0);
  EXPECT_EQ(h["encoding"]["x"]["sort"].size(), 11u);
}

TEST(ReproduceReport, CurvesOverThreadsAndGroups) {
  json specs = report::reproduce_report_specs(make_report());
  // Threads in numeric order (8 before 48 although "48" < "8" as text), 3 configs x 2 sources.
  const json& tput = specs["chart-latency-nice-throughput"];
  ASSERT_EQ(tput["data"]["values"].size(), 12u);
  EXPECT_EQ(tput["data"]["values"][0],
            json({{"threads", 8}, {"config", "v5.3"}, {"source", "simulated"}, {"gbps", 90.0}}));
  EXPECT_EQ(tput["data"]["values"][1],
            json({{"threads", 8}, {"config", "v5.3"}, {"source", "published"}, {"gbps", 64.66}}));
  EXPECT_EQ(tput["encoding"]["x"]["axis"]["values"], json({8, 48}));
  std::vector<json> gain = rows_where(specs["chart-latency-nice-gain"], "threads", 48);
  ASSERT_EQ(gain.size(), 4u);
  EXPECT_EQ(gain[1]["gain_pct"], 15.45);  // published, SIS_CORE
  EXPECT_EQ(gain[2]["gain_pct"], 42.0);   // simulated, NO_SIS_CORE

  const json& hb = specs["chart-runnable-avg-hackbench"];
  std::vector<json> g16 = rows_where(hb, "groups", 16);
  ASSERT_EQ(g16.size(), 4u);
  EXPECT_EQ(
      g16[3],
      json({{"groups", 16}, {"kernel", "v5.7"}, {"source", "published"}, {"seconds", 1.219}}));

  const json& msg = specs["chart-sched-idle-balancing-messaging"];
  EXPECT_EQ(msg["data"]["values"].size(), 4u);
  const json& pct = specs["chart-sched-idle-balancing-percentiles"];
  ASSERT_EQ(pct["data"]["values"].size(), 32u);  // 2 cases x 2 configs x 8 percentiles
  std::vector<json> p99 = rows_where(pct, "percentile", "99");
  ASSERT_EQ(p99.size(), 4u);
  EXPECT_EQ(p99[2]["us"], 10000.0);  // noisy, baseline
  EXPECT_EQ(p99[3]["us"], 2500.0);   // noisy, with
}

TEST(ReproduceReport, ClassificationRowsSimulatedOrPublished) {
  const json cl =
      report::reproduce_report_specs(make_report())["chart-runnable-avg-classification"];
  // Rows: what the post lists (has_spare 2, fully_busy 1) and what either kernel simulated
  // (misfit_task 1), in group_type order.
  EXPECT_EQ(cl["encoding"]["x"]["sort"], json({"has_spare 2", "fully_busy 1", "misfit_task 1"}));
  std::vector<json> fb = rows_where(cl, "row", "fully_busy 1");
  ASSERT_EQ(fb.size(), 2u);
  EXPECT_EQ(
      fb[0],
      json({{"row", "fully_busy 1"}, {"kernel", "v5.6"}, {"count", 0.0}, {"published", 546.0}}));
  std::vector<json> mf = rows_where(cl, "row", "misfit_task 1");
  ASSERT_EQ(mf.size(), 2u);
  EXPECT_EQ(mf[1]["count"], 3.0);
  EXPECT_TRUE(mf[1]["published"].is_null());
}

TEST(ReproduceReport, SelfContainedDeterministicAndEscaped) {
  report::ReproduceReport r = make_report();
  if (!report::embedded_report_assets()) {
    try {
      report::render_reproduce_report(r);
      ADD_FAILURE() << "expected an InputError without the chart libraries";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("scripts/install-deps.sh"), std::string::npos)
          << e.what();
    }
    GTEST_SKIP() << "built without report/node_modules";
  }
  const std::string page = report::render_reproduce_report(r);
  EXPECT_EQ(page, report::render_reproduce_report(r));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<meta name=\"schedtwin-charts\" content=\"8\">"), std::string::npos);
  for (const char* id : {"chart-fallback-histogram", "chart-sched-idle-balancing-messaging"})
    EXPECT_NE(page.find(std::string("<div class=\"chart\" id=\"") + id + "\"></div>"),
              std::string::npos)
        << id;
  // The latency-nice caption gives the run length the series' JSON reports.
  EXPECT_NE(page.find("0.5 s per run (quick scale)"), std::string::npos);
  // Nothing is fetched: no external script or stylesheet.
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_NE(page.find(std::string(report::embedded_report_assets()->versions)), std::string::npos);
  // The printed text is HTML-escaped; JSON in the spec script has no "<".
  EXPECT_NE(page.find("a &lt;/script&gt; b &amp; c"), std::string::npos);
  EXPECT_NE(page.find("test run \\u003c/script> \\u003c!--"), std::string::npos);
  EXPECT_EQ(page.find("test run </script>"), std::string::npos);
  // Published figures beside the simulated ones.
  EXPECT_NE(
      page.find("<td>without change (v5.3)</td><td>4300</td><td class=pub>4710</td><td>12000</td>"
                "<td class=pub>67664</td><td>2000.2</td><td class=pub>1116.7</td>"),
      std::string::npos);
  EXPECT_NE(
      page.find(
          "<tr class=total><td>total</td><td></td><td>100</td><td>13</td><td class=pub>915</td>"
          "<td class=pub>1036</td></tr>"),
      std::string::npos);
  EXPECT_NE(page.find("Noisy p99: 10000 &rarr; 2500 &micro;s, 4.0&times; lower"),
            std::string::npos);
}

// Quick scale caps latency-nice and sched-idle balancing at seeds 1-3; the header says so.
TEST(ReproduceReport, TheHeaderNamesTheSeedsEachSeriesRan) {
  if (!report::embedded_report_assets()) GTEST_SKIP() << "built without report/node_modules";
  report::ReproduceReport r = make_report();
  r.runs = 5;
  const std::string plain = report::render_reproduce_report(r);
  EXPECT_NE(plain.find("seeds 1&ndash;5 per configuration"), std::string::npos);
  EXPECT_EQ(plain.find("latency-nice and sched-idle balancing: seeds"), std::string::npos);
  r.capped_runs = 3;
  const std::string capped = report::render_reproduce_report(r);
  EXPECT_NE(capped.find("seeds 1&ndash;5 (latency-nice and sched-idle balancing: seeds "
                        "1&ndash;3) per configuration"),
            std::string::npos);
}

TEST(ReproduceReport, EveryDirectionIsShownWithItsVerdict) {
  if (!report::embedded_report_assets()) GTEST_SKIP() << "built without report/node_modules";
  report::ReproduceReport r = make_report();
  r.figures["latency-nice"]["directions"] = json::array({{{"claim", "a gain somewhere"},
                                                          {"simulated", "+40 %"},
                                                          {"published", "+15 .. +28 %"},
                                                          {"verdict", "match"}},
                                                         {{"claim", "flat at 8 & 128"},
                                                          {"simulated", "128: +40.3 %"},
                                                          {"published", "+1.5 %"},
                                                          {"verdict", "MISS"}}});
  r.figures["directions_matched"] = 1;
  r.figures["directions_missed"] = 1;
  const std::string page = report::render_reproduce_report(r);
  EXPECT_NE(page.find("<p class=summary>1 of 2 published directions match; 1 MISS (marked "
                      "below).</p>"),
            std::string::npos);
  // In the latency-nice section, before its charts; escaped; the MISS marked as one.
  const auto section = page.find("<section id=\"latency-nice\">");
  const auto row = page.find(
      "<tr><td>flat at 8 &amp; 128</td><td>128: +40.3 %</td><td class=pub>+1.5 %</td>"
      "<td class=miss>MISS</td></tr>");
  ASSERT_NE(row, std::string::npos);
  EXPECT_LT(section, row);
  EXPECT_LT(row, page.find("<div class=\"chart\"", section));
  EXPECT_NE(page.find("<td class=match>match</td>"), std::string::npos);
  // A series without directions (older JSON) gets no table.
  EXPECT_EQ(page.find("<table class=directions>"), page.rfind("<table class=directions>"));
}

TEST(ReproduceReport, EveryChartRendersInChromium) {
  if (!report::embedded_report_assets()) GTEST_SKIP() << "built without report/node_modules";
  if (!testutil::chromium_available()) GTEST_SKIP() << testutil::kChromium << " is not installed";
  const auto path = std::filesystem::temp_directory_path() /
                    ("schedtwin-report-test-" + std::to_string(getpid()) + ".html");
  std::ofstream(path) << report::render_reproduce_report(make_report());
  testutil::ChromiumResult c = testutil::run_chromium(path.string());
  std::filesystem::remove(path);
  ASSERT_EQ(c.rc, 0);
  EXPECT_EQ(testutil::dom_title(c.dom), "schedtwin reproduce: charts-ok 8");
}

}  // namespace
}  // namespace schedtwin
