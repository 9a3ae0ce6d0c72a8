// The engine summary and timeline as JSON, and the summary as a text section in the layout of
// the serving report (label in 40 columns, value after).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <span>

#include "core/metrics/engine_summary.h"

namespace pagedllm::metrics {

nlohmann::json to_json(const EngineSummary& summary);
// [{"time", "num_running", "num_waiting", "num_swapped", "kv_usage", "device_blocks_used",
//   "device_blocks_cached", "host_blocks_used", "internal_waste_slots", "num_batched_tokens"}, ...]
nlohmann::json to_json(std::span<const TimelinePoint> timeline);

void print_engine_summary(const EngineSummary& summary, std::ostream& out);

}  // namespace pagedllm::metrics
