#include "machine/capture.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "engine/error.h"
#include "machine/machine_file.h"

namespace schedtwin::machine {

namespace {

namespace fs = std::filesystem;

// Paths and primitives of one capture: attributes read through `src`, errors naming the file.
class Sysfs {
 public:
  Sysfs(const SysfsSource& src, const std::string& sysroot)
      : src_(src), base_(fs::path(sysroot.empty() ? "/" : sysroot) / "sys/devices/system") {}

  fs::path cpu(const std::string& rel) const { return base_ / "cpu" / rel; }
  fs::path node_dir() const { return base_ / "node"; }
  std::string root() const { return base_.string(); }

  [[noreturn]] static void fail(const fs::path& p, const std::string& what) {
    throw InputError(fmt::format("{}: {}", p.string(), what));
  }

  std::optional<std::string> read_optional(const fs::path& p) const {
    std::optional<std::string> s = src_.read(p.string());
    if (!s) return s;
    if (s->size() > SysfsSource::kMaxAttributeBytes)
      fail(p, fmt::format("larger than {} bytes; not a sysfs attribute",
                          SysfsSource::kMaxAttributeBytes));
    while (!s->empty() && (s->back() == '\n' || s->back() == ' ' || s->back() == '\r'))
      s->pop_back();
    return s;
  }

  std::string read(const fs::path& p) const {
    auto s = read_optional(p);
    if (!s) fail(p, "missing or unreadable (needed to capture the machine)");
    return *s;
  }

  long long read_int(const fs::path& p) const { return to_int(p, read(p)); }

  static long long to_int(const fs::path& p, const std::string& s) {
    long long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
      fail(p, fmt::format("expected an integer, got '{}'", s));
    return v;
  }

  std::vector<int> read_list(const fs::path& p) const {
    const std::string s = read(p);
    try {
      return parse_cpu_list(s);
    } catch (const std::invalid_argument& e) {
      fail(p, fmt::format("bad CPU list '{}': {}", s, e.what()));
    }
  }

  // Sorted numeric suffixes of the entries of dir named <prefix><number>.
  std::vector<int> numbered_entries(const fs::path& dir, const std::string& prefix) const {
    std::vector<int> out;
    for (const std::string& name : src_.list(dir.string())) {
      if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
      int v = 0;
      auto [p, e] = std::from_chars(name.data() + prefix.size(), name.data() + name.size(), v);
      if (e == std::errc() && p == name.data() + name.size()) out.push_back(v);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  const SysfsSource& src_;
  fs::path base_;
};

// The file system itself.
class DiskSysfs final : public SysfsSource {
 public:
  std::optional<std::string> read(const std::string& path) const override {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return std::nullopt;  // opens, but reads no bytes
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    // sysfs attributes are at most a page: read by the page and stop past the bound, never
    // a whole disk (and no 64 KiB buffer per attribute: a capture reads hundreds of them).
    std::string s;
    std::array<char, 4096> page;
    do {
      in.read(page.data(), static_cast<std::streamsize>(page.size()));
      s.append(page.data(), static_cast<std::size_t>(in.gcount()));
    } while (in && s.size() <= kMaxAttributeBytes);
    return s;
  }

  std::vector<std::string> list(const std::string& path) const override {
    std::vector<std::string> out;
    std::error_code ec;
    fs::directory_iterator it(path, ec), end;
    if (ec) return out;
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      out.push_back(it->path().filename().string());
    }
    return out;
  }
};

std::vector<int> intersect(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Groups CPUs by the set each one reports (thread siblings, cluster, shared cache); every CPU
// must report the same set as the other members of its set. Returns cpu index -> group id.
std::vector<int> partition(const std::vector<int>& online,
                           const std::vector<std::vector<int>>& sets,
                           const std::vector<fs::path>& files, const char* what) {
  std::map<int, size_t> index;  // CPU number -> position in online
  for (size_t i = 0; i < online.size(); ++i) index[online[i]] = i;
  std::vector<int> group(online.size(), -1);
  int next = 0;
  for (size_t i = 0; i < online.size(); ++i) {
    const std::vector<int>& s = sets[i];
    if (!std::binary_search(s.begin(), s.end(), online[i]))
      Sysfs::fail(files[i], fmt::format("does not contain CPU {} itself", online[i]));
    for (int other : s) {
      const size_t j = index.at(other);
      if (sets[j] != s)
        Sysfs::fail(files[i],
                    fmt::format("CPU {} is listed in two {} ({} here, {} in {})", other, what,
                                format_cpu_list(s), format_cpu_list(sets[j]), files[j].string()));
    }
    if (group[i] < 0) {
      for (int other : s) group[index.at(other)] = next;
      ++next;
    }
  }
  return group;
}

}  // namespace

Machine capture_sysfs(const std::string& sysroot) { return capture_sysfs(DiskSysfs(), sysroot); }

Machine capture_sysfs(const SysfsSource& source, const std::string& sysroot) {
  const Sysfs sys(source, sysroot);
  const fs::path online_file = sys.cpu("online");
  std::vector<int> online = sys.read_list(online_file);
  if (online.empty()) Sysfs::fail(online_file, "lists no CPU");
  if (online.size() > static_cast<size_t>(Machine::kMaxCpus))
    Sysfs::fail(online_file,
                fmt::format("{} CPUs; at most {} are supported", online.size(), Machine::kMaxCpus));
  const size_t n = online.size();

  std::vector<std::vector<int>> siblings(n), clusters(n), llcs(n);
  std::vector<fs::path> sibling_files(n), cluster_files(n), llc_files(n);
  std::vector<long long> package_id(n), core_id(n);
  std::vector<int> capacity(n, 1024);
  bool have_clusters = true, have_llc = true;
  std::map<std::pair<long long, long long>, std::vector<int>> cluster_by_id;  // (pkg, id) -> CPUs
  std::vector<std::optional<long long>> cluster_id(n);

  for (size_t i = 0; i < n; ++i) {
    const std::string cpu = "cpu" + std::to_string(online[i]);
    const fs::path topo = sys.cpu(cpu + "/topology");
    core_id[i] = sys.read_int(topo / "core_id");
    package_id[i] = sys.read_int(topo / "physical_package_id");
    sibling_files[i] = topo / "thread_siblings_list";
    siblings[i] = intersect(sys.read_list(sibling_files[i]), online);

    cluster_files[i] = topo / "cluster_cpus_list";
    if (sys.read_optional(cluster_files[i])) {
      clusters[i] = intersect(sys.read_list(cluster_files[i]), online);
    } else if (auto id = sys.read_optional(topo / "cluster_id")) {
      cluster_id[i] = Sysfs::to_int(topo / "cluster_id", *id);
      cluster_files[i] = topo / "cluster_id";
      cluster_by_id[{package_id[i], *cluster_id[i]}].push_back(online[i]);
    } else {
      have_clusters = false;
    }

    // The LLC is the highest-level data or unified cache.
    int best_level = -1;
    for (int k : sys.numbered_entries(sys.cpu(cpu + "/cache"), "index")) {
      const fs::path idx = sys.cpu(cpu + "/cache/index" + std::to_string(k));
      if (auto type = sys.read_optional(idx / "type"); type && *type == "Instruction") continue;
      const int level = static_cast<int>(sys.read_int(idx / "level"));
      if (level > best_level) {
        best_level = level;
        llc_files[i] = idx / "shared_cpu_list";
        llcs[i] = intersect(sys.read_list(llc_files[i]), online);
      }
    }
    if (best_level < 0) have_llc = false;

    const fs::path cap_file = sys.cpu(cpu + "/cpu_capacity");
    if (auto cap = sys.read_optional(cap_file)) {
      const long long v = Sysfs::to_int(cap_file, *cap);
      if (v < 1 || v > 1024)
        Sysfs::fail(cap_file, fmt::format("capacity {} is outside 1..1024", v));
      capacity[i] = static_cast<int>(v);
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (cluster_id[i]) clusters[i] = cluster_by_id[{package_id[i], *cluster_id[i]}];

  const std::vector<int> core_group = partition(online, siblings, sibling_files, "cores");
  for (size_t i = 0; i < n; ++i)
    for (int other : siblings[i]) {
      const size_t j = static_cast<size_t>(std::lower_bound(online.begin(), online.end(), other) -
                                           online.begin());
      if (package_id[j] != package_id[i] || core_id[j] != core_id[i])
        Sysfs::fail(
            sibling_files[i],
            fmt::format("CPU {} and CPU {} are SMT siblings but report different "
                        "physical_package_id/core_id ({}/{} and {}/{})",
                        online[i], other, package_id[i], core_id[i], package_id[j], core_id[j]));
    }

  // Packages: dense, in the order of their lowest CPU.
  std::map<long long, int> package_of;
  std::vector<int> package(n);
  for (size_t i = 0; i < n; ++i)
    package[i] =
        package_of.emplace(package_id[i], static_cast<int>(package_of.size())).first->second;

  std::vector<int> llc_group;
  std::string llc_note = "LLC = highest-level cache's shared_cpu_list";
  if (have_llc) {
    llc_group = partition(online, llcs, llc_files, "last-level caches");
  } else if (have_clusters) {
    llc_group = partition(online, clusters, cluster_files, "clusters");
    llc_note = "no cache information: LLC taken to be the cluster";
  } else {
    llc_group = package;
    llc_note = "no cache information: LLC taken to be the package";
  }

  std::vector<int> cluster_group = llc_group;
  if (have_clusters) {
    std::vector<int> g = partition(online, clusters, cluster_files, "clusters");
    // Keep the clusters only if each lies strictly inside its LLC; a cluster spanning the whole
    // LLC (or more) carries no extra level, as in cpu_clustergroup_mask().
    bool inside = true;
    std::map<int, int> llc_of_cluster;
    for (size_t i = 0; i < n; ++i) {
      auto [it, fresh] = llc_of_cluster.emplace(g[i], llc_group[i]);
      if (!fresh && it->second != llc_group[i]) inside = false;
    }
    if (inside &&
        llc_of_cluster.size() >
            static_cast<size_t>(*std::max_element(llc_group.begin(), llc_group.end()) + 1))
      cluster_group = g;
  }

  Machine m;
  m.name = "host";
  m.description = fmt::format("captured from {} ({} online CPUs)", sys.root(), n);
  m.cpus.resize(n);
  for (size_t i = 0; i < n; ++i) {
    Cpu& c = m.cpus[i];
    c.id = static_cast<int>(i);
    c.core = core_group[i];
    c.cluster = cluster_group[i];
    c.llc = llc_group[i];
    c.package = package[i];
    c.capacity = capacity[i];
    c.node = 0;
  }
  std::string renumbered;
  if (online.back() != static_cast<int>(n) - 1)
    renumbered = fmt::format("; online CPUs {} renumbered 0-{}", format_cpu_list(online), n - 1);
  m.topology_source =
      fmt::format("captured from {} (cpu/online, topology/thread_siblings_list{}; {}){}",
                  sys.root(), have_clusters ? ", cluster" : "", llc_note, renumbered);

  // NUMA nodes.
  const std::vector<int> nodes = sys.numbered_entries(sys.node_dir(), "node");
  if (nodes.empty()) {
    m.numa_distance = {{10}};
    m.numa_source = fmt::format("no {}: one node", sys.node_dir().string());
  } else {
    std::vector<int> node_of(n, -1);
    for (size_t k = 0; k < nodes.size(); ++k) {
      const fs::path dir = sys.node_dir() / ("node" + std::to_string(nodes[k]));
      for (int cpu : sys.read_list(dir / "cpulist")) {
        auto it = std::lower_bound(online.begin(), online.end(), cpu);
        if (it == online.end() || *it != cpu) continue;  // offline CPU
        const size_t i = static_cast<size_t>(it - online.begin());
        if (node_of[i] >= 0)
          Sysfs::fail(dir / "cpulist", fmt::format("CPU {} is also in node{}'s cpulist", cpu,
                                                   nodes[static_cast<size_t>(node_of[i])]));
        node_of[i] = static_cast<int>(k);
      }
      std::istringstream row(sys.read(dir / "distance"));
      std::vector<int> d;
      std::string tok;
      while (row >> tok) d.push_back(static_cast<int>(Sysfs::to_int(dir / "distance", tok)));
      if (d.size() != nodes.size())
        Sysfs::fail(dir / "distance",
                    fmt::format("has {} entries for {} nodes", d.size(), nodes.size()));
      m.numa_distance.push_back(std::move(d));
    }
    for (size_t i = 0; i < n; ++i) {
      if (node_of[i] < 0)
        Sysfs::fail(sys.node_dir(), fmt::format("CPU {} is in no node's cpulist", online[i]));
      m.cpus[i].node = node_of[i];
    }
    m.numa_source = fmt::format("captured from {}/node*/distance", sys.node_dir().string());
    // Sub-NUMA clustering: the L3 is shared across the package's nodes, but x86's match_llc
    // (arch/x86/kernel/smpboot.c) keeps the LLC inside a node, so the MC domain fits under
    // the NUMA one; the model's machine format asks the same. Clusters are split alike.
    auto split_by_node = [&](auto field) {
      std::map<std::pair<int, int>, int> renumber;
      bool split = false;
      std::map<int, int> node_of_group;
      for (Cpu& c : m.cpus) {
        auto [it, fresh] = node_of_group.emplace(c.*field, c.node);
        if (!fresh && it->second != c.node) split = true;
        c.*field = renumber.emplace(std::pair{c.*field, c.node}, static_cast<int>(renumber.size()))
                       .first->second;
      }
      return split;
    };
    const bool llc_split = split_by_node(&Cpu::llc);
    split_by_node(&Cpu::cluster);
    if (llc_split)
      m.topology_source +=
          "; each LLC split at its NUMA nodes' boundaries, as x86's match_llc does under "
          "sub-NUMA clustering";
  }

  // Idle states of the first online CPU (cpuidle registers one driver for all CPUs on the
  // machines we model). Disabled states are left out.
  const std::string idle_dir = "cpu" + std::to_string(online.front()) + "/cpuidle";
  const std::string driver =
      sys.read_optional(sys.cpu("cpuidle/current_driver")).value_or("unknown driver");
  for (int k : sys.numbered_entries(sys.cpu(idle_dir), "state")) {
    const fs::path st = sys.cpu(idle_dir + "/state" + std::to_string(k));
    if (sys.read_optional(st / "disable").value_or("0") == "1") continue;
    IdleState s;
    s.name = sys.read(st / "name");
    // Microseconds; bounded before converting so that the product cannot overflow.
    auto read_us = [&](const char* file) {
      const long long us = sys.read_int(st / file);
      if (us < 0 || us > Machine::kMaxTimeNs / kNsPerUs)
        Sysfs::fail(st / file,
                    fmt::format("{} us is outside 0..{} us", us, Machine::kMaxTimeNs / kNsPerUs));
      return us * kNsPerUs;
    };
    s.exit_latency_ns = read_us("latency");
    s.target_residency_ns = read_us("residency");
    s.polling = s.name == "POLL";  // the cpuidle core's poll_state is always named POLL
    s.source = fmt::format("captured from {} (cpuidle driver {}, latency/residency in us)",
                           st.string(), driver);
    s.real_exit_ns = s.polling ? 0 : s.exit_latency_ns;
    s.real_exit_source = fmt::format("{}: taken equal to the kernel's exit latency", kUncalibrated);
    m.idle_states.push_back(std::move(s));
  }
  // cpuidle lists states shallowest first; keep that order even if a driver breaks it.
  std::stable_sort(
      m.idle_states.begin(), m.idle_states.end(),
      [](const IdleState& a, const IdleState& b) { return a.exit_latency_ns < b.exit_latency_ns; });

  const int width = m.smt_width();
  m.smt_throughput = width > 1 ? 1178.0 / (1024.0 * width) : 1.0;
  m.smt_source = width > 1
                     ? fmt::format(
                           "{}: the kernel's historic smt_gain 1178/1024 per core shared by {} "
                           "threads",
                           kUncalibrated, width)
                     : std::string("no SMT siblings in the captured topology");
  // The figures used when nothing better is known; they equal the xeon-e5-2650v4 preset's.
  const std::string src = kUncalibrated;
  m.costs.context_switch = {1500, src};
  m.costs.ipi = {1000, src};
  m.costs.idle_probe = {45, src};
  m.costs.cache_cold = {18000, src};
  m.costs.wakeup = {300, src};
  m.costs.pipe_write = {500, src};
  m.costs.pipe_read = {400, src};
  m.costs.socket_write = {750, src};
  m.costs.socket_read = {600, src};
  m.build = {250, Preemption::Voluntary, true,
             fmt::format("{} (not read from the host's kernel configuration)", kUncalibrated)};

  validate_machine(m, fmt::format("sysfs capture of {}", sys.root()));
  normalize_ids(m);
  return m;
}

}  // namespace schedtwin::machine
