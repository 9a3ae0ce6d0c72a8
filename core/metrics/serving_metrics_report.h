// ServingMetrics as vLLM's benchmark_serving prints them: a 50-column banner, "label  value"
// rows (label left-aligned in 40 columns, value in 10), one section per latency, in ms.
#pragma once

#include <iosfwd>
#include <string_view>

#include "core/metrics/serving_metrics.h"

namespace pagedllm::metrics {

inline constexpr std::string_view kDefaultReportTitle = "Serving Benchmark Result";

// The latency sections list Mean, Median and a P<label> row for every requested percentile
// except 50 (the Median row shows it). Goodput appears only with objectives; failed requests
// and their errors (our additions to vLLM's layout) follow the successful count.
void print_serving_metrics(const ServingMetrics& metrics, std::ostream& out,
                           std::string_view title = kDefaultReportTitle);

}  // namespace pagedllm::metrics
