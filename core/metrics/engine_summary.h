// What the engine itself did during a replay or simulation: KV usage over time, preemptions by
// mode, swapped blocks, prefix-cache hits and internal waste; and the timeline that plots it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/engine/engine.h"

namespace pagedllm::metrics {

struct EngineSummary {
  int64_t num_steps = 0;
  double busy_seconds = 0.0;  // sum of step durations (the executor's time)
  int32_t block_size = 0;
  int32_t num_device_blocks = 0;
  int32_t num_host_blocks = 0;
  double kv_usage_mean = 0.0;  // device blocks used / total, weighted by step duration
  double kv_usage_peak = 0.0;
  int32_t host_blocks_peak = 0;  // swapped-out blocks at most
  // Reserved but unfilled slots / reserved slots in used device blocks, weighted by step
  // duration: the partially filled last blocks (the vLLM paper's internal fragmentation).
  double internal_waste_mean = 0.0;
  int64_t prefix_query_tokens = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;
  double prefix_hit_rate = 0.0;
  engine::EngineCounters counters;  // the engine's running totals (summed over replicas)
  int32_t max_running = 0;
  int32_t max_waiting = 0;
  int32_t max_swapped = 0;
};

struct TimelinePoint {
  double time = 0.0;  // end of the step, engine clock
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  int32_t num_swapped = 0;
  double kv_usage = 0.0;
  int32_t device_blocks_used = 0;
  int32_t device_blocks_cached = 0;  // holding prefix-cache content, in use or free
  int32_t host_blocks_used = 0;      // swapped out
  int64_t internal_waste_slots = 0;  // reserved but unfilled slots in used device blocks
  int32_t num_batched_tokens = 0;
};

// From the engine's running totals (Engine::step_totals), its counters and its KV statistics:
// no per-step history is needed.
EngineSummary summarize_engine(const engine::Engine& engine);

// A cluster's replicas as one: counts and busy time summed, peaks and maxima the largest, KV
// usage and waste averaged weighted by each replica's busy time, the prefix hit rate over all
// queries. Block totals are summed (the cluster's memory).
EngineSummary combine(std::span<const EngineSummary> replicas);

// At most `max_points` points from the engine's timeline (engine::StepTimeline): every step
// when there are few, else the step with the highest KV usage out of each run of consecutive steps
// (peaks survive the thinning). Runs are equal while the run had at most
// EngineConfig::timeline_capacity steps, powers of two beyond.
std::vector<TimelinePoint> engine_timeline(const engine::Engine& engine, size_t max_points);

}  // namespace pagedllm::metrics
