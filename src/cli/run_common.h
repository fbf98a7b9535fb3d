// What every simulating subcommand shares: building the scenario from the common
// options, the JSON document's common keys, and writing output files atomically.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "cli/cli.h"
#include "kernel/kernel.h"
#include "machine/machine.h"

namespace schedtwin::cli {

struct Scenario {
  machine::Machine machine;
  kernel::Config config;
};

// Loads the machine and resolves the profile and feature list (InputError on bad names).
Scenario make_scenario(const CommonOptions& o);

// schema_version, command, machine, kernel, features, seed, sim_time_s, wall_time_s, events.
nlohmann::json common_json(const std::string& command, const Scenario& s, const kernel::Kernel& k,
                           double wall_time_s);

// --lb-stats / --schedstat: appends their text to `text` and the lb_stats keys to `j`.
void add_kernel_reports(const CommonOptions& o, const kernel::Kernel& k, std::string& text,
                        nlohmann::json& j);
// The classification table of the runnable_avg series: state, nr_running, count (all
// balance types summed), then the count per balance type.
std::string lb_stats_text(const kernel::LbStats& s);

// Writes text to path through a temporary file and a rename (nothing half-written); errors
// name the option that gave the path ("--json", "--out").
void write_file_atomically(const std::string& path, const std::string& text,
                           std::string_view option = "--json");

}  // namespace schedtwin::cli
