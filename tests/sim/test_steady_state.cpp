// The planner's sustainability test against a capacity derived from the roofline by hand: one
// sequence at a time (max_num_seqs 1) serving fixed-length requests is a single server whose
// service time is the sum of its steps' predicted times, so its capacity is 1 / that sum.
// Poisson arrivals above it must be judged unsustainable, below it sustainable.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "core/metrics/serving_metrics.h"
#include "sim/cluster.h"
#include "sim/latency_objective.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"
#include "sim/steady_state.h"
#include "tests/sim/plan_builder.h"
#include "tests/sim/roofline_fixture.h"

namespace pagedllm::test {
namespace {

constexpr int32_t kPromptLen = 128;
constexpr int32_t kOutputLen = 64;
constexpr int32_t kBlockSize = 16;

engine::EngineConfig serial_engine() {
  engine::EngineConfig config;
  config.cache.num_device_blocks = 4000;
  config.cache.block_size = kBlockSize;
  config.scheduler.max_model_len = 4096;
  config.scheduler.max_num_seqs = 1;
  config.record_step_metrics = false;
  return config;
}

// One request alone: a prefill step that samples the first token, then one decode step per
// further token, each priced by the cost model.
double service_time() {
  const auto model = llama2_7b_on_h100();
  double seconds = model->step_cost(PlanBuilder(kBlockSize).add({0, kPromptLen, 0, true}).plan()).seconds;
  for (int32_t k = 1; k < kOutputLen; ++k) {
    const int32_t end = kPromptLen + k;
    seconds += model->step_cost(PlanBuilder(kBlockSize).add({end - 1, end, kPromptLen, true}).plan()).seconds;
  }
  return seconds;
}

std::vector<sched::Request> poisson_requests(int32_t count, double rate, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<sched::Request> requests;
  double now = 0.0;
  for (int32_t i = 0; i < count; ++i) {
    sched::Request request;
    request.id = i;
    request.arrival_time = now;
    for (int32_t p = 0; p < kPromptLen; ++p) request.prompt_tokens.push_back(100 + (i * 131 + p * 7) % 20000);
    request.params.max_tokens = kOutputLen;
    request.params.ignore_eos = true;
    requests.push_back(request);
    now += gap(random);
  }
  return requests;
}

sim::SimulateFn simulate() {
  return [](std::vector<sched::Request> requests, const sim::SimulationHooks& hooks) {
    sim::ClusterConfig config;
    config.engine = serial_engine();
    config.on_finished = hooks.on_finished;
    config.on_refused = hooks.on_refused;
    config.should_stop = hooks.should_stop;
    config.make_executor = [](int32_t) {
      return std::make_unique<sim::SimExecutor>(sim::SimExecutorConfig{.cost_model = llama2_7b_on_h100()},
                                                serial_engine().cache);
    };
    sim::ClusterSimulation cluster(config);
    return cluster.run(std::move(requests));
  };
}

BOOST_AUTO_TEST_SUITE(steady_state)

BOOST_AUTO_TEST_CASE(a_serial_server_is_judged_against_its_analytic_capacity) {
  const double capacity = 1.0 / service_time();
  BOOST_TEST_MESSAGE("analytic capacity " << capacity << " req/s");
  // 200 requests of the trace: every one of them fits in the first copy's span at either rate,
  // so only the tiling reaches the steady state.
  const std::vector<sched::Request> trace = poisson_requests(200, 1.0, 7);
  for (const double load : {0.75, 1.25}) {
    BOOST_TEST_CONTEXT("offered " << load << " x capacity") {
      const sim::SteadyStateReport report =
          sim::run_to_steady_state(trace, load * capacity, simulate(), sim::SteadyStateConfig{});
      BOOST_TEST(report.num_requests > static_cast<int64_t>(trace.size()));  // tiled
      BOOST_TEST(report.sustained == (load < 1.0));
      BOOST_TEST(!report.window.empty());
      if (load < 1.0) {
        BOOST_TEST(report.span_sufficient);
        BOOST_TEST(report.shortfall.empty());
        // The one server is busy `load` of the time: its measured service time is the analytic one.
        BOOST_TEST(report.mean_service_time == service_time(), boost::test_tools::tolerance(1e-6));
      } else {
        // Above capacity the queue grows at (rate - capacity): slope rate / capacity - 1.
        BOOST_TEST(report.delay_growth > 0.15);
        BOOST_TEST(report.waiting_growth > 0.1);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_rate_that_certainly_misses_its_slo_stops_there_and_one_that_meets_it_runs_whole) {
  const double capacity = 1.0 / service_time();
  const std::vector<sched::Request> trace = poisson_requests(200, 1.0, 7);
  // TTFT within twenty service times: missed above capacity, where the queue grows without bound.
  sim::SteadyStateConfig watched;
  watched.objectives = {
      {.metric = sim::LatencyMetric::ttft, .statistic = sim::LatencyStatistic::p99, .ms = 2e4 * service_time()}};
  const sim::LatencyObjective& objective = watched.objectives.front();
  for (const double load : {0.75, 1.25}) {
    BOOST_TEST_CONTEXT("offered " << load << " x capacity") {
      const sim::SteadyStateReport early = sim::run_to_steady_state(trace, load * capacity, simulate(), watched);
      const sim::SteadyStateReport full =
          sim::run_to_steady_state(trace, load * capacity, simulate(), sim::SteadyStateConfig{});
      const double full_ms = sim::statistic_ms(metrics::compute_serving_metrics(full.window), objective);
      BOOST_TEST_MESSAGE("full run: ttft_p99 " << full_ms << " ms against " << objective.ms);
      BOOST_TEST(early.stopped_early == (load > 1.0));
      if (early.stopped_early) {
        BOOST_TEST(early.missed.rfind("ttft_p99 certainly above", 0) == 0, early.missed);
        BOOST_TEST(early.window.empty());
        BOOST_TEST(full_ms > objective.ms);  // the verdict the full run gives
      } else {
        BOOST_TEST(early.missed.empty(), early.missed);
        BOOST_TEST(full_ms <= objective.ms);
        BOOST_TEST(early.num_requests == full.num_requests);
        BOOST_TEST(early.window.size() == full.window.size());
        BOOST_TEST(early.delay_growth == full.delay_growth);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_run_too_short_to_judge_says_so) {
  const double capacity = 1.0 / service_time();
  const std::vector<sched::Request> trace = poisson_requests(50, 1.0, 3);
  const sim::SteadyStateReport report = sim::run_to_steady_state(
      trace, 0.5 * capacity, simulate(),
      {.min_span_in_service_times = 1000.0, .min_requests = 50, .max_requests = 200, .objectives = {}});
  BOOST_TEST(report.num_requests == 200);
  BOOST_TEST(!report.span_sufficient);
  BOOST_TEST(report.shortfall.find("the most allowed") != std::string::npos, report.shortfall);
}

BOOST_AUTO_TEST_CASE(tiled_copies_follow_each_other_with_fresh_ids_and_their_own_salt) {
  const std::vector<sched::Request> trace = poisson_requests(10, 2.0, 5);
  const double span = trace.back().arrival_time - trace.front().arrival_time;
  const std::vector<sched::Request> tiled = sim::tile_requests(trace, 2.0, 3);
  BOOST_TEST_REQUIRE(tiled.size() == 30u);
  std::set<uint64_t> salts;
  for (size_t i = 0; i < tiled.size(); ++i) {
    BOOST_TEST(tiled[i].id == static_cast<sched::RequestId>(i));
    if (i > 0) BOOST_TEST(tiled[i].arrival_time > tiled[i - 1].arrival_time);
    BOOST_TEST(tiled[i].prompt_tokens == trace[i % 10].prompt_tokens);
    salts.insert(tiled[i].cache_salt);
  }
  BOOST_TEST(salts.size() == 3u);
  BOOST_TEST(tiled[9].arrival_time == span / 2.0, boost::test_tools::tolerance(1e-12));
  // The second copy starts one mean gap after the first ends, at the halved time scale.
  BOOST_TEST(tiled[10].arrival_time == (span + span / 9.0) / 2.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::test
