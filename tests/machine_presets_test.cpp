// The compiled-in presets: shape of each machine (hand-checked against the machine's
// description in presets/*.json), citations for every figure, and the to_json/from_json round trip.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/error.h"
#include "machine/machine_file.h"

namespace schedtwin::machine {
namespace {

std::vector<int> range(int lo, int hi) {  // [lo, hi]
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(MachinePresets, NamesAreSortedAndIncludeHost) {
  EXPECT_EQ(preset_names(), (std::vector<std::string>{"hikey", "host", "thunderx2", "xeon-2s-88",
                                                      "xeon-e5-2650v4"}));
}

TEST(MachinePresets, Hikey) {
  Machine m = load_machine("hikey");
  EXPECT_EQ(m.name, "hikey");
  EXPECT_EQ(m.nr_cpus(), 8);
  EXPECT_EQ(m.nr_llcs(), 2);
  EXPECT_EQ(m.nr_clusters(), 2);
  EXPECT_EQ(m.nr_packages(), 1);
  EXPECT_EQ(m.nr_nodes(), 1);
  EXPECT_EQ(m.nr_cores(), 8);
  EXPECT_EQ(m.smt_width(), 1);
  EXPECT_EQ(m.llc_cpus(0), range(0, 3));
  EXPECT_EQ(m.llc_cpus(1), range(4, 7));
  EXPECT_EQ(m.cluster_cpus(1), range(4, 7));
  EXPECT_EQ(m.smt_siblings(5), std::vector<int>{5});
  for (const Cpu& c : m.cpus) EXPECT_EQ(c.capacity, 1024);
  ASSERT_EQ(m.idle_states.size(), 3u);
  EXPECT_EQ(m.idle_states[0].name, "WFI");
  EXPECT_EQ(m.idle_states[0].exit_latency_ns, 1000);
  // hi6220.dtsi cpu-sleep: entry 700 + exit 250 us (no wakeup-latency-us), min-residency 1000.
  EXPECT_EQ(m.idle_states[1].name, "cpu-sleep");
  EXPECT_EQ(m.idle_states[1].exit_latency_ns, 950'000);
  EXPECT_EQ(m.idle_states[1].target_residency_ns, 1'000'000);
  EXPECT_EQ(m.idle_states[1].real_exit_ns, 250'000);
  // cluster-sleep: wakeup-latency-us 1500, min-residency 2700, exit-latency-us 700.
  EXPECT_EQ(m.idle_states[2].exit_latency_ns, 1'500'000);
  EXPECT_EQ(m.idle_states[2].target_residency_ns, 2'700'000);
  EXPECT_EQ(m.idle_states[2].real_exit_ns, 700'000);
  EXPECT_EQ(m.build.hz, 250);
  EXPECT_EQ(m.build.preempt, Preemption::Full);
  EXPECT_TRUE(m.build.nohz_idle);
  EXPECT_EQ(m.smt_throughput, 1.0);
}

TEST(MachinePresets, XeonE52650v4) {
  Machine m = load_machine("xeon-e5-2650v4");
  EXPECT_EQ(m.nr_cpus(), 48);
  EXPECT_EQ(m.nr_nodes(), 2);
  EXPECT_EQ(m.nr_packages(), 2);
  EXPECT_EQ(m.nr_llcs(), 2);
  EXPECT_EQ(m.nr_cores(), 24);
  EXPECT_EQ(m.smt_width(), 2);
  // Linux x86 numbering: siblings are c and c + 24.
  EXPECT_EQ(m.smt_siblings(0), (std::vector<int>{0, 24}));
  EXPECT_EQ(m.smt_siblings(13), (std::vector<int>{13, 37}));
  EXPECT_EQ(m.smt_siblings(47), (std::vector<int>{23, 47}));
  EXPECT_EQ(m.llc_cpus(0), concat(range(0, 11), range(24, 35)));
  EXPECT_EQ(m.llc_cpus(1), concat(range(12, 23), range(36, 47)));
  EXPECT_EQ(m.node_cpus(1), concat(range(12, 23), range(36, 47)));
  EXPECT_EQ(m.package_cpus(0), m.llc_cpus(0));
  EXPECT_EQ(m.cpus[12].package, 1);
  EXPECT_EQ(m.cpus[24].package, 0);
  EXPECT_EQ(m.numa_distance, (std::vector<std::vector<int>>{{10, 21}, {21, 10}}));
  // intel_idle bdw_cstates: C1 2/2, C1E 10/20, C3 40/100, C6 133/400 us, after POLL.
  ASSERT_EQ(m.idle_states.size(), 5u);
  const char* names[] = {"POLL", "C1", "C1E", "C3", "C6"};
  const Time exit_us[] = {0, 2, 10, 40, 133}, residency_us[] = {0, 2, 20, 100, 400};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(m.idle_states[i].name, names[i]);
    EXPECT_EQ(m.idle_states[i].exit_latency_ns, exit_us[i] * 1000);
    EXPECT_EQ(m.idle_states[i].target_residency_ns, residency_us[i] * 1000);
    EXPECT_EQ(m.idle_states[i].polling, i == 0);
  }
  EXPECT_DOUBLE_EQ(m.smt_throughput, 0.575);
  EXPECT_EQ(m.costs.idle_probe.ns, 45);
  EXPECT_EQ(m.build.preempt, Preemption::Voluntary);
}

TEST(MachinePresets, Xeon2s88) {
  Machine m = load_machine("xeon-2s-88");
  EXPECT_EQ(m.nr_cpus(), 88);
  EXPECT_EQ(m.nr_cores(), 44);
  EXPECT_EQ(m.nr_nodes(), 2);
  EXPECT_EQ(m.smt_siblings(0), (std::vector<int>{0, 44}));
  EXPECT_EQ(m.smt_siblings(65), (std::vector<int>{21, 65}));
  EXPECT_EQ(m.llc_cpus(1), concat(range(22, 43), range(66, 87)));
}

TEST(MachinePresets, ThunderX2) {
  Machine m = load_machine("thunderx2");
  EXPECT_EQ(m.nr_cpus(), 224);
  EXPECT_EQ(m.nr_cores(), 56);
  EXPECT_EQ(m.smt_width(), 4);
  EXPECT_EQ(m.nr_nodes(), 2);
  EXPECT_EQ(m.nr_llcs(), 2);
  EXPECT_EQ(m.smt_siblings(0), range(0, 3));
  EXPECT_EQ(m.smt_siblings(113), range(112, 115));
  EXPECT_EQ(m.node_cpus(0), range(0, 111));
  EXPECT_EQ(m.llc_cpus(1), range(112, 223));
  EXPECT_EQ(m.cpus[111].package, 0);
  EXPECT_EQ(m.cpus[112].package, 1);
  ASSERT_EQ(m.idle_states.size(), 1u);
  EXPECT_EQ(m.idle_states[0].name, "WFI");
}

// Every figure of every preset names where it comes from, in the JSON itself.
TEST(MachinePresets, EveryFigureHasASource) {
  for (const auto& [stem, text] : embedded_presets()) {
    SCOPED_TRACE(std::string(stem));
    const nlohmann::json j = nlohmann::json::parse(text);
    auto has_source = [](const nlohmann::json& o, const char* key = "source") {
      return o.contains(key) && o[key].is_string() && !o[key].get<std::string>().empty();
    };
    EXPECT_TRUE(has_source(j["topology"]));
    EXPECT_TRUE(has_source(j["numa_distance"]));
    EXPECT_TRUE(has_source(j["smt_throughput"]));
    EXPECT_TRUE(has_source(j["kernel_build"]));
    ASSERT_FALSE(j["idle_states"].empty());
    for (const auto& s : j["idle_states"]) {
      EXPECT_TRUE(has_source(s)) << s.dump();
      EXPECT_TRUE(has_source(s, "real_exit_source")) << s.dump();
    }
    ASSERT_EQ(j["costs"].size(), 9u);
    for (const auto& [key, c] : j["costs"].items()) EXPECT_TRUE(has_source(c)) << key;

    // And the loaded machine carries them.
    Machine m = load_machine(stem);
    for (const Cost* c : {&m.costs.context_switch, &m.costs.ipi, &m.costs.idle_probe,
                          &m.costs.cache_cold, &m.costs.wakeup, &m.costs.pipe_write,
                          &m.costs.pipe_read, &m.costs.socket_write, &m.costs.socket_read}) {
      EXPECT_FALSE(c->source.empty());
      EXPECT_GE(c->ns, 0);
    }
    for (const IdleState& s : m.idle_states) {
      EXPECT_FALSE(s.source.empty());
      EXPECT_FALSE(s.real_exit_source.empty());
    }
    EXPECT_FALSE(m.topology_source.empty());
    EXPECT_FALSE(m.numa_source.empty());
    EXPECT_FALSE(m.smt_source.empty());
    EXPECT_FALSE(m.build.source.empty());
    EXPECT_EQ(m.name, stem);
    EXPECT_FALSE(m.description.empty());
    EXPECT_EQ(m.description.find('\n'), std::string::npos);
  }
}

TEST(MachinePresets, RoundTripThroughJson) {
  for (const auto& [stem, text] : embedded_presets()) {
    SCOPED_TRACE(std::string(stem));
    Machine m = load_machine(stem);
    const nlohmann::json j = to_json(m);
    Machine back = from_json(j, "round-trip");
    EXPECT_EQ(to_json(back), j);
    // The printed form loads back to the same machine, and printing is deterministic.
    const std::string dumped = dump_machine_file(m);
    EXPECT_EQ(dump_machine_file(parse_machine(dumped, "dumped.json")), dumped);
    EXPECT_EQ(to_json(parse_machine(dumped, "dumped.json")), j);
    EXPECT_EQ(back.nr_cpus(), m.nr_cpus());
    for (int c = 0; c < m.nr_cpus(); ++c) EXPECT_EQ(back.smt_siblings(c), m.smt_siblings(c));
  }
}

}  // namespace
}  // namespace schedtwin::machine
