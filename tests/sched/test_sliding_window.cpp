// Scheduler table tests under a sliding window: a windowed request needs the window's blocks, not
// its length's, so requests far longer than the cache run (and are admitted: the never-fits bound
// counts what a windowed sequence really holds); preemption by swap and by recompute, parallel
// sampling and beam search all run to the end with the scripted executor checking every KV read
// inside the window.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

#include "tests/sched/scheduler_checks.h"
#include "tests/sched/scheduler_harness.h"

namespace pagedllm::test {

BOOST_AUTO_TEST_SUITE(scheduler_sliding_window)

// Two requests of 8 + 40 tokens: 12 blocks each without a window, more than the 8-block cache
// (never fits). With a window of 8 each holds at most ceil(8 / 4) + 1 = 3 blocks once decoding,
// and at most ceil((8 - 1 + 8) / 4) + 1 = 5 while (re)computing 8-token chunks.
BOOST_AUTO_TEST_CASE(windowed_requests_longer_than_the_cache_run_without_preemption) {
  const std::vector<RequestSpec> specs = {
      {.id = 0, .num_prompt_tokens = 8, .max_tokens = 40},
      {.id = 1, .num_prompt_tokens = 8, .max_tokens = 40},
  };
  Harness harness(
      {.num_device_blocks = 8, .enable_prefix_caching = false, .max_num_batched_tokens = 8, .sliding_window = 8});
  for (const RequestSpec& spec : specs) harness.add(spec);
  int32_t most_used = 0;
  for (int32_t step = 0; step < 100 && harness.engine().has_unfinished(); ++step) {
    harness.step();
    most_used = std::max(most_used, harness.kv().stats().num_used_device_blocks());
  }
  BOOST_TEST(most_used <= 2 * 3);
  for (const RequestId id : {0, 1}) {
    BOOST_TEST(harness.output(id).finished);
    BOOST_TEST(harness.output(id).completions.front().tokens.size() == 40u);
    BOOST_TEST(harness.output(id).times.num_preemptions_recompute == 0);
  }
  expect_same_tokens(harness, specs, {0, 1});
  harness.expect_drained();

  Harness unwindowed({.num_device_blocks = 8, .enable_prefix_caching = false, .max_num_batched_tokens = 8});
  unwindowed.add(specs.front());
  unwindowed.step();
  BOOST_TEST((unwindowed.output(0).finish_reason == sched::FinishReason::rejected));
}

// Preemption (both modes), parallel sampling and beam search on a cache the window makes just big
// enough: every run ends, every KV read is checked, the cache drains.
BOOST_AUTO_TEST_CASE(preemption_forks_and_beams_run_to_the_end_under_a_window) {
  struct Case {
    PreemptionMode mode;
    int32_t n;
    int32_t beam_width;
    int32_t window;
    bool prefix_caching;
  };
  // clang-format off
  const std::vector<Case> cases = {
      {kRecompute, 1, 0, 5, false}, {kSwap, 1, 0, 5, false}, {kSwap, 2, 0, 6, true},
      {kRecompute, 2, 0, 7, true},  {kSwap, 0, 2, 6, false}, {kRecompute, 0, 2, 9, true},
      {kSwap, 3, 0, 4, true},
  };
  // clang-format on
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT("mode " << (c.mode == kSwap ? "swap" : "recompute") << " n " << c.n << " beams " << c.beam_width
                               << " window " << c.window) {
      Harness harness({.num_device_blocks = 14,
                       .num_host_blocks = 32,
                       .enable_prefix_caching = c.prefix_caching,
                       .preemption_mode = c.mode,
                       .sliding_window = c.window});
      for (RequestId id = 0; id < 4; ++id) {
        RequestSpec spec{.id = id, .num_prompt_tokens = 6 + 3 * static_cast<int32_t>(id), .max_tokens = 30};
        if (c.beam_width > 0) {
          spec.beam_width = c.beam_width;
        } else {
          spec.n = c.n;
        }
        harness.add(spec);
      }
      const std::string error = harness.run_checked(400);
      BOOST_TEST(error.empty(), error);
      for (RequestId id = 0; id < 4; ++id) BOOST_TEST(harness.output(id).finished);
      harness.expect_drained();
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
