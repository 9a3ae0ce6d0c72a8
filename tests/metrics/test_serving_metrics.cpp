#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/common/numpy_stats.h"
#include "core/metrics/serving_metrics.h"
#include "core/metrics/serving_metrics_json.h"
#include "core/metrics/serving_metrics_report.h"

namespace metrics = pagedllm::metrics;
namespace tt = boost::test_tools;
using metrics::RequestRecord;

namespace {

RequestRecord completed(int64_t id, double send, std::vector<double> chunks, int32_t prompt, int32_t output) {
  RequestRecord record;
  record.id = id;
  record.send_time = send;
  record.first_token_time = chunks.front();
  record.end_time = chunks.back();
  record.chunk_times = std::move(chunks);
  record.prompt_tokens = prompt;
  record.output_tokens = output;
  return record;
}

RequestRecord failed(int64_t id, double send, double end, const std::string& error) {
  RequestRecord record;
  record.id = id;
  record.send_time = send;
  record.end_time = end;
  record.prompt_tokens = 100;
  record.success = false;
  record.error = error;
  return record;
}

// Four completed requests and three failures; every number in the tests below is worked out by
// hand from these times.
//   r1: TTFT 0.5, E2EL 1.5, TPOT (1.5 - 0.5) / 3 = 1/3, ITL 0.2 0.3 0.5
//   r2: TTFT 0.2, E2EL 0.6, TPOT 0.4 / 1 = 0.4,          ITL 0.4
//   r3: TTFT 1.0, E2EL 1.0, one output token: no TPOT,  no ITL
//   r4: TTFT 0.1, E2EL 2.0, TPOT 1.9 / 4 = 0.475,        ITL 0.1 0.2 1.6 (a chunk of two tokens)
// Duration: max end (failure at 5.0) - min send (0.0) = 5 s.
std::vector<RequestRecord> records() {
  return {
      completed(1, 0.0, {0.5, 0.7, 1.0, 1.5}, 10, 4),
      completed(2, 1.0, {1.2, 1.6}, 20, 2),
      completed(3, 2.0, {3.0}, 5, 1),
      completed(4, 2.5, {2.6, 2.7, 2.9, 4.5}, 30, 5),
      failed(5, 3.0, 5.0, "timeout"),
      failed(6, 3.5, -1.0, "timeout"),
      failed(7, 3.6, 3.6, "rejected: prompt too long"),
  };
}

constexpr double kTolerance = 1e-9;

void check_close(double actual, double expected) { BOOST_TEST(actual == expected, tt::tolerance(kTolerance)); }

}  // namespace

BOOST_AUTO_TEST_SUITE(serving_metrics)

BOOST_AUTO_TEST_CASE(percentile_interpolates_linearly_between_closest_ranks_as_numpy) {
  const std::vector<double> values = {1.0, 2.0, 3.0, 4.0};
  BOOST_TEST(metrics::percentile(values, 0.0) == 1.0);
  BOOST_TEST(metrics::percentile(values, 100.0) == 4.0);
  BOOST_TEST(metrics::percentile(values, 50.0) == 2.5);
  // np.percentile([1, 2, 3, 4], 90) = 3.7: index 2.7 between 3 and 4.
  check_close(metrics::percentile(values, 90.0), 3.7);
  check_close(metrics::percentile(values, 10.0), 1.3);
  BOOST_TEST(metrics::percentile(std::vector<double>{7.0}, 99.0) == 7.0);
  BOOST_TEST(metrics::percentile(std::vector<double>{}, 50.0) == 0.0);
  BOOST_TEST(metrics::median(values) == 2.5);
  BOOST_TEST(metrics::median(std::vector<double>{1.0, 5.0, 9.0}) == 5.0);
}

BOOST_AUTO_TEST_CASE(percentile_labels_are_pythons_str_of_the_number) {
  BOOST_TEST(metrics::percentile_label(99.0) == "99");
  BOOST_TEST(metrics::percentile_label(50.0) == "50");
  BOOST_TEST(metrics::percentile_label(99.9) == "99.9");
  BOOST_TEST(metrics::percentile_label(0.5) == "0.5");
}

BOOST_AUTO_TEST_CASE(completed_and_failed_requests_and_totals) {
  const metrics::ServingMetrics result = metrics::compute_serving_metrics(records());
  BOOST_TEST(result.num_completed == 4);
  BOOST_TEST(result.num_failed == 3);
  BOOST_TEST(result.errors.size() == 2U);
  BOOST_TEST(result.errors.at("timeout") == 2);
  BOOST_TEST(result.errors.at("rejected: prompt too long") == 1);
  BOOST_TEST(result.duration == 5.0);
  BOOST_TEST(result.total_input_tokens == 65);  // failed prompts excluded
  BOOST_TEST(result.total_output_tokens == 12);
  check_close(result.request_throughput, 0.8);
  check_close(result.output_throughput, 2.4);
  check_close(result.total_token_throughput, 15.4);  // (65 + 12) / 5
  BOOST_TEST(!result.request_goodput.has_value());
}

BOOST_AUTO_TEST_CASE(ttft_distribution) {
  const metrics::LatencySummary ttft = metrics::compute_serving_metrics(records()).ttft;
  // Sorted: 0.1 0.2 0.5 1.0.
  BOOST_TEST(ttft.count == 4);
  check_close(ttft.mean, 0.45);
  check_close(ttft.stddev, 0.35);  // deviations 0.05 -0.25 0.55 -0.35: squares sum 0.49, / 4
  check_close(ttft.median, 0.35);
  check_close(ttft.p90, 0.85);   // index 2.7: 0.5 + 0.7 * 0.5
  check_close(ttft.p99, 0.985);  // index 2.97
  check_close(ttft.min, 0.1);
  check_close(ttft.max, 1.0);
  BOOST_TEST(ttft.percentiles.size() == 3U);
  BOOST_TEST(ttft.percentiles[0].percent == 50.0);
  check_close(ttft.percentiles[0].value, 0.35);
  check_close(ttft.percentiles[2].value, 0.985);
}

BOOST_AUTO_TEST_CASE(tpot_leaves_out_single_token_outputs) {
  const metrics::LatencySummary tpot = metrics::compute_serving_metrics(records()).tpot;
  // 1/3, 0.4, 0.475 (r3 has one output token).
  BOOST_TEST(tpot.count == 3);
  check_close(tpot.mean, (1.0 / 3.0 + 0.4 + 0.475) / 3.0);
  check_close(tpot.median, 0.4);
  check_close(tpot.p90, 0.46);    // index 1.8: 0.4 + 0.8 * 0.075
  check_close(tpot.p99, 0.4735);  // index 1.98
  check_close(tpot.min, 1.0 / 3.0);
  check_close(tpot.max, 0.475);
}

BOOST_AUTO_TEST_CASE(itl_pools_every_gap_of_every_request) {
  const metrics::LatencySummary itl = metrics::compute_serving_metrics(records()).itl;
  // 0.2 0.3 0.5 | 0.4 | 0.1 0.2 1.6; sorted 0.1 0.2 0.2 0.3 0.4 0.5 1.6.
  BOOST_TEST(itl.count == 7);
  check_close(itl.mean, 3.3 / 7.0);
  check_close(itl.median, 0.3);
  check_close(itl.p90, 0.94);   // index 5.4: 0.5 + 0.4 * 1.1
  check_close(itl.p99, 1.534);  // index 5.94
  check_close(itl.min, 0.1);
  check_close(itl.max, 1.6);
}

BOOST_AUTO_TEST_CASE(itl_left_out_when_not_asked_leaves_every_other_figure_as_it_was) {
  metrics::MetricsOptions options;
  options.inter_token_latencies = false;
  const metrics::ServingMetrics without = metrics::compute_serving_metrics(records(), options);
  const metrics::ServingMetrics with = metrics::compute_serving_metrics(records());
  BOOST_TEST(without.itl.count == 0);
  BOOST_TEST(without.itl.p99 == 0.0);
  BOOST_TEST(with.itl.count == 7);
  for (const auto& [a, b] :
       {std::pair{&without.ttft, &with.ttft}, {&without.tpot, &with.tpot}, {&without.e2el, &with.e2el}}) {
    BOOST_TEST(a->count == b->count);
    BOOST_TEST(a->mean == b->mean);
    BOOST_TEST(a->p99 == b->p99);
  }
  BOOST_TEST(without.output_throughput == with.output_throughput);
}

BOOST_AUTO_TEST_CASE(e2el_distribution) {
  const metrics::LatencySummary e2el = metrics::compute_serving_metrics(records()).e2el;
  // Sorted: 0.6 1.0 1.5 2.0.
  BOOST_TEST(e2el.count == 4);
  check_close(e2el.mean, 1.275);
  check_close(e2el.median, 1.25);
  check_close(e2el.p90, 1.85);
  check_close(e2el.p99, 1.985);
  // Deviations -0.675 -0.275 0.225 0.725: squares 0.455625 0.075625 0.050625 0.525625, sum 1.1075.
  check_close(e2el.stddev, std::sqrt(1.1075 / 4.0));
}

BOOST_AUTO_TEST_CASE(goodput_counts_requests_meeting_every_objective) {
  metrics::MetricsOptions options;
  options.slo.ttft_ms = 600.0;
  options.slo.tpot_ms = 450.0;
  // r1 and r2 pass; r3 misses TTFT (1.0 s), r4 misses TPOT (0.475 s).
  metrics::ServingMetrics result = metrics::compute_serving_metrics(records(), options);
  BOOST_TEST(result.num_good == 2);
  BOOST_TEST(result.request_goodput.has_value());
  check_close(*result.request_goodput, 0.4);

  // A tight TPOT objective alone: only r3 passes, having no TPOT (vLLM counts it as 0).
  options.slo = {};
  options.slo.tpot_ms = 100.0;
  result = metrics::compute_serving_metrics(records(), options);
  BOOST_TEST(result.num_good == 1);
  check_close(*result.request_goodput, 0.2);

  // An objective equal to the value passes (vLLM: slo >= value): r1's E2EL is exactly 1.5 s.
  options.slo = {};
  options.slo.e2el_ms = 1500.0;
  result = metrics::compute_serving_metrics(records(), options);
  BOOST_TEST(result.num_good == 3);  // r4 (2.0 s) misses
}

BOOST_AUTO_TEST_CASE(explicit_duration_and_requested_percentiles) {
  metrics::MetricsOptions options;
  options.duration = 10.0;
  options.percentiles = {25.0, 99.9};
  const metrics::ServingMetrics result = metrics::compute_serving_metrics(records(), options);
  BOOST_TEST(result.duration == 10.0);
  check_close(result.request_throughput, 0.4);
  BOOST_TEST(result.e2el.percentiles.size() == 2U);
  check_close(result.e2el.percentiles[0].value, 0.9);     // index 0.75: 0.6 + 0.75 * 0.4
  check_close(result.e2el.percentiles[1].value, 1.9985);  // index 2.997
  check_close(result.e2el.p90, 1.85);                     // always there
}

BOOST_AUTO_TEST_CASE(no_records_give_zeros) {
  const metrics::ServingMetrics result = metrics::compute_serving_metrics({});
  BOOST_TEST(result.num_completed == 0);
  BOOST_TEST(result.duration == 0.0);
  BOOST_TEST(result.request_throughput == 0.0);
  BOOST_TEST(result.ttft.count == 0);
  BOOST_TEST(result.ttft.mean == 0.0);
  BOOST_TEST(result.ttft.percentiles.size() == 3U);
}

BOOST_AUTO_TEST_CASE(mean_and_std_sum_pairwise_as_numpy_does) {
  // A thousand TTFTs of 0.1: a sequential sum drifts (mean 0x1.9999999999934p-4); numpy's
  // pairwise sum gives np.mean = 0x1.999999999999bp-4 and np.std = 0x1p-56.
  std::vector<RequestRecord> many;
  for (int i = 1; i <= 1000; ++i) many.push_back(completed(i, 0.0, {0.1}, 1, 1));
  const metrics::ServingMetrics result = metrics::compute_serving_metrics(many);
  BOOST_TEST(result.ttft.mean == 0x1.999999999999bp-4);
  BOOST_TEST(result.ttft.stddev == 0x1p-56);
}

BOOST_AUTO_TEST_CASE(squared_deviations_sum_to_the_bit_without_holding_the_squares) {
  // Every branch of the pairwise sum: sequential (< 8), 8 lanes (<= 128), halves above.
  std::mt19937_64 random(5);
  std::uniform_real_distribution<double> gap(0.001, 0.3);
  for (const size_t count : {size_t{0}, size_t{5}, size_t{8}, size_t{127}, size_t{128}, size_t{129}, size_t{4099}}) {
    std::vector<double> values(count);
    for (double& value : values) value = gap(random);
    const double mean = count > 0 ? pagedllm::stats::pairwise_sum(values) / static_cast<double>(count) : 0.0;
    std::vector<double> squares(count);
    for (size_t i = 0; i < count; ++i) squares[i] = (values[i] - mean) * (values[i] - mean);
    BOOST_TEST(
        pagedllm::stats::pairwise_sum_of_squared_deviations(values, mean) == pagedllm::stats::pairwise_sum(squares),
        "count " << count);
  }
}

BOOST_AUTO_TEST_CASE(inconsistent_records_and_options_are_refused) {
  std::vector<RequestRecord> bad = records();
  bad[1].first_token_time = -1.0;
  BOOST_CHECK_EXCEPTION(metrics::compute_serving_metrics(bad), std::invalid_argument,
                        [](const std::invalid_argument& error) {
                          return std::string(error.what()).find("request 2") != std::string::npos;
                        });
  bad = records();
  bad[0].end_time = 0.2;
  BOOST_CHECK_THROW(metrics::compute_serving_metrics(bad), std::invalid_argument);
  metrics::MetricsOptions options;
  options.percentiles = {101.0};
  BOOST_CHECK_THROW(metrics::compute_serving_metrics(records(), options), std::invalid_argument);
  options = {};
  options.duration = 0.0;
  BOOST_CHECK_THROW(metrics::compute_serving_metrics(records(), options), std::invalid_argument);
  options = {};
  options.slo.ttft_ms = -1.0;
  BOOST_CHECK_EXCEPTION(metrics::compute_serving_metrics(records(), options), std::invalid_argument,
                        [](const std::invalid_argument& error) {
                          return std::string(error.what()).find("slo.ttft_ms") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(json_has_vllm_keys_in_milliseconds) {
  metrics::MetricsOptions options;
  options.slo.ttft_ms = 600.0;
  options.percentiles = {50.0, 90.0, 99.0, 99.9};
  const nlohmann::json json = metrics::to_json(metrics::compute_serving_metrics(records(), options));
  BOOST_TEST(json.at("completed") == 4);
  BOOST_TEST(json.at("failed") == 3);
  BOOST_TEST(json.at("errors").at("timeout") == 2);
  BOOST_TEST(json.at("duration").get<double>() == 5.0);
  BOOST_TEST(json.at("total_input_tokens") == 65);
  BOOST_TEST(json.at("total_output_tokens") == 12);
  check_close(json.at("request_throughput").get<double>(), 0.8);
  check_close(json.at("output_throughput").get<double>(), 2.4);
  check_close(json.at("total_token_throughput").get<double>(), 15.4);
  check_close(json.at("request_goodput").get<double>(), 0.6);  // r1 r2 r4 meet 600 ms TTFT
  check_close(json.at("mean_ttft_ms").get<double>(), 450.0);
  check_close(json.at("median_ttft_ms").get<double>(), 350.0);
  check_close(json.at("std_ttft_ms").get<double>(), 350.0);
  check_close(json.at("p90_ttft_ms").get<double>(), 850.0);
  check_close(json.at("p99_ttft_ms").get<double>(), 985.0);
  check_close(json.at("p99.9_ttft_ms").get<double>(), 998.5);
  check_close(json.at("p50_ttft_ms").get<double>(), 350.0);
  for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
    for (const char* statistic : {"mean", "median", "std", "p90", "p99", "min", "max"}) {
      BOOST_TEST(json.contains(std::string(statistic) + "_" + metric + "_ms"), statistic << "_" << metric);
    }
  }
  check_close(json.at("mean_tpot_ms").get<double>(), (1000.0 / 3.0 + 400.0 + 475.0) / 3.0);
  check_close(json.at("p90_itl_ms").get<double>(), 940.0);
  check_close(json.at("median_e2el_ms").get<double>(), 1250.0);
  BOOST_TEST(json.at("count_tpot") == 3);

  const nlohmann::json without_slo = metrics::to_json(metrics::compute_serving_metrics(records()));
  BOOST_TEST(without_slo.at("request_goodput").is_null());
}

BOOST_AUTO_TEST_CASE(report_has_vllms_layout) {
  metrics::MetricsOptions options;
  options.slo.ttft_ms = 600.0;
  std::ostringstream out;
  metrics::print_serving_metrics(metrics::compute_serving_metrics(records(), options), out);
  const std::string text = out.str();
  const auto has = [&text](const std::string& line) {
    BOOST_TEST(text.find(line + "\n") != std::string::npos, "missing line: '" << line << "'\n" << text);
  };
  has("============ Serving Benchmark Result ============");
  has("Successful requests:                     4         ");
  has("Failed requests:                         3         ");
  has("  timeout                                2         ");
  has("Benchmark duration (s):                  5.00      ");
  has("Total input tokens:                      65        ");
  has("Total generated tokens:                  12        ");
  has("Request throughput (req/s):              0.80      ");
  has("Request goodput (req/s):                 0.60      ");
  has("Output token throughput (tok/s):         2.40      ");
  has("Total Token throughput (tok/s):          15.40     ");
  has("---------------Time to First Token----------------");
  has("Mean TTFT (ms):                          450.00    ");
  has("Median TTFT (ms):                        350.00    ");
  has("P90 TTFT (ms):                           850.00    ");
  has("P99 TTFT (ms):                           985.00    ");
  has("-----Time per Output Token (excl. 1st token)------");
  has("Median TPOT (ms):                        400.00    ");
  has("---------------Inter-token Latency----------------");
  has("P90 ITL (ms):                            940.00    ");
  has("----------------End-to-end Latency----------------");
  has("Mean E2EL (ms):                          1275.00   ");
  has("==================================================");
  BOOST_TEST(text.find("P50 ") == std::string::npos);  // the Median row shows it

  std::ostringstream plain;
  metrics::print_serving_metrics(metrics::compute_serving_metrics(records()), plain, "Replay");
  BOOST_TEST(plain.str().find("===================== Replay =====================\n") == 0U);
  BOOST_TEST(plain.str().find("goodput") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
