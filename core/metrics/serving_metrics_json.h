// ServingMetrics as JSON, with vLLM's result-file key names where one exists.
#pragma once

#include <nlohmann/json.hpp>

#include "core/metrics/serving_metrics.h"

namespace pagedllm::metrics {

// Keys as vLLM's benchmark_serving result JSON: completed, total_input_tokens,
// total_output_tokens, request_throughput, request_goodput (null without objectives),
// output_throughput, total_token_throughput, and per latency m in {ttft, tpot, itl, e2el}:
// mean_m_ms, median_m_ms, std_m_ms, p90_m_ms, p99_m_ms and p<label>_m_ms for every requested
// percentile (label as percentile_label). Our extras: failed, errors (message -> count),
// duration (seconds), num_good, min_m_ms, max_m_ms, count_m, slo (the objectives, ms).
nlohmann::json to_json(const ServingMetrics& metrics);

}  // namespace pagedllm::metrics
