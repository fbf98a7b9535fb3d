// `schedtwin machine domains NAME|FILE`: the sched domains the kernel model builds, in
// the shape of the kernel's sched_verbose boot log, to compare with a real dmesg.
#include <iostream>

#include "cli/cli.h"
#include "cli/run_common.h"
#include "kernel/kernel.h"
#include "machine/machine_file.h"

namespace schedtwin::cli {

void register_domains_command(CLI::App& app) {
  struct Opts {
    std::string machine;
    std::string kernel = "v5.4";
    bool tunables = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.get_subcommand("machine")->add_subcommand(
      "domains", "Print the sched domains and groups like the kernel's sched_verbose boot log");
  sub->add_option("machine", o->machine, "Preset name or machine file")->required();
  sub->add_option("--kernel", o->kernel, "Kernel profile")->capture_default_str();
  sub->add_flag("--tunables", o->tunables,
                "Then each CPU's domains with their tunables, as the release shows them in "
                "/proc/sys/kernel/sched_domain/cpuN/domainM/ (v5.3-v5.7) or "
                "/sys/kernel/debug/sched/domains/cpuN/domainM/ (v5.13 on): intervals in ms, "
                "imbalance_pct, flags as the release numbers them and their names, and from "
                "v5.18 the model's imb_numa_nr");
  sub->callback([o] {
    machine::Machine m = load_cli_machine(o->machine);
    print_machine_notes(m, o->machine);
    const kernel::Profile p = kernel::make_profile(o->kernel);
    kernel::sched_domains_text(m, p, std::cout);
    if (o->tunables) std::cout << "\n" << kernel::sched_domain_tunables_text(m, p);
  });
}

}  // namespace schedtwin::cli
