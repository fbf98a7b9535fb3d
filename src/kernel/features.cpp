#include "kernel/features.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <array>

#include "engine/error.h"

namespace schedtwin::kernel {

namespace {

constexpr std::array<const char*, kNumFeatures> kNames = {
#define SCHEDTWIN_NAME(name) #name,
    SCHEDTWIN_FEATURES(SCHEDTWIN_NAME)
#undef SCHEDTWIN_NAME
};

bool lookup(std::string_view name, Feature& out) {
  for (int i = 0; i < kNumFeatures; ++i)
    if (name == kNames[i]) {
      out = static_cast<Feature>(i);
      return true;
    }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <class F>
void for_each_item(std::string_view list, F&& f) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = trim(list.substr(0, comma));
    if (!item.empty()) f(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

const char* feature_name(Feature f) { return kNames[static_cast<int>(f)]; }

// DESIGN.md §1: each series name is an alias for its flags.
const std::vector<SeriesAlias>& series_aliases() {
  static const std::vector<SeriesAlias> s = {
      {"sched-idle-fallback", {Feature::SIS_SCHED_IDLE_FALLBACK}},
      {"latency-nice", {Feature::LATENCY_NICE_SIS, Feature::SIS_ROTATE, Feature::SIS_SMT_FIRST}},
      {"runnable-avg", {Feature::RUNNABLE_AVG_CLASSIFY}},
      {"sched-idle-balancing",
       {Feature::SIB_OVERLOAD_MASK, Feature::SIB_BALANCE, Feature::SIB_LAST_NONIDLE,
        Feature::SIB_SIS_FILTER, Feature::SIB_IDLE_TASK_SPREAD}},
  };
  return s;
}

std::string sched_features_line(const FeatureSet& set) {
  std::string s;
  for (int i = 0; i < kNumFeatures; ++i) {
    if (!set.has(static_cast<Feature>(i))) s += "NO_";
    s += kNames[i];
    s += ' ';
  }
  s += '\n';
  return s;
}

std::vector<std::string> FeatureSet::names() const {
  std::vector<std::string> out;
  for (int i = 0; i < kNumFeatures; ++i)
    if (bits_.test(i)) out.emplace_back(kNames[i]);
  return out;
}

std::string FeatureSet::to_string() const {
  std::string s;
  for (const auto& n : names()) {
    if (!s.empty()) s += ',';
    s += n;
  }
  return s;
}

std::vector<std::string> profile_names() {
  return {"v5.3", "v5.4", "v5.6", "v5.7", "v5.17", "v6.0", "v6.6"};
}

Profile make_profile(std::string_view name, std::string_view what) {
  Profile p;
  p.name = std::string(name);
  if (name == "v5.3")
    p.version = 503;
  else if (name == "v5.4")
    p.version = 504;
  else if (name == "v5.6")
    p.version = 506;
  else if (name == "v5.7")
    p.version = 507;
  else if (name == "v5.17")
    p.version = 517;
  else if (name == "v6.0")
    p.version = 600;
  else if (name == "v6.6")
    p.version = 606;
  else
    throw InputError(fmt::format("{}: unknown kernel profile '{}' (known: {})", what, name,
                                 fmt::join(profile_names(), ", ")));
  FeatureSet& f = p.features;
  // kernel/sched/features.h defaults common to v5.3..v5.19.
  for (Feature x : {Feature::GENTLE_FAIR_SLEEPERS, Feature::START_DEBIT, Feature::LAST_BUDDY,
                    Feature::CACHE_HOT_BUDDY, Feature::WAKEUP_PREEMPTION, Feature::TTWU_QUEUE,
                    Feature::SIS_PROP, Feature::WA_IDLE, Feature::WA_WEIGHT, Feature::WA_BIAS,
                    Feature::UTIL_EST, Feature::SIS_CORE})
    f.set(x);
  if (p.version >= 504) f.set(Feature::SIS_SCHED_IDLE_FALLBACK);  // 3c29e651e16d, v5.4
  if (p.version >= 505) f.set(Feature::UTIL_EST_FASTUP);          // b8c96361402a, v5.5
  if (p.version >= 506) f.set(Feature::SCHED_IDLE_CONSISTENT);    // 17346452b25b, 323af6deaf70
  if (p.version >= 507) f.set(Feature::RUNNABLE_AVG_CLASSIFY);    // 070f5e860ee2, v5.7
  if (p.version >= 513 && p.version < 606) {  // 0c2de3f054a5, v5.13 (gone with EEVDF)
    f.set(Feature::ALT_PERIOD);
    f.set(Feature::BASE_SLICE);
  }
  if (p.version >= 600) {  // 70fb5ccf2ebb, v6.0: SIS_UTIL replaces SIS_PROP
    f.set(Feature::SIS_UTIL);
    f.set(Feature::SIS_PROP, false);
  }
  // v6.6: EEVDF replaces CFS's placement and preemption ("sched/fair: Add lag based
  // placement" and its series); "sched/fair: Commit to EEVDF" removed the CFS features.
  if (p.version >= 606) {
    for (Feature x : {Feature::PLACE_LAG, Feature::PLACE_DEADLINE_INITIAL, Feature::RUN_TO_PARITY})
      f.set(x);
    for (Feature x : {Feature::GENTLE_FAIR_SLEEPERS, Feature::START_DEBIT, Feature::LAST_BUDDY})
      f.set(x, false);
  }
  // busy_factor 32 -> 16 and imbalance_pct 125 -> 117 landed between v5.7 and v5.10 (fair-class.md
  // §5.1).
  if (p.version >= 510) {
    p.busy_factor = 16;
    p.default_imbalance_pct = 117;
  }
  return p;
}

void apply_features(FeatureSet& set, std::string_view list, std::string_view what) {
  for_each_item(list, [&](std::string_view item) {
    bool on = true;
    std::string_view name = item;
    if (name.substr(0, 3) == "NO_") {
      on = false;
      name.remove_prefix(3);
    }
    for (const SeriesAlias& s : series_aliases())
      if (name == s.name) {
        for (Feature x : s.flags) set.set(x, on);
        return;
      }
    Feature f;
    if (!lookup(name, f)) {
      std::vector<std::string_view> series;
      for (const SeriesAlias& s : series_aliases()) series.push_back(s.name);
      throw InputError(fmt::format(
          "{}: unknown feature '{}' (expected a flag such as SIS_PROP or NO_SIS_PROP, or a series: "
          "{}; `schedtwin features` lists the flags)",
          what, item, fmt::join(series, ", ")));
    }
    set.set(f, on);
  });
}

Profile parse_spec(std::string_view spec, const Profile& base, std::string_view what) {
  Profile p = base;
  std::string_view rest = trim(spec);
  size_t comma = rest.find(',');
  std::string_view first = trim(rest.substr(0, comma));
  bool known = false;
  for (const auto& n : profile_names())
    if (first == n) {
      p = make_profile(first, what);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      known = true;
      break;
    }
  // "v9.9" is a profile name nobody has, not a feature: say so, with the known ones.
  if (!known && first.size() >= 2 && first[0] == 'v' && first[1] >= '0' && first[1] <= '9')
    make_profile(first, what);  // throws: unknown kernel profile, with the known ones
  apply_features(p.features, rest, what);
  return p;
}

}  // namespace schedtwin::kernel
