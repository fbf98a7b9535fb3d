// textogram (2017 rules) against the outputs posted on LKML in 2019 (Viresh Kumar, "Re: [RFC
// V2 0/2] sched/fair: Fallback to sched-idle CPU for better performance", 15 May 2019), with
// inputs reconstructed from the posted bin counts.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "metrics/textogram.h"

namespace schedtwin::metrics {
namespace {

void add(std::vector<double>& v, int count, double value) { v.insert(v.end(), count, value); }

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

TEST(Textogram, Test1EightCfsThreadsAsPosted) {
  // Posted counts (8 CFS threads, no SCHED_IDLE): 0-100: 3688, 100-200: 1253, 200-300: 149,
  // 300-400: 22, 800-900: 0, 900-1000: 1, >1000: 17, N = 5136. The 6 values left for
  // 400-800 are not in the post; here 3, 1, 1, 1. No value equals 1000, so the in-range
  // total is 5136 - 17 = 5119: 3688/5119 -> 72 %, 1253/5119 -> 24 %.
  std::vector<double> v;
  add(v, 3688, 50);
  add(v, 1253, 150);
  add(v, 149, 250);
  add(v, 22, 350);
  add(v, 3, 450);
  add(v, 1, 550);
  add(v, 1, 650);
  add(v, 1, 750);
  add(v, 1, 950);
  add(v, 17, 2452);
  ASSERT_EQ(v.size(), 5136u);
  const auto out = lines(textogram(v, 0, 1000, 10));
  ASSERT_EQ(out.size(), 11u);
  // Lines copied from the post.
  EXPECT_EQ(out[0],
            "   0 - 100  : ##################################################   72% (3688)");
  EXPECT_EQ(out[1],
            " 100 - 200  : ################                                     24% (1253)");
  EXPECT_EQ(rstrip(out[8]), " 800 - 900  :");  // the mail dropped the bar's padding
  EXPECT_EQ(out[9], " 900 - 1000 :                                                       0% (1)");
  EXPECT_EQ(out[10], "      >1000 : 0% (17)");
  // Worked by hand: bar int(50*149/3688) = 2, pct int(100*149/5119) = 2.
  EXPECT_EQ(out[2], " 200 - 300  : ##                                                    2% (149)");
  EXPECT_EQ(out[3], " 300 - 400  :                                                       0% (22)");
  // An empty bin prints the label, " : " and the 50-space bar, nothing after.
  EXPECT_EQ(out[8], " 800 - 900  : " + std::string(50, ' '));
}

TEST(Textogram, Test2AValueEqualToZCountsOnlyInTheDenominator) {
  // Posted (8 CFS + 5 SCHED_IDLE, without the change): 0-100: 3102, 100-200: 148,
  // 200-300: 41, ..., >1000: 1218, N = 4710; the bins sum to 3491, so one value is exactly
  // 1000: in range but in no bin. n_in_range = 3492: 3102 -> 88 %, 1218 -> 34 %.
  // (The split of the remaining 200 values over 300-1000 is not in the post.)
  std::vector<double> v;
  add(v, 3102, 10);
  add(v, 148, 150);
  add(v, 41, 250);
  add(v, 60, 350);
  add(v, 40, 450);
  add(v, 30, 550);
  add(v, 30, 650);
  add(v, 20, 750);
  add(v, 10, 850);
  add(v, 10, 950);
  add(v, 1, 1000);
  add(v, 1218, 67664);
  ASSERT_EQ(v.size(), 4710u);
  const auto out = lines(textogram(v, 0, 1000, 10));
  ASSERT_EQ(out.size(), 11u);
  EXPECT_EQ(out[0],
            "   0 - 100  : ##################################################   88% (3102)");
  // 148: bar int(50*148/3102) = 2, pct int(14800/3492) = 4.
  EXPECT_EQ(out[1], " 100 - 200  : ##                                                    4% (148)");
  // 900-1000 holds the 10 values at 950 but not the 1000.
  EXPECT_EQ(out[9], " 900 - 1000 :                                                       0% (10)");
  EXPECT_EQ(out[10], "      >1000 : 34% (1218)");
}

TEST(Textogram, HalfOpenBinsTailsAndDecimalLabels) {
  // a=0, z=1, 2 bins: edges 0, 0.5, 1 (step < 1 -> one decimal, w = 3, label width 9).
  // -1 is the left tail, 2 the right tail; 0 and 0.3 -> bin 0, 0.5 -> bin 1 (half-open),
  // 1.0 -> no bin but in range: n_in_range = 4.
  const std::vector<double> v = {-1, 0, 0.3, 0.5, 1.0, 2};
  EXPECT_EQ(textogram(v, 0, 1, 2, 10),
            "     <0.0 : 25% (1)\n"
            "0.0 - 0.5 : ##########   50% (2)\n"
            "0.5 - 1.0 : #####        25% (1)\n"
            "     >1.0 : 25% (1)\n");
}

TEST(Textogram, LabelsRoundHalfToEvenLikePython) {
  // Edges 0, .25, .5, .75, 1 print as Python's '{:.1f}' does: 0.2 and 0.8.
  const auto out = lines(textogram({0.1}, 0, 1, 4, 4));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0], "0.0 - 0.2 : ####  100% (1)");
  EXPECT_EQ(out[1], "0.2 - 0.5 :     ");
  EXPECT_EQ(out[3], "0.8 - 1.0 :     ");
}

TEST(Textogram, NothingInRange) {
  // No bin has a value: empty bars, tail percentage 0 (the 2017 tool would divide by 0).
  EXPECT_EQ(textogram({-5, 20}, 0, 10, 2, 3),
            "     <0 : 0% (1)\n"
            " 0 - 5  :    \n"
            " 5 - 10 :    \n"
            "    >10 : 0% (1)\n");
}

TEST(Textogram, RejectsBadParameters) {
  EXPECT_THROW(textogram({1}, 0, 10, 0), std::invalid_argument);
  EXPECT_THROW(textogram({1}, 10, 10, 2), std::invalid_argument);
  EXPECT_THROW(textogram({1}, 0, 10, 2, -1), std::invalid_argument);
}

}  // namespace
}  // namespace schedtwin::metrics
