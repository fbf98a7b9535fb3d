#include "cli/run_common.h"

#include <fmt/core.h>

#include <cstdio>
#include <fstream>

#include "engine/error.h"
#include "machine/machine_file.h"

namespace schedtwin::cli {

Scenario make_scenario(const CommonOptions& o) {
  Scenario s;
  s.machine = machine::load_machine(o.machine);
  s.config.profile = kernel::make_profile(o.kernel);
  kernel::apply_features(s.config.profile.features, o.features, "--features");
  s.config.seed = o.seed;
  s.config.hz = o.hz;
  return s;
}

nlohmann::json common_json(const std::string& command, const Scenario& s, const kernel::Kernel& k,
                           double wall_time_s) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["command"] = command;
  j["machine"] = s.machine.name;
  j["kernel"] = s.config.profile.name;
  j["features"] = s.config.profile.features.names();
  j["seed"] = s.config.seed;
  j["sim_time_s"] = static_cast<double>(k.now()) / 1e9;
  j["wall_time_s"] = wall_time_s;
  j["events"] = k.events();
  j["context_switches"] = k.context_switches();
  return j;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError(fmt::format("{}: cannot write file", path));
    f << text;
    if (!f.flush()) throw InputError(fmt::format("{}: write failed", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(fmt::format("{}: cannot write file", path));
  }
}

}  // namespace schedtwin::cli
