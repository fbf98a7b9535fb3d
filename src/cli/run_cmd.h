// `schedtwin run`: scenario files (several workloads in task groups at once); also used by
// reproduce sched-idle-balancing.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli.h"
#include "workload/json_relaxed.h"

namespace schedtwin::cli {

// Which common options the command line gave (they override the file's keys).
struct ScenarioOverrides {
  bool machine = false, kernel = false, features = false, seed = false;
};

struct ScenarioOutcome {
  std::string text;     // what `run` prints
  nlohmann::json json;  // its --json document
};

// Runs a parsed scenario; `file` names it in error messages (InputError "FILE:LINE:COL: ...").
ScenarioOutcome run_scenario(const workload::JNode& root, const std::string& file, CommonOptions c,
                             const ScenarioOverrides& ov);

}  // namespace schedtwin::cli
