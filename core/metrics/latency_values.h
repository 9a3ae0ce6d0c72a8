// One latency distribution's values, kept exactly while they are few enough and as a log-linear
// histogram past that, so that a run of millions of requests (billions of inter-token gaps) sums
// them up in bounded memory.
//
// Exact (count <= max_exact): the summary is numpy's on the values in the order added, as vLLM's
// benchmark computes it. Past max_exact the values move into the histogram and the summary is
// approximate: min, max and count exact; mean by compensated summation and std from sums of
// deviations about the exact values' mean (both within rounding of numpy's for latencies, whose
// spread is not many orders below their mean); percentiles within kHistogramRelativeError of the
// exact ones (each rank's value is the midpoint of its bucket, clamped to [min, max]).
#pragma once

#include <cstdint>
#include <vector>

namespace pagedllm::metrics {

struct PercentileValue {
  double percent = 0.0;  // in [0, 100]
  double value = 0.0;
};

// One latency distribution, in seconds; all zero when count is 0 (vLLM reports 0 then too).
struct LatencySummary {
  int64_t count = 0;
  double mean = 0.0;
  double stddev = 0.0;  // population (numpy's default ddof = 0)
  double median = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
  double min = 0.0;
  double max = 0.0;
  std::vector<PercentileValue> percentiles;  // MetricsOptions::percentiles, in their order
  bool exact = true;                         // false: from LatencyValues' histogram (see there for the error)
};

// Buckets per power of two: a bucket spans at most 1/1024 of its values, so its midpoint is
// within 1/2048 of any of them.
inline constexpr int32_t kHistogramSubBuckets = 1024;
inline constexpr double kHistogramRelativeError = 1.0 / 2048.0;
// 16 M values (128 MB) per distribution before the histogram takes over.
inline constexpr int64_t kDefaultMaxExactValues = int64_t{1} << 24;

class LatencyValues {
 public:
  explicit LatencyValues(int64_t max_exact = kDefaultMaxExactValues);

  void add(double value);  // seconds, finite
  int64_t count() const { return count_; }
  bool exact() const { return histogram_.empty(); }

  // The summary with `percents` (each in [0, 100]) besides median, p90 and p99; frees the values.
  LatencySummary summarize(const std::vector<double>& percents);

 private:
  void move_to_histogram();
  void add_to_histogram(double value);
  double value_at_rank(int64_t rank) const;  // 0-based rank of the sorted values, histogram mode
  double percentile_of_histogram(double percent) const;

  int64_t max_exact_;
  int64_t count_ = 0;
  std::vector<double> values_;      // exact mode, in the order added
  std::vector<int64_t> histogram_;  // histogram mode: counts by bucket (below_range_ aside)
  int64_t below_range_ = 0;         // values under the first bucket (zeros included)
  double min_ = 0.0;
  double max_ = 0.0;
  // Histogram mode: sums of every value's deviation from shift_ (the exact values' mean when the
  // histogram took over) and of its square, for the std.
  double shift_ = 0.0;
  double deviation_sum_ = 0.0;
  double squared_deviation_sum_ = 0.0;
  double sum_ = 0.0;  // histogram mode: Neumaier's compensated sum
  double sum_compensation_ = 0.0;
};

}  // namespace pagedllm::metrics
