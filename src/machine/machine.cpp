#include "machine/machine.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace schedtwin::machine {

namespace {

template <class Pred>
std::vector<int> cpus_where(const std::vector<Cpu>& cpus, Pred pred) {
  std::vector<int> out;
  for (const Cpu& c : cpus)
    if (pred(c)) out.push_back(c.id);
  return out;
}

template <class Field>
int count_ids(const std::vector<Cpu>& cpus, Field field) {
  int n = 0;
  for (const Cpu& c : cpus) n = std::max(n, field(c) + 1);
  return n;
}

}  // namespace

std::vector<int> Machine::smt_siblings(int cpu) const {
  const int core = cpus[cpu].core;
  return cpus_where(cpus, [core](const Cpu& c) { return c.core == core; });
}

std::vector<int> Machine::llc_cpus(int llc) const {
  return cpus_where(cpus, [llc](const Cpu& c) { return c.llc == llc; });
}

std::vector<int> Machine::cluster_cpus(int cluster) const {
  return cpus_where(cpus, [cluster](const Cpu& c) { return c.cluster == cluster; });
}

std::vector<int> Machine::package_cpus(int package) const {
  return cpus_where(cpus, [package](const Cpu& c) { return c.package == package; });
}

std::vector<int> Machine::node_cpus(int node) const {
  return cpus_where(cpus, [node](const Cpu& c) { return c.node == node; });
}

int Machine::smt_width() const {
  // Count threads per core id in one pass; ids are small non-negative ints.
  std::vector<int> per_core(static_cast<size_t>(nr_cores()), 0);
  int w = 1;
  for (const Cpu& c : cpus) w = std::max(w, ++per_core[static_cast<size_t>(c.core)]);
  return w;
}

int Machine::nr_cores() const {
  return count_ids(cpus, [](const Cpu& c) { return c.core; });
}
int Machine::nr_clusters() const {
  return count_ids(cpus, [](const Cpu& c) { return c.cluster; });
}
int Machine::nr_llcs() const {
  return count_ids(cpus, [](const Cpu& c) { return c.llc; });
}
int Machine::nr_packages() const {
  return count_ids(cpus, [](const Cpu& c) { return c.package; });
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::vector<int> v = cpus;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> parse_cpu_list(std::string_view text) {
  // Trailing newline and spaces are what sysfs files end with.
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r'))
    text.remove_suffix(1);
  std::vector<int> out;
  if (text.empty()) return out;  // an empty list (e.g. a memory-only node's cpulist)
  auto number = [&](std::string_view s) {
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0)
      throw std::invalid_argument("bad CPU number '" + std::string(s) + "'");
    return v;
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
    size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      out.push_back(number(item));
    } else {
      int lo = number(item.substr(0, dash)), hi = number(item.substr(dash + 1));
      if (hi < lo) throw std::invalid_argument("descending range '" + std::string(item) + "'");
      if (hi - lo > 1 << 20)
        throw std::invalid_argument("range too large '" + std::string(item) + "'");
      for (long long c = lo; c <= hi; ++c) out.push_back(static_cast<int>(c));  // hi may be INT_MAX
      // Bounded like one range: many ranges must not add up to gigabytes.
      if (out.size() > (1u << 20)) throw std::invalid_argument("more than 1048576 CPUs listed");
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace schedtwin::machine
