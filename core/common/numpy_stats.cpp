#include "core/common/numpy_stats.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace pagedllm::stats {
namespace {

// numpy's pairwise summation of float64 (what np.sum and np.mean run on a contiguous array):
// sequential below 8 values, 8 interleaved accumulators up to 128, halves (multiples of 8) above.
// value(i) gives element i: an array's, or one computed on the fly with numpy's rounding.
template <typename Value>
double pairwise_sum_of(const Value& value, size_t first, size_t count) {
  if (count < 8) {
    double sum = 0.0;
    for (size_t i = 0; i < count; ++i) sum += value(first + i);
    return sum;
  }
  if (count <= 128) {
    double lanes[8];
    for (size_t j = 0; j < 8; ++j) lanes[j] = value(first + j);
    size_t i = 8;
    for (; i < count - count % 8; i += 8) {
      for (size_t j = 0; j < 8; ++j) lanes[j] += value(first + i + j);
    }
    double sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; i < count; ++i) sum += value(first + i);
    return sum;
  }
  size_t half = count / 2;
  half -= half % 8;
  return pairwise_sum_of(value, first, half) + pairwise_sum_of(value, first + half, count - half);
}

// The index below np.percentile's virtual index into `size` ascending values, or nullopt where it
// takes an end (the index is at or past the last, or below the first); percentile() reads this
// element and the next. Its arithmetic is percentile()'s.
std::optional<size_t> percentile_lower_index(size_t size, double percent) {
  const double last_index = static_cast<double>(size - 1);
  const double virtual_index = last_index * (percent / 100.0);
  if (virtual_index >= last_index || virtual_index < 0.0) return std::nullopt;
  return static_cast<size_t>(std::floor(virtual_index));
}

}  // namespace

double percentile(std::span<const double> sorted, double percent) {
  if (sorted.empty()) return 0.0;
  const double last_index = static_cast<double>(sorted.size() - 1);
  const double virtual_index = last_index * (percent / 100.0);
  if (virtual_index >= last_index) return sorted.back();
  if (virtual_index < 0.0) return sorted.front();
  const double previous_index = std::floor(virtual_index);
  const double a = sorted[static_cast<size_t>(previous_index)];
  const double b = sorted[static_cast<size_t>(previous_index) + 1];
  const double t = virtual_index - previous_index;
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;  // numpy's _lerp, both branches
}

size_t percentile_floor_index(size_t size, double percent) {
  if (const std::optional<size_t> lower = percentile_lower_index(size, percent)) return *lower;
  return percent < 0.0 ? 0 : size - 1;
}

double median(std::span<const double> sorted) {
  if (sorted.empty()) return 0.0;
  const size_t middle = sorted.size() / 2;
  if (sorted.size() % 2 == 1) return sorted[middle];
  return (sorted[middle - 1] + sorted[middle]) / 2.0;  // np.median: the mean of the middle two
}

void select_for_percentiles(std::span<double> values, std::span<const double> percents) {
  if (values.size() < 2) return;
  const size_t n = values.size();
  std::vector<size_t> ranks = {0, n - 1, n / 2};  // the ends; the median's middle (and the one below)
  if (n % 2 == 0) ranks.push_back(n / 2 - 1);
  for (const double percent : percents) {
    if (const std::optional<size_t> lower = percentile_lower_index(n, percent)) {
      ranks.push_back(*lower);
      ranks.push_back(*lower + 1);
    }
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  // Each selection leaves everything after its rank no smaller than it, so the next rank is
  // selected within what is left.
  auto first = values.begin();
  for (const size_t rank : ranks) {
    const auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank);
    std::nth_element(first, nth, values.end());
    first = nth + 1;
  }
}

double pairwise_sum(std::span<const double> values) {
  return pairwise_sum_of([values](size_t i) { return values[i]; }, 0, values.size());
}

double pairwise_sum_of_squared_deviations(std::span<const double> values, double mean) {
  return pairwise_sum_of(
      [values, mean](size_t i) {
        const double deviation = values[i] - mean;
        return deviation * deviation;
      },
      0, values.size());
}

}  // namespace pagedllm::stats
