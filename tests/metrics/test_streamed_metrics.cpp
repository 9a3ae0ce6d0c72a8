// Serving metrics of a long run in bounded memory: latencies past the exact limit move into a
// log-linear histogram whose percentiles stay within kHistogramRelativeError of numpy's; records
// summed up one at a time give compute_serving_metrics' result; records that end out of order
// are handed on in arrival order.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/common/numpy_stats.h"
#include "core/metrics/arrival_order_records.h"
#include "core/metrics/latency_values.h"
#include "core/metrics/serving_metrics.h"

namespace pagedllm::metrics {
namespace {

std::vector<double> lognormal_values(size_t count, uint32_t seed) {
  std::mt19937_64 generator(seed);
  std::lognormal_distribution<double> latency(std::log(0.02), 0.6);  // ~20 ms, a long tail
  std::vector<double> values(count);
  for (double& value : values) value = latency(generator);
  values[count / 2] = 0.0;  // a zero gap (two chunks at the same time) lands below the buckets
  return values;
}

BOOST_AUTO_TEST_SUITE(streamed_metrics)

BOOST_AUTO_TEST_CASE(latencies_past_the_limit_are_summed_up_by_a_histogram_within_its_error) {
  const std::vector<double> values = lognormal_values(200'000, 3);
  const std::vector<double> percents = {1.0, 25.0, 50.0, 75.0, 99.9, 100.0};
  LatencyValues exact(values.size());
  LatencyValues bounded(1000);
  for (const double value : values) {
    exact.add(value);
    bounded.add(value);
  }
  BOOST_TEST(exact.exact());
  BOOST_TEST(!bounded.exact());
  const LatencySummary want = exact.summarize(percents);
  const LatencySummary got = bounded.summarize(percents);
  BOOST_TEST(want.exact);
  BOOST_TEST(!got.exact);
  BOOST_TEST(got.count == want.count);
  BOOST_TEST(got.min == want.min);
  BOOST_TEST(got.max == want.max);
  BOOST_TEST(got.mean == want.mean, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(got.stddev == want.stddev, boost::test_tools::tolerance(1e-9));
  const auto within = [](double approximate, double exact_value) {
    return std::fabs(approximate - exact_value) <= kHistogramRelativeError * std::fabs(exact_value);
  };
  BOOST_TEST(within(got.median, want.median));
  BOOST_TEST(within(got.p90, want.p90));
  BOOST_TEST(within(got.p99, want.p99));
  BOOST_REQUIRE_EQUAL(got.percentiles.size(), percents.size());
  for (size_t i = 0; i < percents.size(); ++i) {
    BOOST_TEST_CONTEXT("p" << percents[i]) {
      BOOST_TEST(got.percentiles[i].percent == percents[i]);
      BOOST_TEST(within(got.percentiles[i].value, want.percentiles[i].value));
    }
  }
  // The histogram is not exact: some percentile moved (else this test would not show the error).
  BOOST_TEST(got.median != want.median);
}

// The exact summary selects only the elements its percentiles read (no sort): each figure must be
// the one numpy's formulas give on the fully sorted values, bit for bit, at every size (odd, even,
// tiny), with repeated values, and for percents at and between the ends.
BOOST_AUTO_TEST_CASE(the_exact_summary_equals_percentiles_of_the_sorted_values) {
  const std::vector<double> percents = {0.0, 1e-9, 1.0, 25.0, 50.0, 62.5, 99.9, 99.99, 100.0};
  std::mt19937_64 generator(11);
  for (const size_t count : {1, 2, 3, 4, 5, 10, 101, 1000, 4096, 65'537}) {
    std::vector<double> values = lognormal_values(std::max<size_t>(count, 2), static_cast<uint32_t>(count));
    values.resize(count);
    for (size_t i = 0; i + 3 < count; i += 7) values[i + 3] = values[i];  // ties
    std::shuffle(values.begin(), values.end(), generator);
    LatencyValues latencies(static_cast<int64_t>(count));
    for (const double value : values) latencies.add(value);
    const LatencySummary summary = latencies.summarize(percents);
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    BOOST_TEST_CONTEXT(count << " values") {
      BOOST_TEST(summary.exact);
      BOOST_TEST(summary.min == sorted.front());
      BOOST_TEST(summary.max == sorted.back());
      BOOST_TEST(summary.median == stats::median(sorted));
      BOOST_TEST(summary.p90 == stats::percentile(sorted, 90.0));
      BOOST_TEST(summary.p99 == stats::percentile(sorted, 99.0));
      BOOST_REQUIRE_EQUAL(summary.percentiles.size(), percents.size());
      for (size_t i = 0; i < percents.size(); ++i) {
        BOOST_TEST(summary.percentiles[i].value == stats::percentile(sorted, percents[i]), "p" << percents[i]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(records_summed_one_at_a_time_give_the_whole_runs_metrics) {
  std::mt19937_64 generator(8);
  std::uniform_real_distribution<double> gap(0.001, 0.05);
  std::vector<RequestRecord> records;
  for (int64_t id = 0; id < 300; ++id) {
    RequestRecord record;
    record.id = id;
    record.send_time = 0.1 * static_cast<double>(id);
    record.prompt_tokens = 10 + static_cast<int32_t>(id % 7);
    if (id % 50 == 7) {
      record.success = false;
      record.error = "refused: too long";
      record.end_time = record.send_time;
    } else {
      double time = record.send_time + gap(generator) * 10;
      record.output_tokens = 1 + static_cast<int32_t>(id % 9);
      for (int32_t token = 0; token < record.output_tokens; ++token, time += gap(generator))
        record.chunk_times.push_back(time);
      record.first_token_time = record.chunk_times.front();
      record.end_time = record.chunk_times.back();
    }
    records.push_back(std::move(record));
  }
  MetricsOptions options;
  options.percentiles = {50.0, 95.0};
  options.slo.ttft_ms = 200.0;
  const ServingMetrics whole = compute_serving_metrics(records, options);
  ServingMetricsAccumulator accumulator(options);
  for (const RequestRecord& record : records) accumulator.add(record);
  const ServingMetrics streamed = accumulator.finish();
  BOOST_TEST(streamed.num_completed == whole.num_completed);
  BOOST_TEST(streamed.num_failed == whole.num_failed);
  BOOST_TEST((streamed.errors == whole.errors));
  BOOST_TEST(streamed.duration == whole.duration);
  BOOST_TEST(streamed.total_output_tokens == whole.total_output_tokens);
  BOOST_TEST(streamed.num_good == whole.num_good);
  BOOST_TEST(*streamed.request_goodput == *whole.request_goodput);
  for (const auto& [a, b] : {std::pair{&streamed.ttft, &whole.ttft}, std::pair{&streamed.tpot, &whole.tpot},
                             std::pair{&streamed.itl, &whole.itl}, std::pair{&streamed.e2el, &whole.e2el}}) {
    BOOST_TEST(a->count == b->count);
    BOOST_TEST(a->mean == b->mean);  // to the bit: the same values in the same order
    BOOST_TEST(a->stddev == b->stddev);
    BOOST_TEST(a->p99 == b->p99);
    BOOST_TEST(a->percentiles[1].value == b->percentiles[1].value);
  }
  // A duration given at the end stands in for the measured one.
  ServingMetricsAccumulator timed(options);
  for (const RequestRecord& record : records) timed.add(record);
  BOOST_TEST(timed.finish(100.0).request_throughput == static_cast<double>(whole.num_completed) / 100.0);
}

BOOST_AUTO_TEST_CASE(records_go_out_in_arrival_order_once_every_earlier_arrival_ended) {
  std::vector<int64_t> emitted;
  ArrivalOrderRecords records([&](RequestRecord&& record) { emitted.push_back(record.id); });
  const auto ended = [&](int64_t id) {
    RequestRecord record;
    record.id = id;
    records.ended(std::move(record));
  };
  for (const int64_t id : {0, 2, 5, 6, 9}) records.arrived(id);  // ids 1, 3, 4, ... never arrive
  ended(5);
  ended(2);
  BOOST_TEST(emitted.empty());  // 0 is still in flight
  BOOST_TEST(records.num_held() == 2U);
  ended(0);
  BOOST_TEST(emitted == (std::vector<int64_t>{0, 2, 5}));
  ended(9);
  BOOST_TEST(records.num_held() == 1U);
  records.flush();  // 6 never ended (a stopped run): passed over
  BOOST_TEST(emitted == (std::vector<int64_t>{0, 2, 5, 9}));
  BOOST_TEST(records.num_emitted() == 4);

  ArrivalOrderRecords strict([](RequestRecord&&) {});
  strict.arrived(1);
  strict.arrived(2);
  RequestRecord twice;
  twice.id = 2;
  strict.ended(twice);
  BOOST_CHECK_THROW(strict.ended(twice), std::invalid_argument);
  RequestRecord stranger;
  stranger.id = 7;
  strict.ended(stranger);
  BOOST_CHECK_THROW(strict.flush(), std::invalid_argument);  // 7 never arrived
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::metrics
