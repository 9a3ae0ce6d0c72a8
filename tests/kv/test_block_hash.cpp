#include <boost/test/unit_test.hpp>

#include <span>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "core/kv/block_hash.h"

namespace kv = pagedllm::kv;
using pagedllm::TokenId;

BOOST_AUTO_TEST_SUITE(block_hash)

BOOST_AUTO_TEST_CASE(equal_inputs_give_equal_hashes) {
  const std::vector<TokenId> tokens{1, 2, 3, 4};
  BOOST_TEST((kv::hash_block(kv::kRootBlockHash, tokens, 0) == kv::hash_block(kv::kRootBlockHash, tokens, 0)));
}

BOOST_AUTO_TEST_CASE(parent_tokens_salt_and_order_all_matter) {
  const std::vector<TokenId> tokens{1, 2, 3, 4};
  const std::vector<TokenId> swapped{2, 1, 3, 4};
  const kv::BlockHash base = kv::hash_block(kv::kRootBlockHash, tokens, 0);
  BOOST_TEST(!(base == kv::hash_block(kv::kRootBlockHash, swapped, 0)));
  BOOST_TEST(!(base == kv::hash_block(kv::kRootBlockHash, tokens, 1)));
  BOOST_TEST(!(base == kv::hash_block(base, tokens, 0)));
  // A trailing odd token is not confused with a zero-padded pair.
  const std::vector<TokenId> three{1, 2, 3};
  const std::vector<TokenId> three_padded{1, 2, 3, 0};
  BOOST_TEST(!(kv::hash_block(kv::kRootBlockHash, three, 0) == kv::hash_block(kv::kRootBlockHash, three_padded, 0)));
}

BOOST_AUTO_TEST_CASE(no_collisions_among_many_near_identical_blocks) {
  // 200k blocks differing in one token at one position: every 128-bit hash distinct, and every
  // low word distinct too (the hash map keys on it).
  std::unordered_set<uint64_t> low_words;
  std::vector<TokenId> tokens(16, 7);
  for (TokenId value = 0; value < 12500; ++value) {
    for (size_t position = 0; position < tokens.size(); ++position) {
      tokens.assign(16, 7);
      tokens[position] = value;
      low_words.insert(kv::hash_block(kv::kRootBlockHash, tokens, 0).lo);
    }
  }
  // 12500 * 16 inputs minus the ones that coincide (value 7 leaves the block unchanged).
  BOOST_TEST(low_words.size() == 12500u * 16u - 15u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(block_hasher)

BOOST_AUTO_TEST_CASE(streaming_equals_one_shot_for_every_length) {
  const kv::BlockHash parent = kv::hash_block(kv::kRootBlockHash, std::vector<TokenId>{9, 9}, 0);
  std::vector<TokenId> tokens;
  kv::BlockHasher hasher(parent, 5);
  for (TokenId token = 0; token < 33; ++token) {
    tokens.push_back(token * 31 - 7);
    hasher.add(tokens.back());
    BOOST_TEST(hasher.num_tokens() == static_cast<int32_t>(tokens.size()));
    BOOST_TEST((hasher.finish() == kv::hash_block(parent, tokens, 5)));
  }
}

BOOST_AUTO_TEST_CASE(prompt_block_hashes_chain_full_blocks_only) {
  std::vector<TokenId> tokens(10);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>(i);
  const auto hashes = kv::hash_prompt_blocks(tokens, 4, 3);
  BOOST_REQUIRE(hashes.size() == 2u);
  const kv::BlockHash first = kv::hash_block(kv::kRootBlockHash, std::span(tokens).first(4), 3);
  BOOST_TEST((hashes[0] == first));
  BOOST_TEST((hashes[1] == kv::hash_block(first, std::span(tokens).subspan(4, 4), 3)));
}

BOOST_AUTO_TEST_CASE(named_blocks_hash_from_their_ids_and_the_rest_chains_on_over_tokens) {
  std::vector<TokenId> tokens(23);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>(100 + i);
  // Ids of 6 tokens naming the first 14 tokens; KV blocks of 4: blocks 0-2 are named (block 1
  // straddles ids 10 and 11), block 3 (tokens 12-15) runs past the named tokens.
  const kv::PromptContentIds content{.ids = {10, 11, 12}, .tokens_per_id = 6, .num_tokens = 14, .seed = 9};
  BOOST_TEST(content.num_named_blocks(4) == 3);
  const auto hashes = kv::hash_prompt_blocks(tokens, 4, 3, content);
  BOOST_REQUIRE(hashes.size() == 5u);
  const auto plain = kv::hash_prompt_blocks(tokens, 4, 3);
  for (size_t i = 0; i < 3; ++i) BOOST_TEST((hashes[i] != plain[i]));  // another domain
  // Past the named blocks the chain goes on over the tokens from the last named hash.
  const kv::BlockHash fourth = kv::hash_block(hashes[2], std::span(tokens).subspan(12, 4), 3);
  BOOST_TEST((hashes[3] == fourth));
  BOOST_TEST((hashes[4] == kv::hash_block(fourth, std::span(tokens).subspan(16, 4), 3)));

  // The named hashes read no token: other tokens under the same ids hash the same.
  std::vector<TokenId> other = tokens;
  for (size_t i = 0; i < 12; ++i) other[i] += 1;
  const auto same_ids = kv::hash_prompt_blocks(other, 4, 3, content);
  BOOST_TEST((std::vector(same_ids.begin(), same_ids.begin() + 3) == std::vector(hashes.begin(), hashes.begin() + 3)));

  // Every input of a named block counts: an id, the seed, the salt, the tokens per id.
  const auto differs_at = [&](const kv::PromptContentIds& changed, uint64_t salt) {
    const auto changed_hashes = kv::hash_prompt_blocks(tokens, 4, salt, changed);
    size_t first = 0;
    while (first < hashes.size() && changed_hashes[first] == hashes[first]) ++first;
    return first;
  };
  kv::PromptContentIds changed = content;
  changed.ids[1] = 13;
  BOOST_TEST(differs_at(changed, 3) == 1u);  // block 1 is the first to read id 11
  changed = content;
  changed.seed = 8;
  BOOST_TEST(differs_at(changed, 3) == 0u);
  BOOST_TEST(differs_at(content, 4) == 0u);
  changed = content;
  changed.tokens_per_id = 7;  // same ids, other tokens under them
  BOOST_TEST(differs_at(changed, 3) == 0u);
}

BOOST_AUTO_TEST_CASE(a_stream_names_the_tokens_after_the_ids_and_unstored_tokens_are_never_read) {
  // 14 tokens named by ids (6 each), then 9 of the request's stream: blocks of 4, all 5 full
  // blocks named; block 3 (tokens 12-15) straddles the ids' end.
  std::vector<TokenId> tokens(23);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>(100 + i);
  const kv::PromptContentIds ids_only{.ids = {10, 11, 12}, .tokens_per_id = 6, .num_tokens = 14, .seed = 9};
  kv::PromptContentIds content = ids_only;
  content.num_stream_tokens = 9;
  content.stream = 77;
  BOOST_TEST(content.num_named_tokens() == 23);
  BOOST_TEST(content.num_named_blocks(4) == 5);
  BOOST_TEST(kv::content_ids_problem(content, tokens.size()).empty());
  const auto hashes = kv::hash_prompt_blocks(tokens, 4, 3, content);
  const auto by_ids = kv::hash_prompt_blocks(tokens, 4, 3, ids_only);
  BOOST_REQUIRE(hashes.size() == 5u);
  for (size_t i = 0; i < 3; ++i) BOOST_TEST((hashes[i] == by_ids[i]));  // inside the ids: as before
  for (size_t i = 3; i < 5; ++i) BOOST_TEST((hashes[i] != by_ids[i]));  // named by the stream now
  // Another stream, or another start of it, is other content.
  kv::PromptContentIds other = content;
  other.stream = 78;
  const auto other_stream = kv::hash_prompt_blocks(tokens, 4, 3, other);
  BOOST_TEST((other_stream[2] == hashes[2]));
  BOOST_TEST((other_stream[3] != hashes[3]));
  const kv::PromptContentIds stream_only{
      .ids = {}, .tokens_per_id = 6, .num_tokens = 0, .seed = 9, .num_stream_tokens = 23, .stream = 77};
  BOOST_TEST(kv::content_ids_problem(stream_only, tokens.size()).empty());
  const auto from_zero = kv::hash_prompt_blocks(tokens, 4, 3, stream_only);
  BOOST_TEST((from_zero[4] != hashes[4]));

  // Leading tokens not given hash the same as given ones where the blocks are named; with the
  // tokens past the named blocks given, those chain on over them.
  const auto unstored = kv::hash_prompt_blocks(std::span(tokens).subspan(20), 20, 4, 3, content);
  BOOST_TEST((unstored == hashes));
  const auto partly = kv::hash_prompt_blocks(std::span(tokens).subspan(12), 12, 4, 3, ids_only);
  BOOST_TEST((partly == by_ids));
  // A block hashed from its tokens must have them.
  BOOST_CHECK_THROW(kv::hash_prompt_blocks(std::span(tokens).subspan(16), 16, 4, 3, ids_only), std::invalid_argument);
  // A short last block is not hashed: every token may be unstored when the full blocks are named.
  const std::vector<TokenId> none;
  kv::PromptContentIds short_tail = stream_only;
  short_tail.num_stream_tokens = 22;
  BOOST_TEST((kv::hash_prompt_blocks(none, 22, 4, 3, short_tail) ==
              kv::hash_prompt_blocks(std::span(tokens).first(22), 4, 3, short_tail)));
}

BOOST_AUTO_TEST_CASE(content_ids_that_name_more_than_they_cover_are_refused) {
  const std::vector<TokenId> tokens(20, 5);
  const auto problem = [&](kv::PromptContentIds content) { return kv::content_ids_problem(content, tokens.size()); };
  BOOST_TEST(problem({}).empty());
  BOOST_TEST(problem({.ids = {1, 2}, .tokens_per_id = 6, .num_tokens = 12}).empty());
  BOOST_TEST(problem({.ids = {1, 2}, .tokens_per_id = 6, .num_tokens = 13}) ==
             "content ids name 13 prompt tokens with 2 ids of 6 tokens each; the prompt has 20");
  BOOST_TEST(!problem({.ids = {1, 2, 3, 4}, .tokens_per_id = 6, .num_tokens = 21}).empty());  // past the prompt
  BOOST_TEST(!problem({.ids = {1}, .tokens_per_id = 0, .num_tokens = 1}).empty());
  BOOST_TEST(!problem({.ids = {1}, .tokens_per_id = 4, .num_tokens = -1}).empty());
  BOOST_TEST(problem({.ids = {1, 2}, .tokens_per_id = 6, .num_tokens = 12, .num_stream_tokens = 9}) ==
             "content ids name 12 prompt tokens with 2 ids of 6 tokens each and 9 by their stream; the prompt has 20");
  BOOST_TEST(!problem({.ids = {}, .tokens_per_id = 0, .num_tokens = 0, .seed = 0, .num_stream_tokens = -1}).empty());
  BOOST_CHECK_THROW(kv::hash_prompt_blocks(tokens, 4, 0, {.ids = {1}, .tokens_per_id = 4, .num_tokens = 5}),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
