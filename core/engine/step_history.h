// What an engine keeps of its steps in memory that does not grow with the run: time-weighted
// totals for the summary, and a timeline thinned online to a fixed number of points. (The full
// per-step history, EngineConfig::record_step_metrics, is for tests and benchmarks.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/engine/metrics.h"

namespace pagedllm::engine {

// Running totals over every step, summed in step order (so equal to summing a recorded history).
struct StepTotals {
  int64_t num_steps = 0;
  double busy_seconds = 0.0;      // sum of step durations (the executor's time)
  double kv_usage_seconds = 0.0;  // sum of kv_usage x duration
  // Over steps with used device blocks: sum of (unfilled / reserved slots) x duration, and the
  // durations themselves.
  double waste_fraction_seconds = 0.0;
  double waste_weight_seconds = 0.0;
  double kv_usage_peak = 0.0;
  int32_t host_blocks_peak = 0;
  int32_t max_running = 0;
  int32_t max_waiting = 0;
  int32_t max_swapped = 0;

  void add(const StepMetrics& step, int32_t block_size);
};

// The steps as at most `capacity` points, each the step with the highest KV usage (the first of
// equals) out of a run of `stride` consecutive steps. The stride starts at 1; when the points
// fill the capacity, neighbours pair up and it doubles. Memory: at most capacity x
// sizeof(StepMetrics) (1.7 MB at the default 16,384), grown as steps come.
class StepTimeline {
 public:
  explicit StepTimeline(size_t capacity);  // rounded up to an even count >= 2

  void add(const StepMetrics& step);
  // At most max_points points: every kept point while they fit, else the peak of each run of
  // ceil(points / max_points) consecutive kept points. With stride 1 (capacity never reached)
  // this is the peak of each run of ceil(steps / max_points) consecutive steps.
  std::vector<StepMetrics> points(size_t max_points) const;
  int64_t stride() const { return stride_; }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  int64_t stride_ = 1;
  int64_t steps_in_last_ = 0;  // steps folded into points_.back()
  std::vector<StepMetrics> points_;
};

}  // namespace pagedllm::engine
