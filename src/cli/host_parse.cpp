#include "cli/host_parse.h"

#include <fmt/core.h>

#include <charconv>
#include <cstdint>
#include <regex>

#include "engine/error.h"

namespace schedtwin::cli::host {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\r') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

template <class T>
bool to_number(std::string_view w, T& v) {
  auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
  return ec == std::errc() && p == w.data() + w.size();
}

// The value of a "CONFIG_X=value" line, or "" when the option is absent or "is not set".
std::string config_value(std::string_view config, std::string_view key) {
  std::size_t pos = 0;
  while (pos < config.size()) {
    std::size_t end = config.find('\n', pos);
    if (end == std::string_view::npos) end = config.size();
    std::string_view line = trim(config.substr(pos, end - pos));
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == '=')
      return std::string(line.substr(key.size() + 1));
    pos = end + 1;
  }
  return "";
}

}  // namespace

std::vector<workload::rtapp::LogRow> parse_rtapp_log(std::string_view text,
                                                     std::string_view origin) {
  std::vector<workload::rtapp::LogRow> rows;
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> w = split_words(line);
    if (w.size() != 11)
      throw InputError(fmt::format("{}:{}: expected the 11 columns of an rt-app log row, got {}",
                                   origin, line_no, w.size()));
    workload::rtapp::LogRow r{};
    std::uint64_t* u[] = {&r.perf, &r.run, &r.period, &r.start, &r.end, &r.rel_st};
    bool ok = to_number(w[0], r.idx);
    for (int k = 0; k < 6; ++k) ok = ok && to_number(w[static_cast<std::size_t>(k) + 1], *u[k]);
    ok = ok && to_number(w[7], r.slack) && to_number(w[8], r.c_duration) &&
         to_number(w[9], r.c_period) && to_number(w[10], r.wu_lat);
    if (!ok)
      throw InputError(fmt::format("{}:{}: expected integers in every column of an rt-app log row",
                                   origin, line_no));
    rows.push_back(r);
  }
  return rows;
}

std::optional<double> parse_perf_total_time(std::string_view output) {
  const std::regex total(R"(Total time:\s*([0-9]+(\.[0-9]+)?)\s*\[sec\])");
  const std::regex simple(R"(^\s*([0-9]+\.[0-9]+)\s*$)");
  const std::string s(output);
  std::smatch m;
  if (std::regex_search(s, m, total)) return std::stod(m[1].str());
  // -f simple: the output is the number alone.
  if (std::regex_match(s, m, simple)) return std::stod(m[1].str());
  return std::nullopt;
}

std::optional<double> parse_hackbench_time(std::string_view output) {
  const std::regex time_line(R"((^|\n)Time:\s*([0-9]+(\.[0-9]+)?))");
  const std::string s(output);
  std::smatch m;
  if (std::regex_search(s, m, time_line)) return std::stod(m[2].str());
  return std::nullopt;
}

std::optional<machine::KernelBuild> parse_kernel_config(std::string_view config,
                                                        std::string_view cmdline,
                                                        std::string_view source) {
  machine::KernelBuild b;
  if (!to_number(std::string_view(config_value(config, "CONFIG_HZ")), b.hz)) return std::nullopt;
  auto on = [&](std::string_view k) { return config_value(config, k) == "y"; };
  std::string model = "none";
  if (on("CONFIG_PREEMPT_RT"))
    model = "rt";
  else if (on("CONFIG_PREEMPT_LAZY"))
    model = "lazy";
  else if (on("CONFIG_PREEMPT"))
    model = "full";
  else if (on("CONFIG_PREEMPT_VOLUNTARY"))
    model = "voluntary";
  std::string how = fmt::format("{} (CONFIG_PREEMPT_* of the build)", model);
  if (on("CONFIG_PREEMPT_DYNAMIC")) {
    // preempt=none|voluntary|full|lazy on the kernel command line picks the mode at boot.
    for (std::string_view w : split_words(cmdline)) {
      if (w.substr(0, 8) == "preempt=") {
        model = std::string(w.substr(8));
        how = fmt::format("{} (preempt= on the kernel command line; PREEMPT_DYNAMIC)", model);
      }
    }
    if (how.find("command line") == std::string::npos)
      how = fmt::format("{} (the PREEMPT_DYNAMIC boot default; no preempt= on the command line)",
                        model);
  }
  if (model == "full" || model == "rt")
    b.preempt = machine::Preemption::Full;
  else if (model == "voluntary")
    b.preempt = machine::Preemption::Voluntary;
  else
    b.preempt = machine::Preemption::None;  // none, and lazy (fair tasks preempted at the tick)
  b.nohz_idle = on("CONFIG_NO_HZ_IDLE") || on("CONFIG_NO_HZ_FULL");
  b.source = fmt::format("read from {}: CONFIG_HZ={}, preemption {}, NO_HZ_IDLE {}", source, b.hz,
                         how, b.nohz_idle ? "on" : "off");
  return b;
}

}  // namespace schedtwin::cli::host
