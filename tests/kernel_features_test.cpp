// Profiles against the mainline kernel/sched/features.h of their release: every flag the model
// reads starts where that release's file has it.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "kernel/features.h"

namespace {

using namespace schedtwin::kernel;

TEST(Features, ProfileDefaultsAreTheirReleasesDefaults) {
  for (const std::string& name : profile_names()) {
    const Profile p = make_profile(name);
    const auto flags = mainline_features(p.version);
    ASSERT_FALSE(flags.empty()) << name;
    for (const MainlineFlag& f : flags) {
      if (f.feature != Feature::COUNT) {
        EXPECT_EQ(p.features.has(f.feature), f.on) << name << " " << f.name;
      }
    }
  }
}

TEST(Features, ReleasesGainAndLoseFlagsWhenTheirCommitsLanded) {
  auto has = [](int version, const std::string& flag) {
    for (const MainlineFlag& f : mainline_features(version))
      if (flag == f.name) return true;
    return false;
  };
  EXPECT_FALSE(has(504, "UTIL_EST_FASTUP"));  // b8c96361402a, v5.5
  EXPECT_TRUE(has(505, "UTIL_EST_FASTUP"));
  EXPECT_TRUE(has(511, "SIS_AVG_CPU"));  // removed in v5.12
  EXPECT_FALSE(has(512, "SIS_AVG_CPU"));
  EXPECT_TRUE(has(512, "HRTICK_DL"));    // e0ee463c93c4, v5.12
  EXPECT_TRUE(has(513, "ALT_PERIOD"));   // 0c2de3f054a5, v5.13
  EXPECT_FALSE(has(606, "ALT_PERIOD"));  // 5e963f2bd465, v6.6
  EXPECT_FALSE(has(605, "PLACE_LAG"));   // 86bfbb7ce4f6, v6.6
  EXPECT_TRUE(has(606, "HZ_BW"));        // 88c56cfeaec4, v6.6
  EXPECT_TRUE(mainline_features(502).empty());
  EXPECT_TRUE(mainline_features(607).empty());
  // RT_RUNTIME_SHARE's default turned off in v5.10 (2586af1ac187), SIS_PROP's in v6.0.
  for (auto [version, rt_share, sis_prop] :
       {std::tuple{509, true, true}, {510, false, true}, {600, false, false}})
    for (const MainlineFlag& f : mainline_features(version)) {
      if (std::string(f.name) == "RT_RUNTIME_SHARE") {
        EXPECT_EQ(f.on, rt_share) << version;
      }
      if (std::string(f.name) == "SIS_PROP") {
        EXPECT_EQ(f.on, sis_prop) << version;
      }
    }
}

TEST(Features, OnlyEevdfReadsEevdfsFlagsAndOnlyCfsCfss) {
  const Profile v60 = make_profile("v6.0"), v66 = make_profile("v6.6");
  for (Feature f : {Feature::PLACE_LAG, Feature::PLACE_DEADLINE_INITIAL, Feature::RUN_TO_PARITY}) {
    EXPECT_FALSE(profile_reads(v60, f)) << feature_name(f);
    EXPECT_TRUE(profile_reads(v66, f)) << feature_name(f);
  }
  for (Feature f : {Feature::GENTLE_FAIR_SLEEPERS, Feature::START_DEBIT, Feature::LAST_BUDDY,
                    Feature::ALT_PERIOD, Feature::BASE_SLICE}) {
    EXPECT_TRUE(profile_reads(v60, f)) << feature_name(f);
    EXPECT_FALSE(profile_reads(v66, f)) << feature_name(f);
  }
  EXPECT_TRUE(profile_reads(v66, Feature::NEXT_BUDDY));
  // v5.12 removed SIS_AVG_CPU: the v5.4 SIS_PROP reads it, v5.13's wake_avg_idle form has none.
  EXPECT_TRUE(profile_reads(make_profile("v5.7"), Feature::SIS_AVG_CPU));
  EXPECT_FALSE(profile_reads(make_profile("v5.17"), Feature::SIS_AVG_CPU));
  EXPECT_FALSE(profile_reads(v60, Feature::SIS_AVG_CPU));
  // A flag the profile does not read warns only when it is set away from the profile's default.
  Profile p = v66;
  apply_features(p.features, "NO_START_DEBIT,NO_ALT_PERIOD", "--features", &p.unmodelled);
  EXPECT_TRUE(feature_warnings(p).empty());
  apply_features(p.features, "START_DEBIT", "--features", &p.unmodelled);
  EXPECT_EQ(feature_warnings(p).size(), 1u);
}

TEST(Features, UnmodelledFlagsAreKeptApartFromTheModels) {
  Profile p = make_profile("v5.4");
  const FeatureSet before = p.features;
  apply_features(p.features, "LB_MIN NO_RT_PUSH_IPI,\tHZ_BW\n", "--features", &p.unmodelled);
  EXPECT_EQ(p.features, before);
  EXPECT_EQ(feature_warnings(p).size(), 3u);
  apply_features(p.features, "NO_LB_MIN,RT_PUSH_IPI", "--features", &p.unmodelled);
  ASSERT_EQ(feature_warnings(p).size(), 1u);  // HZ_BW: not a v5.4 flag
  EXPECT_NE(feature_warnings(p)[0].find("HZ_BW"), std::string::npos);
  // Without somewhere to keep them they are accepted and dropped.
  FeatureSet f = before;
  apply_features(f, "HRTICK", "--features");
  EXPECT_EQ(f, before);
}

}  // namespace
