// Event queue of the discrete-event engine.
//
// Events live in *slots* allocated once at set-up (one per CPU tick, per task
// timer, ...). A slot is armed with a time, re-armed or cancelled in O(log n)
// and never allocates: the queue is an indexed binary min-heap over slot ids.
// Equal times are ordered by arming sequence number, so a run is reproducible
// and independent of heap layout.
#pragma once
#include <cassert>
#include <cstdint>
#include <vector>

#include "engine/time.h"

namespace schedtwin::engine {

using SlotId = std::uint32_t;

struct Slot {
  Time when = kTimeNever;
  std::uint64_t seq = 0;
  std::uint32_t kind = 0;    // meaning belongs to the owner of the queue
  std::uint32_t target = 0;  // e.g. a CPU or task id
  std::int32_t heap_pos = -1;
};

class EventQueue {
 public:
  SlotId add_slot(std::uint32_t kind, std::uint32_t target) {
    slots_.push_back(Slot{kTimeNever, 0, kind, target, -1});
    heap_.reserve(slots_.size());
    return static_cast<SlotId>(slots_.size() - 1);
  }
  void reserve(std::size_t n) {
    slots_.reserve(n);
    heap_.reserve(n);
  }

  // Arms (or re-arms) a slot to fire at `when`.
  void arm(SlotId id, Time when) {
    Slot& s = slots_[id];
    s.when = when;
    s.seq = next_seq_++;
    Entry e{when, s.seq, id};
    if (s.heap_pos < 0) {
      heap_.push_back(e);
      sift_up(heap_.size() - 1, e);
    } else {
      std::size_t pos = static_cast<std::size_t>(s.heap_pos);
      if (pos > 0 && less(e, heap_[(pos - 1) / kArity]))
        sift_up(pos, e);
      else
        sift_down(pos, e);
    }
  }

  void cancel(SlotId id) {
    Slot& s = slots_[id];
    if (s.heap_pos < 0) return;
    std::size_t pos = static_cast<std::size_t>(s.heap_pos);
    s.heap_pos = -1;
    s.when = kTimeNever;
    Entry last = heap_.back();
    heap_.pop_back();
    if (pos < heap_.size()) {
      if (pos > 0 && less(last, heap_[(pos - 1) / kArity]))
        sift_up(pos, last);
      else
        sift_down(pos, last);
    }
  }

  bool armed(SlotId id) const { return slots_[id].heap_pos >= 0; }
  Time when(SlotId id) const { return slots_[id].when; }
  const Slot& slot(SlotId id) const { return slots_[id]; }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  Time next_time() const { return heap_.empty() ? kTimeNever : heap_[0].when; }
  // The earliest slot, left armed; the queue must not be empty.
  SlotId peek() const { return heap_[0].id; }

  // Removes and returns the earliest slot; the slot is disarmed.
  SlotId pop() {
    assert(!heap_.empty());
    SlotId top = heap_[0].id;
    Slot& s = slots_[top];
    s.heap_pos = -1;
    s.when = kTimeNever;
    Entry last = heap_.back();
    heap_.pop_back();
    if (heap_.empty()) return top;
    // Bottom-up (as std::pop_heap): walk the hole down the smaller children to a leaf, one
    // comparison a level, then sift the last entry up from there. The last entry is
    // usually a late one (a tick), so it seldom climbs: about half the comparisons of a
    // plain sift-down from the root.
    const std::size_t n = heap_.size();
    std::size_t pos = 0;
    for (std::size_t child = 1; child < n; child = kArity * pos + 1) {
      if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
      place(pos, heap_[child]);
      pos = child;
    }
    sift_up(pos, last);
    return top;
  }

 private:
  struct Entry {
    Time when;
    std::uint64_t seq;
    SlotId id;
  };
  static constexpr std::size_t kArity = 2;  // pop() assumes a binary heap

  static bool less(const Entry& x, const Entry& y) {
    return x.when < y.when || (x.when == y.when && x.seq < y.seq);
  }
  void place(std::size_t pos, const Entry& e) {
    heap_[pos] = e;
    slots_[e.id].heap_pos = static_cast<std::int32_t>(pos);
  }
  void sift_up(std::size_t pos, Entry e) {
    while (pos > 0) {
      std::size_t parent = (pos - 1) / kArity;
      if (!less(e, heap_[parent])) break;
      place(pos, heap_[parent]);
      pos = parent;
    }
    place(pos, e);
  }
  void sift_down(std::size_t pos, Entry e) {
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t first = kArity * pos + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = first + kArity < n ? first + kArity : n;
      for (std::size_t c = first + 1; c < end; ++c)
        if (less(heap_[c], heap_[best])) best = c;
      if (!less(heap_[best], e)) break;
      place(pos, heap_[best]);
      pos = best;
    }
    place(pos, e);
  }

  std::vector<Slot> slots_;
  std::vector<Entry> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace schedtwin::engine
