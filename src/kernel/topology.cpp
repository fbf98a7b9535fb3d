// Sched domains and groups built from the machine (kernel/sched/topology.c,
// v5.4–v5.7; fair-class.md §5.1): SMT, CLS (v5.16+, the cluster), MC (the LLC), DIE (the
// NUMA node's CPUs) and one NUMA level per distinct node distance, with sd_init's
// parameters. A level whose span equals its child's is dropped, as sd_parent_degenerate does.
// Left out: asymmetric-capacity and asym-packing flags, overlapping NUMA groups beyond "one
// group per child span", v6.8's SD_CLUSTER (cluster-first wakeup scans).
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

#include "kernel/kernel_impl.h"

namespace schedtwin::kernel {

namespace {

struct LevelSpec {
  std::string name;
  unsigned topo_flags;
  bool numa;
  int numa_distance;  // NUMA levels: nodes within this distance
};

}  // namespace

// One domain of a CPU as build_sched_domains builds it, before cpu_attach_domain drops the
// degenerate ones: its weight, its topology flags and where it ended up in rq.sd (-1: dropped).
struct KernelImpl::BuiltDomain {
  unsigned weight;
  unsigned flags;
  int sd_index;
};

void KernelImpl::build_sched_domains() {
  const int n = nr_cpus();
  std::vector<LevelSpec> specs;
  if (m_.smt_width() > 1)
    specs.push_back({"SMT", SD_SHARE_CPUCAPACITY | SD_SHARE_PKG_RESOURCES, false, 0});
  // 778c558f49a2 (v5.16): CONFIG_SCHED_CLUSTER's level, cpu_cluster_flags() =
  // SD_SHARE_PKG_RESOURCES, so sd_llc stays the MC level.
  if (prof_.version >= 516) specs.push_back({"CLS", SD_SHARE_PKG_RESOURCES, false, 0});
  specs.push_back({"MC", SD_SHARE_PKG_RESOURCES, false, 0});
  specs.push_back({"DIE", 0, false, 0});
  std::set<int> distances;
  for (const auto& row : m_.numa_distance)
    for (int d : row)
      if (d > 10) distances.insert(d);
  for (int d : distances) specs.push_back({"NUMA", SD_NUMA, true, d});

  // cpu_clustergroup_mask (drivers/base/arch_topology.c, bfcc4397435d, v5.19): a cluster
  // that holds the whole LLC yields the SMT siblings instead, so the level degenerates.
  auto cluster_holds_llc = [&](const machine::Cpu& c) {
    for (const machine::Cpu& o : m_.cpus)
      if (o.llc == c.llc && o.cluster != c.cluster) return false;
    return true;
  };
  // What a CPU's span at a level depends on: its core, cluster, LLC or node.
  auto span_key = [&](const LevelSpec& s, const machine::Cpu& c) -> long {
    if (s.name == "SMT") return c.core;
    if (s.name == "CLS") return cluster_holds_llc(c) ? 2L * c.core : 2L * c.cluster + 1;
    if (s.name == "MC") return c.llc;
    return c.node;  // DIE, NUMA
  };
  auto compute_span = [&](const LevelSpec& s, const machine::Cpu& c) {
    std::vector<int> span;
    const bool cls_is_smt = s.name == "CLS" && cluster_holds_llc(c);
    for (const machine::Cpu& o : m_.cpus) {
      bool in = false;
      if (s.name == "SMT" || cls_is_smt)
        in = o.core == c.core;
      else if (s.name == "CLS")
        in = o.cluster == c.cluster;
      else if (s.name == "MC")
        in = o.llc == c.llc;
      else if (s.name == "DIE")
        in = o.node == c.node;
      else
        in = m_.numa_distance[c.node][o.node] <= s.numa_distance;
      if (in) span.push_back(o.id);
    }
    return span;
  };
  // Every CPU's span at every level, each distinct span computed once: build_sched_groups
  // below asks for the child span of every CPU of every domain, which on a machine of
  // thousands of CPUs would otherwise walk all CPUs millions of times. Span ids are unique per
  // content within a level.
  struct LevelSpans {
    std::vector<int> of_cpu;  // span id
    std::vector<std::vector<int>> spans;
  };
  std::vector<LevelSpans> spans(specs.size());
  for (size_t si = 0; si < specs.size(); ++si) {
    LevelSpans& ls = spans[si];
    ls.of_cpu.assign(static_cast<size_t>(n), -1);
    std::map<long, int> by_key;
    std::map<std::vector<int>, int> by_content;
    for (int cpu = 0; cpu < n; ++cpu) {
      const machine::Cpu& c = m_.cpus[static_cast<size_t>(cpu)];
      const long key = span_key(specs[si], c);
      auto it = by_key.find(key);
      if (it == by_key.end()) {
        std::vector<int> span = compute_span(specs[si], c);
        auto [content, fresh] = by_content.emplace(span, static_cast<int>(ls.spans.size()));
        if (fresh) ls.spans.push_back(std::move(span));
        it = by_key.emplace(key, content->second).first;
      }
      ls.of_cpu[static_cast<size_t>(cpu)] = it->second;
    }
  }
  auto span_id = [&](size_t si, int cpu) { return spans[si].of_cpu[static_cast<size_t>(cpu)]; };
  auto span_of = [&](size_t si, int cpu) -> const std::vector<int>& {
    return spans[si].spans[static_cast<size_t>(span_id(si, cpu))];
  };

  // Unique levels keyed by (spec index, span id).
  std::map<std::pair<size_t, int>, int> level_ids;
  for (int cpu = 0; cpu < n; ++cpu) {
    Rq& rq = cpu_rq(cpu);
    rq.sd.clear();
    const std::vector<int>* prev_span = nullptr;
    std::vector<BuiltDomain> built;
    for (size_t si = 0; si < specs.size(); ++si) {
      const std::vector<int>& span = span_of(si, cpu);
      // build_sched_domains stops at the first level that spans every CPU.
      if (built.empty() || built.back().weight != static_cast<unsigned>(n))
        built.push_back({static_cast<unsigned>(span.size()), specs[si].topo_flags, -1});
      if (prev_span && span == *prev_span) continue;  // degenerate: same span as the child
      if (span.size() == 1) {
        prev_span = &span;
        continue;  // sd_degenerate: a one-CPU domain has nothing to balance
      }
      auto key = std::make_pair(si, span_id(si, cpu));
      auto it = level_ids.find(key);
      int id;
      if (it == level_ids.end()) {
        DomainLevel lvl;
        lvl.name = specs[si].name;
        lvl.topology_level = static_cast<int>(si);
        lvl.span = span;
        // sd_init (topology.c v5.4/v5.7)
        int sd_weight = static_cast<int>(span.size());
        lvl.min_interval = sd_weight;
        lvl.max_interval = 2 * sd_weight;
        lvl.busy_factor = prof_.busy_factor;
        lvl.imbalance_pct = prof_.default_imbalance_pct;
        lvl.cache_nice_tries = 0;
        lvl.flags = SD_LOAD_BALANCE | SD_BALANCE_NEWIDLE | SD_BALANCE_EXEC | SD_BALANCE_FORK |
                    SD_WAKE_AFFINE | SD_PREFER_SIBLING | specs[si].topo_flags;
        if (lvl.flags & SD_SHARE_CPUCAPACITY) {
          lvl.imbalance_pct = 110;
          lvl.cache_nice_tries = 0;
        } else if (lvl.flags & SD_SHARE_PKG_RESOURCES) {
          lvl.imbalance_pct = 117;
          lvl.cache_nice_tries = 1;
        } else if (specs[si].numa) {
          lvl.cache_nice_tries = 2;
          lvl.flags &= ~SD_PREFER_SIBLING;
          // SD_OVERLAP: build_sched_domains sets it on every SDTL_OVERLAP (NUMA) level. The
          // model builds their groups as build_sched_groups does, which gives the kernel's
          // overlapping groups wherever every CPU's child domain is its node (all presets).
          lvl.flags |= SD_SERIALIZE | SD_OVERLAP;
          // RECLAIM_DISTANCE until v5.4 made it node_reclaim_distance (a55c7454a8c8).
          const int reclaim = prof_.version >= 504 ? m_.node_reclaim_distance : 30;
          if (specs[si].numa_distance > reclaim)
            lvl.flags &= ~(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
        } else {
          lvl.cache_nice_tries = 1;
        }
        id = static_cast<int>(levels_.size());
        levels_.push_back(std::move(lvl));
        level_ids.emplace(key, id);
      } else {
        id = it->second;
      }
      SchedDomain sd;
      sd.level_id = id;
      sd.balance_interval = static_cast<unsigned>(levels_[id].span.size());
      built.back().sd_index = static_cast<int>(rq.sd.size());
      rq.sd.push_back(sd);
      prev_span = &span;
    }
    for (size_t k = 0; k < rq.sd.size(); ++k) {
      rq.sd[k].child = k == 0 ? -1 : static_cast<int>(k) - 1;
      rq.sd[k].parent = k + 1 < rq.sd.size() ? static_cast<int>(k) + 1 : -1;
    }
    set_imb_numa_nr(rq, built);
    for (size_t k = 0; k < rq.sd.size(); ++k) {
      if (k == lb_stats_.by_domain.size()) lb_stats_.by_domain.emplace_back();
      std::string& names = lb_stats_.by_domain[k].level;
      const std::string& name = levels_[static_cast<size_t>(rq.sd[k].level_id)].name;
      if (names.empty())
        names = name;
      else if (("/" + names + "/").find("/" + name + "/") == std::string::npos)
        names += "/" + name;
    }
  }

  // Sched groups (build_sched_groups): the child domain spans covering the domain,
  // listed from the CPU's own group, wrapping in CPU order. Shared between CPUs.
  std::map<std::vector<int>, int> group_ids;
  auto group_for = [&](std::vector<int> span) {
    auto it = group_ids.find(span);
    if (it != group_ids.end()) return it->second;
    SchedGroup g;
    g.cpus = span;
    g.balance_cpu = span.front();
    for (int c : span) {
      g.capacity += cpu_rq(c).cpu_capacity;
      g.max_capacity = std::max<long>(g.max_capacity, cpu_rq(c).cpu_capacity);
    }
    int id = static_cast<int>(groups_.size());
    groups_.push_back(std::move(g));
    group_ids.emplace(std::move(span), id);
    return id;
  };
  // Group ids by child level and span id (the lowest level's groups are single CPUs).
  std::vector<std::vector<int>> group_of_span(specs.size());
  for (size_t si = 0; si < specs.size(); ++si) group_of_span[si].assign(spans[si].spans.size(), -1);
  std::vector<int> group_of_cpu(static_cast<size_t>(n), -1);
  std::vector<int> covered(static_cast<size_t>(n), -1);  // the pass that last covered each CPU
  int pass = 0;
  for (int cpu = 0; cpu < n; ++cpu) {
    Rq& rq = cpu_rq(cpu);
    for (size_t k = 0; k < rq.sd.size(); ++k, ++pass) {
      const std::vector<int>& span = levels_[rq.sd[k].level_id].span;
      const int tl = levels_[rq.sd[k].level_id].topology_level;
      size_t start =
          static_cast<size_t>(std::lower_bound(span.begin(), span.end(), cpu) - span.begin());
      for (size_t j = 0, at = start % span.size(); j < span.size();
           ++j, at = wrap_next(at, span.size())) {
        int i = span[at];
        if (covered[static_cast<size_t>(i)] == pass) continue;
        // CPU i's child domain at the topology level below ours, as built before degenerate
        // domains are removed (build_sched_groups, build_group_from_child_sched_domain):
        // on a machine whose nodes differ in shape CPU i may have kept fewer domains than
        // this CPU, so its remaining ones do not line up with ours.
        const size_t child = static_cast<size_t>(tl) - 1;
        int& gid = tl == 0 ? group_of_cpu[static_cast<size_t>(i)]
                           : group_of_span[child][static_cast<size_t>(span_id(child, i))];
        if (gid < 0) gid = group_for(tl == 0 ? std::vector<int>{i} : span_of(child, i));
        for (int c : groups_[static_cast<size_t>(gid)].cpus) covered[static_cast<size_t>(c)] = pass;
        rq.sd[k].groups.push_back(gid);
      }
    }
    // sd_llc: the highest domain sharing package resources (update_top_cache_domain).
    rq.sd_llc = -1;
    for (size_t k = 0; k < rq.sd.size(); ++k)
      if (levels_[rq.sd[k].level_id].flags & SD_SHARE_PKG_RESOURCES)
        rq.sd_llc = static_cast<int>(k);
    if (rq.sd_llc >= 0) {
      const auto& span = levels_[rq.sd[rq.sd_llc].level_id].span;
      rq.llc_id = span.front();
      rq.llc_size = static_cast<int>(span.size());
    } else {
      rq.llc_id = cpu;
      rq.llc_size = 1;
    }
  }
  llc_shared_.assign(static_cast<size_t>(n), LlcShared{});
  // sd_init counts every CPU of the LLC busy (nr_busy_cpus = sd_weight); each one's first
  // tickless idle entry takes it off (set_cpu_sd_state_idle).
  for (int cpu = 0; cpu < n; ++cpu) {
    const Rq& rq = cpu_rq(cpu);
    if (rq.llc_id == cpu) llc_shared_[static_cast<size_t>(cpu)].nr_busy_cpus = rq.llc_size;
  }
}

}  // namespace schedtwin::kernel

namespace schedtwin::kernel {

namespace {

// cpumask_pr_args with %*pbl: "0-3,8,10-11".
std::string cpulist(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

// imb_numa_nr (build_sched_domains, topology.c v5.19 with 026b98a93bbd; unchanged to v6.6):
// the first domain above the LLC allows an imbalance of as many tasks as it spans LLCs (12.5 %
// of its CPUs when it spans one); each domain above it allows that times how many
// first-NUMA-domain spans it covers. Domains up to the LLC get 0. The kernel computes it on
// the domains as built, before cpu_attach_domain drops the degenerate ones: with one LLC per
// node the DIE level, which spans that LLC, is the first above it (one LLC: 12.5 % of the
// node), and NUMA inherits that, not its own count of LLCs. Used by profiles v5.19 and later.
void KernelImpl::set_imb_numa_nr(Rq& rq, const std::vector<BuiltDomain>& built) {
  if (prof_.version < 518) return;  // the field came with e496132ebedd (v5.18)
  unsigned imb = 0, imb_span = 1;
  for (size_t k = 0; k < built.size(); ++k) {
    const BuiltDomain& sd = built[k];
    const BuiltDomain* child = k > 0 ? &built[k - 1] : nullptr;
    unsigned value;
    if (!(sd.flags & SD_SHARE_PKG_RESOURCES) && child && (child->flags & SD_SHARE_PKG_RESOURCES)) {
      const unsigned nr_llcs = sd.weight / child->weight;
      imb = std::max(1u, nr_llcs == 1 ? sd.weight >> 3 : nr_llcs);
      value = imb;
      imb_span = sd.weight;
      for (size_t up = k + 1; up < built.size(); ++up) {
        if (built[up].flags & SD_NUMA) {
          imb_span = built[up].weight;
          break;
        }
      }
    } else {
      value = imb * std::max(1u, sd.weight / imb_span);
    }
    if (sd.sd_index >= 0) rq.sd[static_cast<size_t>(sd.sd_index)].imb_numa_nr = value;
  }
}

// sched_domain_debug / sched_domain_debug_one (topology.c v5.4): the sched_verbose
// boot log, without the printk timestamps.
void KernelImpl::sched_domain_debug(std::ostream& os) const {
  for (int cpu = 0; cpu < nr_cpus(); ++cpu) {
    const Rq& rq = rq_[static_cast<size_t>(cpu)];
    if (rq.sd.empty()) {
      os << "CPU" << cpu << " attaching NULL sched-domain.\n";
      continue;
    }
    std::string out = "CPU" + std::to_string(cpu) + " attaching sched-domain(s):\n";
    for (size_t level = 0; level < rq.sd.size(); ++level) {
      const SchedDomain& sd = rq.sd[level];
      const DomainLevel& lvl = levels_[static_cast<size_t>(sd.level_id)];
      out += std::string(level, ' ') + " domain-" + std::to_string(level) +
             ": span=" + cpulist(lvl.span) + " level=" + lvl.name + "\n";
      out += std::string(level + 1, ' ') + " groups:";
      for (size_t g = 0; g < sd.groups.size(); ++g) {
        const SchedGroup& grp = groups_[static_cast<size_t>(sd.groups[g])];
        out += " " + std::to_string(grp.cpus.front()) + ":{ span=" + cpulist(grp.cpus);
        if (grp.capacity != SCHED_CAPACITY_SCALE) out += " cap=" + std::to_string(grp.capacity);
        out += " }";
        if (g + 1 < sd.groups.size()) out += ",";
      }
      out += "\n";
    }
    os << out;
  }
}

// The flags as the profile's release numbers and names them: v5.4's topology.h bit values
// up to v5.7; SD_LOAD_BALANCE gone from v5.8 (36c5bdc43870); from v5.10 sd_flags.h's order
// (no SD_SHARE_POWERDOMAIN), with SD_ASYM_CPUCAPACITY_FULL after SD_ASYM_CPUCAPACITY from
// v5.14. The model keeps v5.4's bits internally.
static std::pair<unsigned, std::string> release_sd_flags(unsigned flags, int version) {
  struct Bit {
    unsigned v54;
    const char* name;
  };
  static constexpr Bit kV54[] = {
      {SD_LOAD_BALANCE, "SD_LOAD_BALANCE"},
      {SD_BALANCE_NEWIDLE, "SD_BALANCE_NEWIDLE"},
      {SD_BALANCE_EXEC, "SD_BALANCE_EXEC"},
      {SD_BALANCE_FORK, "SD_BALANCE_FORK"},
      {SD_BALANCE_WAKE, "SD_BALANCE_WAKE"},
      {SD_WAKE_AFFINE, "SD_WAKE_AFFINE"},
      {SD_ASYM_CPUCAPACITY, "SD_ASYM_CPUCAPACITY"},
      {SD_SHARE_CPUCAPACITY, "SD_SHARE_CPUCAPACITY"},
      {SD_SHARE_PKG_RESOURCES, "SD_SHARE_PKG_RESOURCES"},
      {SD_SERIALIZE, "SD_SERIALIZE"},
      {SD_ASYM_PACKING, "SD_ASYM_PACKING"},
      {SD_PREFER_SIBLING, "SD_PREFER_SIBLING"},
      {SD_OVERLAP, "SD_OVERLAP"},
      {SD_NUMA, "SD_NUMA"},
  };
  unsigned value = 0;
  std::string names;
  int next_bit = 0;  // sd_flags.h: bits in file order
  for (const Bit& b : kV54) {
    if (version >= 508 && b.v54 == SD_LOAD_BALANCE) continue;
    if (version >= 514 && b.v54 == SD_SHARE_CPUCAPACITY) ++next_bit;  // ..._FULL's bit
    const unsigned bit = version >= 510 ? 1u << next_bit++ : b.v54;
    if (!(flags & b.v54)) continue;
    value |= bit;
    names += std::string(names.empty() ? "" : " ") + b.name;
  }
  return {value, names};
}

std::string KernelImpl::sched_domain_tunables() const {
  std::string out;
  for (int cpu = 0; cpu < nr_cpus(); ++cpu) {
    const Rq& rq = rq_[static_cast<size_t>(cpu)];
    for (size_t k = 0; k < rq.sd.size(); ++k) {
      const DomainLevel& lvl = levels_[static_cast<size_t>(rq.sd[k].level_id)];
      const auto [flags, names] = release_sd_flags(lvl.flags, prof_.version);
      out += fmt::format(
          "cpu{} domain{} {}: min_interval={} max_interval={} busy_factor={} imbalance_pct={} "
          "cache_nice_tries={} flags={} ({})",
          cpu, k, lvl.name, lvl.min_interval, lvl.max_interval, lvl.busy_factor, lvl.imbalance_pct,
          lvl.cache_nice_tries, flags, names);
      // e496132ebedd (v5.18) added the field; the model's v6.0 and v6.6 use it.
      if (prof_.version >= 518) out += fmt::format(" imb_numa_nr={}", rq.sd[k].imb_numa_nr);
      out += "\n";
    }
  }
  return out;
}

std::string sched_domain_tunables_text(const machine::Machine& m, const Profile& p) {
  Config cfg;
  cfg.profile = p;
  KernelImpl k(m, cfg);
  return k.sched_domain_tunables();
}

void sched_domains_text(const machine::Machine& m, const Profile& p, std::ostream& out) {
  Config cfg;
  cfg.profile = p;
  KernelImpl k(m, cfg);
  k.sched_domain_debug(out);
}

}  // namespace schedtwin::kernel
