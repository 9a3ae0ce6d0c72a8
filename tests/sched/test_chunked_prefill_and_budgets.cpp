// Scheduler table tests: chunked prefill, the token and sequence budgets, decodes before prompt chunks.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "tests/sched/scheduler_checks.h"
#include "tests/sched/scheduler_harness.h"

namespace pagedllm::test {

BOOST_AUTO_TEST_SUITE(scheduler_table)

// 1 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(chunked_prefill_splits_a_long_prompt_on_block_boundaries_after_the_decodes) {
  Harness harness({.max_num_batched_tokens = 10});
  harness.add({.id = 0, .num_prompt_tokens = 30, .max_tokens = 3});
  harness.add({.id = 1, .num_prompt_tokens = 2, .max_tokens = 6});
  harness.run_to_completion();

  expect_phases(harness.steps(),
                {
                    // r0's first chunk ends on a block boundary (8 of 10); r1's 2-token prompt fills the rest.
                    {0, 0, {{0, 8}, {1, 2}}},
                    // r1 decodes first though r0 arrived first; r0's chunk: 9 tokens of budget -> 8, aligned.
                    {1, 2, {{1, 1}, {0, 8}}},
                    {3, 3, {{1, 1}, {0, 6}}},  // the rest of the prompt: the chunk ends with the prompt
                    {4, 5, {{0, 1}, {1, 1}}},  // both decode, in FCFS order
                });
  BOOST_TEST(render(ranges_of(harness.steps(), harness.seqs_of(0).front())) ==
             render(std::vector<Range>{{0, 8}, {8, 16}, {16, 24}, {24, 30}, {30, 31}, {31, 32}}));
  for (const StepRecord& record : harness.steps()) {
    BOOST_TEST_CONTEXT("step " << record.step) {
      BOOST_TEST(record.num_batched_tokens <= 10);
      BOOST_TEST(decodes_come_first(record));
    }
  }
  BOOST_TEST(harness.output(0).completions.front().tokens.size() == 3u);
  harness.expect_drained();
}

// 2 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(token_and_sequence_budgets_cap_each_step_and_waiting_requests_are_admitted_in_order) {
  // Chunking off: a prompt runs whole or waits, so the token budget is plain to see.
  Harness harness(
      {.max_num_batched_tokens = 32, .max_num_seqs = 3, .max_model_len = 32, .enable_chunked_prefill = false});
  harness.add({.id = 0, .num_prompt_tokens = 16, .max_tokens = 4});
  harness.add({.id = 1, .num_prompt_tokens = 12, .max_tokens = 4});
  harness.add({.id = 2, .num_prompt_tokens = 20, .max_tokens = 2});
  harness.add({.id = 3, .num_prompt_tokens = 4, .max_tokens = 2});
  harness.add({.id = 4, .num_prompt_tokens = 4, .max_tokens = 2});
  harness.add({.id = 5, .num_prompt_tokens = 4, .max_tokens = 1});
  harness.run_to_completion();

  expect_phases(harness.steps(), {
                                     // 16 + 12 of 32 tokens: r2's 20 do not fit and hold r3 (4 would fit) behind it.
                                     {0, 0, {{0, 16}, {1, 12}}},
                                     {1, 1, {{0, 1}, {1, 1}, {2, 20}}},  // r2 fits now; max_num_seqs = 3 holds r3
                                     {2, 2, {{0, 1}, {1, 1}, {2, 1}}},   // r2 finishes
                                     {3, 3, {{0, 1}, {1, 1}, {3, 4}}},   // one sequence free: r3; r0 and r1 finish
                                     {4, 4, {{3, 1}, {4, 4}, {5, 4}}},   // r3, r5 finish
                                     {5, 5, {{4, 1}}},
                                 });
  for (const StepRecord& record : harness.steps()) {
    BOOST_TEST_CONTEXT("step " << record.step) {
      BOOST_TEST(record.num_batched_tokens <= 32);
      BOOST_TEST(record.ran.size() <= 3u);
    }
  }
  harness.expect_drained();
}

// Regression test: the scheduler once served a running group with at most one uncomputed token in
// its decode pass (SequenceGroup::is_prefilling() meant "more than one token left"), but the last
// token of a prompt is a prefill by ScheduledSequence::is_prefill() (start < num_prompt_tokens). A
// prompt whose last chunk was one token was therefore planned among the decodes, ahead of later
// groups' decodes, and the plan broke StepPlan's "decodes first, then prefill chunks" (step 3
// here: r0's [12, 13) before r1's decode [3, 4)). Now is_prefilling() applies is_prefill()'s test.
BOOST_AUTO_TEST_CASE(a_one_token_final_prompt_chunk_is_planned_after_the_decodes) {
  Harness harness({.max_num_batched_tokens = 5});
  harness.add({.id = 0, .num_prompt_tokens = 13, .max_tokens = 2});
  harness.add({.id = 1, .num_prompt_tokens = 1, .max_tokens = 4});
  harness.run_to_completion();

  expect_phases(harness.steps(),
                {
                    {0, 0, {{0, 4}, {1, 1}}},  // 4 of 5 tokens: aligned; r1's prompt takes the last one
                    {1, 2, {{1, 1}, {0, 4}}},
                    {3, 3, {{1, 1}, {0, 1}}},  // r0's last prompt token is a prefill: after r1's decode
                    {4, 4, {{0, 1}}},
                });
  for (const StepRecord& record : harness.steps()) {
    BOOST_TEST_CONTEXT("step " << record.step) { BOOST_TEST(decodes_come_first(record)); }
  }
  harness.expect_drained();
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
