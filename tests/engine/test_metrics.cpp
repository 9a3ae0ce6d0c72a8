// Engine tests: step metrics, request times and counters against the executed plans.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

// --- 4: metrics --------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_metrics)

double step_seconds(const EngineSetup& setup, int32_t num_batched_tokens) {
  return setup.seconds_per_step + setup.seconds_per_token * num_batched_tokens;
}

BOOST_AUTO_TEST_CASE(step_metrics_follow_the_plans_and_the_clock_follows_the_executor) {
  WorkloadSpec spec;
  spec.seed = 21;
  spec.num_requests = 30;
  const std::vector<sched::Request> requests = make_workload(spec);
  const EngineSetup setup = small_pool(std::nullopt, true);
  const RunResult run = run_workload(setup, requests, {.requests_per_step = 4});
  BOOST_REQUIRE_EQUAL(run.step_metrics.size(), static_cast<size_t>(run.num_steps));
  std::map<int64_t, const PlanRecord*> plans;
  for (const PlanRecord& plan : run.plans) plans[plan.step] = &plan;
  double now = 0.0;
  engine::StepMetrics totals;
  for (size_t i = 0; i < run.step_metrics.size(); ++i) {
    const engine::StepMetrics& step = run.step_metrics[i];
    BOOST_TEST_CONTEXT("step " << i) {
      BOOST_TEST(step.step == static_cast<int64_t>(i));
      BOOST_TEST(step.start_time == now);
      BOOST_TEST(step.num_batched_tokens == step.num_prefill_tokens + step.num_decode_tokens);
      BOOST_TEST(step.kv_usage >= 0.0);
      BOOST_TEST(step.kv_usage <= 1.0);
      const auto plan = plans.find(step.step);
      if (plan == plans.end()) {
        BOOST_TEST(step.num_batched_tokens == 0);
        BOOST_TEST(step.end_time == step.start_time);
      } else {
        const PlanRecord& record = *plan->second;
        BOOST_TEST(step.num_batched_tokens == record.num_batched_tokens);
        BOOST_TEST(step.num_scheduled_seqs == record.num_sequences);
        BOOST_TEST(step.blocks_swapped_out == record.num_swap_out);
        BOOST_TEST(step.blocks_swapped_in == record.num_swap_in);
        BOOST_TEST(step.blocks_copied == record.num_copies);
        BOOST_TEST(step.end_time - step.start_time == step_seconds(setup, step.num_batched_tokens),
                   boost::test_tools::tolerance(1e-9));
      }
      now = step.end_time;
    }
    totals.num_prefill_tokens += step.num_prefill_tokens;
    totals.num_decode_tokens += step.num_decode_tokens;
    totals.blocks_swapped_out += step.blocks_swapped_out;
    totals.blocks_swapped_in += step.blocks_swapped_in;
    totals.blocks_copied += step.blocks_copied;
    totals.preemptions_recompute += step.preemptions_recompute;
    totals.preemptions_swap += step.preemptions_swap;
  }
  BOOST_TEST(run.end_time == now);
  const engine::EngineCounters& counters = run.counters;
  BOOST_TEST(counters.prompt_tokens_computed == totals.num_prefill_tokens);
  BOOST_TEST(counters.preemptions_recompute == totals.preemptions_recompute);
  BOOST_TEST(counters.preemptions_swap == totals.preemptions_swap);
  BOOST_TEST(counters.blocks_swapped_out == totals.blocks_swapped_out);
  BOOST_TEST(counters.blocks_swapped_in == totals.blocks_swapped_in);
  BOOST_TEST(counters.preemptions_recompute > 0);
  BOOST_TEST(counters.preemptions_swap > 0);
  BOOST_TEST(totals.blocks_copied > 0);
  int64_t request_recomputes = 0;
  int64_t request_swaps = 0;
  for (const auto& [id, output] : run.outputs) {
    request_recomputes += output.times.num_preemptions_recompute;
    request_swaps += output.times.num_preemptions_swap;
  }
  BOOST_TEST(request_recomputes == counters.preemptions_recompute);
  BOOST_TEST(request_swaps == counters.preemptions_swap);
}

BOOST_AUTO_TEST_CASE(request_times_record_each_step_that_sampled) {
  WorkloadSpec spec;
  spec.seed = 22;
  spec.num_requests = 30;
  const std::vector<sched::Request> requests = make_workload(spec);
  const EngineSetup setup = small_pool(std::nullopt, true);
  const RunResult run = run_workload(setup, requests, {.requests_per_step = 2});
  std::map<int64_t, const engine::StepMetrics*> steps;
  for (const engine::StepMetrics& step : run.step_metrics) steps[step.step] = &step;
  for (const auto& [id, output] : run.outputs) {
    BOOST_TEST_CONTEXT("request " << id) {
      const sched::RequestTimes& times = output.times;
      std::vector<double> expected_token_times;
      double first_scheduled = -1.0;
      for (const PlanRecord& plan : run.plans) {
        const bool scheduled = std::find(plan.scheduled.begin(), plan.scheduled.end(), id) != plan.scheduled.end();
        if (scheduled && first_scheduled < 0) first_scheduled = steps.at(plan.step)->start_time;
        if (std::find(plan.sampled.begin(), plan.sampled.end(), id) != plan.sampled.end()) {
          expected_token_times.push_back(steps.at(plan.step)->end_time);
        }
      }
      BOOST_TEST(times.arrival <= times.first_scheduled);
      BOOST_TEST(times.first_scheduled == first_scheduled);
      BOOST_TEST(times.first_scheduled < times.first_token);
      BOOST_TEST(times.first_token <= times.finished);
      BOOST_TEST(std::is_sorted(times.token_times.begin(), times.token_times.end()));
      BOOST_TEST(times.token_times == expected_token_times, boost::test_tools::per_element());
      BOOST_REQUIRE(!times.token_times.empty());
      BOOST_TEST(times.first_token == times.token_times.front());
      BOOST_TEST(times.finished == times.token_times.back());
      if (output.completions.size() == 1 && !requests[static_cast<size_t>(id)].params.use_beam_search()) {
        BOOST_TEST(times.token_times.size() == output.completions[0].tokens.size());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(counters_count_prompt_and_generated_tokens) {
  WorkloadSpec spec;
  spec.seed = 23;
  spec.num_requests = 25;
  spec.percent_beam = 0;
  const std::vector<sched::Request> requests = make_workload(spec);
  int64_t prompt_tokens = 0;
  for (const sched::Request& request : requests) prompt_tokens += static_cast<int64_t>(request.prompt_tokens.size());

  // Ample pool: every prompt token is computed once or served from the prefix cache.
  const RunResult ample = run_workload(EngineSetup{}, requests);
  BOOST_TEST(ample.counters.generation_tokens == num_output_tokens(ample));
  BOOST_TEST(ample.counters.prompt_tokens_computed + ample.kv_stats.prefix_hit_tokens == prompt_tokens);
  // vLLM's prompt_tokens_total: every request's whole prompt, hits included, once.
  BOOST_TEST(ample.counters.prompt_tokens == prompt_tokens);
  BOOST_TEST(ample.kv_stats.prefix_hit_tokens > 0);
  BOOST_TEST(ample.counters.preemptions_recompute + ample.counters.preemptions_swap == 0);
  BOOST_TEST(ample.counters.requests_finished == static_cast<int64_t>(requests.size()));

  // Recompute computes prompts again; swap does not; both return every generated token.
  for (const PreemptionMode mode : {PreemptionMode::recompute, PreemptionMode::swap}) {
    const RunResult small = run_workload(small_pool(mode, true), requests);
    BOOST_TEST(small.counters.generation_tokens == num_output_tokens(small));
    BOOST_TEST(small.counters.prompt_tokens == prompt_tokens, "a recomputed prompt is not counted twice");
    if (mode == PreemptionMode::recompute) {
      BOOST_TEST(small.counters.preemptions_recompute > 0);
      BOOST_TEST(small.counters.preemptions_swap == 0);
      BOOST_TEST(small.counters.prompt_tokens_computed > ample.counters.prompt_tokens_computed);
    } else {
      BOOST_TEST(small.counters.preemptions_swap > 0);
      BOOST_TEST(small.counters.preemptions_recompute == 0);
      BOOST_TEST(small.counters.blocks_swapped_in > 0);
      BOOST_TEST(small.counters.blocks_swapped_out >= small.counters.blocks_swapped_in);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
