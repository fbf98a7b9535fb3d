// The event queue's contract: earliest time first, equal times in slot id order, re-arming
// and cancelling in place — checked against a reference order kept by the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "engine/event_queue.h"
#include "engine/rng.h"

namespace {

using schedtwin::engine::EventQueue;
using schedtwin::engine::Lane;
using schedtwin::engine::SlotId;

std::vector<SlotId> drain(EventQueue& q) {
  std::vector<SlotId> order;
  while (!q.empty()) order.push_back(q.pop());
  return order;
}

TEST(EventQueue, EqualTimesFireInSlotOrder) {
  EventQueue q;
  std::vector<SlotId> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(q.add_slot(0, static_cast<std::uint32_t>(i)));
  // Arm in a shuffled order, all at t = 100: they fire by slot id, whatever the arming order.
  std::vector<SlotId> armed = {7, 3, 39, 0, 12, 25, 1, 38, 2, 20};
  for (SlotId id : armed) q.arm(id, 100);
  std::vector<SlotId> want = armed;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(drain(q), want);
}

TEST(EventQueue, RearmKeepsSlotOrderWithinItsTime) {
  EventQueue q;
  SlotId a = q.add_slot(0, 0), b = q.add_slot(0, 1), c = q.add_slot(0, 2);
  q.arm(b, 50);
  q.arm(a, 50);
  q.arm(c, 10);
  q.arm(b, 40);
  q.arm(b, 50);  // re-armed at the same time as a: still after a, whose id is lower
  q.cancel(c);
  EXPECT_FALSE(q.armed(c));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(drain(q), (std::vector<SlotId>{a, b}));
  EXPECT_FALSE(q.armed(a));
}

// The two lanes are one order: equal times fire in slot order whichever lane a slot is in.
TEST(EventQueue, EqualTimesFireInSlotOrderAcrossLanes) {
  EventQueue q;
  std::vector<SlotId> ids;
  for (int i = 0; i < 10; ++i)
    ids.push_back(q.add_slot(0, static_cast<std::uint32_t>(i), i % 3 ? Lane::Near : Lane::Far));
  std::vector<SlotId> armed = {9, 0, 4, 3, 8, 6, 1};  // far: 9, 0, 3, 6
  for (SlotId id : armed) q.arm(id, 100);
  q.arm(ids[2], 99);
  q.arm(ids[5], 101);
  EXPECT_EQ(q.peek(), ids[2]);
  std::vector<SlotId> want = {2};
  std::sort(armed.begin(), armed.end());
  want.insert(want.end(), armed.begin(), armed.end());
  want.push_back(5);
  EXPECT_EQ(drain(q), want);
}

// Random arm / re-arm / cancel / pop against a sorted reference of (when, slot id).
// Slots alternate between the lanes when `lanes` is set.
void random_against_reference(EventQueue& q, int slots, int steps, bool lanes = false) {
  schedtwin::engine::Rng rng(42);
  std::vector<SlotId> ids;
  for (int i = 0; i < slots; ++i)
    ids.push_back(
        q.add_slot(0, static_cast<std::uint32_t>(i), lanes && i % 2 ? Lane::Far : Lane::Near));
  std::vector<std::pair<long, SlotId>> ref;  // (when, id)
  long now = 0;
  for (int step = 0; step < steps; ++step) {
    SlotId id = ids[rng.next() % ids.size()];
    auto it = std::find_if(ref.begin(), ref.end(), [&](const auto& e) { return e.second == id; });
    switch (rng.next() % 4) {
      case 0:
      case 1: {
        long when = now + static_cast<long>(rng.next() % 8);  // many equal times
        if (it != ref.end()) ref.erase(it);
        ref.emplace_back(when, id);
        q.arm(id, when);
        break;
      }
      case 2:
        if (it != ref.end()) ref.erase(it);
        q.cancel(id);
        break;
      case 3:
        if (ref.empty()) break;
        auto first = std::min_element(ref.begin(), ref.end());
        ASSERT_EQ(q.next_time(), first->first);
        ASSERT_EQ(q.pop(), first->second) << "step " << step;
        now = first->first;
        ref.erase(first);
        break;
    }
    ASSERT_EQ(q.size(), ref.size());
  }
}

TEST(EventQueue, RandomOperationsMatchReference) {
  EventQueue q;
  random_against_reference(q, 300, 20000);
}

TEST(EventQueue, RandomOperationsOverBothLanesMatchReference) {
  EventQueue q;
  random_against_reference(q, 300, 20000, true);
}

}  // namespace
