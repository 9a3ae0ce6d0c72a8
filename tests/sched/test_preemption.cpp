// Scheduler table tests: preemption by recompute, by swap, and the automatic choice between them.
#include <boost/test/unit_test.hpp>

#include <vector>

#include "tests/sched/scheduler_checks.h"
#include "tests/sched/scheduler_harness.h"

namespace pagedllm::test {

BOOST_AUTO_TEST_SUITE(scheduler_table)

// 3 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(preemption_by_recompute_requeues_the_latest_arrival_and_recomputes_it) {
  // Each request: 8 prompt + 8 output tokens = 4 blocks at most; 3 of them need 12, the pool has 10.
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 8, .max_tokens = 8},
      {.id = 1, .num_prompt_tokens = 8, .max_tokens = 8},
      {.id = 2, .num_prompt_tokens = 8, .max_tokens = 8},
  };
  Harness harness({.num_device_blocks = 10, .enable_prefix_caching = false, .preemption_mode = kRecompute});
  for (const RequestSpec& spec : specs) harness.add(spec);
  harness.step_to(6);
  BOOST_TEST(harness.engine().scheduler().num_waiting() == 1);
  BOOST_TEST(harness.engine().scheduler().num_running() == 2);
  BOOST_TEST(harness.kv().stats().num_free_device_blocks == 2);  // not enough for r2's 4
  harness.run_to_completion();

  expect_phases(harness.steps(),
                {
                    {0, 0, {{0, 8}, {1, 8}, {2, 8}}},             // 6 blocks
                    {1, 4, {{0, 1}, {1, 1}, {2, 1}}},             // position 8: a third block each (9)
                    {5, 5, {{0, 1}, {1, 1}}, {{2, kRecompute}}},  // position 12: r1 finds no block, r2 (last) goes
                    {6, 7, {{0, 1}, {1, 1}}},                     // r2 needs 4 blocks, 2 are free; r0, r1 finish
                    {8, 8, {{2, 13}}},                            // prompt + 5 sampled tokens, recomputed
                    {9, 10, {{2, 1}}},
                });
  BOOST_TEST(harness.output(2).times.num_preemptions_recompute == 1);
  expect_same_tokens(harness, specs, {0, 1, 2});
  harness.expect_drained();
}

// 4 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(preemption_by_swap_moves_groups_out_and_back_in_policy_order_before_new_admissions) {
  // As in the recompute test, plus a later request and longer r0, r1 so that r1 is swapped too.
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 8, .max_tokens = 14},
      {.id = 1, .num_prompt_tokens = 8, .max_tokens = 14},
      {.id = 2, .num_prompt_tokens = 8, .max_tokens = 7},
  };
  Harness harness(
      {.num_device_blocks = 10, .num_host_blocks = 16, .enable_prefix_caching = false, .preemption_mode = kSwap});
  for (const RequestSpec& spec : specs) harness.add(spec);
  harness.step_to(6);
  // r3 arrives while r2 is swapped out; its one block is free, yet it waits for r2 to return.
  harness.add({.id = 3, .num_prompt_tokens = 4, .max_tokens = 1});
  harness.step();
  BOOST_TEST(harness.engine().scheduler().num_swapped() == 1);
  BOOST_TEST(harness.engine().scheduler().num_waiting() == 1);
  BOOST_TEST(harness.kv().stats().num_free_device_blocks == 2);
  harness.run_to_completion();

  expect_phases(harness.steps(),
                {
                    {0, 0, {{0, 8}, {1, 8}, {2, 8}}},
                    {1, 4, {{0, 1}, {1, 1}, {2, 1}}},
                    {5, 5, {{0, 1}, {1, 1}}, {{2, kSwap}}, 3},  // r2's 3 blocks (12 tokens) go to the host
                    {6, 12, {{0, 1}, {1, 1}}},                  // r2 needs 3 + 1 blocks; r3 waits behind it
                    {13, 13, {{0, 1}}, {{1, kSwap}}, 5},        // position 20: r0 finds no block, r1 goes; r0 ends
                    {14, 14, {{1, 1}, {2, 1}}, {}, 0, 8},       // both return, r1 first (FCFS), then r3 ...
                    {15, 15, {{2, 1}, {3, 4}}},                 // ... is admitted when a block is free
                });
  // Swap-in follows policy order, not swap-out order: r1's 5 blocks, then r2's 3.
  const StepRecord& r2_out = harness.steps()[5];
  const StepRecord& r1_out = harness.steps()[13];
  const StepRecord& back_in = harness.steps()[14];
  BOOST_TEST_REQUIRE(back_in.swap_in.size() == 8u);
  for (size_t i = 0; i < 5; ++i) BOOST_TEST(back_in.swap_in[i].src == r1_out.swap_out[i].dst);
  for (size_t i = 0; i < 3; ++i) BOOST_TEST(back_in.swap_in[5 + i].src == r2_out.swap_out[i].dst);
  BOOST_TEST(harness.output(1).times.num_preemptions_swap == 1);
  BOOST_TEST(harness.output(2).times.num_preemptions_swap == 1);
  BOOST_TEST(harness.output(2).times.num_preemptions_recompute == 0);
  expect_same_tokens(harness, specs, {0, 1, 2});
  harness.expect_drained();
}

// 5 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(auto_preemption_swaps_a_parallel_group_and_recomputes_a_single_sequence) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 8, .max_tokens = 10},
      {.id = 1, .num_prompt_tokens = 8, .max_tokens = 10, .n = 2},
      {.id = 2, .num_prompt_tokens = 8, .max_tokens = 6},
  };
  Harness harness({.num_device_blocks = 12, .num_host_blocks = 16, .enable_prefix_caching = false});
  for (const RequestSpec& spec : specs) harness.add(spec);
  harness.run_to_completion();

  expect_phases(harness.steps(),
                {
                    {0, 0, {{0, 8}, {1, 8}, {2, 8}}},             // 6 blocks; r1 forks into 2 samples
                    {1, 4, {{0, 1}, {1, 2}, {2, 1}}},             // a third block per sequence: 10
                    {5, 5, {{0, 1}, {1, 2}}, {{2, kRecompute}}},  // r1 needs 2, 1 is free: r2 (one sequence) goes
                    {6, 8, {{0, 1}, {1, 2}}},
                    // r1 needs 2 again, 1 is free and nobody is behind it: r1 itself goes, swapped (2 samples
                    // share the 2 prompt blocks: 6 distinct blocks); r0 ends.
                    {9, 9, {{0, 1}}, {{1, kSwap}}, 6},
                    {10, 10, {{1, 2}, {2, 13}}, {}, 0, 6},  // r1 returns, then r2 recomputes 8 + 5 tokens
                });
  BOOST_TEST(harness.output(1).times.num_preemptions_swap == 1);
  BOOST_TEST(harness.output(1).times.num_preemptions_recompute == 0);
  BOOST_TEST(harness.output(2).times.num_preemptions_recompute == 1);
  BOOST_TEST(harness.output(2).times.num_preemptions_swap == 0);
  expect_same_tokens(harness, specs, {0, 1, 2});
  harness.expect_drained();
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
