// The planner's early verdict (sim/slo_watch.h) must never call a rate infeasible that the full
// run would judge feasible. Checked against the metrics themselves: whenever the watch decides on
// the requests finished so far, the window's statistic stays above the limit however the
// unfinished requests end, at their most favourable (no latency at all, or not counted at all).
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "core/metrics/serving_metrics.h"
#include "sim/latency_objective.h"
#include "sim/slo_watch.h"

namespace pagedllm::test {
namespace {

struct Finished {
  double arrival = 0.0;
  double ttft = 0.0;
  double e2el = 0.0;
  int32_t output_tokens = 1;
  bool failed = false;
};

engine::RequestOutput output_of(int64_t id, const Finished& f) {
  engine::RequestOutput output;
  output.id = id;
  output.finished = true;
  output.finish_reason = f.failed ? sched::FinishReason::rejected : sched::FinishReason::length;
  output.times.arrival = f.arrival;
  output.times.first_scheduled = f.arrival;
  output.times.first_token = f.failed ? -1.0 : f.arrival + f.ttft;
  output.times.finished = f.arrival + f.e2el;
  engine::Completion completion;
  completion.tokens.assign(static_cast<size_t>(f.output_tokens), 7);
  output.completions.push_back(std::move(completion));
  return output;
}

metrics::RequestRecord record_of(int64_t id, const Finished& f) {
  metrics::RequestRecord record;
  record.id = id;
  record.send_time = f.arrival;
  record.success = !f.failed;
  record.output_tokens = f.output_tokens;
  if (!f.failed) {
    record.first_token_time = f.arrival + f.ttft;
    record.chunk_times = {record.first_token_time};
  }
  record.end_time = f.arrival + f.e2el;
  return record;
}

// The window's statistic with the finished requests as they are and every other window request
// at its most favourable: no latency (`excluded` false) or no part in any latency (true).
double best_case_ms(const sim::LatencyObjective& objective, const std::vector<Finished>& window,
                    const std::vector<bool>& finished, bool excluded) {
  std::vector<metrics::RequestRecord> records;
  for (size_t i = 0; i < window.size(); ++i) {
    Finished f = window[i];
    if (!finished[i]) f = {.arrival = f.arrival, .ttft = 0.0, .e2el = 0.0, .output_tokens = 2, .failed = excluded};
    records.push_back(record_of(static_cast<int64_t>(i), f));
  }
  return sim::statistic_ms(metrics::compute_serving_metrics(records), objective);
}

BOOST_AUTO_TEST_SUITE(slo_watch)

BOOST_AUTO_TEST_CASE(a_decided_rate_misses_its_objective_however_the_rest_of_the_window_ends) {
  std::mt19937_64 random(11);
  int decided_runs = 0;
  int runs = 0;
  for (const char* text : {"ttft_p99=500", "ttft_p90=300", "e2el_p50=2000", "tpot_p99=40", "tpot_mean=30",
                           "ttft_mean=400", "e2el_p99=5000,ttft_p50=100"}) {
    const std::vector<sim::LatencyObjective> objectives = sim::parse_latency_objectives(text);
    for (const int32_t size : {1, 2, 7, 40, 101, 250}) {
      for (int trial = 0; trial < 6; ++trial, ++runs) {
        BOOST_TEST_CONTEXT(text << ", " << size << " requests, trial " << trial) {
          // Arrivals one second apart: the window is the later half. Latencies near the limits.
          std::vector<sched::Request> requests(static_cast<size_t>(size));
          std::vector<Finished> all(requests.size());
          std::lognormal_distribution<double> seconds(std::log(0.35), 1.0);
          std::uniform_int_distribution<int32_t> tokens(1, 120);
          std::bernoulli_distribution fails(0.05);
          for (size_t i = 0; i < requests.size(); ++i) {
            requests[i].id = static_cast<sched::RequestId>(i);
            requests[i].arrival_time = static_cast<double>(i);
            const double ttft = seconds(random);
            all[i] = {.arrival = static_cast<double>(i),
                      .ttft = ttft,
                      .e2el = ttft + 0.1 * seconds(random) * static_cast<double>(tokens(random)),
                      .output_tokens = tokens(random),
                      .failed = fails(random)};
          }
          const double window_start = 0.5 * static_cast<double>(size - 1);
          std::vector<size_t> window;  // indexes into `all`
          for (size_t i = 0; i < all.size(); ++i) {
            if (all[i].arrival >= window_start) window.push_back(i);
          }
          sim::SloMissWatch watch(objectives, requests);
          BOOST_TEST(watch.window_size() == static_cast<int64_t>(window.size()));
          std::vector<size_t> order(all.size());
          for (size_t i = 0; i < order.size(); ++i) order[i] = i;
          std::shuffle(order.begin(), order.end(), random);
          std::vector<Finished> window_requests;
          for (const size_t i : window) window_requests.push_back(all[i]);
          std::vector<bool> finished(window.size(), false);
          for (const size_t i : order) {
            watch.observe(output_of(static_cast<int64_t>(i), all[i]));
            const auto at = std::find(window.begin(), window.end(), i);
            if (at != window.end()) finished[static_cast<size_t>(at - window.begin())] = true;
            if (watch.decided()) break;
          }
          if (!watch.decided()) continue;
          ++decided_runs;
          // Which objective decided: the verdict names it; it must fail at the most favourable end.
          bool some_objective_fails = false;
          for (const sim::LatencyObjective& objective : objectives) {
            if (watch.verdict().rfind(objective.name(), 0) != 0) continue;
            const double zero_rest = best_case_ms(objective, window_requests, finished, false);
            const double no_rest = best_case_ms(objective, window_requests, finished, true);
            BOOST_TEST(zero_rest > objective.ms, watch.verdict() << ": " << zero_rest);
            BOOST_TEST(no_rest > objective.ms, watch.verdict() << ": " << no_rest);
            some_objective_fails = true;
          }
          BOOST_TEST(some_objective_fails, watch.verdict());
        }
      }
    }
  }
  BOOST_TEST_MESSAGE(decided_runs << " of " << runs << " runs decided early");
  BOOST_TEST(decided_runs > runs / 4);  // the check above is not vacuous
}

BOOST_AUTO_TEST_CASE(a_window_above_the_limit_decides_once_the_rank_is_out_of_reach) {
  // 201 requests, 101 in the window (arrivals 100..200). np.percentile(99) over 101 values reads
  // indexes 99 and 100 (virtual index 99.0): 2 values above the limit decide for 101 values, and
  // no population of at most 101 needs more.
  std::vector<sched::Request> requests(201);
  for (size_t i = 0; i < requests.size(); ++i) requests[i].arrival_time = static_cast<double>(i);
  sim::SloMissWatch watch(sim::parse_latency_objectives("ttft_p99=500"), requests);
  BOOST_TEST(watch.window_size() == 101);
  watch.observe(output_of(3, {.arrival = 3.0, .ttft = 9.0, .e2el = 9.0}));  // before the window
  watch.observe(output_of(150, {.arrival = 150.0, .ttft = 0.2, .e2el = 1.0}));
  watch.observe(output_of(151, {.arrival = 151.0, .ttft = 0.6, .e2el = 1.0}));
  watch.observe(output_of(152, {.arrival = 152.0, .ttft = 0.5, .e2el = 1.0}));  // at the limit, not above
  watch.observe(output_of(153, {.arrival = 153.0, .ttft = 0.7, .e2el = 1.0, .failed = true}));
  BOOST_TEST(!watch.decided());
  watch.observe(output_of(154, {.arrival = 154.0, .ttft = 0.9, .e2el = 1.0}));
  BOOST_TEST_REQUIRE(watch.decided());
  BOOST_TEST(watch.verdict().find("ttft_p99 certainly above 500 ms: 2 of the window's 101") == 0, watch.verdict());
}

BOOST_AUTO_TEST_CASE(a_refused_request_decides_and_itl_is_left_to_the_full_run) {
  std::vector<sched::Request> requests(10);
  for (size_t i = 0; i < requests.size(); ++i) requests[i].arrival_time = static_cast<double>(i);
  sim::SloMissWatch itl_only(sim::parse_latency_objectives("itl_p99=1"), requests);
  for (int64_t i = 5; i < 10; ++i) {
    itl_only.observe(output_of(i, {.arrival = static_cast<double>(i), .ttft = 50.0, .e2el = 90.0, .output_tokens = 9}));
  }
  BOOST_TEST(!itl_only.decided());
  itl_only.observe_refusal({.id = 4, .arrival_time = 4.0, .num_prompt_tokens = 9000, .message = "too long"});
  BOOST_TEST(itl_only.decided());
  BOOST_TEST(itl_only.verdict().find("request 4 was refused (too long)") == 0, itl_only.verdict());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::test
