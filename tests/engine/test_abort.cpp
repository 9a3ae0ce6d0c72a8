// Engine tests: aborting requests while they wait, run or are swapped out.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/engine/clock.h"
#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

// --- 7: abort ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_abort)

struct AbortFixture {
  EngineSetup setup;
  engine::EngineConfig config;
  engine::ScriptedExecutor scripted;
  engine::VirtualClock clock;
  engine::Engine llm;

  explicit AbortFixture(const EngineSetup& engine_setup)
      : setup(engine_setup),
        config(engine_config(engine_setup)),
        scripted(executor_config(engine_setup), config.cache),
        llm(config, scripted, clock) {}

  // Steps once, checks the invariants and returns the outputs by request.
  std::map<sched::RequestId, engine::RequestOutput> step() {
    std::map<sched::RequestId, engine::RequestOutput> outputs;
    for (engine::RequestOutput& output : llm.step()) outputs.emplace(output.id, std::move(output));
    llm.scheduler().check_invariants();
    return outputs;
  }
};

BOOST_AUTO_TEST_CASE(an_aborted_running_request_comes_back_finished_and_frees_its_blocks) {
  EngineSetup setup;
  setup.eos_period = 0;
  AbortFixture fixture(setup);
  for (sched::RequestId id = 0; id < 3; ++id) {
    sched::Request request = make_request(id, 10, 40);
    request.params.n = 2;
    fixture.llm.add_request(request);
  }
  for (int32_t i = 0; i < 4; ++i) fixture.step();
  BOOST_REQUIRE_EQUAL(fixture.llm.kv().stats().num_sequences, 6);
  const int32_t free_before = fixture.llm.kv().stats().num_free_device_blocks;
  const double abort_time = fixture.clock.now();
  BOOST_TEST(fixture.llm.abort_request(1));
  BOOST_TEST(!fixture.llm.abort_request(1));
  BOOST_TEST(!fixture.llm.abort_request(77));
  BOOST_TEST(fixture.llm.kv().stats().num_sequences == 4);
  BOOST_TEST(fixture.llm.kv().stats().num_free_device_blocks > free_before);
  fixture.llm.scheduler().check_invariants();
  BOOST_TEST(fixture.llm.counters().requests_aborted == 1);

  const auto outputs = fixture.step();
  BOOST_REQUIRE(outputs.contains(1));
  const engine::RequestOutput& aborted = outputs.at(1);
  BOOST_TEST(aborted.finished);
  BOOST_TEST(aborted.finish_reason == FinishReason::abort);
  BOOST_TEST(aborted.times.finished == abort_time);
  BOOST_REQUIRE_EQUAL(aborted.completions.size(), 2u);
  for (const engine::Completion& completion : aborted.completions) {
    BOOST_TEST(completion.finish_reason == FinishReason::abort);
    BOOST_TEST(completion.tokens.size() == 4u);
  }
  BOOST_TEST(!fixture.llm.abort_request(1));
  while (fixture.llm.has_unfinished()) {
    BOOST_REQUIRE_LT(fixture.llm.num_steps(), 200);
    const auto later = fixture.step();
    BOOST_TEST(!later.contains(1));
  }
  BOOST_TEST(fixture.llm.counters().requests_finished == 2);
  BOOST_TEST(fixture.llm.kv().stats().num_sequences == 0);
  BOOST_TEST(fixture.llm.kv().stats().num_free_device_blocks == setup.num_device_blocks);
}

// A frontend's stop string ends one sample; the request goes on with the others and finishes
// with its last one.
BOOST_AUTO_TEST_CASE(stopping_one_sample_frees_it_and_the_request_finishes_with_the_last) {
  EngineSetup setup;
  setup.eos_period = 0;
  AbortFixture fixture(setup);
  sched::Request request = make_request(5, 10, 40);
  request.params.n = 2;
  fixture.llm.add_request(request);
  for (int32_t i = 0; i < 4; ++i) fixture.step();
  BOOST_REQUIRE_EQUAL(fixture.llm.kv().stats().num_sequences, 2);
  BOOST_TEST(!fixture.llm.stop_sample(5, 2));   // no such sample
  BOOST_TEST(!fixture.llm.stop_sample(77, 0));  // no such request
  BOOST_TEST(fixture.llm.stop_sample(5, 0));
  BOOST_TEST(!fixture.llm.stop_sample(5, 0));  // already stopped
  BOOST_TEST(fixture.llm.kv().stats().num_sequences == 1);
  fixture.llm.scheduler().check_invariants();
  std::map<sched::RequestId, engine::RequestOutput> outputs = fixture.step();
  BOOST_REQUIRE(outputs.contains(5));
  BOOST_TEST(!outputs.at(5).finished);
  BOOST_TEST(fixture.llm.stop_sample(5, 1));
  BOOST_TEST(fixture.llm.kv().stats().num_sequences == 0);
  outputs = fixture.step();
  BOOST_REQUIRE(outputs.contains(5));
  const engine::RequestOutput& finished = outputs.at(5);
  BOOST_TEST(finished.finished);
  BOOST_TEST(finished.finish_reason == FinishReason::stop);
  BOOST_REQUIRE_EQUAL(finished.completions.size(), 2u);
  BOOST_TEST(finished.completions[0].finish_reason == FinishReason::stop);
  BOOST_TEST(finished.completions[1].finish_reason == FinishReason::stop);
  BOOST_TEST(finished.completions[0].tokens.size() < finished.completions[1].tokens.size());  // stopped a step earlier
  BOOST_TEST(!fixture.llm.has_unfinished());
  BOOST_TEST(fixture.llm.counters().requests_finished == 1);
  BOOST_TEST(fixture.llm.kv().stats().num_free_device_blocks == setup.num_device_blocks);
}

BOOST_AUTO_TEST_CASE(aborting_everything_frees_both_tiers_and_reports_each_request_once) {
  EngineSetup setup = small_pool(PreemptionMode::swap, true);
  setup.eos_period = 0;
  AbortFixture fixture(setup);
  const std::vector<sched::Request> requests = make_workload({.seed = 41, .num_requests = 16, .percent_beam = 0});
  for (const sched::Request& request : requests) fixture.llm.add_request(request);
  std::map<sched::RequestId, engine::RequestOutput> finished;
  while (fixture.llm.scheduler().num_swapped() == 0) {
    BOOST_REQUIRE_LT(fixture.llm.num_steps(), 500);
    for (auto& [id, output] : fixture.step()) {
      if (output.finished) finished.emplace(id, std::move(output));
    }
  }
  BOOST_TEST(fixture.llm.kv().stats().num_free_host_blocks < setup.num_host_blocks);
  int32_t num_aborted = 0;
  for (const sched::Request& request : requests) num_aborted += fixture.llm.abort_request(request.id) ? 1 : 0;
  BOOST_TEST(num_aborted + static_cast<int32_t>(finished.size()) == static_cast<int32_t>(requests.size()));
  BOOST_TEST(fixture.llm.kv().stats().num_sequences == 0);
  BOOST_TEST(fixture.llm.kv().stats().num_free_host_blocks == setup.num_host_blocks);
  BOOST_TEST(fixture.llm.kv().stats().num_free_device_blocks == setup.num_device_blocks);
  const auto outputs = fixture.step();
  BOOST_TEST(static_cast<int32_t>(outputs.size()) == num_aborted);
  for (const auto& [id, output] : outputs) {
    BOOST_TEST(!finished.contains(id));
    BOOST_TEST(output.finish_reason == FinishReason::abort);
  }
  BOOST_TEST(!fixture.llm.has_unfinished());
}

BOOST_AUTO_TEST_CASE(a_waiting_request_can_be_aborted_before_it_runs) {
  AbortFixture fixture(EngineSetup{});
  fixture.llm.add_request(make_request(5, 8, 8));
  BOOST_TEST(fixture.llm.abort_request(5));
  const auto outputs = fixture.step();
  BOOST_REQUIRE(outputs.contains(5));
  BOOST_TEST(outputs.at(5).finish_reason == FinishReason::abort);
  BOOST_TEST(outputs.at(5).times.first_scheduled < 0.0);
  BOOST_TEST(!fixture.llm.has_unfinished());
  BOOST_TEST(fixture.scripted.num_steps() == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
