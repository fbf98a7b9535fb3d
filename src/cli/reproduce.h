// `schedtwin reproduce`: one function per series, each printing the published table
// beside the simulated one (seed-series.md) and returning its figures as JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace schedtwin::cli {

// runs: seeds 1..runs per configuration; full: the posted parameters where --quick
// scales them down. Text is appended to `text`.
nlohmann::json reproduce_sched_idle_fallback(int runs, std::string& text);
nlohmann::json reproduce_runnable_avg(int runs, bool full, std::string& text);
nlohmann::json reproduce_latency_nice(int runs, bool full, std::string& text);
nlohmann::json reproduce_sched_idle_balancing(int runs, bool full, std::string& text);

}  // namespace schedtwin::cli
