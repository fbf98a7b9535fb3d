#include "cli/validate.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace schedtwin::cli::validate {

namespace {

// Figures with up to 4 significant digits: 0.891, 71.5, 1234.
std::string num(double v) {
  if (std::isinf(v)) return "inf";
  const double a = std::fabs(v);
  if (a >= 1000) return fmt::format("{:.0f}", v);
  if (a >= 100) return fmt::format("{:.1f}", v);
  if (a >= 10) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3f}", v);
}

std::string spread_text(const Spread& s) {
  if (s.values.size() <= 1) return num(s.median);
  return fmt::format("{} [{}-{}]", num(s.median), num(s.min), num(s.max));
}

nlohmann::json spread_json(const Spread& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"values", s.values}};
}

}  // namespace

Spread spread_of(std::vector<double> values) {
  Spread s;
  s.values = values;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  s.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  s.min = values.front();
  s.max = values.back();
  return s;
}

double Row::ratio() const {
  if (real.median == 0) return sim.median == 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return sim.median / real.median;
}

bool Row::pass() const {
  if (!tolerance) return false;
  const double r = ratio();
  return r >= tolerance->lo && r <= tolerance->hi;
}

std::string Row::result() const { return !scored() ? "-" : pass() ? "PASS" : "MISS"; }

std::string format_scorecard(const std::vector<std::string>& header, const std::vector<Row>& rows) {
  std::string s;
  for (const std::string& h : header) s += h + "\n";
  s += "\n";
  std::size_t wl = 8, ml = 6;
  for (const Row& r : rows) {
    wl = std::max(wl, r.workload.size());
    ml = std::max(ml, r.metric.size());
  }
  const std::string fmt_line = "{:<" + std::to_string(wl) + "}  {:<" + std::to_string(ml) +
                               "}  {:>24}  {:>24}  {:>6}  {:>7}  {}\n";
  s += fmt::format(fmt::runtime(fmt_line), "workload", "metric", "real median [min-max]",
                   "sim median [min-max]", "ratio", "tol", "result");
  int scored = 0, passed = 0;
  std::string last;
  for (const Row& r : rows) {
    scored += r.scored();
    passed += r.pass();
    s += fmt::format(fmt::runtime(fmt_line), r.workload == last ? "" : r.workload, r.metric,
                     spread_text(r.real), spread_text(r.sim), num(r.ratio()),
                     r.tolerance ? r.tolerance->text : "-", r.result());
    last = r.workload;
  }
  s += fmt::format("\n{} of {} scored rows PASS\n", passed, scored);
  return s;
}

nlohmann::json scorecard_json(const std::vector<Row>& rows) {
  nlohmann::json j = nlohmann::json::array();
  int scored = 0, passed = 0;
  for (const Row& r : rows) {
    scored += r.scored();
    passed += r.pass();
    const double ratio = r.ratio();
    j.push_back(
        {{"workload", r.workload},
         {"metric", r.metric},
         {"real", spread_json(r.real)},
         {"sim", spread_json(r.sim)},
         {"ratio", std::isinf(ratio) ? nlohmann::json(nullptr) : nlohmann::json(ratio)},
         {"scored", r.scored()},
         {"tolerance", r.tolerance ? nlohmann::json::array({r.tolerance->lo, r.tolerance->hi})
                                   : nlohmann::json(nullptr)},
         {"result", r.result()}});
  }
  return {{"rows", j}, {"scored", scored}, {"passed", passed}};
}

std::string rtapp_periodic_json(int instances, int idle_loops, int duration_s, int pload_ns,
                                const std::string& logdir) {
  std::string idle;
  if (idle_loops > 0)
    idle = fmt::format(R"(,
    "idle_thread": {{ "instance": {}, "run": 3000, "policy": "SCHED_IDLE" }})",
                       idle_loops);
  return fmt::format(R"({{
  "tasks": {{
    "cfs_thread": {{ "instance": {}, "run": 5333, "timer": {{ "ref": "unique", "period": 7777 }},
                    "policy": "SCHED_OTHER" }}{}
  }},
  "global": {{ "duration": {}, "calibration": {}, "default_policy": "SCHED_OTHER",
              "pi_enabled": false, "lock_pages": false, "logdir": {}, "log_basename": "rt-app",
              "gnuplot": false }}
}}
)",
                     instances, idle, duration_s, pload_ns, nlohmann::json(logdir).dump());
}

std::string profile_for_kernel_release(const std::string& release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2) return "v6.0";
  if (major > 6 || (major == 6 && minor >= 6)) return "v6.6";  // EEVDF
  // Before 6.6 (CFS), the nearest CFS profile counted in releases (5.0 .. 5.19, then 6.0 ..
  // 6.5 as 20 .. 25); a tie goes to the newer, which carries the releases in between.
  struct Cfs {
    int index;
    const char* name;
  };
  static constexpr Cfs kCfs[] = {{3, "v5.3"}, {4, "v5.4"},   {6, "v5.6"},
                                 {7, "v5.7"}, {17, "v5.17"}, {20, "v6.0"}};
  const int host = major < 5 ? 0 : major == 5 ? minor : 20 + minor;
  const Cfs* best = &kCfs[0];
  for (const Cfs& c : kCfs)
    if (std::abs(c.index - host) <= std::abs(best->index - host)) best = &c;
  return best->name;
}

}  // namespace schedtwin::cli::validate
