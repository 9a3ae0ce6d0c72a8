#include "core/metrics/serving_metrics_json.h"

#include <string>

namespace pagedllm::metrics {
namespace {

void add_latency(nlohmann::json& out, const std::string& name, const LatencySummary& summary) {
  const auto key = [&name](const std::string& prefix) { return prefix + "_" + name + "_ms"; };
  out["count_" + name] = summary.count;
  // Only when true, so that reports of runs small enough to be exact keep vLLM's keys alone.
  if (!summary.exact) out["approximate_" + name] = true;
  out[key("mean")] = summary.mean * kMillisecondsPerSecond;
  out[key("median")] = summary.median * kMillisecondsPerSecond;
  out[key("std")] = summary.stddev * kMillisecondsPerSecond;
  out[key("min")] = summary.min * kMillisecondsPerSecond;
  out[key("max")] = summary.max * kMillisecondsPerSecond;
  out[key("p90")] = summary.p90 * kMillisecondsPerSecond;
  out[key("p99")] = summary.p99 * kMillisecondsPerSecond;
  for (const PercentileValue& entry : summary.percentiles) {
    std::string statistic = "p";
    statistic += percentile_label(entry.percent);
    out[key(statistic)] = entry.value * kMillisecondsPerSecond;
  }
}

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const ServingMetrics& metrics) {
  nlohmann::json out;
  out["duration"] = metrics.duration;
  out["completed"] = metrics.num_completed;
  out["failed"] = metrics.num_failed;
  out["errors"] = nlohmann::json::object();
  for (const auto& [message, count] : metrics.errors) out["errors"][message] = count;
  out["total_input_tokens"] = metrics.total_input_tokens;
  out["total_output_tokens"] = metrics.total_output_tokens;
  out["request_throughput"] = metrics.request_throughput;
  out["request_goodput"] = optional_number(metrics.request_goodput);
  out["output_throughput"] = metrics.output_throughput;
  out["total_token_throughput"] = metrics.total_token_throughput;
  out["num_good"] = metrics.num_good;
  out["slo"] = {{"ttft_ms", optional_number(metrics.slo.ttft_ms)},
                {"tpot_ms", optional_number(metrics.slo.tpot_ms)},
                {"e2el_ms", optional_number(metrics.slo.e2el_ms)}};
  add_latency(out, "ttft", metrics.ttft);
  add_latency(out, "tpot", metrics.tpot);
  add_latency(out, "itl", metrics.itl);
  add_latency(out, "e2el", metrics.e2el);
  return out;
}

}  // namespace pagedllm::metrics
