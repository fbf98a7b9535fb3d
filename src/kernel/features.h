// Feature flags (kernel/sched/features.h names plus the four series' flags)
// and kernel profiles: presets of feature defaults as they were in a release.
#pragma once
#include <bitset>
#include <string>
#include <string_view>
#include <vector>

namespace schedtwin::kernel {

#define SCHEDTWIN_FEATURES(X)                                                                 \
  /* mainline kernel/sched/features.h */                                                      \
  X(GENTLE_FAIR_SLEEPERS)                                                                     \
  X(START_DEBIT)                                                                              \
  X(NEXT_BUDDY)                                                                               \
  X(LAST_BUDDY)                                                                               \
  X(CACHE_HOT_BUDDY)                                                                          \
  X(WAKEUP_PREEMPTION)                                                                        \
  X(TTWU_QUEUE)                                                                               \
  X(SIS_AVG_CPU) X(SIS_PROP) X(SIS_UTIL) X(WA_IDLE) X(WA_WEIGHT) X(WA_BIAS) X(UTIL_EST)       \
      X(UTIL_EST_FASTUP) X(ALT_PERIOD)                                                        \
          X(BASE_SLICE) /* mainline v6.6 EEVDF (read only by profiles v6.6+) */               \
      X(PLACE_LAG) X(PLACE_DEADLINE_INITIAL)                                                  \
          X(RUN_TO_PARITY) /* series 1: sched-idle fallback (v5.4) and its v5.6 follow-ups */ \
      X(SIS_SCHED_IDLE_FALLBACK) X(SCHED_IDLE_CONSISTENT) /* series 2: latency-nice RFC */    \
      X(LATENCY_NICE_SIS) X(SIS_CORE) X(SIS_ROTATE)                                           \
          X(SIS_SMT_FIRST)     /* series 3: runnable_avg group classification (v5.7) */       \
      X(RUNNABLE_AVG_CLASSIFY) /* series 4: sched-idle balancing RFC */                       \
      X(SIB_OVERLOAD_MASK) X(SIB_BALANCE) X(SIB_LAST_NONIDLE) X(SIB_SIS_FILTER)               \
          X(SIB_IDLE_TASK_SPREAD)

enum class Feature : int {
#define SCHEDTWIN_ENUM(name) name,
  SCHEDTWIN_FEATURES(SCHEDTWIN_ENUM)
#undef SCHEDTWIN_ENUM
      COUNT
};

inline constexpr int kNumFeatures = static_cast<int>(Feature::COUNT);
const char* feature_name(Feature f);

class FeatureSet {
 public:
  bool has(Feature f) const { return bits_.test(static_cast<size_t>(f)); }
  void set(Feature f, bool on = true) { bits_.set(static_cast<size_t>(f), on); }
  bool operator==(const FeatureSet&) const = default;
  // The names of the features that are on, in declaration order, comma-separated.
  std::string to_string() const;
  std::vector<std::string> names() const;

 private:
  std::bitset<kNumFeatures> bits_;
};

// Flags of mainline kernel/sched/features.h that the model does not read: they steer what
// it leaves out (hrtick, RT push IPIs, RT bandwidth, NOHZ_FULL bandwidth ticks, warnings) or
// keep a default it always follows (NONTASK_CAPACITY, ATTACH_AGE_LOAD, LB_MIN off).
// --features accepts them, so that a real machine's features line can be given as it is; a
// run simulates the release's default whatever they say, and warns when they differ from it.
#define SCHEDTWIN_UNMODELLED_FEATURES(X)                                                \
  X(HRTICK)                                                                             \
  X(HRTICK_DL)                                                                          \
  X(DOUBLE_TICK)                                                                        \
  X(NONTASK_CAPACITY) X(WARN_DOUBLE_CLOCK) X(RT_PUSH_IPI) X(RT_RUNTIME_SHARE) X(LB_MIN) \
      X(ATTACH_AGE_LOAD) X(LATENCY_WARN) X(HZ_BW)                                       \
      /* flags of releases after v6.6, no profile's: a newer machine's line is accepted */ \
      X(PLACE_REL_DEADLINE) X(PREEMPT_SHORT) X(DELAY_DEQUEUE) X(DELAY_ZERO) X(NI_RANDOM)  \
          X(NI_RATE)

enum class UnmodelledFeature : int {
#define SCHEDTWIN_ENUM(name) name,
  SCHEDTWIN_UNMODELLED_FEATURES(SCHEDTWIN_ENUM)
#undef SCHEDTWIN_ENUM
      COUNT
};
inline constexpr int kNumUnmodelledFeatures = static_cast<int>(UnmodelledFeature::COUNT);
const char* feature_name(UnmodelledFeature f);

// The unmodelled flags a --features list named, each with the value its last mention gave it.
struct UnmodelledFlags {
  std::bitset<kNumUnmodelledFeatures> given, on;
  bool operator==(const UnmodelledFlags&) const = default;
};

// A kernel release preset: feature defaults and tunables of that release.
struct Profile {
  std::string name;  // "v5.4"
  int version = 0;   // major*100 + minor, e.g. 504
  FeatureSet features;
  UnmodelledFlags unmodelled;  // set by --features; never read by the simulation
  // sd_init tunables (fair-class.md §5.1)
  int busy_factor = 32;
  int default_imbalance_pct = 125;
};

// The flags as the kernel's sched_feat_show prints /sys/kernel/debug/sched/features
// (sched_features before v5.13): every flag in declaration order, NO_ in front of those that
// are off, each followed by one space, then a newline (kernel/sched/debug.c, v5.4).
std::string sched_features_line(const FeatureSet& set);

// One line of a release's kernel/sched/features.h: SCHED_FEAT(name, on). `feature` is the
// model's flag of that name, or COUNT for an unmodelled one (then `unmodelled` names it).
struct MainlineFlag {
  const char* name;
  bool on;
  Feature feature;
  UnmodelledFeature unmodelled;
};

// The SCHED_FEAT lines of mainline kernel/sched/features.h in the release `version` (major*100
// + minor; v5.3 to v6.6), in file order, as a kernel built without CONFIG_PREEMPT_RT and with
// HAVE_RT_PUSH_IPI (SMP and IRQ_WORK: any distribution kernel) has them. Empty for a release
// outside that range.
std::vector<MainlineFlag> mainline_features(int version);

// The line that release prints in /sys/kernel/debug/sched/features (sched_features before
// v5.13) when its flags stand as `p` says: the model's flags from p.features, the unmodelled
// ones from p.unmodelled where --features set them and the release's default elsewhere.
std::string mainline_features_line(const Profile& p);

// Whether profile `p`'s model reads flag `f`: v6.6 (EEVDF) reads PLACE_LAG,
// PLACE_DEADLINE_INITIAL and RUN_TO_PARITY and no longer reads GENTLE_FAIR_SLEEPERS,
// START_DEBIT, LAST_BUDDY, ALT_PERIOD and BASE_SLICE; SIS_AVG_CPU is read up to v5.11 (v5.12
// removed it); every profile reads every other flag.
bool profile_reads(const Profile& p, Feature f);

// One message per setting the simulation of `p` ignores: a model flag the profile does not
// read set away from the profile's default, an unmodelled flag set away from the release's
// default or one the release does not have.
std::vector<std::string> feature_warnings(const Profile& p);

// A series name (alias) and the flags it stands for.
struct SeriesAlias {
  const char* name;
  std::vector<Feature> flags;
};
// The four series' aliases (DESIGN.md §1), in the order of the series.
const std::vector<SeriesAlias>& series_aliases();
// Every flag of the four series (the "series 1" to "series 4" flags above), in declaration
// order: the kernel has them as code (a patch), not as sched_feats. A superset of the
// aliases' flags (SCHED_IDLE_CONSISTENT and SIS_CORE are on by default, in no alias).
const std::vector<Feature>& series_flags();

// Whether select_idle_sibling leaves v5.4's shape for select_idle_sibling_v513 (v5.17+
// profiles; the latency-nice RFC's flags keep the v5.4 shape on any profile): that search
// never calls select_idle_core or select_idle_smt.
bool takes_select_idle_sibling_v513(const Profile& p);

// Known profile names, oldest first.
std::vector<std::string> profile_names();
// Throws InputError naming `what` (the option, or a file's place) if the name is unknown.
Profile make_profile(std::string_view name, std::string_view what = "--kernel");

// The items of a feature list, in order: separated by commas or white space, so that a
// machine's /sys/kernel/debug/sched/features line can be given as it is.
std::vector<std::string_view> feature_list_items(std::string_view list);

// Applies a kernel-syntax feature list ("NO_SIS_PROP,latency-nice,...") left to
// right. Series names stand for their flags; unmodelled mainline flags go to `unmodelled`
// (dropped when it is null). Throws InputError on unknown names with `what` (e.g.
// "--features") in the message.
void apply_features(FeatureSet& set, std::string_view list, std::string_view what,
                    UnmodelledFlags* unmodelled = nullptr);

// A SPEC of compare: "v5.3", "v5.3,SIS_SCHED_IDLE_FALLBACK", "latency-nice":
// an optional leading profile name followed by features, applied on `base`.
Profile parse_spec(std::string_view spec, const Profile& base, std::string_view what);

}  // namespace schedtwin::kernel
