// Simulated time: signed 64-bit nanoseconds since the start of a simulation.
#pragma once
#include <cstdint>

namespace schedtwin {

using Time = std::int64_t;  // ns

inline constexpr Time kNsPerUs = 1000;
inline constexpr Time kNsPerMs = 1000 * kNsPerUs;
inline constexpr Time kNsPerSec = 1000 * kNsPerMs;
inline constexpr Time kTimeNever = INT64_MAX;

constexpr Time us(std::int64_t v) { return v * kNsPerUs; }
constexpr Time ms(std::int64_t v) { return v * kNsPerMs; }
constexpr Time sec(std::int64_t v) { return v * kNsPerSec; }

}  // namespace schedtwin
