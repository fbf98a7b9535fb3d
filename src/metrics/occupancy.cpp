#include "metrics/occupancy.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace schedtwin::metrics {

std::size_t Occupancy::nr_bins() const {
  return nr_cpus > 0 ? ns.size() / static_cast<std::size_t>(nr_cpus) : 0;
}

Time Occupancy::ran(int cpu, std::size_t bin, kernel::Policy p) const {
  return ns.at(bin * static_cast<std::size_t>(nr_cpus) + static_cast<std::size_t>(cpu))
      .at(static_cast<std::size_t>(p));
}

Time Occupancy::bin_length(std::size_t bin) const {
  const Time start = static_cast<Time>(bin) * bin_ns;
  return std::clamp<Time>(end_ns - start, 0, bin_ns);
}

nlohmann::json occupancy_json(const Occupancy& o) {
  std::array<bool, kNrPolicies> seen{};
  for (const auto& e : o.ns)
    for (int p = 0; p < kNrPolicies; ++p) seen[p] = seen[p] || e[p] > 0;
  nlohmann::json classes = nlohmann::json::array();
  for (int p = 0; p < kNrPolicies; ++p)
    if (seen[p]) classes.push_back(kernel::policy_name(static_cast<kernel::Policy>(p)));
  classes.push_back("idle");
  auto share = [](Time part, Time whole) {
    return whole > 0
               ? std::round(1e4 * static_cast<double>(part) / static_cast<double>(whole)) / 1e4
               : 0.0;
  };
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t b = 0; b < o.nr_bins(); ++b) {
    const Time len = o.bin_length(b);
    if (len <= 0) continue;
    for (int c = 0; c < o.nr_cpus; ++c) {
      nlohmann::json r = {{"cpu", c},
                          {"t_s", static_cast<double>(b) * static_cast<double>(o.bin_ns) / 1e9}};
      Time busy = 0;
      for (int p = 0; p < kNrPolicies; ++p) {
        const Time t = o.ran(c, b, static_cast<kernel::Policy>(p));
        busy += t;
        if (seen[p]) r[kernel::policy_name(static_cast<kernel::Policy>(p))] = share(t, len);
      }
      r["idle"] = share(len - busy, len);
      rows.push_back(std::move(r));
    }
  }
  return {{"bin_ms", static_cast<double>(o.bin_ns) / 1e6},
          {"end_s", static_cast<double>(o.end_ns) / 1e9},
          {"cpus", o.nr_cpus},
          {"classes", std::move(classes)},
          {"rows", std::move(rows)}};
}

OccupancyRecorder::OccupancyRecorder(const kernel::Kernel& k, Time bin_ns) : k_(k) {
  if (bin_ns <= 0) throw std::invalid_argument("OccupancyRecorder: bin_ns must be > 0");
  o_.bin_ns = bin_ns;
  o_.nr_cpus = k.machine().nr_cpus();
  since_.assign(static_cast<std::size_t>(o_.nr_cpus), k.now());
  cls_.assign(static_cast<std::size_t>(o_.nr_cpus), -1);
}

void OccupancyRecorder::account(int cpu, Time until) {
  const auto c = static_cast<std::size_t>(cpu);
  Time from = since_[c];
  since_[c] = until;
  if (cls_[c] < 0 || until <= from) return;  // the idle task's time is what is left of a bin
  const auto n = static_cast<std::size_t>(o_.nr_cpus);
  while (from < until) {
    const auto bin = static_cast<std::size_t>(from / o_.bin_ns);
    const Time bin_end = static_cast<Time>(bin + 1) * o_.bin_ns;
    const Time to = std::min(until, bin_end);
    if (o_.ns.size() < (bin + 1) * n) o_.ns.resize((bin + 1) * n, {});
    o_.ns[bin * n + c][static_cast<std::size_t>(cls_[c])] += to - from;
    from = to;
  }
}

void OccupancyRecorder::sched_switch(Time t, int cpu, kernel::TaskId, kernel::SwitchState,
                                     kernel::TaskId next) {
  if (cpu < 0 || cpu >= o_.nr_cpus) return;
  account(cpu, t);
  cls_[static_cast<std::size_t>(cpu)] =
      next < 0 ? -1 : static_cast<int>(k_.task_created_policy(next));  // idle, or a stopper
}

Occupancy OccupancyRecorder::finish(Time end) {
  for (int c = 0; c < o_.nr_cpus; ++c) account(c, end);
  o_.end_ns = end;
  // Every bin up to the end exists, even if nothing ran in the last ones.
  const auto n = static_cast<std::size_t>(o_.nr_cpus);
  const auto bins = static_cast<std::size_t>((end + o_.bin_ns - 1) / o_.bin_ns);
  if (o_.ns.size() < bins * n) o_.ns.resize(bins * n, {});
  Occupancy out = std::move(o_);
  o_ = Occupancy{.bin_ns = out.bin_ns, .nr_cpus = out.nr_cpus};
  since_.assign(since_.size(), end);
  cls_.assign(cls_.size(), -1);
  return out;
}

}  // namespace schedtwin::metrics
