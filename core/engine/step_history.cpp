#include "core/engine/step_history.h"

#include <algorithm>

namespace pagedllm::engine {
namespace {

// The first step with the highest KV usage of [first, last).
const StepMetrics& peak_of(std::vector<StepMetrics>::const_iterator first,
                           std::vector<StepMetrics>::const_iterator last) {
  return *std::max_element(first, last,
                           [](const StepMetrics& a, const StepMetrics& b) { return a.kv_usage < b.kv_usage; });
}

}  // namespace

void StepTotals::add(const StepMetrics& step, int32_t block_size) {
  ++num_steps;
  const double seconds = step.end_time - step.start_time;
  busy_seconds += seconds;
  kv_usage_seconds += step.kv_usage * seconds;
  kv_usage_peak = std::max(kv_usage_peak, step.kv_usage);
  host_blocks_peak = std::max(host_blocks_peak, step.host_blocks_used);
  if (step.device_blocks_used > 0) {
    const double reserved = static_cast<double>(step.device_blocks_used) * block_size;
    waste_fraction_seconds += static_cast<double>(step.internal_waste_slots) / reserved * seconds;
    waste_weight_seconds += seconds;
  }
  max_running = std::max(max_running, step.num_running);
  max_waiting = std::max(max_waiting, step.num_waiting);
  max_swapped = std::max(max_swapped, step.num_swapped);
}

StepTimeline::StepTimeline(size_t capacity) : capacity_(std::max<size_t>(2, capacity + capacity % 2)) {}

void StepTimeline::add(const StepMetrics& step) {
  if (!points_.empty() && steps_in_last_ < stride_) {
    if (step.kv_usage > points_.back().kv_usage) points_.back() = step;
    ++steps_in_last_;
    return;
  }
  if (points_.size() == capacity_) {
    // Every point is a full run: pair them up, halving the points and doubling the stride.
    for (size_t i = 0; i < capacity_ / 2; ++i)
      points_[i] = peak_of(points_.begin() + 2 * i, points_.begin() + 2 * i + 2);
    points_.resize(capacity_ / 2);
    stride_ *= 2;
  }
  points_.push_back(step);
  steps_in_last_ = 1;
}

std::vector<StepMetrics> StepTimeline::points(size_t max_points) const {
  if (max_points == 0 || points_.empty()) return {};
  if (points_.size() <= max_points) return points_;
  const size_t run = (points_.size() + max_points - 1) / max_points;
  std::vector<StepMetrics> thinned;
  for (size_t first = 0; first < points_.size(); first += run) {
    const size_t last = std::min(points_.size(), first + run);
    thinned.push_back(peak_of(points_.begin() + static_cast<std::ptrdiff_t>(first),
                              points_.begin() + static_cast<std::ptrdiff_t>(last)));
  }
  return thinned;
}

}  // namespace pagedllm::engine
