#include "core/metrics/serving_metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace pagedllm::metrics {
namespace {

LatencySummary summarize(std::vector<double> values, const std::vector<double>& percents) {
  LatencySummary summary;
  summary.percentiles.reserve(percents.size());
  if (!values.empty()) {
    // Mean and std in request order, before sorting: pairwise sums round by position.
    const double count = static_cast<double>(values.size());
    summary.count = static_cast<int64_t>(values.size());
    summary.mean = stats::pairwise_sum(values) / count;
    summary.stddev = std::sqrt(stats::pairwise_sum_of_squared_deviations(values, summary.mean) / count);
    std::sort(values.begin(), values.end());
    summary.median = median(values);
    summary.p90 = percentile(values, 90.0);
    summary.p99 = percentile(values, 99.0);
    summary.min = values.front();
    summary.max = values.back();
  }
  for (const double percent : percents) summary.percentiles.push_back({percent, percentile(values, percent)});
  return summary;
}

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

// max end_time - min send_time over every request, failed ones included (a failure without an
// end time counts from its send time).
double measured_duration(std::span<const RequestRecord> records) {
  if (records.empty()) return 0.0;
  double first = records.front().send_time;
  double last = first;
  for (const RequestRecord& record : records) {
    first = std::min(first, record.send_time);
    last = std::max({last, record.send_time, record.end_time});
  }
  return last - first;
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

ServingMetrics compute_serving_metrics(std::span<const RequestRecord> records, const MetricsOptions& options) {
  check_options(options);
  ServingMetrics metrics;
  metrics.slo = options.slo;
  std::vector<double> ttfts;
  std::vector<double> tpots;
  std::vector<double> itls;
  std::vector<double> e2els;
  for (const RequestRecord& record : records) {
    if (!record.success) {
      ++metrics.num_failed;
      ++metrics.errors[record.error];
      continue;
    }
    check_successful(record);
    ++metrics.num_completed;
    metrics.total_input_tokens += record.prompt_tokens;
    metrics.total_output_tokens += record.output_tokens;
    const double ttft = record.first_token_time - record.send_time;
    const double e2el = record.end_time - record.send_time;
    double tpot = 0.0;  // what goodput checks for a single-token output, as vLLM
    if (record.output_tokens > 1) {
      tpot = (e2el - ttft) / static_cast<double>(record.output_tokens - 1);
      tpots.push_back(tpot);
    }
    for (size_t i = 1; i < record.chunk_times.size(); ++i) {
      itls.push_back(record.chunk_times[i] - record.chunk_times[i - 1]);
    }
    ttfts.push_back(ttft);
    e2els.push_back(e2el);
    if (meets(options.slo.ttft_ms, ttft) && meets(options.slo.tpot_ms, tpot) && meets(options.slo.e2el_ms, e2el)) {
      ++metrics.num_good;
    }
  }
  metrics.duration = options.duration ? *options.duration : measured_duration(records);
  const double duration = metrics.duration;
  metrics.request_throughput = per_second(static_cast<double>(metrics.num_completed), duration);
  metrics.output_throughput = per_second(static_cast<double>(metrics.total_output_tokens), duration);
  metrics.total_token_throughput =
      per_second(static_cast<double>(metrics.total_input_tokens + metrics.total_output_tokens), duration);
  if (options.slo.any()) metrics.request_goodput = per_second(static_cast<double>(metrics.num_good), duration);
  metrics.ttft = summarize(std::move(ttfts), options.percentiles);
  metrics.tpot = summarize(std::move(tpots), options.percentiles);
  metrics.itl = summarize(std::move(itls), options.percentiles);
  metrics.e2el = summarize(std::move(e2els), options.percentiles);
  return metrics;
}

}  // namespace pagedllm::metrics
