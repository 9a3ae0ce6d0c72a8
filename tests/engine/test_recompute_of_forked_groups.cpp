// Engine tests: minimal reproductions of forked groups (n > 1, beams) preempted by recompute.
#include <boost/test/unit_test.hpp>

#include <utility>
#include <vector>

#include "tests/engine/engine_harness.h"

namespace pagedllm::test {

// --- recompute of groups with several sequences ------------------------------------------------
//
// Minimal reproductions of what the randomized runs of engine_schedule_independence
// (test_no_loss_under_preemption.cpp) found in recompute mode: request 0 decodes on a tiny pool
// while request 1 (n = 2 samples, or 2 beams) is preempted by recompute after its sequences
// diverged and must come back with the same tokens as on an ample pool. The scheduler now
// readmits such a group through its first live sequence; the others rejoin once the prompt's KV
// is back (through the prefix cache), or at once without a prefix cache.

BOOST_AUTO_TEST_SUITE(engine_recompute_of_forked_groups)

EngineSetup tiny_recompute_pool(int32_t num_device_blocks, int32_t max_num_batched_tokens) {
  EngineSetup setup;
  setup.block_size = 2;
  setup.num_device_blocks = num_device_blocks;
  setup.num_host_blocks = 0;
  setup.watermark = 0.0;
  setup.max_num_batched_tokens = max_num_batched_tokens;
  setup.max_model_len = 64;
  setup.preemption_mode = PreemptionMode::recompute;
  setup.eos_period = 0;
  return setup;
}

sched::Request request_with(sched::RequestId id, std::vector<TokenId> prompt, int32_t max_tokens) {
  sched::Request request;
  request.id = id;
  request.prompt_tokens = std::move(prompt);
  request.params.max_tokens = max_tokens;
  request.params.ignore_eos = true;
  return request;
}

sched::Request forked_request(std::vector<TokenId> prompt, int32_t max_tokens, int32_t n) {
  sched::Request request = request_with(1, std::move(prompt), max_tokens);
  request.params.n = n;
  return request;
}

sched::Request beam_request(std::vector<TokenId> prompt, int32_t max_tokens, int32_t beam_width) {
  sched::Request request = request_with(1, std::move(prompt), max_tokens);
  request.params.beam_width = beam_width;
  request.params.temperature = 0.0f;
  return request;
}

void check_recovers_from_recompute(const EngineSetup& setup, const std::vector<sched::Request>& requests) {
  EngineSetup ample = setup;
  ample.num_device_blocks = 512;
  ample.max_num_batched_tokens = 64;
  const RunResult expected = run_workload(ample, requests);
  const RunResult small = run_workload(setup, requests, {.max_steps = 200});
  BOOST_TEST(small.counters.preemptions_recompute > 0);
  check_same_tokens(expected, small);
}

// Regression test (found by nothing_is_lost_to_recompute_with_chunked_prefill):
// Scheduler::admit once allocated a forked group's sequences one at a time and, when a later one
// threw KvCacheFullError, freed the ones already allocated. allocate() had registered the blocks
// they filled in the prefix cache (their KV was to be computed in this step) and free() left them
// cached, so the prefix cache advertised KV that was never written: at the next admission sample
// 0 hit a block that still held sample 1's KV ("reads the wrong KV" at step 8).
BOOST_AUTO_TEST_CASE(a_rolled_back_admission_leaves_no_uncomputed_block_in_the_prefix_cache) {
  check_recovers_from_recompute(tiny_recompute_pool(8, 64),
                                {request_with(0, {10}, 8), forked_request({500, 501}, 6, 2)});
}

// Regression test: Scheduler::admit once planned every sequence's first chunk before allocating
// any; a later sequence's allocate() then also matched the blocks the earlier ones filled in the
// same call and returned more cached tokens than its planned chunk: the plan held [start, end) =
// [2, 1) (a negative token count) and after the step the sequence had 2 KV slots for 1 computed
// token.
BOOST_AUTO_TEST_CASE(a_forked_group_readmitted_in_chunks_plans_no_negative_chunk) {
  check_recovers_from_recompute(tiny_recompute_pool(4, 4),
                                {request_with(0, {10, 11}, 6), forked_request({500, 501}, 2, 2)});
}

// Regression test: a beam group preempted by recompute once came back with chunked prefill one
// sequence at a time within the token budget: one beam finished its recompute and was sampled
// while the other was still mid-prompt. apply_beam_step then ranked only the sampled beam's
// candidates and dropped the beam that had none, so the search returned [127 664 331 325] instead
// of [127 793 440 326]. Now beams sample in lockstep: while some are still recomputing, none
// computes its last token.
BOOST_AUTO_TEST_CASE(a_beam_group_recomputed_in_chunks_keeps_every_beam) {
  check_recovers_from_recompute(tiny_recompute_pool(5, 4), {request_with(0, {10}, 4), beam_request({500, 501}, 4, 2)});
}

// Regression test (this case once spun forever): preempted by recompute, a forked group's
// samples were readmitted together, each with blocks of its own without a prefix cache to share
// through: 2 samples of 6 tokens need 6 blocks of the 4. Now the first sample is readmitted alone
// and the other rejoins as soon as its blocks fit, so the group finishes with an ample pool's
// tokens.
BOOST_AUTO_TEST_CASE(a_forked_group_preempted_by_recompute_without_prefix_caching_finishes) {
  EngineSetup setup = tiny_recompute_pool(4, 64);
  setup.enable_prefix_caching = false;
  check_recovers_from_recompute(setup, {request_with(0, {10}, 2), forked_request({500, 501, 502, 503}, 2, 2)});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
