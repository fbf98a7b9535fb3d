// libFuzzer harness: rt-app task sets (workload/json_relaxed + workload/rtapp parse), then
// kSimNs of the parsed set on the hikey preset (8 CPUs) with --check. See fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_sim.h"

namespace {

const schedtwin::machine::Machine& hikey() {
  static const schedtwin::machine::Machine m = schedtwin::machine::load_machine("hikey");
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedtwin;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const workload::JNode root = workload::parse_relaxed_json(text, "fuzz.json");
    const workload::rtapp::Config cfg =
        workload::rtapp::parse(root, "fuzz.json", hikey().nr_cpus());
    fuzz::simulate_rtapp(cfg, hikey());
  } catch (const InputError&) {
    // The expected outcome for bad input.
  }
  return 0;
}
