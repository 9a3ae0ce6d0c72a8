// Statistics computed exactly as numpy computes them, so that our reports equal vLLM's (which
// uses numpy) to the bit for the same inputs.
#pragma once

#include <cstddef>
#include <span>

namespace pagedllm::stats {

// np.percentile(values, percent) with the default "linear" method, on ascending values;
// percent in [0, 100]. Empty input: 0.
double percentile(std::span<const double> sorted, double percent);

// The index, among `size` >= 1 ascending values, of the lower of the two that
// percentile(values, percent) interpolates between (the last one at 100, the first below 0): the
// percentile is at least the value there. np.median's is percentile 50's.
size_t percentile_floor_index(size_t size, double percent);

// np.median on ascending values. Empty input: 0.
double median(std::span<const double> sorted);

// Reorders `values` so that the elements percentile(values, p) for each of `percents`, median()
// and front() / back() read hold what a full ascending sort would put there; the others are left
// in no order. Those calls then return exactly what they return on the sorted values, in linear
// time per percent instead of a sort (a long run's millions of inter-token gaps).
void select_for_percentiles(std::span<double> values, std::span<const double> percents);

// np.sum of a contiguous float64 array: numpy's pairwise summation, in the given order.
double pairwise_sum(std::span<const double> values);

// np.sum((x - mean) ** 2) as np.std computes it (the squared deviations, pairwise summed), without
// holding the squares: equal to pairwise_sum of them to the bit.
double pairwise_sum_of_squared_deviations(std::span<const double> values, double mean);

}  // namespace pagedllm::stats
