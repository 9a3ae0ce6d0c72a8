#include "sim/profile_interpolation.h"

#include <algorithm>
#include <cstddef>

#include "core/common/check.h"

namespace pagedllm::sim {
namespace {

// The segment [axis[i], axis[i + 1]] that x falls in, or the outer one beyond either end, and x's
// place along it: 0 at axis[i], 1 at axis[i + 1], outside [0, 1] beyond the ends.
struct Segment {
  size_t index = 0;
  double fraction = 0.0;
};

Segment find_segment(const std::vector<double>& axis, double x) {
  PAGEDLLM_ASSERT(axis.size() >= 2, "an axis of two points at least");
  const auto upper = std::upper_bound(axis.begin() + 1, axis.end() - 1, x);
  const auto index = static_cast<size_t>(upper - axis.begin()) - 1;
  return {index, (x - axis[index]) / (axis[index + 1] - axis[index])};
}

double lerp(double a, double b, double t) { return a + (b - a) * t; }

}  // namespace

double interpolate(const std::vector<double>& axis, const std::vector<double>& values, double x) {
  PAGEDLLM_ASSERT(!axis.empty() && axis.size() == values.size(), "one value per axis point");
  if (axis.size() == 1) return values.front();
  const Segment s = find_segment(axis, x);
  return lerp(values[s.index], values[s.index + 1], s.fraction);
}

double interpolate(const ProfileGrid& grid, double row, double column) {
  PAGEDLLM_ASSERT(!grid.rows.empty() && grid.seconds.size() == grid.rows.size(), "one row of seconds per row");
  // Along the columns in the two rows around `row`, then along the rows.
  if (grid.rows.size() == 1) return interpolate(grid.columns, grid.seconds.front(), column);
  const Segment s = find_segment(grid.rows, row);
  const double low = interpolate(grid.columns, grid.seconds[s.index], column);
  const double high = interpolate(grid.columns, grid.seconds[s.index + 1], column);
  return lerp(low, high, s.fraction);
}

}  // namespace pagedllm::sim
