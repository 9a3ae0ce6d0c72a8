#include "core/metrics/engine_summary.h"

#include <algorithm>

namespace pagedllm::metrics {

EngineSummary summarize_engine(const engine::Engine& engine) {
  EngineSummary summary;
  const kv::KvStats kv = engine.kv().stats();
  summary.num_steps = engine.num_steps();
  summary.block_size = kv.block_size;
  summary.num_device_blocks = kv.num_device_blocks;
  summary.num_host_blocks = kv.num_host_blocks;
  summary.prefix_query_tokens = kv.prefix_query_tokens;
  summary.prefix_hit_tokens = kv.prefix_hit_tokens;
  summary.prefix_hit_rate = kv.prefix_hit_rate();
  summary.counters = engine.counters();

  const engine::StepTotals& steps = engine.step_totals();
  summary.busy_seconds = steps.busy_seconds;
  summary.kv_usage_peak = steps.kv_usage_peak;
  summary.host_blocks_peak = steps.host_blocks_peak;
  summary.max_running = steps.max_running;
  summary.max_waiting = steps.max_waiting;
  summary.max_swapped = steps.max_swapped;
  if (steps.busy_seconds > 0.0) summary.kv_usage_mean = steps.kv_usage_seconds / steps.busy_seconds;
  if (steps.waste_weight_seconds > 0.0) {
    summary.internal_waste_mean = steps.waste_fraction_seconds / steps.waste_weight_seconds;
  }
  return summary;
}

EngineSummary combine(std::span<const EngineSummary> replicas) {
  EngineSummary total;
  double weighted_usage = 0.0;
  double weighted_waste = 0.0;
  for (const EngineSummary& r : replicas) {
    total.num_steps += r.num_steps;
    total.busy_seconds += r.busy_seconds;
    total.block_size = r.block_size;
    total.num_device_blocks += r.num_device_blocks;
    total.num_host_blocks += r.num_host_blocks;
    weighted_usage += r.kv_usage_mean * r.busy_seconds;
    weighted_waste += r.internal_waste_mean * r.busy_seconds;
    total.kv_usage_peak = std::max(total.kv_usage_peak, r.kv_usage_peak);
    total.host_blocks_peak = std::max(total.host_blocks_peak, r.host_blocks_peak);
    total.prefix_query_tokens += r.prefix_query_tokens;
    total.prefix_hit_tokens += r.prefix_hit_tokens;
    total.counters += r.counters;
    total.max_running = std::max(total.max_running, r.max_running);
    total.max_waiting = std::max(total.max_waiting, r.max_waiting);
    total.max_swapped = std::max(total.max_swapped, r.max_swapped);
  }
  if (total.busy_seconds > 0.0) {
    total.kv_usage_mean = weighted_usage / total.busy_seconds;
    total.internal_waste_mean = weighted_waste / total.busy_seconds;
  }
  if (total.prefix_query_tokens > 0) {
    total.prefix_hit_rate =
        static_cast<double>(total.prefix_hit_tokens) / static_cast<double>(total.prefix_query_tokens);
  }
  return total;
}

std::vector<TimelinePoint> engine_timeline(const engine::Engine& engine, size_t max_points) {
  std::vector<TimelinePoint> timeline;
  for (const engine::StepMetrics& peak : engine.step_timeline().points(max_points)) {
    timeline.push_back({.time = peak.end_time,
                        .num_running = peak.num_running,
                        .num_waiting = peak.num_waiting,
                        .num_swapped = peak.num_swapped,
                        .kv_usage = peak.kv_usage,
                        .device_blocks_used = peak.device_blocks_used,
                        .device_blocks_cached = peak.device_blocks_cached,
                        .host_blocks_used = peak.host_blocks_used,
                        .internal_waste_slots = peak.internal_waste_slots,
                        .num_batched_tokens = peak.num_batched_tokens});
  }
  return timeline;
}

}  // namespace pagedllm::metrics
