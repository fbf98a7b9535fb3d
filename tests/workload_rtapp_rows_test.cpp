// How the rt-app Runner keeps its log rows (RowDetail): the summary columns (wu_lat, slack)
// read back row by row are the same with either detail, SummaryOnly refuses what needs the
// full rows, and release_rows frees one thread's rows. Expected figures are worked out by
// hand on zero-cost flat machines, where a sleeping CFS thread wakes exactly its 50 µs timer
// slack after the programmed time (as in workload_rtapp_test.cpp).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "workload/json_relaxed.h"
#include "workload/rtapp.h"

using namespace schedtwin;
using namespace schedtwin::workload;

namespace {

// Parses `json` and runs it on `m` until `end` with the given row detail.
struct RowsRun {
  machine::Machine m;
  rtapp::Config cfg;
  kernel::Kernel k;
  rtapp::Runner run;
  RowsRun(const std::string& json, machine::Machine mach, Time end, rtapp::RowDetail detail)
      : m(std::move(mach)),
        cfg(rtapp::parse(parse_relaxed_json(json, "t.json"), "t.json", m.nr_cpus())),
        k(m, config()),
        run(cfg, k, detail) {
    k.run_until(end);
  }
  static kernel::Config config() {
    kernel::Config c;
    c.profile = kernel::make_profile("v5.4");
    return c;
  }
};

std::vector<std::pair<std::uint64_t, std::int64_t>> pairs(const std::vector<rtapp::RowFigures>& v) {
  std::vector<std::pair<std::uint64_t, std::int64_t>> out;
  for (const auto& f : v) out.emplace_back(f.wu_lat, f.slack);
  return out;
}

constexpr rtapp::RowDetail kBoth[] = {rtapp::RowDetail::Full, rtapp::RowDetail::SummaryOnly};

}  // namespace

// run 5333 + timer 7777 alone on one CPU for 1 s: row 0 has slack 7777 - 5333 = 2444 and
// wu_lat 50; every later row starts at the 50 µs late wakeup, so slack 2444 - 50 = 2394.
// 7827 + 7777 k < 1e6 for k = 0..127: 128 rows.
TEST(RtAppRows, SummaryColumnsAreTheSameWithEitherDetail) {
  std::vector<std::pair<std::uint64_t, std::int64_t>> want(128, {50, 2394});
  want[0] = {50, 2444};
  for (rtapp::RowDetail d : kBoth) {
    RowsRun r(
        R"({"tasks": {"cfs_thread": {"run": 5333, "timer": {"ref": "unique", "period": 7777}}}})",
        testutil::flat_machine(1, 1), kNsPerSec, d);
    ASSERT_EQ(r.run.nr_threads(), 1);
    EXPECT_EQ(r.run.nr_rows(0), 128u);
    EXPECT_EQ(pairs(r.run.row_figures(0)), want);
  }
}

// run 9000 > period 7777 with an absolute timer: every timer has expired when reached
// (wu_lat 0) and t_next stays on the 7777 grid, so row k's slack is -1223 (k + 1): negative
// and falling, 9000 k < 1e6 gives 111 rows. With Full the log rows say the same.
TEST(RtAppRows, NegativeFallingSlackReadsBackExactly) {
  const std::string json =
      R"({"tasks": {"a": {"run": 9000, "timer": {"ref": "unique", "period": 7777, "mode": "absolute"}}}})";
  std::vector<std::pair<std::uint64_t, std::int64_t>> want;
  for (std::int64_t k = 0; k < 111; ++k) want.emplace_back(0, -1223 * (k + 1));
  for (rtapp::RowDetail d : kBoth) {
    RowsRun r(json, testutil::flat_machine(1, 1), kNsPerSec, d);
    EXPECT_EQ(pairs(r.run.row_figures(0)), want);
  }
  RowsRun full(json, testutil::flat_machine(1, 1), kNsPerSec, rtapp::RowDetail::Full);
  const auto rows = full.run.results().at(0).rows;
  ASSERT_EQ(rows.size(), 111u);
  EXPECT_EQ(rows[110].slack, -1223 * 111);
  EXPECT_EQ(rows[110].start, 990000u);
}

// Values far from the small ones periodic threads give: a 1e9 µs (the limit) unique timer,
// run 10, two loops. Row 0: slack 1e9 - 10, wakes 50 µs late; row 1 starts at 1e9 + 50 µs,
// runs to 1e9 + 60, t_next = 2e9: slack 999 999 940.
TEST(RtAppRows, LargeValuesReadBackExactly) {
  const std::string json =
      R"({"tasks": {"t": {"loop": 2, "run": 10, "timer": {"ref": "unique", "period": 1000000000}}}})";
  for (rtapp::RowDetail d : kBoth) {
    RowsRun r(json, testutil::flat_machine(1, 1), 2100 * kNsPerSec, d);
    EXPECT_EQ(pairs(r.run.row_figures(0)), (std::vector<std::pair<std::uint64_t, std::int64_t>>{
                                               {50, 999'999'990}, {50, 999'999'940}}));
  }
}

// SummaryOnly keeps no other column: what needs them refuses with a logic_error, while the
// per-thread figures stay available.
TEST(RtAppRows, SummaryOnlyRefusesFullRows) {
  RowsRun r(R"({"tasks": {"t": {"loop": 3, "run": 1000}}})", testutil::flat_machine(1, 1),
            kNsPerSec, rtapp::RowDetail::SummaryOnly);
  EXPECT_EQ(r.run.nr_rows(0), 3u);
  EXPECT_THROW(r.run.results(), std::logic_error);
  EXPECT_THROW(r.run.write_logs("/nonexistent"), std::logic_error);
  EXPECT_THROW(r.run.nr_rows(1), std::out_of_range);
}

// Two tasks of one thread each on one CPU: the threads are numbered in file order, forked on
// CPU 0, and release_rows empties only the thread it names.
TEST(RtAppRows, ThreadsByIndexAndReleaseRows) {
  for (rtapp::RowDetail d : kBoth) {
    RowsRun r(R"({"tasks": {"a": {"loop": 2, "run": 1000}, "b": {"loop": 3, "run": 1000}}})",
              testutil::flat_machine(1, 1), kNsPerSec, d);
    ASSERT_EQ(r.run.nr_threads(), 2);
    EXPECT_EQ(r.run.thread_task(0), "a");
    EXPECT_EQ(r.run.thread_task(1), "b");
    EXPECT_EQ(r.run.thread_fork_cpu(1), 0);
    EXPECT_EQ(r.run.nr_rows(0), 2u);
    EXPECT_EQ(r.run.nr_rows(1), 3u);
    r.run.release_rows(0);
    EXPECT_EQ(r.run.nr_rows(0), 0u);
    EXPECT_TRUE(r.run.row_figures(0).empty());
    EXPECT_EQ(r.run.row_figures(1).size(), 3u);
  }
}
