// `schedtwin features [--kernel PROFILE] [--features LIST] [--series]`: the feature flags a
// run would use, printed as the kernel prints /sys/kernel/debug/sched/features, so that a
// developer can diff them against a real machine's.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <memory>
#include <string>

#include "cli/cli.h"
#include "cli/run_common.h"
#include "kernel/features.h"

namespace schedtwin::cli {

namespace {

struct FeaturesOptions {
  std::string kernel = "v5.4";
  std::string features;
  bool series = false;
  bool mainline = false;
};

}  // namespace

void register_features_command(CLI::App& app) {
  auto opt = std::make_shared<FeaturesOptions>();
  CLI::App* sub = app.add_subcommand(
      "features",
      "Print the feature flags of a kernel profile (after --features, applied as a run applies\n"
      "them) in the shape of /sys/kernel/debug/sched/features: every flag schedtwin models, NO_\n"
      "in front of those that are off. The line lists every flag whatever the profile, as\n"
      "the flags are the model's. Every profile reads every flag except PLACE_LAG,\n"
      "PLACE_DEADLINE_INITIAL and RUN_TO_PARITY (read only by v6.6, EEVDF) and\n"
      "GENTLE_FAIR_SLEEPERS, START_DEBIT, LAST_BUDDY, ALT_PERIOD and BASE_SLICE (not read by\n"
      "v6.6; a run warns when one is set away from the profile's default); so SIS_UTIL on\n"
      "v5.4 gives v6.0's scan budget on v5.4's idle search.\n"
      "--mainline prints instead the line of the profile's mainline release: its\n"
      "kernel/sched/features.h flags in file order, as a kernel without PREEMPT_RT prints\n"
      "them, so that it can be diffed against a real machine's. Mainline flags the model does\n"
      "not read (HRTICK, RT_PUSH_IPI, LB_MIN, ...) are accepted by --features; a run warns when\n"
      "one differs from the release's default and simulates the default.\n"
      "--series prints what each series name stands for instead.");
  CLI::Option* kernel =
      sub->add_option("--kernel", opt->kernel,
                      fmt::format("Kernel profile: {}", fmt::join(kernel::profile_names(), ", ")))
          ->capture_default_str();
  CLI::Option* features = sub->add_option("--features", opt->features, kFeaturesHelp);
  sub->add_flag("--series", opt->series,
                "Print each series name and the flags it stands for, one series a line")
      ->excludes(kernel)
      ->excludes(features);
  sub->add_flag("--mainline", opt->mainline,
                "Print the profile's mainline kernel/sched/features.h line (the model's flags as "
                "set, the others at their default or as --features set them)")
      ->excludes("--series");
  sub->callback([opt] {
    if (opt->series) {
      for (const kernel::SeriesAlias& s : kernel::series_aliases()) {
        std::string flags;
        for (kernel::Feature f : s.flags) flags += std::string(" ") + kernel::feature_name(f);
        fmt::print("{:<21}{}\n", s.name, flags);
      }
      return;
    }
    kernel::Profile p = kernel::make_profile(opt->kernel);
    kernel::apply_features(p.features, opt->features, "--features", &p.unmodelled);
    print_feature_warnings(p, "--features");
    fmt::print("{}", opt->mainline ? kernel::mainline_features_line(p)
                                   : kernel::sched_features_line(p.features));
  });
}

}  // namespace schedtwin::cli
