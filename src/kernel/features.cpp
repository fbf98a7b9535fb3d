#include "kernel/features.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "engine/error.h"
#include "engine/spelling.h"

namespace schedtwin::kernel {

namespace {

constexpr std::array<const char*, kNumFeatures> kNames = {
#define SCHEDTWIN_NAME(name) #name,
    SCHEDTWIN_FEATURES(SCHEDTWIN_NAME)
#undef SCHEDTWIN_NAME
};

constexpr std::array<const char*, kNumUnmodelledFeatures> kUnmodelledNames = {
#define SCHEDTWIN_NAME(name) #name,
    SCHEDTWIN_UNMODELLED_FEATURES(SCHEDTWIN_NAME)
#undef SCHEDTWIN_NAME
};

// Every SCHED_FEAT line of kernel/sched/features.h from v5.3 to v6.6, in file order: a line
// belongs to releases [since, until) and its default is `on`, the opposite from `flip` on.
// Read from the file's blobs 2410db5e9a35 (v5.3, v5.4), 7481cd96f391 (v5.5-v5.9), 1cf435bbcd9c
// (v5.16-v5.19), ee7f23c76bd3 (v6.0-v6.5) and f770168230ae (v6.6); each change is noted with
// its commit.
struct MainlineLine {
  const char* name;
  int since, until;
  bool on;
  int flip;
};
constexpr int kAlways = 9999;
constexpr MainlineLine kMainline[] = {
    {"PLACE_LAG", 606, kAlways, true, 0},               // 86bfbb7ce4f6 (EEVDF, v6.6)
    {"PLACE_DEADLINE_INITIAL", 606, kAlways, true, 0},  // 147f3efaa241
    {"RUN_TO_PARITY", 606, kAlways, true, 0},           // 63304558ba5d
    {"GENTLE_FAIR_SLEEPERS", 0, 606, true, 0},          // gone: 76cae9dbe185
    {"START_DEBIT", 0, 606, true, 0},                   // gone: e0c2ff903c32
    {"NEXT_BUDDY", 0, kAlways, false, 0},
    {"LAST_BUDDY", 0, 606, true, 0},  // gone: 5e963f2bd465
    {"CACHE_HOT_BUDDY", 0, kAlways, true, 0},
    {"WAKEUP_PREEMPTION", 0, kAlways, true, 0},
    {"HRTICK", 0, kAlways, false, 0},
    {"HRTICK_DL", 512, kAlways, false, 0},  // e0ee463c93c4, v5.12
    {"DOUBLE_TICK", 0, kAlways, false, 0},
    {"NONTASK_CAPACITY", 0, kAlways, true, 0},
    {"TTWU_QUEUE", 0, kAlways, true, 0},  // false under CONFIG_PREEMPT_RT from v5.16
    {"SIS_AVG_CPU", 0, 512, false, 0},    // "sched/fair: Remove SIS_AVG_CPU", v5.12
    {"SIS_PROP", 0, kAlways, true, 600},  // off from 70fb5ccf2ebb, v6.0
    {"SIS_UTIL", 600, kAlways, true, 0},  // 70fb5ccf2ebb
    {"WARN_DOUBLE_CLOCK", 0, kAlways, false, 0},
    {"RT_PUSH_IPI", 0, kAlways, true, 0},         // #ifdef HAVE_RT_PUSH_IPI
    {"RT_RUNTIME_SHARE", 0, kAlways, true, 510},  // off from 2586af1ac187, v5.10
    {"LB_MIN", 0, kAlways, false, 0},
    {"ATTACH_AGE_LOAD", 0, kAlways, true, 0},
    {"WA_IDLE", 0, kAlways, true, 0},
    {"WA_WEIGHT", 0, kAlways, true, 0},
    {"WA_BIAS", 0, kAlways, true, 0},
    {"UTIL_EST", 0, kAlways, true, 0},
    {"UTIL_EST_FASTUP", 505, kAlways, true, 0},  // b8c96361402a, v5.5
    {"LATENCY_WARN", 513, kAlways, false, 0},    // c006fac556e4, v5.13
    {"ALT_PERIOD", 513, 606, true, 0},           // 0c2de3f054a5, v5.13; gone: 5e963f2bd465
    {"BASE_SLICE", 513, 606, true, 0},           // 0c2de3f054a5
    {"HZ_BW", 606, kAlways, true, 0},            // 88c56cfeaec4, v6.6
};
constexpr int kFirstMainline = 503, kLastMainline = 606;
// The unmodelled flags from here on came after v6.6 (names read from a v6.12-era features.h
// blob: PLACE_REL_DEADLINE, PREEMPT_SHORT, DELAY_DEQUEUE, DELAY_ZERO; NI_RANDOM and NI_RATE
// from the newidle-rate patch of November 2025 and a copy of the file with it).
constexpr UnmodelledFeature kFirstAfterV66 = UnmodelledFeature::PLACE_REL_DEADLINE;

template <class E, std::size_t N>
bool lookup_in(const std::array<const char*, N>& names, std::string_view name, E& out) {
  for (std::size_t i = 0; i < N; ++i)
    if (name == names[i]) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}
bool lookup(std::string_view name, Feature& out) { return lookup_in(kNames, name, out); }
bool lookup_unmodelled(std::string_view name, UnmodelledFeature& out) {
  return lookup_in(kUnmodelledNames, name, out);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A release number without its 'v' or 'V' ("6.0" for "v6.0").
std::string_view without_v(std::string_view s) {
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) s.remove_prefix(1);
  return s;
}

// "v6.0", "V6.0", "6.0": a release number, never a flag name.
bool looks_like_profile(std::string_view s) {
  s = without_v(s);
  return !s.empty() && is_digit(s[0]);
}

constexpr std::string_view kSeparators = ", \t\n\r";

}  // namespace

std::vector<std::string_view> feature_list_items(std::string_view list) {
  std::vector<std::string_view> items;
  while (!list.empty()) {
    const size_t sep = list.find_first_of(kSeparators);
    if (sep != 0) items.push_back(list.substr(0, sep));
    if (sep == std::string_view::npos) break;
    list.remove_prefix(sep + 1);
  }
  return items;
}

const char* feature_name(Feature f) { return kNames[static_cast<int>(f)]; }
const char* feature_name(UnmodelledFeature f) { return kUnmodelledNames[static_cast<int>(f)]; }

std::vector<MainlineFlag> mainline_features(int version) {
  std::vector<MainlineFlag> out;
  if (version < kFirstMainline || version > kLastMainline) return out;
  for (const MainlineLine& l : kMainline) {
    if (version < l.since || version >= l.until) continue;
    MainlineFlag f{l.name, l.flip && version >= l.flip ? !l.on : l.on, Feature::COUNT,
                   UnmodelledFeature::COUNT};
    if (!lookup(l.name, f.feature) && !lookup_unmodelled(l.name, f.unmodelled))
      throw std::logic_error(
          fmt::format("mainline flag {} is neither modelled nor listed as "
                      "unmodelled",
                      l.name));
    out.push_back(f);
  }
  return out;
}

std::string mainline_features_line(const Profile& p) {
  std::string s;
  for (const MainlineFlag& f : mainline_features(p.version)) {
    bool on = f.on;
    if (f.feature != Feature::COUNT) {
      on = p.features.has(f.feature);
    } else {
      const auto i = static_cast<size_t>(f.unmodelled);
      if (p.unmodelled.given.test(i)) on = p.unmodelled.on.test(i);
    }
    s += on ? "" : "NO_";
    s += f.name;
    s += ' ';
  }
  s += '\n';
  return s;
}

bool profile_reads(const Profile& p, Feature f) {
  const bool eevdf = p.version >= 606;
  switch (f) {
    case Feature::SIS_AVG_CPU:  // "sched/fair: Remove SIS_AVG_CPU", v5.12
      return p.version < 512;
    case Feature::PLACE_LAG:
    case Feature::PLACE_DEADLINE_INITIAL:
    case Feature::RUN_TO_PARITY:
      return eevdf;
    case Feature::GENTLE_FAIR_SLEEPERS:
    case Feature::START_DEBIT:
    case Feature::LAST_BUDDY:
    case Feature::ALT_PERIOD:  // sched_slice: CFS's tick preemption and placement only
    case Feature::BASE_SLICE:
      return !eevdf;
    default:
      return true;
  }
}

std::vector<std::string> feature_warnings(const Profile& p) {
  const std::vector<MainlineFlag> flags = mainline_features(p.version);
  std::vector<std::string> out;
  const FeatureSet defaults = make_profile(p.name).features;
  for (int i = 0; i < kNumFeatures; ++i) {
    const auto f = static_cast<Feature>(i);
    if (profile_reads(p, f) || p.features.has(f) == defaults.has(f)) continue;
    out.push_back(
        fmt::format("{}{}: the {} profile does not read this flag ({}); the run is as "
                    "without it",
                    p.features.has(f) ? "" : "NO_", feature_name(f), p.name,
                    f == Feature::SIS_AVG_CPU ? "removed in v5.12"
                    : p.version >= 606        ? "a CFS flag EEVDF replaced"
                                              : "an EEVDF flag"));
  }
  for (int i = 0; i < kNumUnmodelledFeatures; ++i) {
    if (!p.unmodelled.given.test(static_cast<size_t>(i))) continue;
    const bool on = p.unmodelled.on.test(static_cast<size_t>(i));
    const auto u = static_cast<UnmodelledFeature>(i);
    const auto it = std::find_if(flags.begin(), flags.end(),
                                 [&](const MainlineFlag& f) { return f.unmodelled == u; });
    const std::string given = fmt::format("{}{}", on ? "" : "NO_", feature_name(u));
    if (it == flags.end() && static_cast<int>(u) >= static_cast<int>(kFirstAfterV66))
      out.push_back(fmt::format("{}: a flag of releases after v6.6, the newest profile; the "
                                "model does not read it; ignored",
                                given));
    else if (it == flags.end())
      out.push_back(
          fmt::format("{}: {}'s kernel/sched/features.h has no such flag, and the "
                      "model does not read it; ignored",
                      given, p.name));
    else if (it->on != on)
      out.push_back(
          fmt::format("{}: a flag the model does not read; the run simulates {}'s "
                      "default, {}{}",
                      given, p.name, it->on ? "" : "NO_", feature_name(u)));
  }
  return out;
}

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

const std::vector<Feature>& series_flags() {
  static const std::vector<Feature> flags = {
      // series 1: the sched-idle fallback (v5.4) and its v5.6 follow-ups
      Feature::SIS_SCHED_IDLE_FALLBACK, Feature::SCHED_IDLE_CONSISTENT,
      // series 2: the latency-nice RFC
      Feature::LATENCY_NICE_SIS, Feature::SIS_CORE, Feature::SIS_ROTATE, Feature::SIS_SMT_FIRST,
      // series 3: runnable_avg group classification (v5.7)
      Feature::RUNNABLE_AVG_CLASSIFY,
      // series 4: the sched-idle balancing RFC
      Feature::SIB_OVERLOAD_MASK, Feature::SIB_BALANCE, Feature::SIB_LAST_NONIDLE,
      Feature::SIB_SIS_FILTER, Feature::SIB_IDLE_TASK_SPREAD};
  return flags;
}

bool takes_select_idle_sibling_v513(const Profile& p) {
  return p.version >= 513 && !p.features.has(Feature::LATENCY_NICE_SIS) &&
         !p.features.has(Feature::SIS_SMT_FIRST);
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
  else {
    // "5.4" or "V5.4" for v5.4: name the one meant; otherwise the list says what there is.
    std::string guess;
    for (const auto& n : profile_names())
      if (without_v(n) == without_v(name)) guess = n;
    throw InputError(fmt::format("{}: unknown kernel profile '{}' ({}known: {})", what, name,
                                 guess.empty() ? "" : fmt::format("did you mean {}? ", guess),
                                 fmt::join(profile_names(), ", ")));
  }
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

void apply_features(FeatureSet& set, std::string_view list, std::string_view what,
                    UnmodelledFlags* unmodelled) {
  // Every unknown name of the list with its near miss ("" if none): one error for all.
  std::vector<std::pair<std::string_view, std::string>> unknown;
  std::vector<std::string_view> known;  // filled at the first unknown name only
  for (std::string_view item : feature_list_items(list)) {
    bool on = true;
    std::string_view name = item;
    if (name.substr(0, 3) == "NO_") {  // sched_feat_set: only this spelling
      on = false;
      name.remove_prefix(3);
    }
    const auto alias = std::find_if(series_aliases().begin(), series_aliases().end(),
                                    [&](const SeriesAlias& s) { return name == s.name; });
    if (alias != series_aliases().end()) {
      for (Feature x : alias->flags) set.set(x, on);
      continue;
    }
    UnmodelledFeature u;
    if (lookup_unmodelled(name, u)) {
      if (unmodelled) {
        unmodelled->given.set(static_cast<size_t>(u));
        unmodelled->on.set(static_cast<size_t>(u), on);
      }
      continue;
    }
    Feature f;
    if (lookup(name, f)) {
      set.set(f, on);
      continue;
    }
    if (looks_like_profile(item))
      throw InputError(
          fmt::format("{}: '{}' is a kernel profile, not a feature (a compare "
                      "SPEC names its profile first; elsewhere give --kernel)",
                      what, item));
    if (known.empty()) {
      known.assign(kNames.begin(), kNames.end());
      known.insert(known.end(), kUnmodelledNames.begin(), kUnmodelledNames.end());
      for (const SeriesAlias& s : series_aliases()) known.push_back(s.name);
    }
    // The near miss of "no_sis_prop" is NO_SIS_PROP: a prefix in another case is guessed too.
    if (on && name.size() > 3 && (name[0] == 'n' || name[0] == 'N') &&
        (name[1] == 'o' || name[1] == 'O') && name[2] == '_') {
      on = false;
      name.remove_prefix(3);
    }
    std::string guess = engine::closest_spelling(name, known);
    if (!guess.empty() && !on) guess = "NO_" + guess;
    unknown.emplace_back(item, std::move(guess));
  }
  if (unknown.empty()) return;
  if (unknown.size() == 1 && !unknown[0].second.empty())
    throw InputError(fmt::format(
        "{}: unknown feature '{}'; did you mean {}? (`schedtwin features` lists the flags)", what,
        unknown[0].first, unknown[0].second));
  std::vector<std::string> named, series;
  for (const auto& [item, guess] : unknown)
    named.push_back(guess.empty() ? fmt::format("'{}'", item)
                                  : fmt::format("'{}' (did you mean {}?)", item, guess));
  for (const SeriesAlias& s : series_aliases()) series.push_back(s.name);
  throw InputError(fmt::format(
      "{}: unknown feature{} {} (expected a flag such as SIS_PROP or NO_SIS_PROP, or a series: "
      "{}; `schedtwin features` lists the flags)",
      what, unknown.size() == 1 ? "" : "s", fmt::join(named, ", "), fmt::join(series, ", ")));
}

Profile parse_spec(std::string_view spec, const Profile& base, std::string_view what) {
  Profile p = base;
  std::string_view rest = trim(spec);
  size_t comma = rest.find_first_of(kSeparators);
  std::string_view first = rest.substr(0, comma);
  bool known = false;
  for (const auto& n : profile_names())
    if (first == n) {
      p = make_profile(first, what);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      known = true;
      break;
    }
  // "v9.9", "V6.0" or "6.0" is a profile name nobody has, not a feature: say so, with the
  // known ones.
  if (!known && looks_like_profile(first))
    make_profile(first, what);  // throws: unknown kernel profile, with the known ones
  apply_features(p.features, rest, what, &p.unmodelled);
  return p;
}

}  // namespace schedtwin::kernel
