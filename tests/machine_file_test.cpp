// Machine files: the topology generator, normalisation, and one-line errors for bad files.
#include "machine/machine_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/error.h"

namespace schedtwin::machine {
namespace {

using nlohmann::json;

// 2 packages x 1 core x SMT2, explicit form: CPUs 0,1 = core 0 (package/LLC/node 0), 2,3 = core 1.
json base() {
  json cpus = json::array();
  for (int i = 0; i < 4; ++i)
    cpus.push_back({{"id", i},
                    {"core", i / 2},
                    {"cluster", i / 2},
                    {"llc", i / 2},
                    {"package", i / 2},
                    {"node", i / 2},
                    {"capacity", 1024}});
  json costs;
  for (const char* k : {"context_switch", "ipi", "idle_probe", "cache_cold", "wakeup", "pipe_write",
                        "pipe_read", "socket_write", "socket_read"})
    costs[k] = {{"ns", 100}, {"source", "test"}};
  return {{"version", 1},
          {"name", "tiny"},
          {"description", "test machine"},
          {"topology", {{"source", "test"}, {"cpus", cpus}}},
          {"numa_distance", {{"matrix", {{10, 20}, {20, 10}}}, {"source", "test"}}},
          {"smt_throughput", {{"value", 0.5}, {"source", "test"}}},
          {"idle_states",
           {{{"name", "POLL"},
             {"exit_latency_ns", 0},
             {"target_residency_ns", 0},
             {"polling", true},
             {"source", "t"},
             {"real_exit_ns", 0},
             {"real_exit_source", "t"}},
            {{"name", "C1"},
             {"exit_latency_ns", 2000},
             {"target_residency_ns", 2000},
             {"polling", false},
             {"source", "t"},
             {"real_exit_ns", 1500},
             {"real_exit_source", "t"}}}},
          {"costs", costs},
          {"kernel_build",
           {{"hz", 1000}, {"preempt", "none"}, {"nohz_idle", false}, {"source", "test"}}}};
}

// Expects from_json(j) to throw InputError whose one-line message contains `expected`.
void expect_error(const json& j, const std::string& expected) {
  try {
    from_json(j, "m.json");
    ADD_FAILURE() << "no error, expected: " << expected;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(expected), std::string::npos) << "message: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    EXPECT_EQ(msg.rfind("m.json: ", 0), 0u) << "does not start with the file: " << msg;
  }
}

void expect_parse_error(const std::string& text, const std::string& expected) {
  try {
    parse_machine(text, "bad.json");
    ADD_FAILURE() << "no error, expected: " << expected;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(expected, 0), 0u) << "message: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(MachineFile, BaseLoads) {
  Machine m = from_json(base(), "m.json");
  EXPECT_EQ(m.nr_cpus(), 4);
  EXPECT_EQ(m.smt_siblings(1), (std::vector<int>{0, 1}));
  EXPECT_EQ(m.llc_cpus(1), (std::vector<int>{2, 3}));
  EXPECT_EQ(m.build.hz, 1000);
  EXPECT_EQ(m.build.preempt, Preemption::None);
  EXPECT_FALSE(m.build.nohz_idle);
  EXPECT_EQ(m.idle_states[1].real_exit_ns, 1500);
  EXPECT_EQ(to_json(m), base());  // already normalised, so it round-trips unchanged
}

TEST(MachineFile, GeneratorThreadsLast) {
  json j = base();
  j["topology"] = {{"packages", 2},
                   {"cores_per_package", 2},
                   {"threads_per_core", 2},
                   {"numbering", "threads-last"},
                   {"source", "gen"}};
  Machine m = from_json(j, "m.json");
  ASSERT_EQ(m.nr_cpus(), 8);
  // CPU = thread * 4 + package * 2 + core: 0,1 pkg0 t0; 2,3 pkg1 t0; 4,5 pkg0 t1; 6,7 pkg1 t1.
  const int core[] = {0, 1, 2, 3, 0, 1, 2, 3}, pkg[] = {0, 0, 1, 1, 0, 0, 1, 1};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(m.cpus[c].core, core[c]) << c;
    EXPECT_EQ(m.cpus[c].package, pkg[c]) << c;
    EXPECT_EQ(m.cpus[c].llc, pkg[c]) << c;
    EXPECT_EQ(m.cpus[c].cluster, pkg[c]) << c;
    EXPECT_EQ(m.cpus[c].node, pkg[c]) << c;
  }
  EXPECT_EQ(m.smt_siblings(6), (std::vector<int>{2, 6}));
  EXPECT_EQ(m.topology_source, "gen");
}

// A generated topology has no topology.cpus to point at: a package without a NUMA node
// names the packages and the matrix they need.
TEST(MachineFile, GeneratedPackagesNeedTheirNodesInTheMatrix) {
  json j = base();
  j["topology"] = {{"packages", 2}, {"cores_per_package", 2}, {"threads_per_core", 1}};
  j["numa_distance"]["matrix"] = {{10}};
  expect_error(j,
               "m.json: topology.packages: each package is a NUMA node, so 2 packages need a 2 x "
               "2 numa_distance.matrix (10 on the diagonal, the SLIT distances elsewhere); the "
               "one given has 1 node");
  j.erase("numa_distance");
  expect_error(j,
               "m.json: topology.packages: each package is a NUMA node, so 2 packages need a "
               "2 x 2 numa_distance.matrix (10 on the diagonal, the SLIT distances elsewhere); "
               "none is given");
}

TEST(MachineFile, GeneratorThreadsAdjacentWithClusters) {
  json j = base();
  j["topology"] = {{"packages", 1},         {"cores_per_package", 4},
                   {"threads_per_core", 2}, {"clusters_per_package", 2},
                   {"llc", "cluster"},      {"numbering", "threads-adjacent"},
                   {"capacity", 512}};
  j["numa_distance"] = {{"matrix", {{10}}}};
  Machine m = from_json(j, "m.json");
  ASSERT_EQ(m.nr_cpus(), 8);
  EXPECT_EQ(m.smt_siblings(3), (std::vector<int>{2, 3}));
  EXPECT_EQ(m.cluster_cpus(1), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(m.llc_cpus(0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m.nr_packages(), 1);
  EXPECT_EQ(m.cpus[7].capacity, 512);
  EXPECT_EQ(m.topology_source, "");
}

TEST(MachineFile, IdsAreRenumberedDenselyAndClusterDefaultsToLlc) {
  json j = base();
  for (int i = 0; i < 4; ++i) {
    j["topology"]["cpus"][i]["core"] = 100 - 10 * (i / 2);  // 100, 100, 90, 90
    j["topology"]["cpus"][i]["llc"] = 7 + i / 2;
    j["topology"]["cpus"][i].erase("cluster");
  }
  Machine m = from_json(j, "m.json");
  EXPECT_EQ(m.cpus[0].core, 0);
  EXPECT_EQ(m.cpus[2].core, 1);
  EXPECT_EQ(m.cpus[3].llc, 1);
  EXPECT_EQ(m.cpus[2].cluster, 1);
  EXPECT_EQ(m.cluster_cpus(1), m.llc_cpus(1));
}

TEST(MachineFile, ParseErrorsGiveLineAndColumn) {
  // Missing comma after "x": the parser reports the last character of the token it could not
  // accept, the closing quote of "topology" (line 4, column 12), as nlohmann's own message does.
  expect_parse_error(
      "{\n  \"version\": 1,\n  \"name\": \"x\"\n  \"topology\": {}\n}",
      "bad.json:4:12: syntax error while parsing object - unexpected string literal");
  expect_parse_error("{\"version\": 1,", "bad.json:1:");
  expect_parse_error("", "bad.json:1:1: ");
}

// nlohmann keeps the last of two equal keys without a word; a machine file refuses them,
// as a scenario file does, naming where each occurrence is.
TEST(MachineFile, AKeyGivenTwiceIsRefused) {
  expect_parse_error(
      "{\n  \"version\": 1,\n  \"topology\": {\"packages\": 2,\n    \"packages\": 3}\n}",
      "bad.json:4:5: topology.packages: appears twice (first at 3:16)");
}

TEST(MachineFile, NodeReclaimDistance) {
  json j = base();
  EXPECT_EQ(from_json(j, "m.json").node_reclaim_distance, 30);  // RECLAIM_DISTANCE
  j["numa_distance"]["node_reclaim_distance"] = 32;
  const Machine m = from_json(j, "m.json");
  EXPECT_EQ(m.node_reclaim_distance, 32);
  EXPECT_EQ(to_json(m)["numa_distance"]["node_reclaim_distance"], 32);
  j["numa_distance"]["node_reclaim_distance"] = 5;
  expect_error(j, "numa_distance.node_reclaim_distance");
}

// costs.timer_irq is optional: 0 and left out of what is written when not given; kept when
// given; a negative one is refused like any cost.
TEST(MachineFile, TimerIrqIsOptional) {
  json j = base();
  const Machine plain = from_json(j, "m.json");
  EXPECT_EQ(plain.costs.timer_irq.ns, 0);
  EXPECT_FALSE(to_json(plain)["costs"].contains("timer_irq"));
  j["costs"]["timer_irq"] = {{"ns", 1500}, {"source", "measured"}};
  const Machine m = from_json(j, "m.json");
  EXPECT_EQ(m.costs.timer_irq.ns, 1500);
  EXPECT_EQ(m.costs.timer_irq.source, "measured");
  EXPECT_EQ(to_json(m)["costs"]["timer_irq"]["ns"], 1500);
  j["costs"]["timer_irq"]["ns"] = -1;
  expect_error(j, "costs.timer_irq.ns");
}

TEST(MachineFile, VersionErrors) {
  json j = base();
  j.erase("version");
  expect_error(j, "m.json: version: missing (expected 1)");
  j["version"] = 2;
  expect_error(j, "m.json: version: unsupported version 2");
  j["version"] = "1";
  expect_error(j, "version: must be the number 1, not \"1\"");
}

TEST(MachineFile, UnknownKeys) {
  json j = base();
  j["colour"] = "blue";
  expect_error(j, "m.json: colour: unknown key");
  j = base();
  j["topology"]["cpus"][1]["speed"] = 3;
  expect_error(j, "m.json: topology.cpus[1].speed: unknown key");
  j = base();
  j["costs"]["ipi"]["us"] = 1;
  expect_error(j, "costs.ipi.us: unknown key");
  j = base();
  j["topology"]["packages"] = 1;  // beside an explicit cpus list
  expect_error(j,
               "topology.packages: a topology is either an explicit \"cpus\" list or the "
               "generator keys (packages, cores_per_package, threads_per_core, ...), not both");
}

// A key or preset name one or two edits from a known one is named in the error.
TEST(MachineFile, NearMissesAreSuggested) {
  json j = base();
  j["smt_througput"] = 1.0;
  expect_error(j, "m.json: smt_througput: unknown key (did you mean \"smt_throughput\"? expected");
  try {
    load_machine("xeon-e5-2650", "--machine");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--machine: unknown machine 'xeon-e5-2650': did you mean "
                                          "'xeon-e5-2650v4'? not a preset (",
                                          0),
              0u)
        << e.what();
  }
}

TEST(MachineFile, MissingKeys) {
  json j = base();
  j["costs"].erase("wakeup");
  expect_error(j, "m.json: costs.wakeup: missing");
  j = base();
  j["topology"]["cpus"][2].erase("llc");
  expect_error(j, "topology.cpus[2].llc: missing");
  j = base();
  j.erase("kernel_build");
  expect_error(j, "kernel_build: missing");
}

TEST(MachineFile, CpuIdsMustBeDenseAndInOrder) {
  json j = base();
  j["topology"]["cpus"][2]["id"] = 5;
  expect_error(j,
               "topology.cpus[2].id: expected 2 (CPU ids must be 0..n-1, listed in order), got 5");
  j = base();
  j["topology"]["cpus"] = json::array();
  expect_error(j, "topology.cpus: empty");
}

TEST(MachineFile, TopologyNesting) {
  json j = base();
  j["topology"]["cpus"][1]["llc"] = 1;  // CPU 1 shares core 0 with CPU 0 but not its LLC
  j["topology"]["cpus"][1]["cluster"] = 1;
  expect_error(j,
               "topology.cpus[1].llc: SMT siblings CPU 0 and CPU 1 (core 0) are in different LLCs "
               "(0 and 1)");
  j = base();
  j["topology"]["cpus"][2]["llc"] = 0;  // LLC 0 now holds CPU 2 of package 1
  j["topology"]["cpus"][3]["llc"] = 0;
  j["topology"]["cpus"][2]["cluster"] = 5;
  j["topology"]["cpus"][3]["cluster"] = 5;
  expect_error(j, "topology.cpus[2].package: LLC 0 spans two packages (0 and 1)");
  j = base();
  j["topology"]["cpus"][2]["cluster"] = 0;  // cluster 0 in LLCs 0 and 1
  j["topology"]["cpus"][3]["cluster"] = 0;
  expect_error(j, "topology.cpus[2].llc: cluster 0 spans two LLCs (0 and 1)");
  j = base();  // sub-NUMA clustering with one LLC for the package's two nodes
  for (int c : {2, 3}) {
    j["topology"]["cpus"][c]["package"] = 0;
    j["topology"]["cpus"][c]["llc"] = 0;
    j["topology"]["cpus"][c]["cluster"] = 5;
  }
  expect_error(j,
               "topology.cpus[2].node: LLC 0 spans two NUMA nodes (0 and 1): an LLC must lie "
               "inside one node");
  j = base();
  j["topology"]["cpus"][1]["node"] = 1;
  expect_error(
      j,
      "topology.cpus[1].node: SMT siblings CPU 0 and CPU 1 (core 0) are in different NUMA nodes");
  j = base();
  j["topology"]["cpus"][3]["node"] = 2;
  expect_error(j, "topology.cpus[3].node: node 2 does not exist (numa_distance has 2 nodes)");
  // Every CPU outside the matrix: the CPU is named, not the rows left without CPUs (trial 8).
  j = base();
  for (auto& c : j["topology"]["cpus"]) c["node"] = 3;
  expect_error(j, "topology.cpus[0].node: node 3 does not exist (numa_distance has 2 nodes)");
  // Cores are numbered across the machine: the error says so (sysfs core_id is per package).
  j = base();
  j["topology"]["cpus"][2]["core"] = j["topology"]["cpus"][0]["core"];
  expect_error(j,
               "core numbers a core across the whole machine, not per package as sysfs "
               "core_id does");
}

TEST(MachineFile, Capacity) {
  json j = base();
  j["topology"]["cpus"][0]["capacity"] = 2000;
  expect_error(j, "topology.cpus[0].capacity: 2000 is out of range [1, 1024]");
  j["topology"]["cpus"][0]["capacity"] = 0;
  expect_error(j, "topology.cpus[0].capacity: 0 is out of range [1, 1024]");
}

TEST(MachineFile, DistanceMatrix) {
  json j = base();
  j["numa_distance"]["matrix"] = {{10, 20, 30}, {20, 10}};
  expect_error(j, "numa_distance.matrix[0]: has 3 entries; the matrix must be square (2 x 2)");
  j["numa_distance"]["matrix"] = {{10, 20}, {20, 11}};
  expect_error(j, "numa_distance.matrix[1][1]: diagonal must be 10 (LOCAL_DISTANCE), got 11");
  j["numa_distance"]["matrix"] = {{10, 10}, {20, 10}};
  expect_error(
      j, "numa_distance.matrix[0][1]: distance between different nodes must be in 11..255, got 10");
}

// CPUs 2 and 3 are on node 1: the matrix must have its row, and every row must have CPUs.
TEST(MachineFile, DistanceMatrixAndTheCpusNodesAgree) {
  json j = base();
  j.erase("numa_distance");
  expect_error(j,
               "topology.cpus[2].node: node 1 does not exist: no numa_distance is given, so the "
               "machine has one node (give a 2 x 2 matrix, 10 on the diagonal and the SLIT "
               "distances elsewhere)");
  j = base();
  j["numa_distance"]["matrix"] = {{10}};
  expect_error(j, "topology.cpus[2].node: node 1 does not exist (numa_distance has 1 node)");
  j = base();
  j["numa_distance"]["matrix"] = {{10, 20, 30}, {20, 10, 30}, {30, 30, 10}};
  expect_error(j,
               "numa_distance.matrix: has 3 nodes, but no CPU is on node 2: nodes without CPUs "
               "are not modelled");
}

TEST(MachineFile, NegativeAndNonIntegerCosts) {
  json j = base();
  j["costs"]["ipi"]["ns"] = -5;
  expect_error(j, "m.json: costs.ipi.ns: negative time -5 ns");
  j["costs"]["ipi"]["ns"] = 1.5;
  expect_error(j, "costs.ipi.ns: expected an integer, got 1.5");
  j = base();
  j["idle_states"][1]["real_exit_ns"] = -1;
  expect_error(j, "idle_states[1].real_exit_ns: negative time -1 ns");
}

TEST(MachineFile, IdleStateOrder) {
  json j = base();
  j["idle_states"][1]["exit_latency_ns"] = 0;
  j["idle_states"][0]["exit_latency_ns"] = 5;
  expect_error(j, "idle_states[1].exit_latency_ns: 0 is below the previous state's 5");
  j = base();
  j["idle_states"][1]["polling"] = true;
  expect_error(
      j, "idle_states[1].polling: only the first (shallowest) idle state may be a polling state");
  j = base();
  j["idle_states"][0]["cluster"] = true;
  expect_error(j,
               "idle_states[0].cluster: a cluster-level state needs a non-polling CPU-level "
               "state before it");
  j = base();
  j["idle_states"][1]["cluster"] = true;  // state 0 is POLL
  expect_error(j, "idle_states[1].cluster: a cluster-level state needs a non-polling");
  j = base();
  j["idle_states"][1]["cluster"] = "yes";
  expect_error(j, "idle_states[1].cluster:");
}

// A cluster-level state after the CPU-level ones is read and kept; a CPU-level state may not
// follow it.
TEST(MachineFile, ClusterLevelIdleState) {
  json j = base();
  json deep = j["idle_states"][1];
  deep["name"] = "cluster-sleep";
  deep["exit_latency_ns"] = 5000;
  deep["cluster"] = true;
  j["idle_states"].push_back(deep);
  const machine::Machine m = from_json(j, "m.json");
  ASSERT_EQ(m.idle_states.size(), 3u);
  EXPECT_FALSE(m.idle_states[1].cluster);
  EXPECT_TRUE(m.idle_states[2].cluster);
  json deeper = deep;
  deeper["cluster"] = false;
  j["idle_states"].push_back(deeper);
  expect_error(j, "idle_states[3].cluster: a CPU-level state after a cluster-level one");
}

TEST(MachineFile, TooManyCpus) {
  json j = base();
  j["topology"] = {{"packages", 2},
                   {"cores_per_package", 1025},
                   {"threads_per_core", 2},
                   {"numbering", "threads-last"}};
  expect_error(j, "topology: 2 x 1025 x 2 = 4100 CPUs; at most 4096 are supported");
  json cpus = json::array();
  for (int i = 0; i < 4097; ++i)
    cpus.push_back({{"id", i}, {"core", i}, {"llc", 0}, {"package", 0}, {"node", 0}});
  j["topology"] = {{"cpus", cpus}};
  expect_error(j, "topology.cpus: 4097 CPUs; at most 4096 are supported");
}

TEST(MachineFile, BadGeneratorAndBuildValues) {
  json j = base();
  j["topology"] = {{"packages", 1},
                   {"cores_per_package", 6},
                   {"threads_per_core", 1},
                   {"clusters_per_package", 4},
                   {"numbering", "threads-last"}};
  expect_error(j, "topology.clusters_per_package: 4 clusters do not divide 6 cores per package");
  j["topology"] = {
      {"packages", 1}, {"cores_per_package", 4}, {"threads_per_core", 1}, {"numbering", "zigzag"}};
  expect_error(
      j, "topology.numbering: expected \"threads-last\" or \"threads-adjacent\", got \"zigzag\"");
  j = base();
  j["kernel_build"]["preempt"] = "rt";
  expect_error(j, "kernel_build.preempt: expected \"none\", \"voluntary\" or \"full\", got \"rt\"");
  j = base();
  j["smt_throughput"]["value"] = 1.5;
  expect_error(j, "smt_throughput.value: 1.5 is outside (0, 1]");
}

TEST(MachineFile, UnknownPresetListsKnownNames) {
  try {
    load_machine("nosuch");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown machine 'nosuch': not a preset (hikey, host, thunderx2, xeon-2s-88, "
                 "xeon-e5-2650v4) nor a machine file");
  }
  EXPECT_THROW(load_machine("/nonexistent/dir/m.json"), InputError);
  try {
    load_machine("missing.json");
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "missing.json: cannot read machine file (no such file)");
  }
}

TEST(MachineFile, LoadFromFileNamesThePath) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "schedtwin_machine_file_test";
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.json").string(), bad = (dir / "bad.json").string();
  {
    std::ofstream(good) << dump_machine_file(load_machine("hikey"));
    std::ofstream(bad) << "{\n  \"version\": 1,\n  \"name\": [\n";
  }
  Machine m = load_machine(good);
  EXPECT_EQ(to_json(m), to_json(load_machine("hikey")));
  try {
    load_machine(bad);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad + ":4:1: ", 0), 0u) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(MachineFile, CpuListSyntax) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(format_cpu_list({11, 0, 1, 2, 3, 8, 10}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_THROW(parse_cpu_list("3-1"), std::invalid_argument);
  EXPECT_THROW(parse_cpu_list("a"), std::invalid_argument);
  EXPECT_THROW(parse_cpu_list("1,,2"), std::invalid_argument);
}

}  // namespace
// Sibling numbering matters only with SMT: without it the key may be left out; with SMT a
// missing numbering names both choices.
TEST(MachineFile, NumberingIsRequiredOnlyWithSmt) {
  json j = base();
  j["topology"] = {{"packages", 2}, {"cores_per_package", 3}, {"threads_per_core", 1}};
  EXPECT_EQ(from_json(j, "m.json").nr_cpus(), 6);
  j["topology"]["threads_per_core"] = 2;
  expect_error(j,
               "m.json: topology.numbering: missing: expected \"threads-last\" (CPU n and n + "
               "cores are siblings, as on most x86) or \"threads-adjacent\"");
}

// machine_notes: what the kernel takes with a warning or the model builds differently.
// Fully connected nodes and two packages of two nodes (10/11/21) give NUMA levels whose
// groups are whole child spans, as the model builds them. A ring of four (10/16/22/16)
// does not: at distance 22 node 0's groups are the distance-16 spans {0,1,3} and {0,1,2},
// which overlap. An asymmetric matrix is named with its first differing pair.
TEST(MachineFile, NotesNameAsymmetricAndOverlappingNumaDistances) {
  Machine m;
  m.numa_distance = {{10, 21, 21, 21}, {21, 10, 21, 21}, {21, 21, 10, 21}, {21, 21, 21, 10}};
  EXPECT_TRUE(machine_notes(m).empty());
  m.numa_distance = {{10, 11, 21, 21}, {11, 10, 21, 21}, {21, 21, 10, 11}, {21, 21, 11, 10}};
  EXPECT_TRUE(machine_notes(m).empty());
  m.numa_distance = {{10, 16, 22, 16}, {16, 10, 16, 22}, {22, 16, 10, 16}, {16, 22, 16, 10}};
  std::vector<std::string> ring = machine_notes(m);
  ASSERT_EQ(ring.size(), 1u);
  EXPECT_NE(ring[0].find("at distance 22 the groups of node 0's NUMA level (the distance-16 "
                         "spans of nodes 0 and 1) overlap"),
            std::string::npos)
      << ring[0];
  m.numa_distance = {{10, 20}, {30, 10}};
  std::vector<std::string> asym = machine_notes(m);
  ASSERT_GE(asym.size(), 1u);  // its two remote distances make two levels, which differ too
  EXPECT_NE(asym[0].find("not symmetric ([0][1] = 20, [1][0] = 30)"), std::string::npos);
}

// CPUs of different capacities (a big.LITTLE file): the model has no asymmetric-capacity
// path, and says so at load (fresh-user trial 8: --tunables showed no SD_ASYM_CPUCAPACITY).
TEST(MachineFile, NotesNameDifferingCpuCapacities) {
  Machine m;
  m.numa_distance = {{10}};
  m.cpus.resize(2);
  m.cpus[1].id = 1;
  EXPECT_TRUE(machine_notes(m).empty());
  m.cpus[0].capacity = 446;
  const std::vector<std::string> notes = machine_notes(m);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("CPU capacities differ (CPU 0: 446, CPU 1: 1024)"), std::string::npos)
      << notes[0];
}

}  // namespace schedtwin::machine
