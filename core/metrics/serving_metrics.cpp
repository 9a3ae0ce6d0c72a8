#include "core/metrics/serving_metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace pagedllm::metrics {
namespace {

[[noreturn]] void refuse_record(const RequestRecord& record, const std::string& message) {
  throw std::invalid_argument("request " + std::to_string(record.id) + ": " + message);
}

void check_successful(const RequestRecord& record) {
  if (record.first_token_time < 0.0) refuse_record(record, "successful but has no first_token_time");
  if (record.first_token_time < record.send_time) refuse_record(record, "first_token_time precedes send_time");
  if (record.end_time < record.first_token_time) refuse_record(record, "end_time precedes first_token_time");
  if (!std::is_sorted(record.chunk_times.begin(), record.chunk_times.end())) {
    refuse_record(record, "chunk_times are not in order");
  }
}

void check_options(const MetricsOptions& options) {
  for (const double percent : options.percentiles) {
    if (!(percent >= 0.0 && percent <= 100.0)) {
      throw std::invalid_argument("metrics options: percentiles must be in [0, 100], got " + std::to_string(percent));
    }
  }
  if (options.duration && !(std::isfinite(*options.duration) && *options.duration > 0.0)) {
    throw std::invalid_argument("metrics options: duration must be finite and > 0 seconds, got " +
                                std::to_string(*options.duration));
  }
  const std::pair<const char*, std::optional<double>> objectives[] = {
      {"slo.ttft_ms", options.slo.ttft_ms}, {"slo.tpot_ms", options.slo.tpot_ms}, {"slo.e2el_ms", options.slo.e2el_ms}};
  for (const auto& [name, value] : objectives) {
    if (value && !(*value >= 0.0)) {
      throw std::invalid_argument(std::string("metrics options: ") + name + " must be >= 0 milliseconds, got " +
                                  std::to_string(*value));
    }
  }
}

// vLLM: an objective holds when slo / 1000 >= value (seconds).
bool meets(const std::optional<double>& slo_ms, double value) {
  return !slo_ms || *slo_ms / kMillisecondsPerSecond >= value;
}

double per_second(double amount, double duration) { return duration > 0.0 ? amount / duration : 0.0; }

}  // namespace

std::string percentile_label(double percent) {
  // Python's str(int(p)) for whole numbers, else repr-like shortest round-trip (str(99.9)).
  if (percent == std::floor(percent) && std::fabs(percent) < 1e15) {
    return std::to_string(static_cast<int64_t>(percent));
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), percent);
  return std::string(buffer, result.ptr);
}

ServingMetricsAccumulator::ServingMetricsAccumulator(MetricsOptions options)
    : options_((check_options(options), std::move(options))),
      ttft_(options_.max_exact_values),
      tpot_(options_.max_exact_values),
      itl_(options_.max_exact_values),
      e2el_(options_.max_exact_values) {
  metrics_.slo = options_.slo;
}

void ServingMetricsAccumulator::add(const RequestRecord& record) {
  // The measured duration: max end_time - min send_time over every request, failed ones included
  // (a failure without an end time counts from its send time).
  if (num_records_++ == 0) {
    first_send_ = record.send_time;
    last_end_ = record.send_time;
  }
  first_send_ = std::min(first_send_, record.send_time);
  last_end_ = std::max({last_end_, record.send_time, record.end_time});
  if (!record.success) {
    ++metrics_.num_failed;
    ++metrics_.errors[record.error];
    return;
  }
  check_successful(record);
  ++metrics_.num_completed;
  metrics_.total_input_tokens += record.prompt_tokens;
  metrics_.total_output_tokens += record.output_tokens;
  const double ttft = record.first_token_time - record.send_time;
  const double e2el = record.end_time - record.send_time;
  double tpot = 0.0;  // what goodput checks for a single-token output, as vLLM
  if (record.output_tokens > 1) {
    tpot = (e2el - ttft) / static_cast<double>(record.output_tokens - 1);
    tpot_.add(tpot);
  }
  if (options_.inter_token_latencies) {
    for (size_t i = 1; i < record.chunk_times.size(); ++i) itl_.add(record.chunk_times[i] - record.chunk_times[i - 1]);
  }
  ttft_.add(ttft);
  e2el_.add(e2el);
  if (meets(options_.slo.ttft_ms, ttft) && meets(options_.slo.tpot_ms, tpot) && meets(options_.slo.e2el_ms, e2el)) {
    ++metrics_.num_good;
  }
}

ServingMetrics ServingMetricsAccumulator::finish(std::optional<double> duration) {
  if (!duration) duration = options_.duration;
  if (duration && !(std::isfinite(*duration) && *duration > 0.0)) {
    throw std::invalid_argument("metrics: duration must be finite and > 0 seconds, got " + std::to_string(*duration));
  }
  ServingMetrics metrics = std::move(metrics_);
  metrics.duration = duration ? *duration : last_end_ - first_send_;
  const double seconds = metrics.duration;
  metrics.request_throughput = per_second(static_cast<double>(metrics.num_completed), seconds);
  metrics.output_throughput = per_second(static_cast<double>(metrics.total_output_tokens), seconds);
  metrics.total_token_throughput =
      per_second(static_cast<double>(metrics.total_input_tokens + metrics.total_output_tokens), seconds);
  if (options_.slo.any()) metrics.request_goodput = per_second(static_cast<double>(metrics.num_good), seconds);
  metrics.ttft = ttft_.summarize(options_.percentiles);
  metrics.tpot = tpot_.summarize(options_.percentiles);
  metrics.itl = itl_.summarize(options_.percentiles);
  metrics.e2el = e2el_.summarize(options_.percentiles);
  return metrics;
}

ServingMetrics compute_serving_metrics(std::span<const RequestRecord> records, const MetricsOptions& options) {
  ServingMetricsAccumulator accumulator(options);
  for (const RequestRecord& record : records) accumulator.add(record);
  return accumulator.finish();
}

}  // namespace pagedllm::metrics
