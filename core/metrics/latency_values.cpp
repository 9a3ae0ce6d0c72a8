#include "core/metrics/latency_values.h"

#include <algorithm>
#include <cmath>

#include "core/common/numpy_stats.h"

namespace pagedllm::metrics {
namespace {

// Buckets cover [2^(kMinExponent-1), 2^kMaxExponent): 1e-12 s to 1e12 s.
constexpr int kMinExponent = -39;
constexpr int kMaxExponent = 40;
constexpr size_t kNumBuckets = static_cast<size_t>(kMaxExponent - kMinExponent + 1) * kHistogramSubBuckets;

// value = m * 2^e with m in [0.5, 1): bucket (e - kMinExponent) * S + floor((2m - 1) * S);
// negative below the range, clamped to the last bucket above it.
int64_t bucket_of(double value) {
  int exponent = 0;
  const double mantissa = std::frexp(value, &exponent);
  if (!(value > 0.0) || exponent < kMinExponent) return -1;
  if (exponent > kMaxExponent) return static_cast<int64_t>(kNumBuckets) - 1;
  const auto sub = static_cast<int64_t>((2.0 * mantissa - 1.0) * kHistogramSubBuckets);
  return int64_t{exponent - kMinExponent} * kHistogramSubBuckets + std::min<int64_t>(sub, kHistogramSubBuckets - 1);
}

double bucket_midpoint(int64_t bucket) {
  const int exponent = static_cast<int>(bucket / kHistogramSubBuckets) + kMinExponent;
  const double sub = static_cast<double>(bucket % kHistogramSubBuckets) + 0.5;
  return std::ldexp(0.5 * (1.0 + sub / kHistogramSubBuckets), exponent);
}

}  // namespace

LatencyValues::LatencyValues(int64_t max_exact) : max_exact_(std::max<int64_t>(max_exact, 1)) {}

void LatencyValues::add(double value) {
  if (count_ == 0) {
    min_ = value;
    max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  ++count_;
  if (!exact()) {
    add_to_histogram(value);
    return;
  }
  values_.push_back(value);
  if (count_ > max_exact_) move_to_histogram();
}

void LatencyValues::move_to_histogram() {
  histogram_.assign(kNumBuckets, 0);
  std::vector<double> values = std::move(values_);
  values_ = {};
  // Deviations are summed from the exact values' mean: small numbers, so their squares keep the
  // variance's digits without a division per value (as Welford's method has) in the loop that takes billions.
  shift_ = stats::pairwise_sum(values) / static_cast<double>(values.size());
  for (const double value : values) add_to_histogram(value);
}

void LatencyValues::add_to_histogram(double value) {
  const int64_t bucket = bucket_of(value);
  if (bucket < 0) {
    ++below_range_;
  } else {
    ++histogram_[static_cast<size_t>(bucket)];
  }
  // Neumaier: the compensation keeps the low bits a plain running sum loses.
  const double sum = sum_ + value;
  sum_compensation_ += std::fabs(sum_) >= std::fabs(value) ? (sum_ - sum) + value : (value - sum) + sum_;
  sum_ = sum;
  const double deviation = value - shift_;
  deviation_sum_ += deviation;
  squared_deviation_sum_ += deviation * deviation;
}

double LatencyValues::value_at_rank(int64_t rank) const {
  if (rank <= 0) return min_;
  if (rank >= count_ - 1) return max_;
  if (rank < below_range_) return min_;
  int64_t seen = below_range_;
  for (size_t bucket = 0; bucket < histogram_.size(); ++bucket) {
    seen += histogram_[bucket];
    if (rank < seen) return std::clamp(bucket_midpoint(static_cast<int64_t>(bucket)), min_, max_);
  }
  return max_;
}

// np.percentile's linear interpolation between the two ranks around percent / 100 * (n - 1).
double LatencyValues::percentile_of_histogram(double percent) const {
  const double position = percent / 100.0 * static_cast<double>(count_ - 1);
  const auto lower = static_cast<int64_t>(std::floor(position));
  const double below = value_at_rank(lower);
  const double fraction = position - static_cast<double>(lower);
  if (fraction == 0.0) return below;
  return below + (value_at_rank(lower + 1) - below) * fraction;
}

LatencySummary LatencyValues::summarize(const std::vector<double>& percents) {
  LatencySummary summary;
  summary.percentiles.reserve(percents.size());
  if (exact()) {
    std::vector<double> values = std::move(values_);
    values_ = {};
    if (!values.empty()) {
      // Mean and std in the order added, before sorting: pairwise sums round by position.
      const double count = static_cast<double>(values.size());
      summary.count = static_cast<int64_t>(values.size());
      summary.mean = stats::pairwise_sum(values) / count;
      summary.stddev = std::sqrt(stats::pairwise_sum_of_squared_deviations(values, summary.mean) / count);
      std::vector<double> selected_percents = {90.0, 99.0};
      selected_percents.insert(selected_percents.end(), percents.begin(), percents.end());
      stats::select_for_percentiles(values, selected_percents);  // what a sort would give, where read
      summary.median = stats::median(values);
      summary.p90 = stats::percentile(values, 90.0);
      summary.p99 = stats::percentile(values, 99.0);
      summary.min = values.front();
      summary.max = values.back();
    }
    for (const double percent : percents) summary.percentiles.push_back({percent, stats::percentile(values, percent)});
    return summary;
  }
  summary.exact = false;
  summary.count = count_;
  summary.mean = (sum_ + sum_compensation_) / static_cast<double>(count_);
  // Population variance about the mean, from the sums about the shift.
  const auto n = static_cast<double>(count_);
  const double mean_deviation = deviation_sum_ / n;
  summary.stddev = std::sqrt(std::max(0.0, squared_deviation_sum_ / n - mean_deviation * mean_deviation));
  summary.median = percentile_of_histogram(50.0);
  summary.p90 = percentile_of_histogram(90.0);
  summary.p99 = percentile_of_histogram(99.0);
  summary.min = min_;
  summary.max = max_;
  for (const double percent : percents) summary.percentiles.push_back({percent, percentile_of_histogram(percent)});
  histogram_ = {};
  return summary;
}

}  // namespace pagedllm::metrics
