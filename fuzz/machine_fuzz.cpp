// libFuzzer harness: machine files (machine/machine_file parse_machine), then the dump round
// trip, the sched-domain text, and kSimNs of a fixed task set on the machine. See README.md.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

#include "fuzz_sim.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedtwin;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  machine::Machine m;
  try {
    m = machine::parse_machine(text, "fuzz-machine.json");
  } catch (const InputError&) {
    return 0;  // the expected outcome for bad input
  }
  fuzz::check_round_trip(m);
  if (m.nr_cpus() > fuzz::kMaxSimCpus) return 0;
  try {
    std::ostringstream domains;
    kernel::sched_domains_text(m, fuzz::sim_config().profile, domains);
    fuzz::simulate_machine(m);
  } catch (const InputError& e) {
    // A machine that parse_machine accepted must be simulable.
    fuzz::finding(std::string("valid machine refused by the simulation: ") + e.what());
  }
  return 0;
}
