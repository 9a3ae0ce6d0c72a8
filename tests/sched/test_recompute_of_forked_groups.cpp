// Scheduler table tests: regression tests for forked groups (n > 1, beams) preempted by recompute.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "tests/sched/scheduler_checks.h"
#include "tests/sched/scheduler_harness.h"

namespace pagedllm::test {

BOOST_AUTO_TEST_SUITE(scheduler_table)

// --- bugs once found in core/, kept as regression tests ----------------------------------------
//
// Each concerns a group of several sequences (n > 1 or beams) preempted by recompute, which
// Scheduler::admit() once readmitted with one first chunk per sequence, planned and allocated one
// by one. In a random exploration of about 20,000 small scenarios, every invariant break, wrong
// KV read, stall and changed output involved such a group. Now admit() readmits the group through
// its first live sequence alone; the others rejoin (try_schedule, rejoin_siblings) once the
// prompt's KV is back, finding it in the prefix cache, or at once without a prefix cache.

// Regression test: readmitting a forked group preempted by recompute once allocated its samples
// one by one and, when a later one did not fit, freed the earlier ones, leaving blocks whose KV
// was never computed in the prefix cache; a later hit then read another sample's KV ("sequence 2
// of request 1 reads the wrong KV at position 8"). Now the first sample is readmitted alone and
// the others rejoin through the prefix cache once the prompt's KV is back: the scripted executor
// checks every read, and the tokens equal an ample pool's.
BOOST_AUTO_TEST_CASE(a_readmitted_forked_group_never_reads_kv_that_was_not_computed) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 4, .max_tokens = 11},
      {.id = 1, .num_prompt_tokens = 4, .max_tokens = 12, .n = 2},
  };
  Harness harness({.num_device_blocks = 8, .max_num_batched_tokens = 8, .preemption_mode = kRecompute});
  for (const RequestSpec& spec : specs) harness.add(spec);
  const std::string error = harness.run_checked();
  BOOST_TEST(error.empty(), error);
  BOOST_TEST(harness.engine().counters().preemptions_recompute > 0);
  if (error.empty()) {
    expect_same_tokens(harness, specs, {0, 1});
    harness.expect_drained();
  }
}

// Regression test: admit() once planned every sequence's first chunk against the prefix cache as
// it was before any of them was allocated, then allocated them in order. When sample 0's
// allocation registered again a shared prompt block that had been evicted while the group waited,
// sample 1's allocate() found it and returned more cached tokens than its planned chunk end: the
// plan held a backward range ([8, 6) at step 22 here), the engine set num_computed_tokens = 6
// while the KV manager held 8 slots, and check_invariants() failed ("request 1 sequence 3 has 8
// KV slots for 6 computed tokens"). Now each rejoining sibling plans its chunk from its own
// prefix match, just before its own allocation.
BOOST_AUTO_TEST_CASE(a_readmitted_parallel_group_never_plans_a_backward_range) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 4, .max_tokens = 22},
      {.id = 1, .num_prompt_tokens = 8, .max_tokens = 12, .n = 2},
  };
  Harness harness({.num_device_blocks = 8, .max_num_batched_tokens = 6, .preemption_mode = kRecompute});
  for (const RequestSpec& spec : specs) harness.add(spec);
  const std::string error = harness.run_checked();
  BOOST_TEST(error.empty(), error);
  for (const StepRecord& record : harness.steps()) {
    for (const RanSequence& ran : record.ran) {
      BOOST_TEST(ran.start < ran.end,
                 "step " << record.step << " plans [" << ran.start << ", " << ran.end << ") for sequence " << ran.seq);
    }
  }
  if (error.empty()) {
    expect_same_tokens(harness, specs, {0, 1});
    harness.expect_drained();
  }
}

// Regression test (this case once stalled forever): a forked group preempted by recompute
// preempted itself over and over once, without prefix caching, its samples no longer fit the
// cache even alone (2 x 20 tokens need 10 blocks of 8). Now it is readmitted through its first
// sample, the other rejoins at once (there is no prefix cache to wait for) and the two share the
// step's token budget; when the group holds the cache alone and still does not fit, it is rejected
// with the reason. The other request is unaffected.
BOOST_AUTO_TEST_CASE(a_parallel_group_that_outgrows_the_cache_after_recompute_is_rejected_with_the_reason) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 4, .max_tokens = 6},
      {.id = 1, .num_prompt_tokens = 8, .max_tokens = 12, .n = 2},
  };
  Harness harness({.num_device_blocks = 8,
                   .enable_prefix_caching = false,
                   .max_num_batched_tokens = 12,
                   .preemption_mode = kRecompute});
  for (const RequestSpec& spec : specs) harness.add(spec);
  const std::string error = harness.run_checked();
  BOOST_TEST(error.empty(), error);
  if (error.empty()) {
    expect_same_tokens(harness, specs, {0});
    const engine::RequestOutput& rejected = harness.output(1);
    BOOST_TEST(rejected.finished);
    BOOST_TEST(reason(rejected.finish_reason) == "rejected");
    BOOST_TEST(rejected.message.find("outgrew the KV cache") != std::string::npos, rejected.message);
    harness.expect_drained();
  }
}

// Regression test: a beam group preempted by recompute was once readmitted with one chunk per
// beam; when the token budget split them (step 2 here: beam 0 got [0, 3) and sampled, beam 1 got
// [0, 2) and did not), Engine::apply_beam_step() saw candidates from beam 0 only and dropped beam
// 1 as "extended by no candidate". The result then depended on memory pressure: both completions
// descended from beam 0 and differed from the same request's on an ample pool. Now beams sample
// in lockstep: while some are still recomputing, none computes its last token.
BOOST_AUTO_TEST_CASE(beam_search_after_a_recompute_preemption_keeps_every_beam) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 4, .max_tokens = 3},
      {.id = 1, .num_prompt_tokens = 2, .max_tokens = 2, .n = 2, .beam_width = 2},
  };
  Harness harness({.num_device_blocks = 4,
                   .enable_prefix_caching = false,
                   .max_num_batched_tokens = 6,
                   .preemption_mode = kRecompute});
  for (const RequestSpec& spec : specs) harness.add(spec);
  const std::string error = harness.run_checked();
  BOOST_TEST_REQUIRE(error.empty(), error);
  BOOST_TEST(harness.output(1).times.num_preemptions_recompute == 1);
  expect_same_tokens(harness, specs, {0, 1});
  harness.expect_drained();
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
