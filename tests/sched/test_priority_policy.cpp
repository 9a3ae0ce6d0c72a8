// Scheduler table tests: the priority policy's order of service and choice of preemption victims.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <vector>

#include "tests/sched/scheduler_checks.h"
#include "tests/sched/scheduler_harness.h"

namespace pagedllm::test {

BOOST_AUTO_TEST_SUITE(scheduler_table)

// 6 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(priority_policy_runs_a_later_request_with_a_lower_priority_value_first) {
  // One sequence at a time, so the order of admission is the order of service.
  const auto run = [](sched::SchedulingPolicy policy) {
    Harness harness({.max_num_seqs = 1, .policy = policy});
    harness.add({.id = 0, .num_prompt_tokens = 4, .max_tokens = 2, .priority = 5, .arrival = 0.0});
    harness.add({.id = 1, .num_prompt_tokens = 4, .max_tokens = 2, .priority = 0, .arrival = 0.5});
    harness.run_to_completion();
    harness.expect_drained();
    return harness.steps();
  };
  BOOST_TEST_CONTEXT("priority") {
    expect_phases(run(sched::SchedulingPolicy::priority), {
                                                              {0, 0, {{1, 4}}},
                                                              {1, 1, {{1, 1}}},
                                                              {2, 2, {{0, 4}}},
                                                              {3, 3, {{0, 1}}},
                                                          });
  }
  BOOST_TEST_CONTEXT("fcfs, for contrast") {
    expect_phases(run(sched::SchedulingPolicy::fcfs), {
                                                          {0, 0, {{0, 4}}},
                                                          {1, 1, {{0, 1}}},
                                                          {2, 2, {{1, 4}}},
                                                          {3, 3, {{1, 1}}},
                                                      });
  }
}

BOOST_AUTO_TEST_CASE(priority_policy_preempts_the_lowest_priority_then_the_latest_arrival) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 8, .max_tokens = 6, .priority = 2, .arrival = 0.0},
      {.id = 1, .num_prompt_tokens = 8, .max_tokens = 6, .priority = 2, .arrival = 0.1},
      {.id = 2, .num_prompt_tokens = 11, .max_tokens = 4, .priority = 0, .arrival = 0.2},
  };
  Harness harness(
      {.num_device_blocks = 9, .enable_prefix_caching = false, .policy = sched::SchedulingPolicy::priority});
  for (const RequestSpec& spec : specs) harness.add(spec);
  harness.run_to_completion();

  expect_phases(harness.steps(), {
                                     {0, 0, {{2, 11}, {0, 8}, {1, 8}}},  // priority order; 3 + 2 + 2 blocks
                                     {1, 1, {{2, 1}, {0, 1}, {1, 1}}},   // r0, r1 take their third block: 9, full
                                     // r2 needs a block at position 12: the victim is r1 (priority 2, arrived after
                                     // r0), not r2 (the latest arrival, but the most urgent) nor r0.
                                     {2, 2, {{2, 1}, {0, 1}}, {{1, kRecompute}}},
                                     {3, 3, {{2, 1}, {0, 1}}},  // r1 needs 3 blocks, 2 are free; r2 ends
                                     {4, 4, {{0, 1}, {1, 10}}},
                                     {5, 5, {{0, 1}, {1, 1}}},  // r0 ends
                                     {6, 7, {{1, 1}}},
                                 });
  expect_same_tokens(harness, specs, {0, 1, 2});
  harness.expect_drained();
}

BOOST_AUTO_TEST_CASE(priority_policy_lets_an_urgent_arrival_preempt_a_running_request_by_recompute) {
  // In swap mode too: a swapped victim would come back before the urgent request is admitted.
  for (const std::optional<PreemptionMode> mode : {std::optional<PreemptionMode>(), std::optional(kSwap)}) {
    BOOST_TEST_CONTEXT("preemption mode " << (mode ? mode_name(*mode) : "auto")) {
      Harness harness({.num_device_blocks = 7,
                       .num_host_blocks = 16,
                       .enable_prefix_caching = false,
                       .policy = sched::SchedulingPolicy::priority,
                       .preemption_mode = mode});
      harness.add({.id = 0, .num_prompt_tokens = 8, .max_tokens = 4, .priority = 2});
      harness.add({.id = 1, .num_prompt_tokens = 8, .max_tokens = 4, .priority = 2});
      harness.step_to(2);                                                              // 3 blocks each, 1 free
      harness.add({.id = 2, .num_prompt_tokens = 8, .max_tokens = 2, .priority = 0});  // needs 2
      harness.run_to_completion();

      expect_phases(harness.steps(), {
                                         {0, 0, {{0, 8}, {1, 8}}},
                                         {1, 1, {{0, 1}, {1, 1}}},
                                         {2, 2, {{0, 1}, {2, 8}}, {{1, kRecompute}}},  // r2 takes r1's blocks at once
                                         {3, 3, {{2, 1}, {0, 1}}},  // r2 runs first now; r0 and r2 end
                                         {4, 4, {{1, 10}}},         // r1 recomputes 8 + 2 tokens
                                         {5, 5, {{1, 1}}},
                                     });
      harness.expect_drained();
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
