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
    if (s.heap_pos < 0) {
      s.heap_pos = static_cast<std::int32_t>(heap_.size());
      heap_.push_back(id);
      sift_up(static_cast<std::size_t>(s.heap_pos));
    } else {
      std::size_t pos = static_cast<std::size_t>(s.heap_pos);
      sift_up(pos);
      sift_down(static_cast<std::size_t>(slots_[id].heap_pos));
    }
  }

  void cancel(SlotId id) {
    Slot& s = slots_[id];
    if (s.heap_pos < 0) return;
    std::size_t pos = static_cast<std::size_t>(s.heap_pos);
    s.heap_pos = -1;
    s.when = kTimeNever;
    SlotId last = heap_.back();
    heap_.pop_back();
    if (pos < heap_.size()) {
      heap_[pos] = last;
      slots_[last].heap_pos = static_cast<std::int32_t>(pos);
      sift_up(pos);
      sift_down(static_cast<std::size_t>(slots_[last].heap_pos));
    }
  }

  bool armed(SlotId id) const { return slots_[id].heap_pos >= 0; }
  Time when(SlotId id) const { return slots_[id].when; }
  const Slot& slot(SlotId id) const { return slots_[id]; }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  Time next_time() const { return heap_.empty() ? kTimeNever : slots_[heap_[0]].when; }

  // Removes and returns the earliest slot; the slot is disarmed.
  SlotId pop() {
    assert(!heap_.empty());
    SlotId top = heap_[0];
    cancel(top);
    return top;
  }

 private:
  bool less(SlotId a, SlotId b) const {
    const Slot& x = slots_[a];
    const Slot& y = slots_[b];
    return x.when < y.when || (x.when == y.when && x.seq < y.seq);
  }
  void place(std::size_t pos, SlotId id) {
    heap_[pos] = id;
    slots_[id].heap_pos = static_cast<std::int32_t>(pos);
  }
  void sift_up(std::size_t pos) {
    SlotId id = heap_[pos];
    while (pos > 0) {
      std::size_t parent = (pos - 1) / 2;
      if (!less(id, heap_[parent])) break;
      place(pos, heap_[parent]);
      pos = parent;
    }
    place(pos, id);
  }
  void sift_down(std::size_t pos) {
    SlotId id = heap_[pos];
    std::size_t n = heap_.size();
    for (;;) {
      std::size_t child = 2 * pos + 1;
      if (child >= n) break;
      if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
      if (!less(heap_[child], id)) break;
      place(pos, heap_[child]);
      pos = child;
    }
    place(pos, id);
  }

  std::vector<Slot> slots_;
  std::vector<SlotId> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace schedtwin::engine
