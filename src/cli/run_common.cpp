#include "cli/run_common.h"

#include <fmt/core.h>

#include <filesystem>
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

void write_file_atomically(const std::string& path, const std::string& text, std::string_view option) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(fmt::format("{} {}: cannot create file", option, path));
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw InputError(fmt::format("{} {}: write failed", option, path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(fmt::format("{} {}: cannot write file ({})", option, path, ec.message()));
  }
}

}  // namespace schedtwin::cli
