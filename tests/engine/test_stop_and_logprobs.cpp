// Engine tests: stop conditions (EOS, min_tokens, stop token ids, max_tokens, max_model_len) and logprobs.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/clock.h"
#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

// --- 3: stop conditions ------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_stop_conditions)

BOOST_AUTO_TEST_CASE(eos_stops_a_sequence_unless_ignore_eos) {
  EngineSetup setup;
  setup.eos_period = 4;
  sched::Request request = make_request(1, 9, 60);
  const engine::RequestOutput stopped = run_one(setup, request);
  BOOST_REQUIRE_EQUAL(stopped.completions.size(), 1u);
  const std::vector<TokenId>& tokens = stopped.completions[0].tokens;
  BOOST_REQUIRE(!tokens.empty());
  BOOST_TEST(tokens.back() == kEos);
  BOOST_TEST(index_of(tokens, kEos) == static_cast<std::ptrdiff_t>(tokens.size()) - 1);
  BOOST_TEST(tokens.size() < 60u);
  BOOST_TEST(stopped.finish_reason == FinishReason::stop);
  BOOST_TEST(stopped.completions[0].finish_reason == FinishReason::stop);

  request.params.ignore_eos = true;
  const engine::RequestOutput ignored = run_one(setup, request);
  const std::vector<TokenId>& all = ignored.completions.at(0).tokens;
  BOOST_TEST(all.size() == 60u);
  BOOST_TEST(ignored.finish_reason == FinishReason::length);
  BOOST_TEST(std::equal(tokens.begin(), tokens.end(), all.begin()));
  BOOST_TEST(std::count(all.begin(), all.end(), kEos) > 1);
}

BOOST_AUTO_TEST_CASE(each_parallel_sample_stops_on_its_own) {
  EngineSetup setup;
  setup.eos_period = 5;
  sched::Request request = make_request(2, 12, 50);
  request.params.n = 3;
  const engine::RequestOutput output = run_one(setup, request);
  BOOST_REQUIRE_EQUAL(output.completions.size(), 3u);
  for (const engine::Completion& completion : output.completions) {
    const auto first_eos = index_of(completion.tokens, kEos);
    if (completion.finish_reason == FinishReason::stop) {
      BOOST_TEST(first_eos == static_cast<std::ptrdiff_t>(completion.tokens.size()) - 1);
    } else {
      BOOST_TEST(completion.finish_reason == FinishReason::length);
      BOOST_TEST(completion.tokens.size() == 50u);
      BOOST_TEST(first_eos == static_cast<std::ptrdiff_t>(completion.tokens.size()));
    }
  }
  BOOST_TEST(output.completions[0].tokens != output.completions[1].tokens);
}

BOOST_AUTO_TEST_CASE(min_tokens_suppresses_eos_until_reached) {
  EngineSetup setup;
  setup.eos_period = 4;
  sched::Request request = make_request(3, 10, 60);
  const engine::RequestOutput free_run = run_one(setup, request);
  const auto first_eos = static_cast<int32_t>(index_of(free_run.completions.at(0).tokens, kEos));
  BOOST_REQUIRE_LT(first_eos, 40);  // the EOS that would stop it
  request.params.min_tokens = first_eos + 2;
  const engine::RequestOutput held = run_one(setup, request);
  const std::vector<TokenId>& tokens = held.completions.at(0).tokens;
  BOOST_TEST(static_cast<int32_t>(tokens.size()) >= first_eos + 2);
  // As a real sampler under min_tokens, the executor never emits EOS among the first min_tokens.
  BOOST_TEST(std::count(tokens.begin(), tokens.begin() + first_eos + 2, kEos) == 0);
  if (held.finish_reason == FinishReason::stop) BOOST_TEST(tokens.back() == kEos);
}

BOOST_AUTO_TEST_CASE(stop_token_ids_stop_but_not_before_min_tokens) {
  EngineSetup setup;
  setup.eos_period = 0;
  sched::Request request = make_request(4, 7, 30);
  const std::vector<TokenId> tokens = run_one(setup, request).completions.at(0).tokens;
  BOOST_REQUIRE_EQUAL(tokens.size(), 30u);
  // A token whose first appearance is at output position 3 or later.
  size_t position = 3;
  while (index_of(tokens, tokens[position]) != static_cast<std::ptrdiff_t>(position)) ++position;
  const TokenId stop_token = tokens[position];
  request.params.stop_token_ids = {stop_token, 999999};
  const engine::RequestOutput stopped = run_one(setup, request);
  const std::vector<TokenId> expected(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(position) + 1);
  BOOST_TEST(stopped.completions.at(0).tokens == expected, boost::test_tools::per_element());
  BOOST_TEST(stopped.finish_reason == FinishReason::stop);

  request.params.min_tokens = static_cast<int32_t>(position) + 2;
  const engine::RequestOutput held = run_one(setup, request);
  const std::vector<TokenId>& held_tokens = held.completions.at(0).tokens;
  BOOST_TEST(held_tokens.size() >= position + 2);
  BOOST_TEST(std::count(held_tokens.begin(), held_tokens.begin() + static_cast<std::ptrdiff_t>(position) + 2,
                        stop_token) == 0);
  // Up to the suppressed token the output is the same; there the executor took the next id.
  BOOST_TEST(std::equal(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(position), held_tokens.begin()));
  BOOST_TEST(held_tokens.at(position) != stop_token);
}

// Records the stop ids each scheduled sequence carries, then defers to the scripted executor.
class StopIdsRecorder final : public engine::Executor {
 public:
  explicit StopIdsRecorder(engine::Executor& inner) : inner_(inner) {}
  sched::StepResult execute(const sched::StepPlan& plan) override {
    for (const sched::ScheduledSequence& scheduled : plan.sequences) {
      seen[scheduled.request] = scheduled.params->all_stop_token_ids;
    }
    return inner_.execute(plan);
  }
  std::string name() const override { return "stop-ids-recorder"; }
  std::map<sched::RequestId, std::vector<TokenId>> seen;

 private:
  engine::Executor& inner_;
};

BOOST_AUTO_TEST_CASE(executors_get_the_stop_ids_and_eos_to_suppress_under_min_tokens) {
  EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  BOOST_REQUIRE(config.eos_token_ids == std::vector<pagedllm::TokenId>{kEos});
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  StopIdsRecorder recorder(scripted);
  engine::VirtualClock clock;
  engine::Engine llm(config, recorder, clock);
  const auto add = [&](sched::RequestId id, std::vector<TokenId> stop_ids, bool ignore_eos) {
    sched::Request request = make_request(id, 5, 4);
    request.params.min_tokens = 2;
    request.params.stop_token_ids = std::move(stop_ids);
    request.params.ignore_eos = ignore_eos;
    llm.add_request(std::move(request));
  };
  add(1, {}, false);
  add(2, {9, 11}, false);
  add(3, {9, kEos}, false);  // EOS once, though named twice
  add(4, {9}, true);
  add(5, {}, true);
  while (llm.has_unfinished()) llm.step();
  BOOST_TEST(recorder.seen.at(1) == (std::vector<TokenId>{kEos}), boost::test_tools::per_element());
  BOOST_TEST(recorder.seen.at(2) == (std::vector<TokenId>{9, 11, kEos}), boost::test_tools::per_element());
  BOOST_TEST(recorder.seen.at(3) == (std::vector<TokenId>{9, kEos}), boost::test_tools::per_element());
  BOOST_TEST(recorder.seen.at(4) == (std::vector<TokenId>{9}), boost::test_tools::per_element());
  BOOST_TEST(recorder.seen.at(5).empty());
}

BOOST_AUTO_TEST_CASE(max_tokens_ends_with_length) {
  EngineSetup setup;
  setup.eos_period = 0;
  for (const int32_t max_tokens : {1, 2, 17}) {
    sched::Request request = make_request(5, 6, max_tokens);
    request.params.n = 2;
    const engine::RequestOutput output = run_one(setup, request);
    BOOST_TEST(output.finish_reason == FinishReason::length);
    BOOST_REQUIRE_EQUAL(output.completions.size(), 2u);
    for (const engine::Completion& completion : output.completions) {
      BOOST_TEST(completion.tokens.size() == static_cast<size_t>(max_tokens));
      BOOST_TEST(completion.finish_reason == FinishReason::length);
    }
  }
}

BOOST_AUTO_TEST_CASE(max_model_len_bounds_a_sequence) {
  EngineSetup setup;
  setup.eos_period = 0;
  setup.max_model_len = 40;
  const sched::Request request = make_request(6, 25, 15);  // exactly max_model_len in all
  const engine::RequestOutput output = run_one(setup, request);
  BOOST_TEST(output.finish_reason == FinishReason::length);
  BOOST_TEST(output.num_prompt_tokens + static_cast<int32_t>(output.completions.at(0).tokens.size()) == 40);

  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, scripted, clock);
  BOOST_CHECK_THROW(llm.add_request(make_request(7, 25, 16)), sched::InvalidRequestError);
  BOOST_CHECK_THROW(llm.add_request(make_request(8, 41, 1)), sched::InvalidRequestError);
  BOOST_TEST(!llm.has_unfinished());
}

BOOST_AUTO_TEST_SUITE_END()

// --- 5: logprobs -------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_logprobs)

BOOST_AUTO_TEST_CASE(each_token_carries_k_top_logprobs_led_by_the_sampled_token) {
  EngineSetup setup;
  setup.eos_period = 6;
  std::vector<sched::Request> requests;
  for (const int32_t k : {1, 3, 5}) {
    for (const int32_t n : {1, 2}) {
      sched::Request request = make_request(static_cast<sched::RequestId>(requests.size()), 9, 20);
      request.params.n = n;
      request.params.logprobs = k;
      requests.push_back(std::move(request));
    }
  }
  requests.push_back(make_request(static_cast<sched::RequestId>(requests.size()), 9, 20));
  const RunResult run = run_workload(setup, requests);
  for (const sched::Request& request : requests) {
    const engine::RequestOutput& output = run.outputs.at(request.id);
    BOOST_REQUIRE_EQUAL(output.completions.size(), static_cast<size_t>(request.params.n));
    for (const engine::Completion& completion : output.completions) {
      BOOST_TEST_CONTEXT("request " << request.id << " completion " << completion.index) {
        if (!request.params.logprobs) {
          BOOST_TEST(completion.top_logprobs.empty());
          BOOST_TEST(completion.token_logprobs.empty());
          continue;
        }
        BOOST_REQUIRE_EQUAL(completion.top_logprobs.size(), completion.tokens.size());
        BOOST_REQUIRE_EQUAL(completion.token_logprobs.size(), completion.tokens.size());
        double sum = 0.0;
        for (size_t i = 0; i < completion.tokens.size(); ++i) {
          const auto& top = completion.top_logprobs[i];
          BOOST_REQUIRE_EQUAL(top.size(), static_cast<size_t>(*request.params.logprobs));
          BOOST_TEST(top.front().first == completion.tokens[i]);
          BOOST_TEST(completion.token_logprobs[i] == top.front().second);  // the sampled token's own
          sum += completion.token_logprobs[i];
        }
        BOOST_TEST(completion.cumulative_logprob == sum, boost::test_tools::tolerance(1e-6));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(logprobs_above_max_logprobs_are_refused) {
  const EngineSetup setup;
  const engine::EngineConfig config = engine_config(setup);
  engine::ScriptedExecutor scripted(executor_config(setup), config.cache);
  engine::VirtualClock clock;
  engine::Engine llm(config, scripted, clock);
  sched::Request request = make_request(1, 5, 5);
  request.params.logprobs = config.max_logprobs + 1;
  BOOST_CHECK_THROW(llm.add_request(request), sched::InvalidRequestError);
  request.params.logprobs = config.max_logprobs;
  BOOST_CHECK_NO_THROW(llm.add_request(request));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
