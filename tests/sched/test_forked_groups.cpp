// Scheduler table tests: parallel samples and beams sharing blocks, with copy-on-write when they diverge.
#include <boost/test/unit_test.hpp>

#include <set>
#include <vector>

#include "tests/sched/scheduler_checks.h"
#include "tests/sched/scheduler_harness.h"

namespace pagedllm::test {

BOOST_AUTO_TEST_SUITE(scheduler_table)

// 9 ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(parallel_samples_share_the_prompt_blocks_and_copy_the_partial_one_on_first_decode) {
  Harness harness({});
  harness.add({.id = 0, .num_prompt_tokens = 6, .max_tokens = 4, .n = 3});
  harness.step();

  // After the prompt: 3 samples hold the same 2 blocks (4 tokens + 2 in the partial one).
  const std::vector<SeqId> seqs = harness.kv().sequence_ids();
  BOOST_TEST_REQUIRE(seqs.size() == 3u);
  const std::vector<kv::BlockId> prompt_blocks = table_of(harness.kv(), seqs[0]);
  BOOST_TEST_REQUIRE(prompt_blocks.size() == 2u);
  for (const SeqId seq : seqs) BOOST_TEST(table_of(harness.kv(), seq) == prompt_blocks);
  for (const kv::BlockId block : prompt_blocks) BOOST_TEST(harness.kv().device_pool().meta(block).ref_count == 3);

  // First decode: each sample writes position 6 into the shared partial block; two copy it first
  // and the last finds it its own.
  const StepRecord& first_decode = harness.step();
  BOOST_TEST(first_decode.copies.size() == 2u);
  std::set<kv::BlockId> last_blocks;
  for (const SeqId seq : seqs) {
    const std::vector<kv::BlockId> table = table_of(harness.kv(), seq);
    BOOST_TEST(table.front() == prompt_blocks.front());  // the full block stays shared
    last_blocks.insert(table.back());
  }
  BOOST_TEST(last_blocks.size() == 3u);
  for (const kv::BlockCopy& copy : first_decode.copies) BOOST_TEST(copy.src == prompt_blocks.back());
  harness.run_to_completion();

  expect_phases(harness.steps(), {
                                     {0, 0, {{0, 6}}},
                                     {1, 1, {{0, 3}}, {}, 0, 0, 2},
                                     {2, 3, {{0, 3}}},
                                 });
  const engine::RequestOutput& output = harness.output(0);
  BOOST_TEST_REQUIRE(output.completions.size() == 3u);
  const auto tokens = completion_tokens(output);
  for (const auto& sample : tokens) BOOST_TEST(sample.size() == 4u);
  BOOST_TEST(std::set<std::vector<TokenId>>(tokens.begin(), tokens.end()).size() == 3u, "the samples must differ");
  harness.expect_drained();
}

BOOST_AUTO_TEST_CASE(parallel_samples_of_a_block_aligned_prompt_need_no_copy) {
  Harness harness({});
  harness.add({.id = 0, .num_prompt_tokens = 8, .max_tokens = 3, .n = 2});
  harness.run_to_completion();
  expect_phases(harness.steps(),
                {
                    {0, 0, {{0, 8}}}, {1, 2, {{0, 2}}},  // position 8 starts a new block per sample: nothing to copy
                });
  harness.expect_drained();
}

// 10 --------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(beam_search_shares_blocks_until_the_beams_diverge_and_returns_n_completions) {
  Harness harness({});
  harness.add({.id = 0, .num_prompt_tokens = 6, .max_tokens = 4, .n = 2, .beam_width = 3});
  harness.step();

  const std::vector<SeqId> beams = harness.kv().sequence_ids();
  BOOST_TEST_REQUIRE(beams.size() == 3u);
  const std::vector<kv::BlockId> prompt_blocks = table_of(harness.kv(), beams[0]);
  for (const SeqId beam : beams) BOOST_TEST(table_of(harness.kv(), beam) == prompt_blocks);

  const StepRecord& first_decode = harness.step();
  BOOST_TEST(first_decode.ran.size() == 3u);
  BOOST_TEST(first_decode.copies.size() == 2u);  // the partial prompt block, copied for 2 of 3
  harness.run_to_completion();

  int32_t num_copies = 0;
  for (const StepRecord& record : harness.steps()) {
    BOOST_TEST_CONTEXT("step " << record.step) {
      BOOST_TEST(record.ran.size() == (record.step == 0 ? 1u : 3u));
      num_copies += static_cast<int32_t>(record.copies.size());
    }
  }
  BOOST_TEST(num_copies >= 2);
  const engine::RequestOutput& output = harness.output(0);
  BOOST_TEST(output.finished);
  BOOST_TEST_REQUIRE(output.completions.size() == 2u);
  for (const engine::Completion& completion : output.completions) {
    BOOST_TEST(completion.tokens.size() == 4u);
    BOOST_TEST(reason(completion.finish_reason) == "length");
  }
  BOOST_TEST(output.completions[0].cumulative_logprob >= output.completions[1].cumulative_logprob);
  BOOST_TEST((output.completions[0].tokens != output.completions[1].tokens));
  harness.expect_drained();
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
