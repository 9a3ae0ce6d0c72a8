// Speculative decoding in the KV manager: slots for proposals are reserved without hashing, and
// settle_proposals keeps the accepted ones (hashing and caching the blocks they fill) and gives
// back the blocks past them.
#include <boost/test/unit_test.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_errors.h"

namespace kv = pagedllm::kv;
using pagedllm::SeqId;
using pagedllm::TokenId;

namespace {

kv::KvCacheConfig proposal_config() {
  kv::KvCacheConfig config;
  config.block_size = 4;
  config.num_device_blocks = 16;
  config.num_host_blocks = 8;
  config.watermark = 0.0;
  return config;
}

// Appends `confirmed` then `proposals` to `seq` in one call, the proposals tentative.
void append_with_proposals(kv::KvCacheManager& manager, SeqId seq, const std::vector<TokenId>& confirmed,
                           const std::vector<TokenId>& proposals) {
  std::vector<TokenId> tokens = confirmed;
  tokens.insert(tokens.end(), proposals.begin(), proposals.end());
  std::vector<kv::BlockCopy> copies;
  const kv::AppendRequest request{
      .seq = seq, .tokens = tokens, .num_tentative = static_cast<int32_t>(proposals.size())};
  BOOST_REQUIRE(manager.try_append_slots(request, copies));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(kv_proposals)

BOOST_AUTO_TEST_CASE(rejected_proposals_give_their_blocks_back) {
  kv::KvCacheManager manager(proposal_config());
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6};  // 1.5 blocks
  manager.allocate(1, {prompt}, 6);
  const int32_t free_before = manager.stats().num_free_device_blocks;
  // The sampled token 7, then 5 proposals: slots 7..12 run into a fourth block.
  append_with_proposals(manager, 1, {7}, {8, 9, 10, 11, 12});
  BOOST_TEST(manager.num_tokens(1) == 12);
  BOOST_TEST(manager.block_table(1).size() == 3u);
  BOOST_TEST(manager.stats().num_free_device_blocks == free_before - 1);
  // Proposals are not hashed: the block they filled (slots 9-12) is not in the prefix cache.
  BOOST_TEST(manager.stats().num_cached_device_blocks == 1);
  manager.check_invariants();

  // One accepted: 8 tokens kept, exactly two blocks, the third back on the free list.
  const std::vector<TokenId> accepted{8};
  manager.settle_proposals(1, accepted);
  BOOST_TEST(manager.num_tokens(1) == 8);
  BOOST_TEST(manager.block_table(1).size() == 2u);
  BOOST_TEST(manager.stats().num_free_device_blocks == free_before);
  BOOST_TEST(manager.stats().num_filled_device_slots == 8);
  // The accepted proposal filled the second block: it is cached now, under the kept tokens.
  BOOST_TEST(manager.stats().num_cached_device_blocks == 2);
  manager.check_invariants();
  const std::vector<TokenId> same_prefix{1, 2, 3, 4, 5, 6, 7, 8, 99};
  BOOST_TEST(manager.match_prefix({same_prefix}).num_cached_tokens == 8);
  const std::vector<TokenId> rejected_prefix{1, 2, 3, 4, 5, 6, 7, 9, 99};
  BOOST_TEST(manager.match_prefix({rejected_prefix}).num_cached_tokens == 4);

  // The next append goes on from the kept tokens, as if the rejected ones had never been.
  manager.append_slots(1, std::vector<TokenId>{42});
  BOOST_TEST(manager.num_tokens(1) == 9);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(every_proposal_accepted_caches_what_they_filled) {
  kv::KvCacheManager manager(proposal_config());
  const std::vector<TokenId> prompt{1, 2, 3};
  manager.allocate(1, {prompt}, 3);
  append_with_proposals(manager, 1, {4}, {5, 6, 7, 8, 9});
  const std::vector<TokenId> accepted{5, 6, 7, 8, 9};
  manager.settle_proposals(1, accepted);
  BOOST_TEST(manager.num_tokens(1) == 9);
  BOOST_TEST(manager.stats().num_cached_device_blocks == 2);  // tokens 1-4 and 5-8
  const std::vector<TokenId> probe{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  BOOST_TEST(manager.match_prefix({probe}).num_cached_tokens == 8);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(none_accepted_keeps_only_the_confirmed_tokens) {
  kv::KvCacheManager manager(proposal_config());
  const std::vector<TokenId> prompt{1, 2, 3, 4};
  manager.allocate(1, {prompt}, 4);
  const int32_t free_before = manager.stats().num_free_device_blocks;
  append_with_proposals(manager, 1, {5}, {6, 7, 8, 9});  // a new block, then a second one
  BOOST_TEST(manager.stats().num_free_device_blocks == free_before - 2);
  manager.settle_proposals(1, {});
  BOOST_TEST(manager.num_tokens(1) == 5);
  BOOST_TEST(manager.stats().num_free_device_blocks == free_before - 1);
  BOOST_TEST(manager.stats().num_filled_device_slots == 5);
  manager.check_invariants();
  manager.free(1);
  BOOST_TEST(manager.stats().num_free_device_blocks == 16);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(a_forked_sequence_copies_its_shared_block_before_proposals) {
  kv::KvCacheManager manager(proposal_config());
  const std::vector<TokenId> prompt{1, 2, 3, 4, 5, 6};
  manager.allocate(1, {prompt}, 6);
  manager.fork(1, 2);
  std::vector<TokenId> tokens{7, 8, 9};
  std::vector<kv::BlockCopy> copies;
  BOOST_REQUIRE(manager.try_append_slots({.seq = 2, .tokens = tokens, .num_tentative = 2}, copies));
  BOOST_TEST(copies.size() == 1u);  // the shared partial block, copied before the sequence writes it
  manager.settle_proposals(2, std::vector<TokenId>{8});
  BOOST_TEST(manager.num_tokens(2) == 8);
  BOOST_TEST(manager.num_tokens(1) == 6);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(misuse_is_refused) {
  kv::KvCacheManager manager(proposal_config());
  const std::vector<TokenId> prompt{1, 2, 3};
  manager.allocate(1, {prompt}, 3);
  std::vector<TokenId> tokens{4, 5};
  std::vector<kv::BlockCopy> copies;
  BOOST_CHECK_THROW(manager.try_append_slots({.seq = 1, .tokens = tokens, .num_tentative = 3}, copies),
                    kv::KvCacheError);
  BOOST_TEST(manager.num_tokens(1) == 3);
  append_with_proposals(manager, 1, {4}, {5, 6});
  // Unsettled proposals: no further append, fork or swap, and no more accepted than proposed.
  BOOST_CHECK_THROW(manager.append_slots(1, std::vector<TokenId>{9}), kv::KvCacheError);
  BOOST_CHECK_THROW(manager.fork(1, 2), kv::KvCacheError);
  const std::vector<SeqId> group{1};
  BOOST_CHECK_THROW(static_cast<void>(manager.try_swap_out(group)), kv::KvCacheError);
  BOOST_CHECK_THROW(manager.settle_proposals(1, std::vector<TokenId>{5, 6, 7}), kv::KvCacheError);
  BOOST_CHECK_THROW(manager.settle_proposals(7, {}), kv::KvCacheError);
  manager.check_invariants();
  manager.settle_proposals(1, std::vector<TokenId>{5, 6});
  BOOST_TEST(manager.num_tokens(1) == 6);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(settling_writes_one_event_line) {
  std::ostringstream text;
  kv::KvEventLog log(text);
  kv::KvCacheManager manager(proposal_config(), &log);
  const std::vector<TokenId> prompt{1, 2, 3};
  log.set_step(1);
  manager.allocate(1, {prompt}, 3);
  log.set_step(2);
  append_with_proposals(manager, 1, {4}, {5, 6, 7, 8, 9});
  log.set_step(3);
  manager.settle_proposals(1, std::vector<TokenId>{5});
  const std::string expected =
      "{\"step\":1,\"op\":\"allocate\",\"seq\":1,\"hit\":[],\"new\":[0],\"cached\":[]}\n"
      "{\"step\":2,\"op\":\"append\",\"seq\":1,\"new\":[1,2],\"cached\":[0]}\n"
      "{\"step\":3,\"op\":\"settle\",\"seq\":1,\"accepted\":1,\"released\":[2],\"cached\":[]}\n";
  BOOST_TEST(text.str() == expected);
}

BOOST_AUTO_TEST_SUITE_END()
