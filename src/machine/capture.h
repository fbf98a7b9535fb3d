// Capture of a machine's topology from Linux sysfs (DESIGN.md §5, the "host" machine).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "machine/machine.h"

namespace schedtwin::machine {

// How capture_sysfs marks the figures it does not measure (costs, SMT throughput, the kernel
// build): the start of their source.
inline constexpr const char* kUncalibrated = "uncalibrated default; run schedtwin calibrate";

// Reads, under <sysroot>/sys/devices/system (sysroot "" means the real /sys):
//   cpu/online                                    which CPUs exist (only online CPUs are kept)
//   cpu/cpuN/topology/{core_id,physical_package_id,thread_siblings_list}   required
//   cpu/cpuN/topology/cluster_cpus_list (or cluster_id)                    optional
//   cpu/cpuN/cache/indexK/{level,shared_cpu_list,type}  LLC = highest level; optional (fallback:
//                                                       the cluster if known, else the package)
//   cpu/cpuN/cpu_capacity                                                  optional (1024)
//   cpu/cpuM/cpuidle/stateK/{name,latency,residency,disable}  of the first online CPU; optional
//   node/nodeN/{cpulist,distance}                  optional (absent: one node)
// Online CPUs are renumbered 0..n-1 in ascending order (the mapping is noted in
// topology_source when it is not the identity). A cluster that covers its LLC is set equal to
// the LLC (as the kernel's cpu_clustergroup_mask() degenerates it). Cost figures, the SMT
// throughput and the kernel build are defaults marked "uncalibrated default; run schedtwin
// calibrate". Throws InputError naming the missing or malformed file, or the inconsistency
// (e.g. a CPU listed in two cores).
Machine capture_sysfs(const std::string& sysroot = "");

// Where capture_sysfs reads: the file system by default; a tree held in memory in the fuzz
// harness (fuzz/capture_fuzz.cpp), which would otherwise spend most of its time writing and
// reading files. Paths are absolute, "<sysroot>/sys/devices/system/...".
class SysfsSource {
 public:
  // An attribute larger than this is refused (sysfs attributes are at most a page).
  static constexpr std::size_t kMaxAttributeBytes = 1 << 16;

  virtual ~SysfsSource() = default;
  // The attribute's bytes as read (a trailing newline included); nullopt if it is missing,
  // unreadable or a directory. May stop reading once more than kMaxAttributeBytes are read.
  virtual std::optional<std::string> read(const std::string& path) const = 0;
  // The names of a directory's entries, in any order; empty if it is none or unreadable.
  virtual std::vector<std::string> list(const std::string& path) const = 0;
};

// As above, reading through `source`.
Machine capture_sysfs(const SysfsSource& source, const std::string& sysroot);

}  // namespace schedtwin::machine
