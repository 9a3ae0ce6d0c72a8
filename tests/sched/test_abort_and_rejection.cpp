// Scheduler table tests: aborts in every state and requests rejected or refused for their size.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "tests/sched/scheduler_checks.h"
#include "tests/sched/scheduler_harness.h"

namespace pagedllm::test {

BOOST_AUTO_TEST_SUITE(scheduler_table)

// 7 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(abort_of_a_waiting_request_frees_nothing_and_reports_it_next_step) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 4, .max_tokens = 3},
      {.id = 1, .num_prompt_tokens = 4, .max_tokens = 3},
      {.id = 2, .num_prompt_tokens = 4, .max_tokens = 2},
  };
  Harness harness({.max_num_seqs = 1});
  for (const RequestSpec& spec : specs) harness.add(spec);
  harness.step();  // r0 runs, r1 and r2 wait
  abort_and_check(harness, 1, {.device = 0, .host = 0});
  BOOST_TEST(harness.output(1).completions.front().tokens.empty());
  harness.run_to_completion();

  expect_phases(harness.steps(), {
                                     {0, 0, {{0, 4}}},
                                     {1, 2, {{0, 1}}},
                                     {3, 3, {{2, 4}}},  // r2, not the aborted r1
                                     {4, 4, {{2, 1}}},
                                 });
  expect_same_tokens(harness, specs, {0, 2});
  harness.expect_drained();
}

BOOST_AUTO_TEST_CASE(abort_of_a_request_in_the_middle_of_its_prompt_frees_its_blocks_at_once) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 4, .max_tokens = 4},
      {.id = 1, .num_prompt_tokens = 20, .max_tokens = 2},
  };
  Harness harness({.max_num_batched_tokens = 8});
  for (const RequestSpec& spec : specs) harness.add(spec);
  harness.step_to(2);  // r1 has computed 8 of its 20 prompt tokens: 2 blocks
  BOOST_TEST(harness.engine().scheduler().num_running() == 2);
  abort_and_check(harness, 1, {.device = 2, .host = 0});
  harness.run_to_completion();

  expect_phases(harness.steps(),
                {
                    {0, 0, {{0, 4}, {1, 4}}},
                    {1, 1, {{0, 1}, {1, 4}}},  // 7 tokens of budget: r1's chunk ends on a block boundary
                    {2, 3, {{0, 1}}},
                });
  expect_same_tokens(harness, specs, {0});
  harness.expect_drained();
}

BOOST_AUTO_TEST_CASE(abort_of_a_decoding_request_frees_its_blocks_at_once) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 4, .max_tokens = 4},
      {.id = 1, .num_prompt_tokens = 6, .max_tokens = 8},
  };
  Harness harness({});
  for (const RequestSpec& spec : specs) harness.add(spec);
  harness.step_to(3);  // r1 has 8 tokens of KV: 2 blocks
  abort_and_check(harness, 1, {.device = 2, .host = 0});
  harness.run_to_completion();

  expect_phases(harness.steps(), {
                                     {0, 0, {{0, 4}, {1, 6}}},
                                     {1, 2, {{0, 1}, {1, 1}}},
                                     {3, 3, {{0, 1}}},
                                 });
  BOOST_TEST(harness.output(1).completions.front().tokens.size() == 3u);  // sampled before the abort
  expect_same_tokens(harness, specs, {0});
  harness.expect_drained();
}

BOOST_AUTO_TEST_CASE(abort_of_a_swapped_request_frees_its_host_blocks_and_unblocks_admission) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 8, .max_tokens = 8},
      {.id = 1, .num_prompt_tokens = 8, .max_tokens = 8},
      {.id = 2, .num_prompt_tokens = 8, .max_tokens = 8},
      {.id = 3, .num_prompt_tokens = 4, .max_tokens = 1},
  };
  Harness harness(
      {.num_device_blocks = 10, .num_host_blocks = 16, .enable_prefix_caching = false, .preemption_mode = kSwap});
  for (size_t i = 0; i < 3; ++i) harness.add(specs[i]);
  harness.step_to(6);  // r2 was swapped out at step 5
  BOOST_TEST_REQUIRE(harness.engine().scheduler().num_swapped() == 1);
  harness.add(specs[3]);
  abort_and_check(harness, 2, {.device = 0, .host = 3});
  harness.run_to_completion();

  expect_phases(harness.steps(),
                {
                    {0, 0, {{0, 8}, {1, 8}, {2, 8}}},
                    {1, 4, {{0, 1}, {1, 1}, {2, 1}}},
                    {5, 5, {{0, 1}, {1, 1}}, {{2, kSwap}}, 3},
                    {6, 6, {{0, 1}, {1, 1}, {3, 4}}},  // nothing is swapped any more: r3 is admitted at once
                    {7, 7, {{0, 1}, {1, 1}}},
                });
  expect_same_tokens(harness, specs, {0, 1, 3});
  harness.expect_drained();
}

// 8 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_request_that_can_never_fit_is_rejected_with_a_reason_and_holds_nobody_back) {
  // 8 blocks: 32 tokens.
  Harness harness({.num_device_blocks = 8, .max_num_seqs = 4, .max_model_len = 64});
  harness.add({.id = 0, .num_prompt_tokens = 20, .max_tokens = 20});        // 10 blocks
  harness.add({.id = 1, .num_prompt_tokens = 8, .max_tokens = 8, .n = 4});  // 2 shared + 4 x 2 blocks
  harness.add({.id = 2, .num_prompt_tokens = 4, .max_tokens = 2});
  harness.add({.id = 3, .num_prompt_tokens = 8, .max_tokens = 8, .n = 3});  // 2 + 3 x 2 = 8: fits
  harness.add({.id = 4, .num_prompt_tokens = 4, .max_tokens = 2, .n = 5});  // 6 blocks, but 5 > 4 sequences
  harness.step();

  const auto expect_rejected = [&](RequestId id, const std::vector<std::string>& message_parts) {
    BOOST_TEST_CONTEXT("request " << id) {
      const engine::RequestOutput* output = harness.last_output(id);
      BOOST_TEST_REQUIRE(output != nullptr, "the first step must report the rejection");
      BOOST_TEST(output->finished);
      BOOST_TEST(reason(output->finish_reason) == "rejected");
      for (const std::string& part : message_parts) {
        BOOST_TEST(output->message.find(part) != std::string::npos,
                   "message '" << output->message << "' lacks '" << part << "'");
      }
    }
  };
  expect_rejected(0, {"never fit the KV cache", "20 prompt + 20 max_tokens", "10 blocks", "8 usable blocks"});
  expect_rejected(1, {"never fit the KV cache", "4 sequence(s)", "10 blocks", "8 usable blocks"});
  expect_rejected(4, {"5 sequences at once", "max_num_seqs (4)"});
  BOOST_TEST(harness.engine().counters().requests_rejected == 3);
  harness.run_to_completion();

  expect_phases(harness.steps(), {
                                     {0, 0, {{2, 4}, {3, 8}}},  // the requests behind the rejected ones run at once
                                     {1, 1, {{2, 1}, {3, 3}}},  // r2 ends
                                     {2, 7, {{3, 3}}},
                                 });
  harness.expect_drained();
}

BOOST_AUTO_TEST_CASE(a_prompt_beyond_max_model_len_is_refused_with_the_context_length_and_both_counts) {
  Harness harness({.max_model_len = 64});
  const auto expect_refused = [&](const RequestSpec& spec, const std::string& field,
                                  const std::vector<std::string>& message_parts) {
    BOOST_TEST_CONTEXT("request " << spec.id) {
      try {
        harness.add(spec);
        BOOST_ERROR("accepted; expected sched::InvalidRequestError");
      } catch (const sched::InvalidRequestError& error) {
        BOOST_TEST(error.field() == field);
        for (const std::string& part : message_parts) {
          BOOST_TEST(std::string(error.what()).find(part) != std::string::npos,
                     "message '" << error.what() << "' lacks '" << part << "'");
        }
      }
    }
  };
  expect_refused({.id = 0, .num_prompt_tokens = 70, .max_tokens = 2}, "prompt",
                 {"maximum context length is 64 tokens", "70 prompt tokens", "2 completion tokens"});
  expect_refused({.id = 1, .num_prompt_tokens = 60, .max_tokens = 8}, "max_tokens",
                 {"maximum context length is 64 tokens", "60 prompt tokens", "8 completion tokens"});
  BOOST_TEST(!harness.engine().has_unfinished(), "a refused request leaves nothing behind");

  // The refused ids stay free; the largest valid request runs.
  harness.add({.id = 0, .num_prompt_tokens = 60, .max_tokens = 4});
  harness.run_to_completion();
  BOOST_TEST(harness.output(0).completions.front().tokens.size() == 4u);
  harness.expect_drained();
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
