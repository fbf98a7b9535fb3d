// capture_sysfs() on the sysfs trees under tests/fixtures/sysfs (made by make_sysfs_fixture.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "engine/error.h"
#include "machine/capture.h"
#include "machine/machine_file.h"

namespace schedtwin::machine {
namespace {

std::string fixture(const std::string& name) {
  return std::string(SCHEDTWIN_SOURCE_DIR) + "/tests/fixtures/sysfs/" + name;
}

std::string capture_error(const std::string& root) {
  try {
    capture_sysfs(root);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MachineCapture, TwoSocketSmt2) {
  Machine m = capture_sysfs(fixture("xeon-2s-smt2"));
  ASSERT_EQ(m.nr_cpus(), 8);  // cpu8 has a directory but is not online
  EXPECT_EQ(m.name, "host");
  EXPECT_EQ(m.nr_cores(), 4);
  EXPECT_EQ(m.smt_width(), 2);
  EXPECT_EQ(m.smt_siblings(0), (std::vector<int>{0, 4}));
  EXPECT_EQ(m.smt_siblings(7), (std::vector<int>{3, 7}));
  EXPECT_EQ(m.llc_cpus(0), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(m.llc_cpus(1), (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(m.nr_clusters(), 2);  // no cluster files: the cluster is the LLC
  EXPECT_EQ(m.cluster_cpus(1), m.llc_cpus(1));
  EXPECT_EQ(m.package_cpus(1), (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(m.node_cpus(1), (std::vector<int>{2, 3, 6, 7}));
  EXPECT_EQ(m.numa_distance, (std::vector<std::vector<int>>{{10, 21}, {21, 10}}));
  // C1E is disabled in the fixture; latency/residency are µs in sysfs.
  ASSERT_EQ(m.idle_states.size(), 3u);
  EXPECT_EQ(m.idle_states[0].name, "POLL");
  EXPECT_TRUE(m.idle_states[0].polling);
  EXPECT_EQ(m.idle_states[1].name, "C1");
  EXPECT_EQ(m.idle_states[2].name, "C6");
  EXPECT_EQ(m.idle_states[2].exit_latency_ns, 133'000);
  EXPECT_EQ(m.idle_states[2].target_residency_ns, 400'000);
  EXPECT_EQ(m.idle_states[2].real_exit_ns, 133'000);
  EXPECT_NE(m.idle_states[2].source.find("intel_idle"), std::string::npos);
  EXPECT_DOUBLE_EQ(m.smt_throughput, 1178.0 / 2048.0);
  EXPECT_EQ(m.costs.ipi.source, "uncalibrated default; run schedtwin calibrate");
  EXPECT_NE(m.build.source.find("uncalibrated default; run schedtwin calibrate"),
            std::string::npos);
}

TEST(MachineCapture, HikeyLike) {
  Machine m = capture_sysfs(fixture("hikey-like"));
  ASSERT_EQ(m.nr_cpus(), 8);
  EXPECT_EQ(m.nr_cores(), 8);  // core_id restarts in each cluster; siblings decide the cores
  EXPECT_EQ(m.smt_width(), 1);
  EXPECT_EQ(m.nr_packages(), 1);
  EXPECT_EQ(m.nr_llcs(), 2);
  EXPECT_EQ(m.nr_clusters(), 2);
  EXPECT_EQ(m.llc_cpus(1), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(m.cluster_cpus(0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m.nr_nodes(), 1);  // no node directory
  EXPECT_EQ(m.numa_distance, (std::vector<std::vector<int>>{{10}}));
  ASSERT_EQ(m.idle_states.size(), 3u);
  EXPECT_EQ(m.idle_states[1].name, "cpu-sleep");
  EXPECT_EQ(m.idle_states[1].exit_latency_ns, 950'000);
  EXPECT_EQ(m.idle_states[2].target_residency_ns, 2'700'000);
  EXPECT_FALSE(m.idle_states[0].polling);
  EXPECT_EQ(m.smt_throughput, 1.0);
}

TEST(MachineCapture, HostFixtureCopiedFromThisMachine) {
  // A 2-CPU KVM guest: one L3 for both CPUs, one cluster (L2) per CPU, haltpoll cpuidle.
  Machine m = capture_sysfs(fixture("host-kvm-2cpu"));
  ASSERT_EQ(m.nr_cpus(), 2);
  EXPECT_EQ(m.nr_cores(), 2);
  EXPECT_EQ(m.nr_llcs(), 1);
  EXPECT_EQ(m.llc_cpus(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(m.nr_clusters(), 2);
  EXPECT_EQ(m.nr_nodes(), 1);
  ASSERT_EQ(m.idle_states.size(), 2u);
  EXPECT_EQ(m.idle_states[0].name, "POLL");
  EXPECT_EQ(m.idle_states[1].name, "haltpoll idle");
  EXPECT_EQ(m.idle_states[1].exit_latency_ns, 1000);
}

TEST(MachineCapture, RoundTripsThroughMachineFile) {
  for (const char* f : {"xeon-2s-smt2", "hikey-like", "host-kvm-2cpu"}) {
    SCOPED_TRACE(f);
    Machine m = capture_sysfs(fixture(f));
    const std::string text = dump_machine_file(m);
    EXPECT_EQ(dump_machine_file(parse_machine(text, "captured.json")), text);
  }
}

TEST(MachineCapture, OfflineCpusAreDroppedAndTheRestRenumbered) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "schedtwin_capture_offline";
  fs::remove_all(dir);
  fs::copy(fixture("hikey-like"), dir, fs::copy_options::recursive);
  std::ofstream(dir / "sys/devices/system/cpu/online") << "0-2,4-7\n";
  Machine m = capture_sysfs(dir.string());
  ASSERT_EQ(m.nr_cpus(), 7);
  EXPECT_EQ(m.llc_cpus(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m.llc_cpus(1), (std::vector<int>{3, 4, 5, 6}));  // old CPUs 4-7
  EXPECT_NE(m.topology_source.find("online CPUs 0-2,4-7 renumbered 0-6"), std::string::npos)
      << m.topology_source;
  fs::remove_all(dir);
}

TEST(MachineCapture, MissingEssentialFileIsNamed) {
  const std::string msg = capture_error(fixture("broken-missing-file"));
  EXPECT_NE(msg.find("broken-missing-file/sys/devices/system/cpu/cpu3/topology/core_id: missing"),
            std::string::npos)
      << msg;
  const std::string none = capture_error(fixture("no-such-tree"));
  EXPECT_NE(none.find("no-such-tree/sys/devices/system/cpu/online: missing"), std::string::npos)
      << none;
}

TEST(MachineCapture, CpuInTwoCores) {
  const std::string msg = capture_error(fixture("broken-two-cores"));
  EXPECT_NE(
      msg.find("cpu5/topology/thread_siblings_list: CPU 1 is listed in two cores (1,5 here, 1 "
               "in "),
      std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

// An attribute is read by the page up to 64 KiB: one that spans pages (a CPU list followed by
// 5000 blanks) reads whole, one past 64 KiB is refused by name.
TEST(MachineCapture, AttributesAreReadAcrossPagesUpTo64KiB) {
  namespace fs = std::filesystem;
  const fs::path tree =
      fs::temp_directory_path() / ("schedtwin-capture-pages-" + std::to_string(::getpid()));
  fs::remove_all(tree);
  fs::copy(fixture("xeon-2s-smt2"), tree, fs::copy_options::recursive);
  const fs::path online = tree / "sys/devices/system/cpu/online";
  std::ofstream(online, std::ios::trunc) << "0-3" << std::string(5000, ' ') << "\n";
  EXPECT_EQ(capture_sysfs(tree.string()).nr_cpus(), 4);
  std::ofstream(online, std::ios::trunc) << "0-3" << std::string(65536, ' ');
  const std::string msg = capture_error(tree.string());
  EXPECT_NE(msg.find("cpu/online: larger than 65536 bytes; not a sysfs attribute"),
            std::string::npos)
      << msg;
  fs::remove_all(tree);
}

TEST(MachineCapture, DirectoryInPlaceOfAnAttributeIsMissing) {
  namespace fs = std::filesystem;
  const fs::path tree =
      fs::temp_directory_path() / ("schedtwin-capture-dir-" + std::to_string(::getpid()));
  fs::remove_all(tree);
  fs::copy(fixture("xeon-2s-smt2"), tree, fs::copy_options::recursive);
  const fs::path online = tree / "sys/devices/system/cpu/online";
  fs::remove(online);
  fs::create_directory(online);
  const std::string msg = capture_error(tree.string());
  EXPECT_NE(msg.find("cpu/online: missing or unreadable"), std::string::npos) << msg;
  fs::remove_all(tree);
}

// A tree held in memory: a path -> content map; list() answers in reverse order, so the
// capture must sort what it lists.
class MapSource final : public SysfsSource {
 public:
  explicit MapSource(std::map<std::string, std::string> files) : files_(std::move(files)) {}
  std::optional<std::string> read(const std::string& path) const override {
    auto it = files_.find(path);
    if (it == files_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<std::string> list(const std::string& path) const override {
    std::vector<std::string> out;
    const std::string prefix = path + "/";
    for (const auto& [p, content] : files_) {
      if (p.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string name = p.substr(prefix.size(), p.find('/', prefix.size()) - prefix.size());
      if (out.empty() || out.front() != name) out.insert(out.begin(), name);
    }
    return out;
  }

 private:
  std::map<std::string, std::string> files_;
};

TEST(MachineCapture, ReadsThroughAnySysfsSource) {
  const std::string s = "/mem/sys/devices/system/";
  std::map<std::string, std::string> f = {{s + "cpu/online", "0-1\n"},
                                          {s + "cpu/cpuidle/current_driver", "intel_idle\n"}};
  for (int c = 0; c < 2; ++c) {
    const std::string cpu = s + "cpu/cpu" + std::to_string(c) + "/";
    f[cpu + "topology/core_id"] = "0\n";
    f[cpu + "topology/physical_package_id"] = "0\n";
    f[cpu + "topology/thread_siblings_list"] = "0-1\n";
    f[cpu + "cache/index0/level"] = "1\n";
    f[cpu + "cache/index0/type"] = "Data\n";
    f[cpu + "cache/index0/shared_cpu_list"] = "0-1\n";
    f[cpu + "cache/index2/level"] = "3\n";
    f[cpu + "cache/index2/type"] = "Unified\n";
    f[cpu + "cache/index2/shared_cpu_list"] = "0-1\n";
    f[cpu + "cache/index1/level"] = "2\n";  // listed after index2: the highest level wins
    f[cpu + "cache/index1/type"] = "Unified\n";
    f[cpu + "cache/index1/shared_cpu_list"] = std::to_string(c) + "\n";
  }
  for (int k = 0; k < 2; ++k) {
    const std::string st = s + "cpu/cpu0/cpuidle/state" + std::to_string(k) + "/";
    f[st + "name"] = k == 0 ? "POLL\n" : "C1\n";
    f[st + "latency"] = "0\n";  // equal: only the listing's sort orders them
    f[st + "residency"] = k == 0 ? "0\n" : "2\n";
  }
  Machine m = capture_sysfs(MapSource(f), "/mem");
  ASSERT_EQ(m.nr_cpus(), 2);
  EXPECT_EQ(m.smt_width(), 2);
  EXPECT_EQ(m.llc_cpus(0), (std::vector<int>{0, 1}));  // index2 (level 3), not index1
  ASSERT_EQ(m.idle_states.size(), 2u);
  EXPECT_EQ(m.idle_states[0].name, "POLL");
  EXPECT_EQ(m.idle_states[1].target_residency_ns, 2000);
  EXPECT_NE(m.description.find("/mem/sys/devices/system"), std::string::npos) << m.description;

  f[s + "cpu/cpu1/topology/core_id"] = "1\n";
  try {
    capture_sysfs(MapSource(f), "/mem");
    ADD_FAILURE() << "siblings in two cores were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/mem/sys/devices/system/cpu/cpu0/topology/"
                                         "thread_siblings_list: CPU 0 and CPU 1 are SMT siblings"),
              std::string::npos)
        << e.what();
  }
}

// Sub-NUMA clustering: one package, one L3 for all four CPUs, two nodes. The kernel (x86's
// match_llc) keeps each LLC inside a node; so does the captured machine, which the machine
// format would otherwise refuse.
TEST(MachineCapture, AnLlcSpanningNodesIsSplitAtTheNodes) {
  const std::string s = "/mem/sys/devices/system/";
  std::map<std::string, std::string> f = {{s + "cpu/online", "0-3\n"}};
  for (int c = 0; c < 4; ++c) {
    const std::string cpu = s + "cpu/cpu" + std::to_string(c) + "/";
    f[cpu + "topology/core_id"] = std::to_string(c) + "\n";
    f[cpu + "topology/physical_package_id"] = "0\n";
    f[cpu + "topology/thread_siblings_list"] = std::to_string(c) + "\n";
    f[cpu + "cache/index3/level"] = "3\n";
    f[cpu + "cache/index3/type"] = "Unified\n";
    f[cpu + "cache/index3/shared_cpu_list"] = "0-3\n";
  }
  for (int n = 0; n < 2; ++n) {
    const std::string node = s + "node/node" + std::to_string(n) + "/";
    f[node + "cpulist"] = n == 0 ? "0-1\n" : "2-3\n";
    f[node + "distance"] = n == 0 ? "10 11\n" : "11 10\n";
  }
  Machine m = capture_sysfs(MapSource(f), "/mem");
  ASSERT_EQ(m.nr_cpus(), 4);
  EXPECT_EQ(m.nr_llcs(), 2);
  EXPECT_EQ(m.llc_cpus(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(m.llc_cpus(1), (std::vector<int>{2, 3}));
  EXPECT_EQ(m.package_cpus(0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(m.topology_source.find("split at its NUMA nodes' boundaries"), std::string::npos)
      << m.topology_source;
}

}  // namespace
}  // namespace schedtwin::machine
