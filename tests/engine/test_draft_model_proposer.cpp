// The draft-model proposer alone, round by round, with a scripted draft whose every KV read is
// checked: what it proposes, what it keeps of its cache when the target accepts some proposals,
// none, or (proposals detached, one token sampled) did not verify them, catching up in chunks, and
// running out of blocks.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine/scripted_executor.h"
#include "core/spec/draft_model_proposer.h"

namespace pagedllm::test {
namespace {

constexpr sched::RequestId kRequest = 5;
constexpr SeqId kSeq = 9;

struct Fixture {
  explicit Fixture(int32_t num_blocks = 64, int32_t budget = 256) {
    cache.block_size = 4;
    cache.num_device_blocks = num_blocks;
    cache.num_host_blocks = 0;
    cache.watermark = 0.0;
    script.vocab_size = 50;
    auto executor = std::make_unique<engine::ScriptedExecutor>(script, cache);
    scripted = executor.get();
    proposer = std::make_unique<spec::DraftModelProposer>(
        spec::DraftModelProposerConfig{.cache = cache, .max_num_batched_tokens = budget}, std::move(executor));
  }

  // The script's continuation of `tokens`: what a greedy draft following it proposes.
  std::vector<TokenId> continuation(std::vector<TokenId> tokens, int32_t count) const {
    std::vector<TokenId> next;
    for (int32_t i = 0; i < count; ++i) {
      const auto position = static_cast<int32_t>(tokens.size());
      next.push_back(scripted->scripted_token(kRequest, 0, position, tokens.back()));
      tokens.push_back(next.back());
    }
    return next;
  }

  std::vector<TokenId> round(const std::vector<TokenId>& tokens, int32_t k) {
    std::vector<TokenId> proposals;
    const spec::DraftQuery query{.request = kRequest,
                                 .seq = kSeq,
                                 .tokens = tokens,
                                 .num_prompt_tokens = 10,
                                 .num_proposals = k,
                                 .proposals = &proposals};
    last = proposer->propose({&query, 1});
    proposer->kv().check_invariants();
    return proposals;
  }

  kv::KvCacheConfig cache;
  engine::ScriptedExecutorConfig script;
  engine::ScriptedExecutor* scripted = nullptr;
  std::unique_ptr<spec::DraftModelProposer> proposer;
  spec::DraftRoundStats last;
};

std::vector<TokenId> prompt() { return {3, 14, 15, 9, 26, 5, 35, 8, 9, 7}; }

}  // namespace

BOOST_AUTO_TEST_SUITE(draft_model_proposer)

BOOST_AUTO_TEST_CASE(proposes_its_greedy_continuation_and_keeps_what_the_target_accepted) {
  Fixture f;
  std::vector<TokenId> tokens = prompt();
  std::vector<TokenId> proposals = f.round(tokens, 3);
  BOOST_TEST(proposals == f.continuation(tokens, 3), boost::test_tools::per_element());
  BOOST_TEST(f.last.num_passes == 3);
  BOOST_TEST(f.last.num_tokens_computed == 10 + 2);  // the prompt, then two proposals' decodes
  // The target accepts the first proposal and samples a token of its own after it.
  tokens.push_back(proposals[0]);
  tokens.push_back(proposals[1] + 1);
  proposals = f.round(tokens, 3);
  BOOST_TEST(proposals == f.continuation(tokens, 3), boost::test_tools::per_element());
  BOOST_TEST(f.last.num_tokens_computed == 1 + 2);  // the KV of the accepted proposal was kept
  // Every proposal accepted, plus the target's own token.
  tokens.insert(tokens.end(), proposals.begin(), proposals.end());
  tokens.push_back(1);
  proposals = f.round(tokens, 3);
  BOOST_TEST(proposals == f.continuation(tokens, 3), boost::test_tools::per_element());
  BOOST_TEST(f.last.num_tokens_computed == 2 + 2);  // the last proposal (never computed) and the token
  BOOST_TEST(f.proposer->kv().num_tokens(kSeq) == static_cast<int32_t>(tokens.size()) + 2);
}

BOOST_AUTO_TEST_CASE(proposals_the_target_did_not_verify) {
  // The scheduler detached the proposals (blocks ran short) and the target sampled one token:
  // equal to the first proposal, or not. Either way the next round computes the last token.
  for (const bool agrees : {true, false}) {
    BOOST_TEST_CONTEXT((agrees ? "agrees" : "disagrees")) {
      Fixture f;
      std::vector<TokenId> tokens = prompt();
      const std::vector<TokenId> first = f.round(tokens, 3);
      tokens.push_back(agrees ? first[0] : first[0] + 1);
      const std::vector<TokenId> proposals = f.round(tokens, 3);
      BOOST_TEST(proposals == f.continuation(tokens, 3), boost::test_tools::per_element());
      BOOST_TEST(f.last.num_tokens_computed == 1 + 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(catches_up_in_chunks_within_the_budget) {
  Fixture f(64, 4);  // 4 tokens a round: the 10-token prompt takes three rounds
  const std::vector<TokenId> tokens = prompt();
  BOOST_TEST(f.round(tokens, 2).empty());
  BOOST_TEST(f.last.num_tokens_computed == 4);
  BOOST_TEST(f.round(tokens, 2).empty());
  const std::vector<TokenId> proposals = f.round(tokens, 2);
  BOOST_TEST(proposals == f.continuation(tokens, 2), boost::test_tools::per_element());
  BOOST_TEST(f.last.num_tokens_computed == 2 + 1);
}

BOOST_AUTO_TEST_CASE(out_of_blocks_it_proposes_nothing_and_holds_nothing) {
  Fixture f(2);  // 8 slots: the 10-token prompt does not fit
  BOOST_TEST(f.round(prompt(), 3).empty());
  BOOST_TEST(f.last.num_passes == 0);
  BOOST_TEST(f.proposer->kv().stats().num_sequences == 0);
  // Room for the prompt but not the proposals' slots: the prompt is computed, proposals wait.
  Fixture g(3);  // 12 slots: the prompt and one more
  std::vector<TokenId> tokens = prompt();
  const std::vector<TokenId> proposals = g.round(tokens, 4);
  BOOST_TEST(proposals.empty());
  BOOST_TEST(g.last.num_tokens_computed == 10);
  tokens.push_back(g.continuation(tokens, 1)[0]);
  BOOST_TEST(g.round(tokens, 2) == g.continuation(tokens, 2), boost::test_tools::per_element());
  g.proposer->release_gone([](SeqId) { return false; });
  BOOST_TEST(g.proposer->kv().stats().num_sequences == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::test
