#include <boost/test/unit_test.hpp>

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

BOOST_AUTO_TEST_SUITE_END()
