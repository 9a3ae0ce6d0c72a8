// Engine tests: the offline generate() API.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "core/engine/offline.h"
#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

// --- 6: the offline API ------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(offline_generate)

std::vector<engine::GenerateRequest> to_generate_requests(const std::vector<sched::Request>& requests) {
  std::vector<engine::GenerateRequest> generate_requests;
  for (const sched::Request& request : requests)
    generate_requests.push_back({request.prompt_tokens, request.params, 0});
  return generate_requests;
}

BOOST_AUTO_TEST_CASE(returns_finished_outputs_in_input_order) {
  const std::vector<sched::Request> requests = make_workload({.seed = 31, .num_requests = 20});
  const EngineSetup setup = small_pool(std::nullopt, true);
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  const std::vector<engine::RequestOutput> outputs = engine::generate(to_generate_requests(requests), scripted, config);
  BOOST_REQUIRE_EQUAL(outputs.size(), requests.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    BOOST_TEST(outputs[i].id == static_cast<sched::RequestId>(i));
    BOOST_TEST(outputs[i].finished);
    BOOST_TEST(outputs[i].num_prompt_tokens == static_cast<int32_t>(requests[i].prompt_tokens.size()));
  }
  // The same tokens as the engine driven step by step.
  const RunResult stepped = run_workload(setup, requests);
  for (const auto& [id, want] : stepped.outputs) {
    const engine::RequestOutput& got = outputs[static_cast<size_t>(id)];
    BOOST_REQUIRE_EQUAL(got.completions.size(), want.completions.size());
    for (size_t i = 0; i < want.completions.size(); ++i) {
      BOOST_TEST(got.completions[i].tokens == want.completions[i].tokens, boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(an_invalid_request_throws_before_anything_runs) {
  std::vector<sched::Request> requests = make_workload({.seed = 32, .num_requests = 6});
  requests[3].params.max_tokens = 0;
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  BOOST_CHECK_THROW(engine::generate(to_generate_requests(requests), scripted, config), sched::InvalidRequestError);
  BOOST_TEST(scripted.num_steps() == 0);
  requests[3].params.max_tokens = 4;
  requests[5].prompt_tokens.clear();
  BOOST_CHECK_THROW(engine::generate(to_generate_requests(requests), scripted, config), sched::InvalidRequestError);
  BOOST_TEST(scripted.num_steps() == 0);
}

BOOST_AUTO_TEST_CASE(stop_strings_are_refused_not_ignored) {
  // Without a tokenizer there is no text to cut: returning uncut text would answer another request.
  std::vector<sched::Request> requests = make_workload({.seed = 33, .num_requests = 2});
  requests[1].params.stop = {"the end"};
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  try {
    engine::generate(to_generate_requests(requests), scripted, config);
    BOOST_FAIL("engine::generate ran a request with stop strings");
  } catch (const sched::InvalidRequestError& error) {
    BOOST_TEST(error.field() == "stop");
    BOOST_TEST(std::string(error.what()).find("frontend::generate") != std::string::npos);
  }
  BOOST_TEST(scripted.num_steps() == 0);
}

BOOST_AUTO_TEST_CASE(no_requests_give_no_outputs) {
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  BOOST_TEST(engine::generate({}, scripted, config).empty());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
