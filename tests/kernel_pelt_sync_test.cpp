// How a cfs_rq's *_sum follows its *_avg when an entity leaves or a group entity's signals
// change (fair.c): up to v5.12 (our v5.7 profile) the sums are only subtracted from; v5.17's
// "relax the sync" series (2d02fa8cc21a, 98b0d890220d, 7ceb77103001, 95246d1ec80b) keeps
// sum >= avg * PELT_MIN_DIVIDER with max_t(u32, ...) and passes group entities' changes of
// sum on; v5.18's 40f5aa4c5eae gives an attached entity load_sum >= 1. Expected values are
// the kernel's integer arithmetic worked by hand, with period_contrib 0, so the divider is
// PELT_MIN_DIVIDER = 47742 - 1024 = 46718.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kernel/kernel_impl.h"
#include "kernel_test_util.h"

using namespace schedtwin;
using namespace schedtwin::kernel;
using schedtwin::testutil::flat_machine;

namespace {

constexpr std::uint64_t kDiv = 46718;
static_assert(PELT_MIN_DIVIDER == kDiv);

struct OneCpu {
  explicit OneCpu(const char* profile) : k(flat_machine(1, 1), testutil::checked_config(profile)) {}
  KernelImpl k;
  cfs_rq cfs;
  sched_entity se;
};

}  // namespace

// A cfs_rq whose load_sum fell 100 short of its remaining load_avg's lower bound: v5.7
// keeps the 100, v5.17 lifts it to 1024 * 46718.
TEST(PeltSync, DequeueKeepsLoadSumAboveItsLowerBoundFromV517) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    OneCpu t(profile);
    t.cfs.avg.load_avg = 2048;
    t.cfs.avg.load_sum = 1024 * 47742 + 100;
    t.se.load.weight = 1024;
    t.se.avg.load_avg = 1024;
    t.se.avg.load_sum = 47742;
    t.k.dequeue_load_avg(t.cfs, t.se);
    EXPECT_EQ(t.cfs.avg.load_avg, 1024u) << profile;
    EXPECT_EQ(t.cfs.avg.load_sum, std::string(profile) == "v5.7" ? 100u : 1024 * kDiv) << profile;
  }
}

// max_t(u32, ...): a load_sum above 2^32 (100 always-runnable nice-0 tasks) is truncated to
// its low 32 bits, as every kernel from v5.17 to v6.6 does.
TEST(PeltSync, TheLowerBoundTruncatesToThirtyTwoBitsAsMaxTDoes) {
  OneCpu t("v5.17");
  t.cfs.avg.load_avg = 100 * 1024;
  t.cfs.avg.load_sum = 100 * 1024 * kDiv + 7;  // 4 783 923 207
  t.se.load.weight = 1024;
  t.k.dequeue_load_avg(t.cfs, t.se);  // removes nothing: se's signals are 0
  EXPECT_EQ(t.cfs.avg.load_sum, 100 * 1024 * kDiv + 7 - (std::uint64_t{1} << 32));
}

// The removed path of update_cfs_rq_load_avg: 300 of util_avg 500 leave, and the util_sum
// is 1000 above what the 300 take. v5.7 keeps 1000; v5.17 keeps 200 * 46718.
TEST(PeltSync, RemovedUtilKeepsTheLowerBoundFromV517) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    OneCpu t(profile);
    t.cfs.avg.last_update_time = std::uint64_t{1} << 30;  // no time passes: no decay
    t.cfs.avg.util_avg = 500;
    t.cfs.avg.util_sum = 300 * kDiv + 1000;
    t.cfs.removed.nr = 1;
    t.cfs.removed.util_avg = 300;
    EXPECT_TRUE(t.k.update_cfs_rq_load_avg(std::uint64_t{1} << 30, t.cfs));
    EXPECT_EQ(t.cfs.avg.util_avg, 200u) << profile;
    EXPECT_EQ(t.cfs.avg.util_sum, std::string(profile) == "v5.7" ? 1000u : 200 * kDiv) << profile;
  }
}

// update_tg_cfs_util: the group's util_avg rose from 400 to 600. The parent cfs_rq had
// accumulated 50 000 beyond its util_avg * divider since the last period boundary. v5.7
// syncs the parent to 600 * 46718 and drops them; v5.17 adds the entity's change of sum
// (600 * 46718 - (400 * 46718 + 30 000)) and keeps them.
TEST(PeltSync, GroupUtilChangePassesTheSumDifferenceOnFromV517) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    OneCpu t(profile);
    cfs_rq gcfs;
    gcfs.avg.util_avg = 600;
    t.se.avg.util_avg = 400;
    t.se.avg.util_sum = 400 * kDiv + 30000;
    t.cfs.avg.util_avg = 400;
    t.cfs.avg.util_sum = 400 * kDiv + 30000 + 50000;
    t.k.update_tg_cfs_util(t.cfs, t.se, gcfs, kDiv);
    EXPECT_EQ(t.se.avg.util_avg, 600u);
    EXPECT_EQ(t.se.avg.util_sum, 600 * kDiv);
    EXPECT_EQ(t.cfs.avg.util_avg, 600u);
    EXPECT_EQ(t.cfs.avg.util_sum, std::string(profile) == "v5.7" ? 600 * kDiv : 600 * kDiv + 50000)
        << profile;
  }
}

// update_tg_cfs_load: 5 more runnable PELT-us on a group entity with load_sum 20 000 give
// load_avg 1024 * 20 005 / 46718 = 438, unchanged from 1024 * 20 000 / 46718 = 438. v5.7
// stores the new load_sum anyway; v5.17 returns before touching it.
TEST(PeltSync, UnchangedGroupLoadAvgLeavesLoadSumFromV517) {
  for (const char* profile : {"v5.7", "v5.17"}) {
    OneCpu t(profile);
    cfs_rq gcfs;
    gcfs.prop_runnable_sum = 5;
    t.se.load.weight = 1024;
    t.se.avg.load_sum = 20000;
    t.se.avg.load_avg = 438;
    t.k.update_tg_cfs_load(t.cfs, t.se, gcfs, kDiv);
    EXPECT_EQ(gcfs.prop_runnable_sum, 0);
    EXPECT_EQ(t.se.avg.load_avg, 438u);
    EXPECT_EQ(t.se.avg.load_sum, std::string(profile) == "v5.7" ? 20005u : 20000u) << profile;
  }
}

// attach_entity_load_avg of a nice -20 entity (weight 88761) with load_avg 1: 46718 / 88761
// rounds to a load_sum of 0 up to v5.17, so the cfs_rq has load_avg 1 over load_sum 0;
// from v5.18 (our v6.0) load_sum is 1 and the cfs_rq's is 88761.
TEST(PeltSync, AttachGivesASmallLoadALoadSumOfOneFromV518) {
  for (const char* profile : {"v5.17", "v6.0"}) {
    OneCpu t(profile);
    t.se.load.weight = 88761;
    t.se.avg.load_avg = 1;
    t.k.attach_entity_load_avg(t.cfs, t.se);
    const bool v518 = std::string(profile) == "v6.0";
    EXPECT_EQ(t.se.avg.load_sum, v518 ? 1u : 0u) << profile;
    EXPECT_EQ(t.cfs.avg.load_avg, 1u);
    EXPECT_EQ(t.cfs.avg.load_sum, v518 ? 88761u : 0u) << profile;
  }
}
