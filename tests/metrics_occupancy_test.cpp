// OccupancyRecorder: per-CPU time by policy in bins, fed hand-made sched_switch events (no
// simulation runs: the recorder only reads task policies from the Kernel).
#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "metrics/occupancy.h"

namespace schedtwin {
namespace {

using kernel::kNoTask;
using kernel::Policy;
using kernel::SwitchState;

struct Fixture {
  machine::Machine m = testutil::flat_machine(1, 2);
  kernel::Kernel k{m, kernel::Config{kernel::make_profile("v5.4")}};
  testutil::BusyBody body;
  kernel::TaskId normal, idle;
  Fixture() {
    normal = k.create_task(kernel::TaskAttr{.name = "normal"}, &body);
    idle = k.create_task(kernel::TaskAttr{.name = "idler", .policy = Policy::Idle}, &body);
  }
};

TEST(Occupancy, SplitsStretchesAcrossBinsByPolicy) {
  Fixture f;
  metrics::OccupancyRecorder r(f.k, ms(10));
  // CPU 0: normal runs 5-25 ms, then idle-policy task 25-28 ms, then the idle task.
  r.sched_switch(ms(5), 0, kNoTask, SwitchState::Running, f.normal);
  r.sched_switch(ms(25), 0, f.normal, SwitchState::Interruptible, f.idle);
  r.sched_switch(ms(28), 0, f.idle, SwitchState::Running, kNoTask);
  // CPU 1: the idle-policy task from 12 ms to the end (35 ms).
  r.sched_switch(ms(12), 1, kNoTask, SwitchState::Running, f.idle);
  metrics::Occupancy o = r.finish(ms(35));

  ASSERT_EQ(o.nr_bins(), 4u);  // [0,10) [10,20) [20,30) [30,35)
  EXPECT_EQ(o.bin_length(0), ms(10));
  EXPECT_EQ(o.bin_length(3), ms(5));
  EXPECT_EQ(o.ran(0, 0, Policy::Normal), ms(5));
  EXPECT_EQ(o.ran(0, 1, Policy::Normal), ms(10));
  EXPECT_EQ(o.ran(0, 2, Policy::Normal), ms(5));
  EXPECT_EQ(o.ran(0, 2, Policy::Idle), ms(3));
  EXPECT_EQ(o.ran(0, 3, Policy::Normal), 0);
  EXPECT_EQ(o.ran(0, 3, Policy::Idle), 0);
  EXPECT_EQ(o.ran(1, 0, Policy::Idle), 0);
  EXPECT_EQ(o.ran(1, 1, Policy::Idle), ms(8));
  EXPECT_EQ(o.ran(1, 2, Policy::Idle), ms(10));
  EXPECT_EQ(o.ran(1, 3, Policy::Idle), ms(5));
  EXPECT_EQ(o.ran(1, 3, Policy::Batch), 0);
}

TEST(Occupancy, JsonSharesOfEachBin) {
  Fixture f;
  metrics::OccupancyRecorder r(f.k, ms(10));
  r.sched_switch(ms(5), 0, kNoTask, SwitchState::Running, f.normal);
  r.sched_switch(ms(25), 0, f.normal, SwitchState::Interruptible, f.idle);
  r.sched_switch(ms(28), 0, f.idle, SwitchState::Running, kNoTask);
  nlohmann::json j = metrics::occupancy_json(r.finish(ms(35)));
  EXPECT_EQ(j["bin_ms"], 10.0);
  EXPECT_EQ(j["end_s"], 0.035);
  EXPECT_EQ(j["cpus"], 2);
  // SCHED_BATCH never ran, so it is not a class.
  EXPECT_EQ(j["classes"], nlohmann::json({"SCHED_OTHER", "SCHED_IDLE", "idle"}));
  ASSERT_EQ(j["rows"].size(), 8u);          // 4 bins x 2 CPUs, bin-major
  const nlohmann::json& b2 = j["rows"][4];  // bin 2, CPU 0: 5 ms normal, 3 ms idle policy
  EXPECT_EQ(b2["cpu"], 0);
  EXPECT_EQ(b2["t_s"], 0.02);
  EXPECT_EQ(b2["SCHED_OTHER"], 0.5);
  EXPECT_EQ(b2["SCHED_IDLE"], 0.3);
  EXPECT_EQ(b2["idle"], 0.2);
  EXPECT_FALSE(b2.contains("SCHED_BATCH"));
  const nlohmann::json& b3 = j["rows"][7];  // the partial last bin of CPU 1: all idle
  EXPECT_EQ(b3["cpu"], 1);
  EXPECT_EQ(b3["idle"], 1.0);
}

TEST(Occupancy, RejectsAnEmptyBin) {
  Fixture f;
  EXPECT_THROW(metrics::OccupancyRecorder(f.k, 0), std::invalid_argument);
}

}  // namespace
}  // namespace schedtwin
