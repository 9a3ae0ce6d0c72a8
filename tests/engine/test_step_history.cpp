// Engine tests: the step history kept in bounded memory (step totals and the thinned timeline)
// agrees with the full per-step record it replaces in reports.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/engine/step_history.h"
#include "core/metrics/engine_summary.h"
#include "tests/engine/engine_harness.h"

namespace pagedllm::test {
namespace {

engine::StepMetrics step_with_usage(int64_t index, double kv_usage) {
  engine::StepMetrics step;
  step.step = index;
  step.start_time = static_cast<double>(index);
  step.end_time = static_cast<double>(index) + 0.5;
  step.kv_usage = kv_usage;
  return step;
}

// The peak of each run of `run` consecutive steps, computed from all of them.
std::vector<int64_t> peaks_by_run(const std::vector<engine::StepMetrics>& steps, size_t run) {
  std::vector<int64_t> peaks;
  for (size_t first = 0; first < steps.size(); first += run) {
    const auto begin = steps.begin() + static_cast<std::ptrdiff_t>(first);
    const auto end = steps.begin() + static_cast<std::ptrdiff_t>(std::min(steps.size(), first + run));
    peaks.push_back(
        std::max_element(begin, end, [](const auto& a, const auto& b) { return a.kv_usage < b.kv_usage; })->step);
  }
  return peaks;
}

std::vector<int64_t> step_ids(const std::vector<engine::StepMetrics>& points) {
  std::vector<int64_t> ids;
  for (const engine::StepMetrics& point : points) ids.push_back(point.step);
  return ids;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(engine_step_history)

BOOST_AUTO_TEST_CASE(the_summary_from_running_totals_equals_the_one_from_every_step) {
  EngineSetup setup = small_pool(PreemptionMode::swap, true);
  const std::vector<sched::Request> requests = make_workload({.seed = 17, .num_requests = 30});
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor executor(executor_config(setup), config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, executor, clock);
  for (const sched::Request& request : requests) llm.add_request(request);
  while (llm.has_unfinished()) llm.step();
  const std::vector<engine::StepMetrics>& steps = llm.step_metrics();
  BOOST_TEST_REQUIRE(steps.size() > 20u);

  // The summary as it was computed from the recorded history.
  double busy = 0.0, usage = 0.0, waste = 0.0, waste_weight = 0.0, peak = 0.0;
  int32_t host_peak = 0, max_waiting = 0;
  for (const engine::StepMetrics& step : steps) {
    const double seconds = step.end_time - step.start_time;
    busy += seconds;
    usage += step.kv_usage * seconds;
    peak = std::max(peak, step.kv_usage);
    host_peak = std::max(host_peak, step.host_blocks_used);
    max_waiting = std::max(max_waiting, step.num_waiting);
    if (step.device_blocks_used > 0) {
      waste += static_cast<double>(step.internal_waste_slots) / (step.device_blocks_used * setup.block_size) * seconds;
      waste_weight += seconds;
    }
  }
  const metrics::EngineSummary summary = metrics::summarize_engine(llm);
  BOOST_TEST(llm.step_totals().num_steps == static_cast<int64_t>(steps.size()));
  BOOST_TEST(summary.busy_seconds == busy);  // the same sums in the same order: exactly equal
  BOOST_TEST(summary.kv_usage_mean == usage / busy);
  BOOST_TEST(summary.internal_waste_mean == waste / waste_weight);
  BOOST_TEST(summary.kv_usage_peak == peak);
  BOOST_TEST(summary.host_blocks_peak == host_peak);
  BOOST_TEST(host_peak > 0);
  BOOST_TEST(summary.max_waiting == max_waiting);

  // The timeline is the old thinning of every step while the steps fit its capacity.
  for (const size_t max_points : {size_t{7}, size_t{50}, steps.size(), steps.size() + 5}) {
    const size_t run = (steps.size() + max_points - 1) / max_points;
    BOOST_TEST(step_ids(llm.step_timeline().points(max_points)) == peaks_by_run(steps, run));
  }
}

BOOST_AUTO_TEST_CASE(an_engine_without_a_step_record_still_summarizes) {
  EngineSetup setup;
  engine::EngineConfig config = engine_config(setup);
  config.record_step_metrics = false;
  engine::ScriptedExecutor executor(executor_config(setup), config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, executor, clock);
  for (const sched::Request& request : make_workload({.seed = 3, .num_requests = 10})) llm.add_request(request);
  while (llm.has_unfinished()) llm.step();
  BOOST_TEST(llm.step_metrics().empty());
  BOOST_TEST(llm.step_totals().num_steps == llm.num_steps());
  const metrics::EngineSummary summary = metrics::summarize_engine(llm);
  BOOST_TEST(summary.busy_seconds > 0.0);
  BOOST_TEST(summary.kv_usage_peak > 0.0);
  BOOST_TEST(metrics::engine_timeline(llm, 1000).size() == static_cast<size_t>(llm.num_steps()));
}

BOOST_AUTO_TEST_CASE(past_its_capacity_the_timeline_keeps_the_peak_of_each_power_of_two_run) {
  // 100 steps with a usage full of ties (the first of equals is kept) and one global peak, into 8 points.
  std::vector<engine::StepMetrics> steps;
  for (int64_t i = 0; i < 100; ++i) steps.push_back(step_with_usage(i, static_cast<double>((i * 7) % 5) / 10.0));
  steps[61].kv_usage = 0.9;
  engine::StepTimeline timeline(8);
  for (const engine::StepMetrics& step : steps) {
    timeline.add(step);
    BOOST_TEST(timeline.points(1000).size() <= 8u);
  }
  // 100 steps end at stride 16: 6 full runs and one of 4.
  BOOST_TEST(timeline.stride() == 16);
  BOOST_TEST(step_ids(timeline.points(8)) == peaks_by_run(steps, 16));
  BOOST_TEST(step_ids(timeline.points(4)) == peaks_by_run(steps, 32));
  const std::vector<engine::StepMetrics> one = timeline.points(1);
  BOOST_REQUIRE(one.size() == 1u);
  BOOST_TEST(one.front().step == 61);  // the peak survives every thinning
  BOOST_TEST(timeline.points(0).empty());
  BOOST_TEST(engine::StepTimeline(3).capacity() == 4u);  // pairs need an even count
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
