// Log-linear latency histogram, following schbench.c (Dec 2021, commit 2eef4479) — see
// latency_histogram.h.
#include "metrics/latency_histogram.h"

#include <fmt/format.h>

#include <bit>
#include <stdexcept>

namespace schedtwin::metrics {

unsigned plat_val_to_idx(std::uint64_t val) {
  // Position of the most significant set bit (0 for val == 0).
  const unsigned msb = val == 0 ? 0 : static_cast<unsigned>(std::bit_width(val)) - 1;
  // msb <= PLAT_BITS: the value is its own index (val < 512).
  if (msb <= PLAT_BITS) return static_cast<unsigned>(val);
  const unsigned error_bits = msb - PLAT_BITS;                            // low bits discarded
  const std::uint64_t base = std::uint64_t{error_bits + 1} << PLAT_BITS;  // buckets before
  const std::uint64_t offset = (PLAT_VAL - 1) & (val >> error_bits);
  return base + offset < PLAT_NR - 1 ? static_cast<unsigned>(base + offset) : PLAT_NR - 1;
}

std::uint64_t plat_idx_to_val(unsigned idx) {
  if (idx >= PLAT_NR) throw std::out_of_range(fmt::format("plat_idx_to_val: idx {}", idx));
  if (idx < (PLAT_VAL << 1)) return idx;
  const unsigned error_bits = (idx >> PLAT_BITS) - 1;
  const std::uint64_t base = std::uint64_t{1} << (error_bits + PLAT_BITS);
  const unsigned k = idx % PLAT_VAL;
  // schbench: base + ((k + 0.5) * (1 << error_bits)) in double, truncated; error_bits >= 1
  // here, so this is the exact integer k * 2^e + 2^(e-1).
  return base + (std::uint64_t{k} << error_bits) + (std::uint64_t{1} << (error_bits - 1));
}

void LatencyHistogram::add(std::uint64_t v_us) {
  ++plat_[plat_val_to_idx(v_us)];
  ++count_;
  if (v_us < min_) min_ = v_us;
  if (v_us > max_) max_ = v_us;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (unsigned i = 0; i < PLAT_NR; ++i) plat_[i] += other.plat_[i];
  count_ += other.count_;
  if (other.count_) {
    if (other.min_ < min_) min_ = other.min_;
    if (other.max_ > max_) max_ = other.max_;
  }
}

std::vector<Percentile> LatencyHistogram::percentiles(const std::vector<double>& ps) const {
  for (double p : ps)
    if (!(p >= 0.0 && p <= 100.0))
      throw std::invalid_argument(fmt::format("percentile {} outside [0, 100]", p));
  std::vector<Percentile> out(ps.size());
  if (ps.empty()) return out;

  const auto nr = static_cast<double>(count_);
  std::uint64_t sum = 0;
  std::size_t j = 0;
  bool is_last = false;
  for (unsigned i = 0; i < PLAT_NR && !is_last; ++i) {
    sum += plat_[i];
    // The threshold is recomputed in double for each percentile, as schbench does.
    while (static_cast<double>(sum) >= ps[j] / 100.0 * nr) {
      out[j].p = ps[j];
      out[j].value_us = plat_idx_to_val(i);
      out[j].samples_increment = sum;  // cumulative for now
      is_last = (j == ps.size() - 1);
      if (is_last) break;
      ++j;
    }
  }
  // Every p <= 100 is reached by the last bucket (sum == N), so all rows are filled.
  // Cumulative counts -> increments since the previous row.
  std::uint64_t last = 0;
  for (std::size_t i = 1; i < out.size(); ++i) {
    last += out[i - 1].samples_increment;
    out[i].samples_increment -= last;
  }
  return out;
}

}  // namespace schedtwin::metrics
