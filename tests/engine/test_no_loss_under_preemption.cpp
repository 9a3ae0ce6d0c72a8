// Engine tests: a run on a pool far too small returns the tokens of a run on an ample pool, whatever the preemption.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

namespace {

struct PreemptionCase {
  std::optional<PreemptionMode> mode;
  bool chunked_prefill = true;
};

std::string describe(const PreemptionCase& preemption) {
  const std::string mode = !preemption.mode ? "auto" : *preemption.mode == PreemptionMode::swap ? "swap" : "recompute";
  return mode + (preemption.chunked_prefill ? ", chunked prefill" : ", no chunked prefill");
}

}  // namespace

// --- 1, 2: outputs do not depend on the schedule ---------------------------------------------

BOOST_AUTO_TEST_SUITE(engine_schedule_independence)

// Each preemption case runs the same workload on a pool far too small and must return exactly
// the tokens of the run on an ample pool.
void check_nothing_is_lost(const PreemptionCase& preemption) {
  engine::EngineCounters automatic;  // auto mode: over all workloads, both kinds must occur
  for (const uint64_t seed : {7, 8, 9, 10}) {
    BOOST_TEST_CONTEXT(describe(preemption) << ", workload seed " << seed) {
      const std::vector<sched::Request> requests = make_workload({.seed = seed});
      BOOST_REQUIRE(has_beam_search(requests));
      const RunResult ample = run_workload(EngineSetup{}, requests);
      BOOST_TEST(ample.counters.preemptions_recompute + ample.counters.preemptions_swap == 0);
      const RunResult small = run_workload(small_pool(preemption.mode, preemption.chunked_prefill), requests);
      const engine::EngineCounters& counters = small.counters;
      BOOST_TEST_MESSAGE(describe(preemption)
                         << ", seed " << seed << ": " << small.num_steps << " steps, " << counters.preemptions_recompute
                         << " recompute, " << counters.preemptions_swap << " swap preemptions");
      BOOST_TEST(counters.requests_finished == static_cast<int64_t>(requests.size()));
      if (preemption.mode == PreemptionMode::recompute) {
        BOOST_TEST(counters.preemptions_recompute >= 10);
        BOOST_TEST(counters.preemptions_swap == 0);
        BOOST_TEST(counters.blocks_swapped_out == 0);
      } else if (preemption.mode == PreemptionMode::swap) {
        BOOST_TEST(counters.preemptions_swap >= 10);
        BOOST_TEST(counters.blocks_swapped_out > 0);
        BOOST_TEST(counters.blocks_swapped_in > 0);
      } else {
        automatic.preemptions_recompute += counters.preemptions_recompute;
        automatic.preemptions_swap += counters.preemptions_swap;
      }
      check_same_tokens(ample, small);
    }
  }
  if (!preemption.mode) {
    // Recompute for single-sequence groups, swap for forked ones (vLLM's choice); whether one
    // workload preempts a forked group depends on its token stream, so the four are pooled.
    BOOST_TEST(automatic.preemptions_recompute > 0);
    BOOST_TEST(automatic.preemptions_swap > 0);
  }
}

// Recompute of forked groups once failed here; engine_recompute_of_forked_groups
// (test_recompute_of_forked_groups.cpp) keeps the minimal reproductions (stale prefix-cache blocks
// after a rolled-back admission, chunks with start > end, beams dropped mid-recompute).
BOOST_AUTO_TEST_CASE(nothing_is_lost_to_recompute_with_chunked_prefill) {
  check_nothing_is_lost({PreemptionMode::recompute, true});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_recompute_without_chunked_prefill) {
  check_nothing_is_lost({PreemptionMode::recompute, false});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_swap_with_chunked_prefill) {
  check_nothing_is_lost({PreemptionMode::swap, true});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_swap_without_chunked_prefill) {
  check_nothing_is_lost({PreemptionMode::swap, false});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_automatic_preemption_with_chunked_prefill) {
  check_nothing_is_lost({std::nullopt, true});
}

BOOST_AUTO_TEST_CASE(nothing_is_lost_to_automatic_preemption_without_chunked_prefill) {
  check_nothing_is_lost({std::nullopt, false});
}

BOOST_AUTO_TEST_CASE(tokens_do_not_depend_on_arrival_interleaving) {
  const std::vector<sched::Request> requests = make_workload({.seed = 11, .num_requests = 30});
  for (const EngineSetup& setup : {EngineSetup{}, small_pool(std::nullopt, true)}) {
    const RunResult at_once = run_workload(setup, requests);
    const RunResult trickled = run_workload(setup, requests, {.requests_per_step = 3});
    const RunResult one_by_one = run_workload(setup, requests, {.requests_per_step = 1});
    check_same_tokens(at_once, trickled);
    check_same_tokens(at_once, one_by_one);
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
