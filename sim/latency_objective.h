// A latency objective of a capacity plan: one statistic of one latency, at most some milliseconds
// ("ttft_p99=500"), judged over the requests of a rate's steady-state window (sim/steady_state.h).
#pragma once

#include <string>
#include <vector>

#include "core/metrics/serving_metrics.h"

namespace pagedllm::sim {

enum class LatencyMetric { ttft, tpot, itl, e2el };   // as core/metrics/serving_metrics.h defines them
enum class LatencyStatistic { mean, p50, p90, p99 };  // p50 is np.median, the others np.percentile

struct LatencyObjective {
  LatencyMetric metric = LatencyMetric::ttft;
  LatencyStatistic statistic = LatencyStatistic::p99;
  double ms = 0.0;  // the statistic must be at most this

  std::string name() const;  // "ttft_p99"
};

// "ttft_p99=500,tpot_p99=50": one or more METRIC_STAT=MS items. Throws std::invalid_argument
// naming the item at fault.
std::vector<LatencyObjective> parse_latency_objectives(const std::string& text);

// The objective's statistic of `metrics`, in milliseconds.
double statistic_ms(const metrics::ServingMetrics& metrics, const LatencyObjective& objective);

}  // namespace pagedllm::sim
