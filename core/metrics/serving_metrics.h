// Serving metrics exactly as vLLM's benchmark_serving defines them, from per-request records.
//
//   TTFT  = first_token_time - send_time
//   TPOT  = (E2EL - TTFT) / (output_tokens - 1), only for requests with more than one output token
//   ITL   = every gap between consecutive chunk_times of a request, all requests' gaps pooled
//   E2EL  = end_time - send_time
//   goodput = completed requests meeting every given SLO (value <= SLO), per second; a request
//             with one output token has no TPOT and passes a TPOT SLO (vLLM counts its TPOT as 0)
//
// Only successful requests enter latencies, token totals and throughputs; failed ones are
// counted, with their errors tallied by message. Statistics follow numpy's defaults (mean and
// population std with numpy's pairwise summation, np.median, np.percentile's linear
// interpolation), so the numbers equal vLLM's for the same records. Times are in seconds here;
// the JSON and text reports show milliseconds, as vLLM does.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/common/numpy_stats.h"
#include "core/metrics/latency_values.h"
#include "core/metrics/request_record.h"

namespace pagedllm::metrics {

inline constexpr double kMillisecondsPerSecond = 1000.0;  // the reports give times in ms

// Service-level objectives in milliseconds (vLLM's --goodput ttft:MS tpot:MS e2el:MS); unset
// objectives are not checked.
struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;

  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

struct MetricsOptions {
  // Percentiles reported for every latency besides the median, p90 and p99 (vLLM's
  // --metric-percentiles), each in [0, 100].
  std::vector<double> percentiles = {50.0, 90.0, 99.0};
  // Seconds the benchmark ran; absent: max end_time - min send_time over all requests.
  std::optional<double> duration;
  Slo slo;
  // Values per latency distribution kept exactly; past it, percentiles come from a histogram
  // (LatencyValues). Only ITL, one value per output token, reaches it in practice.
  int64_t max_exact_values = kDefaultMaxExactValues;
  // False: ITL is left empty (a summary of no values). Its values are every gap between tokens, so
  // a reader that needs no ITL (a planner without an ITL objective) skips most of the work.
  bool inter_token_latencies = true;
};

struct ServingMetrics {
  int64_t num_completed = 0;
  int64_t num_failed = 0;
  std::map<std::string, int64_t> errors;  // failure message -> requests
  double duration = 0.0;                  // seconds
  int64_t total_input_tokens = 0;         // prompt tokens of completed requests
  int64_t total_output_tokens = 0;        // output tokens of completed requests
  // Per second of duration; 0 when the duration is 0.
  double request_throughput = 0.0;
  double output_throughput = 0.0;
  double total_token_throughput = 0.0;    // (input + output tokens) / duration
  Slo slo;                                // the objectives goodput was measured against
  int64_t num_good = 0;                   // completed requests meeting every objective
  std::optional<double> request_goodput;  // num_good / duration; set when any objective is
  LatencySummary ttft;
  LatencySummary tpot;
  LatencySummary itl;
  LatencySummary e2el;
};

// Throws std::invalid_argument for bad options (a percentile outside [0, 100], a non-positive
// duration, a negative SLO) or an inconsistent successful record (no first token, end before
// first token, first token before send, chunk times out of order), naming the request id.
ServingMetrics compute_serving_metrics(std::span<const RequestRecord> records, const MetricsOptions& options = {});

// The same, one record at a time, in bounded memory: a record's latencies are kept (4 doubles
// and its inter-token gaps, up to MetricsOptions::max_exact_values per distribution), not the
// record. Adding the records in the order compute_serving_metrics gets them gives its result.
class ServingMetricsAccumulator {
 public:
  // Throws std::invalid_argument for bad options, as compute_serving_metrics does.
  explicit ServingMetricsAccumulator(MetricsOptions options);
  // Throws std::invalid_argument for an inconsistent successful record, naming its id.
  void add(const RequestRecord& record);
  int64_t num_records() const { return num_records_; }
  // The metrics of every record added; `duration` (seconds, > 0) stands in for the options' when
  // given. Call once.
  ServingMetrics finish(std::optional<double> duration = std::nullopt);

 private:
  MetricsOptions options_;
  ServingMetrics metrics_;
  LatencyValues ttft_;
  LatencyValues tpot_;
  LatencyValues itl_;
  LatencyValues e2el_;
  int64_t num_records_ = 0;
  double first_send_ = 0.0;  // over every record, failed ones included: the measured duration
  double last_end_ = 0.0;
};

// numpy's statistics (core/common/numpy_stats.h), under the names the metrics use.
using stats::median;
using stats::percentile;

// How vLLM names a percentile in keys and rows: 99 -> "99", 99.9 -> "99.9".
std::string percentile_label(double percent);

}  // namespace pagedllm::metrics
