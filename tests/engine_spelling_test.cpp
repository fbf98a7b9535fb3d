// closest_spelling: the "did you mean" of unknown-name errors.
#include <gtest/gtest.h>

#include "engine/spelling.h"

namespace {

using schedtwin::engine::closest_spelling;
using schedtwin::engine::spelling_distance;

TEST(Spelling, DistanceCountsEditsIgnoringCaseAndSwapsAsOne) {
  EXPECT_EQ(spelling_distance("SIS_PROP", "SIS_PROP"), 0);
  EXPECT_EQ(spelling_distance("sis_prop", "SIS_PROP"), 0);
  EXPECT_EQ(spelling_distance("SIS_PORP", "SIS_PROP"), 1);   // adjacent swap
  EXPECT_EQ(spelling_distance("SIS_PROPP", "SIS_PROP"), 1);  // insertion
  EXPECT_EQ(spelling_distance("SIS_PRO", "SIS_PROP"), 1);    // deletion
  EXPECT_EQ(spelling_distance("SIS_UTIL", "SIS_PROP"), 4);   // four substitutions
  EXPECT_EQ(spelling_distance("", "ABC"), 3);
}

TEST(Spelling, SuggestsOnlyAClearWinnerWithinTheLimit) {
  const std::vector<std::string_view> known = {"SIS_PROP", "SIS_UTIL", "SIS_CORE", "HRTICK",
                                               "HRTICK_DL"};
  EXPECT_EQ(closest_spelling("SIS_PORP", known), "SIS_PROP");
  EXPECT_EQ(closest_spelling("sis_core", known), "SIS_CORE");
  EXPECT_EQ(closest_spelling("HRTICK_D", known), "HRTICK_DL");  // 1 edit; HRTICK is 2
  EXPECT_EQ(closest_spelling("SIS_XXXX", known), "");           // 4 edits from all
  EXPECT_EQ(closest_spelling("SIS_CORP", known), "SIS_CORE");   // SIS_PROP is 3 edits away
  EXPECT_EQ(closest_spelling("HRTICK_X", known), "");           // 2 edits from two: no guess
  EXPECT_EQ(closest_spelling("AB", {"AC", "XY"}), "AC");        // short: one edit at most
  EXPECT_EQ(closest_spelling("AB", {"CD"}), "");
}

}  // namespace
