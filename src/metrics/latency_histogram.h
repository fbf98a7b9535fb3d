// fio's log-linear latency histogram as schbench uses it ("mr axboe's magic latency
// histogram", schbench.c plat_val_to_idx / plat_idx_to_val / calc_percentiles, the same in
// every schbench version from 2016 to 2023, checked against the Dec 2021 - Mar 2023 code).
//
// Values are microseconds. PLAT_BITS = 8: values below 512 have their own bucket; above,
// each power-of-two range [2^m, 2^(m+1)) is split into 256 equal buckets (relative
// resolution 1/256); 19 groups x 256 = 4864 buckets in all, the last group covering
// [2^25, 2^26) us. Larger values are clamped into the last bucket. A bucket reports its
// midpoint (base + (k + 0.5) * 2^error_bits), min and max are kept exactly.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace schedtwin::metrics {

inline constexpr unsigned PLAT_BITS = 8;
inline constexpr unsigned PLAT_VAL = 1u << PLAT_BITS;
inline constexpr unsigned PLAT_GROUP_NR = 19;
inline constexpr unsigned PLAT_NR = PLAT_GROUP_NR * PLAT_VAL;

// schbench plat_val_to_idx: bucket index of a value (us), clamped to PLAT_NR - 1.
// Unlike schbench (unsigned int), values above 2^32 us are accepted (and clamped).
unsigned plat_val_to_idx(std::uint64_t val_us);

// schbench plat_idx_to_val: the value a bucket reports (exact below 512, else the midpoint
// of the bucket's range). idx must be < PLAT_NR.
std::uint64_t plat_idx_to_val(unsigned idx);

struct Percentile {
  double p = 0;                         // requested percentile, e.g. 99.0
  std::uint64_t value_us = 0;           // plat_idx_to_val of the first bucket reaching p
  std::uint64_t samples_increment = 0;  // running count there minus the previous row's
};

// One histogram, fixed size (about 39 KB); add() never allocates.
class LatencyHistogram {
 public:
  void add(std::uint64_t v_us);
  // schbench combine_stats: bucket-wise sum, min of mins and max of maxes. An empty
  // histogram leaves min/max alone (schbench would zero the min there: its min == 0 means
  // "unset", a quirk not reproduced).
  void merge(const LatencyHistogram& other);
  void reset() { *this = LatencyHistogram{}; }

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }  // exact, 0 when empty
  std::uint64_t max() const { return max_; }               // exact, 0 when empty
  std::uint64_t bucket(unsigned idx) const { return plat_.at(idx); }

  // schbench calc_percentiles: walk the buckets in ascending order accumulating a running
  // count; percentile ps[j] is the first bucket where count >= ps[j]/100 * N (double
  // comparison, as schbench), and one bucket can satisfy several consecutive ps. The
  // increments are taken in the order given (schbench's list is ascending). With N == 0
  // every percentile is bucket 0 (value 0, 0 samples). Throws std::invalid_argument for
  // p outside [0, 100].
  std::vector<Percentile> percentiles(const std::vector<double>& ps) const;

 private:
  std::array<std::uint64_t, PLAT_NR> plat_{};
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
};

}  // namespace schedtwin::metrics
