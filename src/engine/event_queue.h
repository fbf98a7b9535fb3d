// Event queue of the discrete-event engine.
//
// Events live in *slots* allocated once at set-up (one per CPU tick, per task
// timer, ...). A slot is armed with a time, re-armed or cancelled in O(log n)
// and never allocates: the queue is an indexed 4-ary min-heap over slot ids (half the
// levels of a binary heap; the four children share a cache line or two).
// Equal times are ordered by slot id, so a run is reproducible and independent of heap
// layout, and an event's place in the order follows from its time and slot alone: a step
// committed lazily, without ever entering the queue (src/kernel/repeat.cpp), knows where
// it stands among the events that did.
//
// Each slot belongs to one of two lanes, each its own heap: the near lane for events that
// are re-armed a few microseconds ahead many times a millisecond (a CPU's step), the far
// lane for those armed milliseconds ahead (ticks, timers). The order is the same total order
// of (time, slot id) over both; the lanes only keep the far events out of the heap the near
// ones are sifted through at every dispatch.
#pragma once
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/time.h"

namespace schedtwin::engine {

using SlotId = std::uint32_t;

enum class Lane : std::uint8_t { Near, Far };

struct Slot {
  Time when = kTimeNever;
  std::uint32_t kind = 0;    // meaning belongs to the owner of the queue
  std::uint32_t target = 0;  // e.g. a CPU or task id
  std::int32_t heap_pos = -1;
  Lane lane = Lane::Near;
};

class EventQueue {
 public:
  SlotId add_slot(std::uint32_t kind, std::uint32_t target, Lane lane = Lane::Near) {
    slots_.push_back(Slot{kTimeNever, kind, target, -1, lane});
    // A heap never holds more entries than its lane has slots: arming never allocates.
    const std::size_t in_lane = ++lane_slots_[lane == Lane::Near ? 0 : 1];
    if (heap(lane).capacity() < in_lane) heap(lane).reserve(std::max<std::size_t>(64, 2 * in_lane));
    return static_cast<SlotId>(slots_.size() - 1);
  }
  void reserve(std::size_t n) { slots_.reserve(n); }

  // Arms (or re-arms) a slot to fire at `when`.
  void arm(SlotId id, Time when) {
    assert(when >= 0);  // less() compares times as unsigned
    Slot& s = slots_[id];
    s.when = when;
    Entry e{when, id};
    std::vector<Entry>& h = heap(s.lane);
    if (s.heap_pos < 0) {
      h.push_back(e);
      sift_up(h, h.size() - 1, e);
    } else {
      std::size_t pos = static_cast<std::size_t>(s.heap_pos);
      if (pos > 0 && less(e, h[(pos - 1) / kArity]))
        sift_up(h, pos, e);
      else
        sift_down(h, pos, e);
    }
  }

  void cancel(SlotId id) {
    Slot& s = slots_[id];
    if (s.heap_pos < 0) return;
    std::size_t pos = static_cast<std::size_t>(s.heap_pos);
    s.heap_pos = -1;
    s.when = kTimeNever;
    std::vector<Entry>& h = heap(s.lane);
    Entry last = h.back();
    h.pop_back();
    if (pos < h.size()) {
      if (pos > 0 && less(last, h[(pos - 1) / kArity]))
        sift_up(h, pos, last);
      else
        sift_down(h, pos, last);
    }
  }

  bool armed(SlotId id) const { return slots_[id].heap_pos >= 0; }
  Time when(SlotId id) const { return slots_[id].when; }
  const Slot& slot(SlotId id) const { return slots_[id]; }
  bool empty() const { return near_.empty() && far_.empty(); }
  std::size_t size() const { return near_.size() + far_.size(); }
  Time next_time() const { return empty() ? kTimeNever : first_heap().front().when; }
  // The earliest slot, left armed; the queue must not be empty.
  SlotId peek() const { return first_heap().front().id; }

  // Removes and returns the earliest slot; the slot is disarmed.
  SlotId pop() {
    assert(!empty());
    std::vector<Entry>& h = first_heap();
    SlotId top = h[0].id;
    Slot& s = slots_[top];
    s.heap_pos = -1;
    s.when = kTimeNever;
    Entry last = h.back();
    h.pop_back();
    if (h.empty()) return top;
    // Bottom-up (as std::pop_heap): walk the hole down the smallest children to a leaf, then
    // sift the last entry up from there. The last entry is usually a late one, so it seldom
    // climbs: no comparison with it on the way down. The smallest of four is picked as a
    // tournament of branch-free comparisons.
    const std::size_t n = h.size();
    std::size_t pos = 0;
    for (std::size_t first = 1; first < n; first = kArity * pos + 1) {
      std::size_t child = first;
      if (first + kArity <= n) {
        const std::size_t a = first + less(h[first + 1], h[first]);
        const std::size_t b = first + 2 + less(h[first + 3], h[first + 2]);
        child = less(h[b], h[a]) ? b : a;
      } else {
        for (std::size_t c = first + 1; c < n; ++c)
          if (less(h[c], h[child])) child = c;
      }
      place(h, pos, h[child]);
      pos = child;
    }
    sift_up(h, pos, last);
    return top;
  }

 private:
  struct Entry {
    Time when;
    SlotId id;
  };
  static constexpr std::size_t kArity = 4;  // pop()'s tournament assumes four

  // One 128-bit comparison of (time, slot id): no branch, so the heap's walks do not pay a
  // mispredicted jump at each level (times are never negative).
  static bool less(const Entry& x, const Entry& y) { return key(x) < key(y); }
  static unsigned __int128 key(const Entry& e) {
    return static_cast<unsigned __int128>(static_cast<std::uint64_t>(e.when)) << 64 | e.id;
  }
  std::vector<Entry>& heap(Lane lane) { return lane == Lane::Near ? near_ : far_; }
  // The lane whose top is the earliest; the queue must not be empty.
  const std::vector<Entry>& first_heap() const {
    if (far_.empty() || (!near_.empty() && less(near_[0], far_[0]))) return near_;
    return far_;
  }
  std::vector<Entry>& first_heap() {
    return const_cast<std::vector<Entry>&>(std::as_const(*this).first_heap());
  }
  void place(std::vector<Entry>& h, std::size_t pos, const Entry& e) {
    h[pos] = e;
    slots_[e.id].heap_pos = static_cast<std::int32_t>(pos);
  }
  void sift_up(std::vector<Entry>& h, std::size_t pos, Entry e) {
    while (pos > 0) {
      std::size_t parent = (pos - 1) / kArity;
      if (!less(e, h[parent])) break;
      place(h, pos, h[parent]);
      pos = parent;
    }
    place(h, pos, e);
  }
  void sift_down(std::vector<Entry>& h, std::size_t pos, Entry e) {
    const std::size_t n = h.size();
    for (;;) {
      std::size_t first = kArity * pos + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = first + kArity < n ? first + kArity : n;
      for (std::size_t c = first + 1; c < end; ++c)
        if (less(h[c], h[best])) best = c;
      if (!less(h[best], e)) break;
      place(h, pos, h[best]);
      pos = best;
    }
    place(h, pos, e);
  }

  std::vector<Slot> slots_;
  std::vector<Entry> near_, far_;
  std::size_t lane_slots_[2] = {0, 0};
};

}  // namespace schedtwin::engine
