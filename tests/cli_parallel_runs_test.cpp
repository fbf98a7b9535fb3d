// parallel_runs: results in index order whatever the number of threads, and the error of the
// lowest failing index.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cli/parallel_runs.h"

using schedtwin::cli::parallel_runs;

TEST(ParallelRuns, ResultsComeInIndexOrder) {
  for (int jobs : {1, 2, 7, 64}) {
    const auto v = parallel_runs(100, jobs, [](std::size_t i) { return 3 * i + 1; });
    ASSERT_EQ(v.size(), 100u) << jobs;
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], 3 * i + 1) << jobs;
  }
  EXPECT_TRUE(parallel_runs(0, 4, [](std::size_t) { return 1; }).empty());
}

TEST(ParallelRuns, TheLowestFailingIndexIsReported) {
  for (int jobs : {1, 2, 8}) {
    try {
      parallel_runs(40, jobs, [](std::size_t i) -> int {
        if (i == 5 || i == 6 || i == 30) throw std::runtime_error("run " + std::to_string(i));
        return 0;
      });
      ADD_FAILURE() << "no exception with " << jobs << " jobs";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "run 5") << jobs;
    }
  }
}
