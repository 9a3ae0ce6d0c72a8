// How the benchmarks measure: the steady clock, the result sink that keeps timed calls alive, and statistics.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace pagedllm::bench {

using Clock = std::chrono::steady_clock;
inline constexpr double kNone = std::numeric_limits<double>::quiet_NaN();  // "no figure"

// --- sink and clock ----------------------------------------------------------------------------

// Timed loops fold every result into a local accumulator that is stored here once per loop: the
// compiler must then compute each call's result, and no volatile access sits inside a timed loop.
inline volatile uint64_t g_sink = 0;
inline void consume(uint64_t value) { g_sink = g_sink + value; }

inline double elapsed_ns(Clock::time_point start, Clock::time_point stop) {
  return std::chrono::duration<double, std::nano>(stop - start).count();
}

template <typename Fn>
double time_ns(Fn&& fn) {
  const auto start = Clock::now();
  fn();
  return elapsed_ns(start, Clock::now());
}

// --- statistics --------------------------------------------------------------------------------

inline double median(std::vector<double> values) {
  if (values.empty()) return kNone;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// Nearest-rank percentile of sorted values.
inline double percentile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return kNone;
  const auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
  return sorted[std::clamp(rank, size_t{1}, sorted.size()) - 1];
}

inline double ratio(double numerator, double denominator) {
  return std::isfinite(numerator) && std::isfinite(denominator) && denominator > 0.0 ? numerator / denominator : kNone;
}

}  // namespace pagedllm::bench
