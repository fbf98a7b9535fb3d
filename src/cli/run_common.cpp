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

std::string lb_stats_text(const kernel::LbStats& s) {
  std::string out =
      "load balance group classification (groups classified by update_sd_lb_stats):\n"
      "state         nr_running      total       idle       busy newly_idle\n";
  std::uint64_t total[4] = {};
  for (int type = 0; type < 6; ++type)
    for (int nr = 0; nr < 5; ++nr) {
      std::uint64_t by[3], sum = 0;
      for (int it = 0; it < 3; ++it) sum += by[it] = s.classified[it][type][nr];
      if (!sum) continue;
      out += fmt::format("{:<13} {:>10} {:>10} {:>10} {:>10} {:>10}\n", kernel::group_type_name(type),
                         nr == 4 ? "4+" : std::to_string(nr), sum, by[0], by[1], by[2]);
      total[0] += sum;
      for (int it = 0; it < 3; ++it) total[it + 1] += by[it];
    }
  out += fmt::format("{:<13} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "total", "", total[0], total[1], total[2],
                     total[3]);
  out += fmt::format("tasks moved by load balancing: {} ({} by active balance)\n", s.migrations,
                     s.active_migrations);
  return out;
}

void add_kernel_reports(const CommonOptions& o, const kernel::Kernel& k, std::string& text,
                        nlohmann::json& j) {
  const kernel::LbStats& s = k.lb_stats();
  j["lb_migrations"] = s.migrations;
  if (o.lb_stats) {
    text += "\n" + lb_stats_text(s);
    auto& js = j["lb_stats"];
    for (int type = 0; type < 6; ++type)
      for (int nr = 0; nr < 5; ++nr) {
        std::string key = nr == 4 ? "4+" : std::to_string(nr);
        std::uint64_t sum = 0;
        for (int it = 0; it < 3; ++it) {
          js["by_type"][kernel::balance_type_name(it)][kernel::group_type_name(type)][key] =
              s.classified[it][type][nr];
          sum += s.classified[it][type][nr];
        }
        js["group_classification"][kernel::group_type_name(type)][key] = sum;
      }
    js["migrations"] = s.migrations;
    js["active_migrations"] = s.active_migrations;
  }
  if (o.schedstat) text += "\n" + k.schedstat();
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
