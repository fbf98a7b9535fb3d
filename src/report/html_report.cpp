#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "engine/error.h"
#include "kernel/kernel.h"
#include "report/assets.h"

namespace schedtwin::report {

using nlohmann::json;

namespace {

// Colours: the baseline red, the change blue (Tableau 10, as Vega's default scheme).
constexpr const char* kBase = "#e45756";
constexpr const char* kChange = "#4c78a8";
constexpr const char* kThird = "#72b7b2";
constexpr const char* kGrey = "#bab0ac";

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A figure of the series JSON, NaN when absent or not a number.
double num(const json& j, std::string_view key) {
  if (!j.is_object()) return NAN;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}
const json& sub(const json& j, std::string_view key) {
  static const json kNull;  // immutable
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it != j.end() ? *it : kNull;
}
std::string cell(double v, int prec, std::string_view suffix = "") {
  if (std::isnan(v)) return "&ndash;";
  return fmt::format("{:.{}f}{}", v, prec, suffix);
}
std::string signed_cell(double v, int prec, std::string_view suffix = "") {
  if (std::isnan(v)) return "&ndash;";
  return fmt::format("{:+.{}f}{}", v, prec, suffix);
}
std::string seeds(int runs) { return runs == 1 ? "seed 1" : fmt::format("seeds 1&ndash;{}", runs); }

// A number for chart data: null when missing (Vega-Lite leaves the mark out).
json val(double v) { return std::isnan(v) || std::isinf(v) ? json(nullptr) : json(v); }

// Solid simulated lines, dashed published ones, with a legend that shows the dash.
json source_dash() {
  return {{"field", "source"},
          {"type", "nominal"},
          {"sort", {"simulated", "published"}},
          {"legend",
           {{"orient", "bottom"},
            {"title", nullptr},
            {"symbolType", "stroke"},
            {"symbolStrokeColor", "#444"},
            {"symbolStrokeWidth", 2}}}};
}

json color_scale(std::vector<std::string> domain, std::vector<std::string> range) {
  return {{"domain", std::move(domain)}, {"range", std::move(range)}};
}

struct Chart {
  std::string id;
  json spec;
};

struct Section {
  std::string id, title, intro;                       // intro: HTML
  std::vector<std::pair<Chart, std::string>> charts;  // chart and its caption (HTML)
  std::string tables;                                 // HTML
  std::string text;                                   // the printed table
};

// ---- sched-idle fallback ----

constexpr const char* kFallbackKeys[] = {"without_change", "with_change", "no_sched_idle"};
constexpr const char* kFallbackNames[] = {"without change (v5.3)", "with change (v5.4)",
                                          "no SCHED_IDLE tasks (v5.4)"};

Section sched_idle_fallback(const json& f, const json& occupancy, int runs) {
  Section s{.id = "sched-idle-fallback",
            .title = "sched-idle fallback (Viresh Kumar, 2019; merged in v5.4)"};
  s.intro = fmt::format(
      "<p>rt-app <code>sched-idle.json</code> on <code>hikey</code> (8 &times; Cortex-A53, two "
      "clusters of four), 5 s: 8 SCHED_OTHER threads (run 5333 &micro;s, timer period 7777 "
      "&micro;s) "
      "beside 5 SCHED_IDLE threads. The metric is rt-app's <code>wu_lat</code> of the 8 normal "
      "threads; "
      "simulated figures are means over {}. The change lets a wakeup pick a CPU that runs "
      "only SCHED_IDLE tasks instead of queueing behind a busy one.</p>",
      runs);

  json rows = json::array();
  std::vector<std::string> bins;
  for (int c = 0; c < 3; ++c)
    for (const json& b : sub(sub(f, kFallbackKeys[c]), "wu_lat_histogram")) {
      const std::string bin = b.value("bin", "");
      if (c == 0) bins.push_back(bin);
      rows.push_back({{"case", kFallbackNames[c]},
                      {"bin", bin},
                      {"count", val(num(b, "count"))},
                      {"published", val(num(b, "published"))}});
    }
  std::vector<std::string> cases(std::begin(kFallbackNames), std::end(kFallbackNames));
  json color = {{"field", "case"},
                {"type", "nominal"},
                {"sort", cases},
                {"scale", color_scale(cases, {kBase, kChange, kGrey})},
                {"legend", {{"orient", "bottom"}, {"title", nullptr}}}};
  json tooltip =
      json::array({{{"field", "case"}, {"type", "nominal"}},
                   {{"field", "bin"}, {"type", "nominal"}, {"title", "wu_lat (us)"}},
                   {{"field", "count"},
                    {"type", "quantitative"},
                    {"format", ".1f"},
                    {"title", "simulated per run"}},
                   {{"field", "published"}, {"type", "quantitative"}, {"title", "published"}}});
  json hist = {
      {"title", "wu_lat histogram: simulated bars, published counts as diamonds"},
      {"data", {{"values", rows}}},
      {"width", 640},
      {"height", 280},
      {"encoding",
       {{"x",
         {{"field", "bin"},
          {"type", "ordinal"},
          {"sort", bins},
          {"title", "wu_lat (us)"},
          {"axis", {{"labelAngle", 0}}}}},
        {"xOffset", {{"field", "case"}, {"type", "nominal"}, {"sort", cases}}},
        {"color", color},
        {"tooltip", tooltip}}},
      {"layer",
       json::array({{{"mark", {{"type", "bar"}}},
                     {"encoding",
                      {{"y",
                        {{"field", "count"},
                         {"type", "quantitative"},
                         {"scale", {{"type", "symlog"}}},
                         {"axis", {{"values", {0, 1, 10, 100, 1000, 10000}}}},
                         {"title", "wakeups per run (symlog scale)"}}}}}},
                    {{"transform", json::array({{{"filter", "datum.published != null"}}})},
                     {"mark",
                      {{"type", "point"},
                       {"shape", "diamond"},
                       {"filled", true},
                       {"size", 70},
                       {"stroke", "black"},
                       {"strokeWidth", 1}}},
                     {"encoding", {{"y", {{"field", "published"}, {"type", "quantitative"}}}}}}})}};
  s.charts.push_back(
      {{"chart-fallback-histogram", hist},
       "<p>Counts of wakeups in 100 &micro;s bins of <code>wu_lat</code>, as the posts' "
       "textogram (0&ndash;1000 &micro;s, 10 bins) plus &gt;1000. Diamonds: the counts the "
       "post quotes (one 5 s run); bins it does not quote have none.</p>"});

  std::string t =
      "<table><thead><tr><th>case</th><th>N</th><th>pub N</th><th>max (&micro;s)</th><th>pub "
      "max</th>"
      "<th>mean (&micro;s)</th><th>pub mean</th><th>&gt;1 ms %</th><th>pub &gt;1 ms "
      "%</th></tr></thead><tbody>\n";
  for (int c = 0; c < 3; ++c) {
    const json& r = sub(f, kFallbackKeys[c]);
    t += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=pub>{}</td><td>{}</td><td class=pub>{}</td><td>{}</td>"
        "<td class=pub>{}</td><td>{}</td><td class=pub>{}</td></tr>\n",
        esc(kFallbackNames[c]), cell(num(r, "n"), 0), cell(num(r, "published_n"), 0),
        cell(num(r, "max_us"), 0), cell(num(r, "published_max_us"), 0), cell(num(r, "mean_us"), 1),
        cell(num(r, "published_mean_us"), 1), cell(num(r, "over_1ms_pct"), 1),
        cell(num(r, "published_over_1ms_pct"), 1));
  }
  t += "</tbody></table>\n";
  t += fmt::format("<p>Mean wu_lat falls {}&times; with the change (published: 10.9&times;).</p>\n",
                   cell(num(f, "mean_ratio"), 1));
  s.tables = t;

  if (occupancy.is_object() && occupancy.contains("rows")) {
    std::vector<std::string> classes = occupancy.value("classes", std::vector<std::string>{});
    std::vector<std::string> colors;
    std::string order = "indexof([";
    for (std::size_t i = 0; i < classes.size(); ++i) {
      const std::string& c = classes[i];
      colors.push_back(c == "SCHED_OTHER"  ? kChange
                       : c == "SCHED_IDLE" ? "#eeca3b"
                       : c == "idle"       ? "#e8e8e8"
                                           : "#f58518");
      order += (i ? ",'" : "'") + c + "'";
    }
    order += "], datum.class)";
    const double bin_s = num(occupancy, "bin_ms") / 1000;
    json occ = {
        {"title", fmt::format("Per-CPU occupancy: {}", occupancy.value("run", std::string()))},
        {"data", {{"values", occupancy["rows"]}}},
        {"transform",
         json::array({{{"fold", classes}, {"as", {"class", "share"}}},
                      {{"calculate", fmt::format("datum.t_s + {}", bin_s)}, {"as", "t_end"}},
                      {{"calculate", order}, {"as", "class_order"}},
                      {{"stack", "share"},
                       {"groupby", {"cpu", "t_s"}},
                       {"sort", json::array({{{"field", "class_order"}}})},
                       {"as", {"y0", "y1"}}}})},
        {"facet",
         {{"row",
           {{"field", "cpu"},
            {"type", "ordinal"},
            {"title", "CPU"},
            {"header", {{"labelAngle", 0}, {"labelAlign", "right"}}}}}}},
        {"spacing", 2},
        {"spec",
         {{"width", 640},
          {"height", 26},
          {"mark", {{"type", "rect"}}},
          {"encoding",
           {{"x",
             {{"field", "t_s"},
              {"type", "quantitative"},
              {"title", "simulated time (s)"},
              {"axis", {{"tickCount", 10}}}}},
            {"x2", {{"field", "t_end"}}},
            {"y",
             {{"field", "y0"},
              {"type", "quantitative"},
              {"axis", nullptr},
              {"scale", {{"domain", {0, 1}}}}}},
            {"y2", {{"field", "y1"}}},
            {"color",
             {{"field", "class"},
              {"type", "nominal"},
              {"sort", classes},
              {"scale", color_scale(classes, colors)},
              {"legend", {{"orient", "bottom"}, {"title", nullptr}}}}},
            {"tooltip",
             json::array({{{"field", "cpu"}, {"type", "ordinal"}},
                          {{"field", "t_s"}, {"type", "quantitative"}, {"title", "bin start (s)"}},
                          {{"field", "class"}, {"type", "nominal"}},
                          {{"field", "share"}, {"type", "quantitative"}, {"format", ".1%"}}})}}}}}};
    s.charts.push_back(
        {{"chart-fallback-occupancy", occ},
         fmt::format("<p>Which class of task ran on each CPU: share of each {} ms bin run by "
                     "SCHED_OTHER tasks (the cfs_thread instances), SCHED_IDLE tasks, or nothing "
                     "(the CPU's idle task), from the run's sched_switch events.</p>",
                     cell(num(occupancy, "bin_ms"), 0))});
  }
  return s;
}

// ---- latency-nice ----

Section latency_nice(const json& f, int runs, bool full) {
  Section s{.id = "latency-nice", .title = "task latency-nice (subhra mazumdar, 2019; RFC)"};
  s.intro = fmt::format(
      "<p>uperf ping-pong with 8 KiB messages on <code>xeon-2s-88</code> (2 &times; 22 cores "
      "&times; "
      "SMT2), kernel v5.3 against the RFC with latency-nice 5, with and without SIS_CORE. "
      "Throughput, "
      "higher is better; simulated figures are means over {}{}.</p>",
      seeds(full ? runs : std::min(runs, 3)),
      fmt::format(", {} s per run{}", f.at("run_s").get<double>(), full ? "" : " (quick scale)"));
  const char* configs[3] = {"v5.3", "latency-nice 5, SIS_CORE", "latency-nice 5, NO_SIS_CORE"};
  const char* sim_keys[3] = {"v5.3_gbps", "latency_nice_gbps", "latency_nice_no_sis_core_gbps"};
  const char* pub_keys[3] = {"published_v5.3_gbps", "published_latency_nice_gbps",
                             "published_latency_nice_no_sis_core_gbps"};
  std::vector<std::pair<int, const json*>> points;
  for (auto it = f.begin(); f.is_object() && it != f.end(); ++it)
    if (it->is_object() && !it.key().empty() &&
        std::isdigit(static_cast<unsigned char>(it.key()[0])))
      points.emplace_back(std::stoi(it.key()), &*it);
  std::sort(points.begin(), points.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });

  json tput = json::array(), gain = json::array();
  std::vector<int> threads;
  for (const auto& [n, p] : points) {
    threads.push_back(n);
    for (int c = 0; c < 3; ++c) {
      tput.push_back({{"threads", n},
                      {"config", configs[c]},
                      {"source", "simulated"},
                      {"gbps", val(num(*p, sim_keys[c]))}});
      tput.push_back({{"threads", n},
                      {"config", configs[c]},
                      {"source", "published"},
                      {"gbps", val(num(*p, pub_keys[c]))}});
    }
    gain.push_back({{"threads", n},
                    {"config", configs[1]},
                    {"source", "simulated"},
                    {"gain_pct", val(num(*p, "gain_pct"))}});
    gain.push_back({{"threads", n},
                    {"config", configs[1]},
                    {"source", "published"},
                    {"gain_pct", val(num(*p, "published_gain_pct"))}});
    gain.push_back({{"threads", n},
                    {"config", configs[2]},
                    {"source", "simulated"},
                    {"gain_pct", val(num(*p, "gain_no_sis_core_pct"))}});
    gain.push_back({{"threads", n},
                    {"config", configs[2]},
                    {"source", "published"},
                    {"gain_pct", val(num(*p, "published_gain_no_sis_core_pct"))}});
  }
  auto line_chart = [&](const std::string& title, json values, const std::string& field,
                        const std::string& y_title, std::vector<std::string> domain,
                        std::vector<std::string> range) {
    return json{
        {"title", title},
        {"data", {{"values", std::move(values)}}},
        {"width", 560},
        {"height", 260},
        {"mark", {{"type", "line"}, {"point", true}}},
        {"encoding",
         {{"x",
           {{"field", "threads"},
            {"type", "quantitative"},
            {"scale", {{"type", "log"}, {"base", 2}}},
            {"axis", {{"values", threads}}},
            {"title", "threads"}}},
          {"y", {{"field", field}, {"type", "quantitative"}, {"title", y_title}}},
          {"color",
           {{"field", "config"},
            {"type", "nominal"},
            {"sort", domain},
            {"scale", color_scale(domain, std::move(range))},
            {"legend", {{"orient", "bottom"}, {"title", nullptr}}}}},
          {"strokeDash", source_dash()},
          {"tooltip",
           json::array({{{"field", "threads"}, {"type", "quantitative"}},
                        {{"field", "config"}, {"type", "nominal"}},
                        {{"field", "source"}, {"type", "nominal"}},
                        {{"field", field}, {"type", "quantitative"}, {"format", ".2f"}}})}}}};
  };
  s.charts.push_back(
      {{"chart-latency-nice-throughput",
        line_chart("uperf ping-pong throughput: simulated (solid) and published (dashed)", tput,
                   "gbps", "throughput (Gb/s)", {configs[0], configs[1], configs[2]},
                   {kBase, kChange, kThird})},
       "<p>The simulated throughput is not expected to match the published one in absolute terms "
       "(the model's cost of a ping-pong round trip sets it); the gain of the change is the figure "
       "to compare.</p>"});
  s.charts.push_back(
      {{"chart-latency-nice-gain",
        line_chart("Gain over v5.3 (%): simulated (solid) and published (dashed)", gain, "gain_pct",
                   "gain over v5.3 (%)", {configs[1], configs[2]}, {kChange, kThird})},
       "<p>Published: no change at 8&ndash;16 and 128 threads, +15 to +28 % at 32&ndash;64 "
       "threads.</p>"});

  std::string t =
      "<table><thead><tr><th>threads</th><th>v5.3 Gb/s</th><th>pub</th><th>SIS_CORE "
      "Gb/s</th><th>gain</th>"
      "<th>pub gain</th><th>NO_SIS_CORE Gb/s</th><th>gain</th><th>pub "
      "gain</th></tr></thead><tbody>\n";
  for (const auto& [n, p] : points)
    t += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=pub>{}</td><td>{}</td><td>{}</td><td "
        "class=pub>{}</td><td>{}</td>"
        "<td>{}</td><td class=pub>{}</td></tr>\n",
        n, cell(num(*p, "v5.3_gbps"), 1), cell(num(*p, "published_v5.3_gbps"), 2),
        cell(num(*p, "latency_nice_gbps"), 1), signed_cell(num(*p, "gain_pct"), 1, " %"),
        signed_cell(num(*p, "published_gain_pct"), 1, " %"),
        cell(num(*p, "latency_nice_no_sis_core_gbps"), 1),
        signed_cell(num(*p, "gain_no_sis_core_pct"), 1, " %"),
        signed_cell(num(*p, "published_gain_no_sis_core_pct"), 1, " %"));
  t += "</tbody></table>\n";
  s.tables = t;
  return s;
}

// ---- runnable-avg ----

std::string nr_key(int nr) { return nr == 4 ? "4+" : std::to_string(nr); }

Section runnable_avg(const json& f, int runs) {
  Section s{.id = "runnable-avg",
            .title = "runnable_avg group classification (Vincent Guittot, 2020; merged in v5.7)"};
  s.intro = fmt::format(
      "<p><code>hikey</code> (two clusters of four Cortex-A53), kernel v5.6 (groups classified by "
      "util_avg only) against v5.7 (with runnable_avg). Simulated figures are means over {}.</p>",
      seeds(runs));
  const char* kernels[2] = {"v5.6", "v5.7"};

  // hackbench curves over groups.
  json hb = json::array();
  std::vector<std::pair<int, const json*>> groups;
  const json& h = sub(f, "hackbench");
  for (auto it = h.begin(); h.is_object() && it != h.end(); ++it)
    groups.emplace_back(std::stoi(it.key()), &*it);
  std::sort(groups.begin(), groups.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> gvals;
  for (const auto& [g, p] : groups) {
    gvals.push_back(g);
    for (int k = 0; k < 2; ++k) {
      hb.push_back({{"groups", g},
                    {"kernel", kernels[k]},
                    {"source", "simulated"},
                    {"seconds", val(num(*p, fmt::format("{}_mean_s", kernels[k])))}});
      hb.push_back({{"groups", g},
                    {"kernel", kernels[k]},
                    {"source", "published"},
                    {"seconds", val(num(*p, fmt::format("published_{}_s", kernels[k])))}});
    }
  }
  json hb_spec = {
      {"title", "hackbench -l (2560/g) -g g: time, simulated (solid) and published (dashed)"},
      {"data", {{"values", hb}}},
      {"width", 560},
      {"height", 260},
      {"mark", {{"type", "line"}, {"point", true}}},
      {"encoding",
       {{"x",
         {{"field", "groups"},
          {"type", "quantitative"},
          {"scale", {{"type", "log"}, {"base", 2}}},
          {"axis", {{"values", gvals}}},
          {"title", "groups"}}},
        {"y",
         {{"field", "seconds"},
          {"type", "quantitative"},
          {"scale", {{"zero", false}}},
          {"title", "time (s)"}}},
        {"color",
         {{"field", "kernel"},
          {"type", "nominal"},
          {"scale", color_scale({"v5.6", "v5.7"}, {kBase, kChange})},
          {"legend", {{"orient", "bottom"}, {"title", nullptr}}}}},
        {"strokeDash", source_dash()},
        {"tooltip",
         json::array({{{"field", "groups"}, {"type", "quantitative"}},
                      {{"field", "kernel"}, {"type", "nominal"}},
                      {{"field", "source"}, {"type", "nominal"}},
                      {{"field", "seconds"}, {"type", "quantitative"}, {"format", ".3f"}}})}}}};
  s.charts.push_back(
      {{"chart-runnable-avg-hackbench", hb_spec},
       "<p>Lower is better; published: v5.7 faster by 6 % at 1 group down to 0.2 % at 16.</p>"});

  // Classification: every (state, nr_running) that either side simulated or the post lists.
  const json& cls = sub(f, "classification");
  const json& pub = sub(f, "published_classification");
  json cl = json::array();
  std::vector<std::string> labels;
  std::string rows_html;
  double tot[4] = {};
  for (int type = 0; type < 6; ++type)
    for (int nr = 0; nr < 5; ++nr) {
      const std::string state = kernel::group_type_name(type), key = nr_key(nr);
      double v[4];
      for (int k = 0; k < 2; ++k) {
        v[k] = num(sub(sub(cls, kernels[k]), state), key);
        v[2 + k] = num(sub(sub(pub, kernels[k]), state), key);
      }
      bool listed = !std::isnan(v[2]) || !std::isnan(v[3]);
      if (!listed && !(v[0] > 0) && !(v[1] > 0)) continue;
      const std::string label = state + " " + key;
      labels.push_back(label);
      for (int k = 0; k < 2; ++k)
        cl.push_back({{"row", label},
                      {"kernel", kernels[k]},
                      {"count", val(v[k])},
                      {"published", val(listed ? (std::isnan(v[2 + k]) ? 0.0 : v[2 + k]) : NAN)}});
      for (int i = 0; i < 4; ++i)
        if (!std::isnan(v[i])) tot[i] += v[i];
      rows_html += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=pub>{}</td><td "
          "class=pub>{}</td></tr>\n",
          esc(state), key, cell(v[0], 0), cell(v[1], 0),
          listed ? cell(std::isnan(v[2]) ? 0 : v[2], 0) : "&ndash;",
          listed ? cell(std::isnan(v[3]) ? 0 : v[3], 0) : "&ndash;");
    }
  json cl_spec = {
      {"title",
       "Groups classified during load balancing, hackbench -l 640 -g 4 (diamonds: published)"},
      {"data", {{"values", cl}}},
      {"width", 640},
      {"height", 280},
      {"encoding",
       {{"x",
         {{"field", "row"},
          {"type", "ordinal"},
          {"sort", labels},
          {"title", "group state, nr_running"},
          {"axis", {{"labelAngle", -30}}}}},
        {"xOffset", {{"field", "kernel"}, {"type", "nominal"}}},
        {"color",
         {{"field", "kernel"},
          {"type", "nominal"},
          {"scale", color_scale({"v5.6", "v5.7"}, {kBase, kChange})},
          {"legend", {{"orient", "bottom"}, {"title", nullptr}}}}},
        {"tooltip", json::array({{{"field", "row"}, {"type", "nominal"}, {"title", "state"}},
                                 {{"field", "kernel"}, {"type", "nominal"}},
                                 {{"field", "count"},
                                  {"type", "quantitative"},
                                  {"format", ".0f"},
                                  {"title", "simulated per run"}},
                                 {{"field", "published"}, {"type", "quantitative"}}})}}},
      {"layer",
       json::array({{{"mark", {{"type", "bar"}}},
                     {"encoding",
                      {{"y",
                        {{"field", "count"},
                         {"type", "quantitative"},
                         {"title", "groups classified per run"}}}}}},
                    {{"transform", json::array({{{"filter", "datum.published != null"}}})},
                     {"mark",
                      {{"type", "point"},
                       {"shape", "diamond"},
                       {"filled", true},
                       {"size", 70},
                       {"stroke", "black"},
                       {"strokeWidth", 1}}},
                     {"encoding", {{"y", {{"field", "published"}, {"type", "quantitative"}}}}}}})}};
  s.charts.push_back(
      {{"chart-runnable-avg-classification", cl_spec},
       "<p>The point of the change: with runnable_avg a group running two or more of the 160 "
       "tasks is almost never judged to have spare capacity.</p>"});

  std::string t =
      "<h3>Group "
      "classification</h3><table><thead><tr><th>state</th><th>nr_running</th><th>v5.6</"
      "th><th>v5.7</th>"
      "<th>pub v5.6</th><th>pub v5.7</th></tr></thead><tbody>\n" +
      rows_html +
      fmt::format(
          "<tr class=total><td>total</td><td></td><td>{}</td><td>{}</td><td class=pub>{}</td><td "
          "class=pub>{}</td></tr>\n",
          cell(tot[0], 0), cell(tot[1], 0), cell(tot[2], 0), cell(tot[3], 0)) +
      "</tbody></table>\n<h3>hackbench</h3><table><thead><tr><th>groups</th><th>v5.6 "
      "(s)</th><th>v5.7 (s)</th>"
      "<th>improvement</th><th>pub v5.6</th><th>pub v5.7</th><th>pub "
      "improvement</th></tr></thead><tbody>\n";
  for (const auto& [g, p] : groups)
    t += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=pub>{}</td><td "
        "class=pub>{}</td><td "
        "class=pub>{}</td></tr>\n",
        g, cell(num(*p, "v5.6_mean_s"), 3), cell(num(*p, "v5.7_mean_s"), 3),
        cell(num(*p, "improvement_pct"), 2, " %"), cell(num(*p, "published_v5.6_s"), 3),
        cell(num(*p, "published_v5.7_s"), 3), cell(num(*p, "published_improvement_pct"), 2, " %"));
  t += "</tbody></table>\n";
  s.tables = t;
  return s;
}

// ---- sched-idle balancing ----

Section sched_idle_balancing(const json& f, int runs, bool full) {
  Section s{.id = "sched-idle-balancing", .title = "sched-idle balancing (Abel Wu, 2022; RFC)"};
  s.intro = fmt::format(
      "<p><code>xeon-e5-2650v4</code> (2 &times; 12 cores &times; SMT2), profile v5.17 with every "
      "SIB_* "
      "flag off (baseline) and on: <code>schbench -m 2 -t 24</code> for {} s in a normal group, "
      "quiet and "
      "beside <code>messaging -g 1</code> in an idle group (noisy). Wakeup latency percentiles in "
      "&micro;s, means over {}. The post gives no table, only directions: quiet alike; "
      "noisy p99 about 10&times; lower with the change, p99.5 and p99.9 clearly lower, the median "
      "little moved.</p>",
      full ? 60 : 10, seeds(full ? runs : std::min(runs, 3)));
  constexpr const char* kPcts[] = {"p50", "p75", "p90", "p95", "p99", "p99_5", "p99_9", "max"};
  constexpr const char* kPctNames[] = {"50", "75", "90", "95", "99", "99.5", "99.9", "max"};
  const char* configs[2] = {"baseline", "with"};
  json rows = json::array();
  std::string t =
      "<table><thead><tr><th>case</th><th>SIB "
      "flags</th><th>p50</th><th>p75</th><th>p90</th><th>p95</th>"
      "<th>p99</th><th>p99.5</th><th>p99.9</th><th>max</th></tr></thead><tbody>\n";
  for (const char* c : {"quiet", "noisy"}) {
    const json& p = sub(sub(f, c), "percentiles_us");
    for (int k = 0; k < 2; ++k) {
      t += fmt::format("<tr><td>{}</td><td>{}</td>", c, k ? "on" : "off");
      for (int i = 0; i < 8; ++i) {
        const double v = num(sub(p, configs[k]), kPcts[i]);
        rows.push_back({{"case", c},
                        {"config", k ? "SIB flags on" : "SIB flags off (baseline)"},
                        {"percentile", kPctNames[i]},
                        {"us", val(v)}});
        t += fmt::format("<td>{}</td>", cell(v, 0));
      }
      t += "</tr>\n";
    }
  }
  t += "</tbody></table>\n";
  t += fmt::format(
      "<p>Noisy p99: {} &rarr; {} &micro;s, {}&times; lower (published: about 10&times;; the "
      "series asks 3&times;).</p>\n",
      cell(num(sub(sub(f, "noisy"), "baseline"), "p99"), 0),
      cell(num(sub(sub(f, "noisy"), "with"), "p99"), 0),
      cell(num(sub(sub(f, "noisy"), "baseline"), "p99") / num(sub(sub(f, "noisy"), "with"), "p99"),
           1));
  std::vector<std::string> cfg_names = {"SIB flags off (baseline)", "SIB flags on"};
  json pct_spec = {
      {"title", "schbench -m 2 -t 24 wakeup latency percentiles"},
      {"data", {{"values", rows}}},
      {"mark", {{"type", "bar"}}},
      {"width", 330},
      {"height", 260},
      {"encoding",
       {{"column",
         {{"field", "case"},
          {"type", "nominal"},
          {"sort", {"quiet", "noisy"}},
          {"title", nullptr}}},
        {"x",
         {{"field", "percentile"},
          {"type", "ordinal"},
          {"sort", std::vector<std::string>(std::begin(kPctNames), std::end(kPctNames))},
          {"title", "percentile"},
          {"axis", {{"labelAngle", 0}}}}},
        {"xOffset", {{"field", "config"}, {"type", "nominal"}, {"sort", cfg_names}}},
        {"y",
         {{"field", "us"},
          {"type", "quantitative"},
          {"stack", nullptr},
          {"scale", {{"type", "log"}}},
          {"title", "wakeup latency (us, log scale)"}}},
        {"color",
         {{"field", "config"},
          {"type", "nominal"},
          {"sort", cfg_names},
          {"scale", color_scale(cfg_names, {kBase, kChange})},
          {"legend", {{"orient", "bottom"}, {"title", nullptr}}}}},
        {"tooltip",
         json::array({{{"field", "case"}, {"type", "nominal"}},
                      {{"field", "config"}, {"type", "nominal"}},
                      {{"field", "percentile"}, {"type", "ordinal"}},
                      {{"field", "us"}, {"type", "quantitative"}, {"format", ".0f"}}})}}}};
  s.charts.push_back({{"chart-sched-idle-balancing-percentiles", pct_spec}, ""});

  const json& m = sub(f, "messaging");
  if (m.is_object() && !m.empty()) {
    std::vector<std::pair<int, const json*>> groups;
    for (auto it = m.begin(); it != m.end(); ++it) groups.emplace_back(std::stoi(it.key()), &*it);
    std::sort(groups.begin(), groups.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    json mv = json::array();
    t += "<h3>perf bench sched messaging -l 4000</h3><table><thead><tr><th>groups</th><th>baseline "
         "(s)</th>"
         "<th>with (s)</th><th>improvement</th><th>published</th></tr></thead><tbody>\n";
    for (const auto& [g, p] : groups) {
      mv.push_back(
          {{"groups", g}, {"config", cfg_names[0]}, {"seconds", val(num(*p, "baseline_s"))}});
      mv.push_back({{"groups", g}, {"config", cfg_names[1]}, {"seconds", val(num(*p, "with_s"))}});
      t += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=pub>2&ndash;6 %</td></tr>\n",
          g, cell(num(*p, "baseline_s"), 3), cell(num(*p, "with_s"), 3),
          signed_cell(num(*p, "improvement_pct"), 2, " %"));
    }
    t += "</tbody></table>\n";
    json m_spec = {
        {"title", "perf bench sched messaging -g N -l 4000: time"},
        {"data", {{"values", mv}}},
        {"width", 560},
        {"height", 240},
        {"mark", {{"type", "line"}, {"point", true}}},
        {"encoding",
         {{"x", {{"field", "groups"}, {"type", "quantitative"}, {"title", "groups"}}},
          {"y", {{"field", "seconds"}, {"type", "quantitative"}, {"title", "time (s)"}}},
          {"color",
           {{"field", "config"},
            {"type", "nominal"},
            {"sort", cfg_names},
            {"scale", color_scale(cfg_names, {kBase, kChange})},
            {"legend", {{"orient", "bottom"}, {"title", nullptr}}}}},
          {"tooltip",
           json::array({{{"field", "groups"}, {"type", "quantitative"}},
                        {{"field", "config"}, {"type", "nominal"}},
                        {{"field", "seconds"}, {"type", "quantitative"}, {"format", ".3f"}}})}}}};
    s.charts.push_back({{"chart-sched-idle-balancing-messaging", m_spec},
                        "<p>Published: the change improves runtime by about 2&ndash;6 %.</p>"});
  }
  s.tables = t;
  return s;
}

std::vector<Section> sections(const ReproduceReport& r) {
  std::vector<Section> out;
  auto text_of = [&](const std::string& name) {
    auto it = r.text.find(name);
    return it == r.text.end() ? std::string() : it->second;
  };
  const json& f = r.figures;
  if (!sub(f, "sched-idle-fallback").is_null())
    out.push_back(sched_idle_fallback(sub(f, "sched-idle-fallback"), r.occupancy, r.runs));
  if (!sub(f, "latency-nice").is_null())
    out.push_back(latency_nice(sub(f, "latency-nice"), r.runs, r.full));
  if (!sub(f, "runnable-avg").is_null())
    out.push_back(runnable_avg(sub(f, "runnable-avg"), r.runs));
  if (!sub(f, "sched-idle-balancing").is_null())
    out.push_back(sched_idle_balancing(sub(f, "sched-idle-balancing"), r.runs, r.full));
  for (Section& s : out) s.text = text_of(s.id);
  return out;
}

// Every direction a series checked, MISS as visible as match (reproduce.h's add_direction).
std::string directions_table(const json& series) {
  const json& ds = sub(series, "directions");
  if (!ds.is_array() || ds.empty()) return "";
  std::string t =
      "<table class=directions><tr><th>published direction</th><th>simulated</th>"
      "<th>published</th><th>verdict</th></tr>\n";
  for (const json& d : ds) {
    if (!d.is_object()) continue;
    const std::string v = d.value("verdict", "");
    t += fmt::format("<tr><td>{}</td><td>{}</td><td class=pub>{}</td><td class={}>{}</td></tr>\n",
                     esc(d.value("claim", "")), esc(d.value("simulated", "")),
                     esc(d.value("published", "")), v == "match" ? "match" : "miss", esc(v));
  }
  return t + "</table>\n";
}

// JSON inside <script>: "<" only occurs in strings, where \u003c is the same character, so
// no "</script>" or "<!--" can end or change the script element.
std::string script_json(const json& j) {
  std::string s = j.dump(-1, ' ', true);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

// A library inlined in <script>: "</script" inside it (none in the pinned builds) would end
// the element early; "<\/" means the same in a JavaScript string.
std::string script_text(std::string_view js) {
  std::string out(js);
  for (std::size_t i = 0; (i = out.find("</", i)) != std::string::npos; i += 3) {
    std::string_view rest(out.data() + i + 2, std::min<std::size_t>(6, out.size() - i - 2));
    std::string lower(rest);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "script") out.replace(i, 2, "<\\/");
  }
  return out;
}

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; margin: 0 auto;
       max-width: 1100px; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; margin-top: 36px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin-bottom: 6px; }
.meta { color: #555; margin: 0; }
#status { display: inline-block; margin: 8px 0; padding: 2px 8px; border-radius: 4px; background: #eee; }
#status.ok { background: #e3f2e1; color: #1b5e20; }
#status.error { background: #fde2e1; color: #b71c1c; }
.chart { margin: 12px 0 4px; }
.caption { color: #444; max-width: 760px; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f5f5f5; }
td:first-child, th:first-child { text-align: left; }
td.pub { background: #fff8e1; }
tr.total td { font-weight: 600; }
details pre { background: #f7f7f7; padding: 8px; overflow-x: auto; font-size: 12px; }
nav a { margin-right: 12px; }
table.directions td { text-align: left; }
td.match { background: #e3f2e1; color: #1b5e20; font-weight: 600; }
td.miss { background: #fde2e1; color: #b71c1c; font-weight: 600; }
.summary { font-weight: 600; }
)css";

// Embeds every chart, then reports in the title: "schedtwin reproduce: charts-ok N" once all N
// rendered, else "...: charts-error ..." (a rejected embed, a script error, or a Vega/Vega-Lite
// warning).
constexpr const char* kDriver = R"js(
(function () {
  var specs = JSON.parse(document.getElementById('chart-specs').textContent);
  var ids = Object.keys(specs);
  var status = document.getElementById('status');
  var problems = [];
  function fail(msg) {
    problems.push(String(msg));
    document.title = 'schedtwin reproduce: charts-error ' + problems.join('; ');
    status.textContent = 'Chart error: ' + problems.join('; ');
    status.className = 'error';
  }
  window.addEventListener('error', function (e) { fail(e.message || 'script error'); });
  window.addEventListener('unhandledrejection', function (e) { fail(e.reason && e.reason.message || e.reason); });
  var base = vega.logger(vega.Warn);
  var logger = {
    level: function (l) { if (arguments.length) { base.level(l); return logger; } return base.level(); },
    error: function () { fail(Array.prototype.join.call(arguments, ' ')); return logger; },
    warn: function () { fail('warning: ' + Array.prototype.join.call(arguments, ' ')); return logger; },
    info: function () { return logger; },
    debug: function () { return logger; }
  };
  Promise.all(ids.map(function (id) {
    return vegaEmbed('#' + id, specs[id], { mode: 'vega-lite', renderer: 'svg', actions: false, logger: logger });
  })).then(function () {
    var drawn = ids.filter(function (id) { return document.querySelector('#' + id + ' svg'); }).length;
    if (drawn !== ids.length) fail(drawn + ' of ' + ids.length + ' charts drew an SVG');
    if (problems.length) return;
    document.title = 'schedtwin reproduce: charts-ok ' + ids.length;
    status.textContent = 'All ' + ids.length + ' charts rendered.';
    status.className = 'ok';
  }).catch(function (e) { fail(e && e.message || e); });
})();
)js";

}  // namespace

void require_report_assets(std::string_view option) {
  if (!embedded_report_assets())
    throw InputError(
        fmt::format("{}: this schedtwin was built without the chart libraries (report/node_modules "
                    "was missing): run `npm ci --prefix report` (or scripts/install-deps.sh, "
                    "which installs everything), then configure and build again",
                    option));
}

json reproduce_report_specs(const ReproduceReport& r) {
  json specs = json::object();
  for (const Section& s : sections(r))
    for (const auto& [c, caption] : s.charts) specs[c.id] = c.spec;
  return specs;
}

std::string render_reproduce_report(const ReproduceReport& r) {
  require_report_assets();
  const ReportAssets& a = *embedded_report_assets();
  std::vector<Section> secs = sections(r);
  json specs = json::object();
  std::size_t nr_charts = 0;
  for (const Section& s : secs) nr_charts += s.charts.size();

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += fmt::format("<meta name=\"schedtwin-charts\" content=\"{}\">\n", nr_charts);
  h += "<title>schedtwin reproduce</title>\n<style>" + std::string(kStyle) + "</style>\n";
  h += fmt::format("<!-- Inlined chart libraries: {}. Their licences follow.\n{}\n-->\n",
                   esc(a.versions), esc(a.notice));
  h += "<script>" + script_text(a.vega) + "</script>\n";
  h += "<script>" + script_text(a.vega_lite) + "</script>\n";
  h += "<script>" + script_text(a.vega_embed) + "</script>\n";
  h += "</head>\n<body>\n<h1>schedtwin reproduce: simulated beside published</h1>\n";
  h += fmt::format(
      "<p class=meta><code>{}</code> &middot; {} per configuration &middot; {} scale &middot; "
      "charts: {} (inlined, no network)</p>\n",
      esc(r.command),
      seeds(r.runs) +
          (r.capped_runs > 0
               ? fmt::format(" (latency-nice and sched-idle balancing: {})", seeds(r.capped_runs))
               : ""),
      r.full ? "full" : "quick", esc(a.versions));
  h += fmt::format("<div id=\"status\">Rendering {} charts&hellip; (needs JavaScript)</div>\n",
                   nr_charts);
  h += "<p class=caption>Published figures are shaded. A reproduction is judged first by direction "
       "(the "
       "change helps, hurts or is neutral where the authors saw that), then by "
       "magnitude.</p>\n";
  if (r.figures.contains("directions_matched")) {
    const int matched = r.figures["directions_matched"].get<int>();
    const int missed = r.figures.value("directions_missed", 0);
    h += fmt::format("<p class=summary>{} of {} published directions match{}</p>\n", matched,
                     matched + missed,
                     missed == 0 ? "." : fmt::format("; {} MISS (marked below).", missed));
  }
  h += "<nav>";
  for (const Section& s : secs) h += fmt::format("<a href=\"#{}\">{}</a>", s.id, esc(s.id));
  h += "</nav>\n";
  if (secs.empty()) h += "<p>No series was run.</p>\n";
  for (const Section& s : secs) {
    h += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n{}\n", s.id, esc(s.title), s.intro);
    h += directions_table(sub(r.figures, s.id));
    for (const auto& [c, caption] : s.charts) {
      h += fmt::format("<div class=\"chart\" id=\"{}\"></div>\n", c.id);
      if (!caption.empty()) h += "<div class=caption>" + caption + "</div>\n";
      specs[c.id] = c.spec;
    }
    h += s.tables;
    if (!s.text.empty())
      h += "<details><summary>The table <code>schedtwin reproduce</code> printed</summary><pre>" +
           esc(s.text) + "</pre></details>\n";
    h += "</section>\n";
  }
  h += "<script type=\"application/json\" id=\"chart-specs\">" + script_json(specs) + "</script>\n";
  h += "<script>" + std::string(kDriver) + "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace schedtwin::report
