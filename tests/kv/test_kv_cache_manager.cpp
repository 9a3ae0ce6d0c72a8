#include <boost/test/unit_test.hpp>

#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_errors.h"
#include "tests/kv/token_ranges.h"

namespace kv = pagedllm::kv;
using pagedllm::SeqId;
using pagedllm::TokenId;
using Ids = std::vector<kv::BlockId>;
using Tokens = std::vector<TokenId>;

namespace {

using pagedllm::test::iota_tokens;

kv::KvCacheConfig small_config(int32_t device_blocks = 8, int32_t host_blocks = 4) {
  kv::KvCacheConfig config;
  config.block_size = 4;
  config.num_device_blocks = device_blocks;
  config.num_host_blocks = host_blocks;
  config.watermark = 0.0;
  return config;
}

Ids table(const kv::KvCacheManager& manager, SeqId seq) {
  const auto blocks = manager.block_table(seq);
  return Ids(blocks.begin(), blocks.end());
}

// Everything observable about a manager, to show that a refused call changed nothing.
std::string snapshot(const kv::KvCacheManager& manager) {
  std::ostringstream out;
  const kv::KvStats stats = manager.stats();
  out << stats.num_free_device_blocks << ' ' << stats.num_free_host_blocks << ' ' << stats.num_cached_device_blocks
      << ' ' << stats.num_filled_device_slots << ' ' << stats.prefix_query_tokens << ' ' << stats.evictions << '|';
  for (const SeqId seq : manager.sequence_ids()) {
    out << seq << (manager.is_swapped(seq) ? "h" : "d") << manager.num_tokens(seq) << ':';
    for (const kv::BlockId block : manager.block_table(seq)) out << block << ',';
  }
  for (const kv::BlockId block : manager.device_pool().free_list()) out << block << ' ';
  return out.str();
}

template <typename Error>
void expect_refused(kv::KvCacheManager& manager, const std::function<void()>& call, const std::string& message_part) {
  const std::string before = snapshot(manager);
  try {
    call();
    BOOST_ERROR("expected a refusal mentioning '" << message_part << "'");
  } catch (const Error& error) {
    BOOST_TEST(std::string(error.what()).find(message_part) != std::string::npos,
               "message '" << error.what() << "' lacks '" << message_part << "'");
  }
  BOOST_TEST(snapshot(manager) == before);
  BOOST_CHECK_NO_THROW(manager.check_invariants());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(kv_cache_manager)

BOOST_AUTO_TEST_CASE(bad_configurations_are_refused_with_the_field_named) {
  const auto refused = [](kv::KvCacheConfig config, const std::string& field) {
    try {
      kv::KvCacheManager manager(config);
      BOOST_ERROR("configuration accepted, expected an error naming " << field);
    } catch (const kv::KvCacheError& error) {
      BOOST_TEST(std::string(error.what()).find(field) != std::string::npos, error.what());
    }
  };
  kv::KvCacheConfig config = small_config();
  config.block_size = 0;
  refused(config, "block_size");
  config = small_config();
  config.block_size = 1 << 20;
  refused(config, "block_size");
  config = small_config();
  config.num_device_blocks = 0;
  refused(config, "num_device_blocks");
  config = small_config();
  config.num_device_blocks = 1 << 30;
  refused(config, "num_device_blocks");
  config = small_config();
  config.num_host_blocks = -1;
  refused(config, "num_host_blocks");
  config = small_config();
  config.watermark = 1.0;
  refused(config, "watermark");
}

BOOST_AUTO_TEST_CASE(allocate_reserves_one_slot_per_token) {
  kv::KvCacheManager manager(small_config());
  const Tokens prompt = iota_tokens(10);
  BOOST_TEST(manager.allocate(1, {prompt}, 10) == 0);
  BOOST_TEST(table(manager, 1) == Ids({0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(manager.num_tokens(1) == 10);
  BOOST_TEST(manager.slot(1, 0) == 0);
  BOOST_TEST(manager.slot(1, 9) == 2 * 4 + 1);
  const kv::KvStats stats = manager.stats();
  BOOST_TEST(stats.num_used_device_blocks() == 3);
  BOOST_TEST(stats.num_filled_device_slots == 10);
  BOOST_TEST(stats.internal_waste_slots() == 2);
  BOOST_TEST(stats.device_usage() == 3.0 / 8.0);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(a_prompt_allocated_in_chunks_matches_one_allocated_at_once) {
  kv::KvCacheManager chunked(small_config());
  kv::KvCacheManager whole(small_config());
  const Tokens prompt = iota_tokens(11);
  chunked.allocate(1, {prompt}, 3);
  BOOST_TEST(chunked.num_tokens(1) == 3);
  BOOST_TEST(!chunked.append_slots(1, std::span(prompt).subspan(3, 5)).has_value());
  BOOST_TEST(!chunked.append_slots(1, std::span(prompt).subspan(8)).has_value());
  whole.allocate(1, {prompt}, 11);
  BOOST_TEST(table(chunked, 1) == table(whole, 1), boost::test_tools::per_element());
  BOOST_TEST(chunked.stats().num_cached_device_blocks == whole.stats().num_cached_device_blocks);
  chunked.check_invariants();
}

BOOST_AUTO_TEST_CASE(prefix_hits_share_full_blocks_and_stop_one_token_short) {
  kv::KvCacheManager manager(small_config(16));
  const Tokens first = iota_tokens(12);  // three full blocks
  manager.allocate(1, {first}, 12);
  Tokens longer = first;
  longer.push_back(7);
  BOOST_TEST(manager.allocate(2, {longer}, 13) == 12);
  const Ids shared = table(manager, 1);
  const Ids second = table(manager, 2);
  BOOST_TEST(Ids(second.begin(), second.begin() + 3) == shared, boost::test_tools::per_element());
  for (const kv::BlockId block : shared) BOOST_TEST(manager.device_pool().meta(block).ref_count == 2);
  // The same 12 tokens again: the last block is recomputed so that the last token yields logits.
  BOOST_TEST(manager.allocate(3, {first}, 12) == 8);
  BOOST_TEST(table(manager, 3)[2] != shared[2]);
  const kv::KvStats stats = manager.stats();
  BOOST_TEST(stats.prefix_query_tokens == 12 + 13 + 12);
  BOOST_TEST(stats.prefix_hit_tokens == 12 + 8);
  // The recomputed duplicate is not registered twice: the first holder stays the cache entry.
  BOOST_TEST(stats.num_cached_device_blocks == 3);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(precomputed_prompt_hashes_give_the_same_hits) {
  kv::KvCacheManager manager(small_config(16));
  const Tokens prompt = iota_tokens(13);
  manager.allocate(1, {prompt}, 13);
  const auto hashes = kv::hash_prompt_blocks(prompt, 4, 0);
  BOOST_TEST(manager.match_prefix({prompt, 0, hashes}).num_cached_tokens == 12);
  BOOST_TEST(manager.allocate(2, {prompt, 0, hashes}, 13) == 12);
  const std::vector<kv::BlockHash> too_few(hashes.begin(), hashes.begin() + 1);
  expect_refused<kv::KvCacheError>(
      manager,
      [&] {
        manager.allocate(3, {prompt, 0, too_few}, 13);
      },
      "carries 1 block hashes for 3 full blocks");
}

BOOST_AUTO_TEST_CASE(unstored_prompt_tokens_in_named_blocks_give_the_same_blocks_as_given_ones) {
  // A 23-token prompt whose 5 full blocks are named (ids, then a stream); the first 20 tokens are
  // not given to one manager. Chunked appends (7, 9, then 7 tokens) cross block boundaries inside
  // the unstored part. Both managers must log the same events and cache the same prefixes.
  const Tokens prompt = iota_tokens(23, 300);
  const kv::PromptContentIds content{
      .ids = {1, 2}, .tokens_per_id = 6, .num_tokens = 12, .seed = 4, .num_stream_tokens = 11, .stream = 9};
  const auto hashes = kv::hash_prompt_blocks(prompt, 4, 0, content);
  const std::span<const TokenId> tail = std::span(prompt).subspan(20);
  std::ostringstream given_text;
  std::ostringstream unstored_text;
  kv::KvEventLog given_log(given_text);
  kv::KvEventLog unstored_log(unstored_text);
  kv::KvCacheManager given(small_config(16), &given_log);
  kv::KvCacheManager unstored(small_config(16), &unstored_log);
  const int32_t named = content.num_named_blocks(4);
  given.allocate(1, {.tokens = prompt, .block_hashes = hashes, .num_named_hashes = named}, 7);
  unstored.allocate(1, {.tokens = tail, .block_hashes = hashes, .num_named_hashes = named, .num_unstored_tokens = 20},
                    7);
  std::vector<kv::BlockCopy> copies;
  const auto append = [&](int32_t begin, int32_t end) {
    const kv::AppendRequest whole{.seq = 1,
                                  .tokens = std::span(prompt).subspan(begin, end - begin),
                                  .block_hashes = hashes,
                                  .num_named_hashes = named};
    BOOST_REQUIRE(given.try_append_slots(whole, copies));
    const int32_t first_stored = std::max(begin, 20);
    kv::AppendRequest part = whole;
    part.tokens = std::span(prompt).subspan(first_stored, std::max(0, end - first_stored));
    part.num_unstored_tokens = std::max(0, std::min(end, 20) - begin);
    BOOST_REQUIRE(unstored.try_append_slots(part, copies));
  };
  append(7, 16);
  append(16, 23);
  // A decode fills the last block: it is hashed from the stored tail and the new token.
  const Tokens next{5};
  BOOST_REQUIRE(given.try_append_slots({.seq = 1, .tokens = next}, copies));
  BOOST_REQUIRE(unstored.try_append_slots({.seq = 1, .tokens = next}, copies));
  BOOST_TEST(copies.empty());
  BOOST_TEST(unstored_text.str() == given_text.str());
  BOOST_TEST(table(unstored, 1) == table(given, 1), boost::test_tools::per_element());
  Tokens grown = prompt;
  grown.push_back(5);
  const auto grown_hashes = kv::hash_prompt_blocks(grown, 4, 0, content);
  for (kv::KvCacheManager* manager : {&given, &unstored}) {
    BOOST_TEST(manager->match_prefix({.tokens = grown, .block_hashes = grown_hashes, .num_named_hashes = named})
                   .num_cached_tokens == 20);
    manager->check_invariants();
  }
  // Unstored tokens need their blocks' hashes, named; without them the call is refused.
  expect_refused<kv::KvCacheError>(
      unstored, [&] { unstored.allocate(2, {.tokens = tail, .num_unstored_tokens = 20}, 23); },
      "its unstored tokens reach position 20, past the 0 tokens of the blocks named for them");
  expect_refused<kv::KvCacheError>(
      unstored,
      [&] {
        unstored.allocate(2, {.tokens = tail, .block_hashes = hashes, .num_named_hashes = 4, .num_unstored_tokens = 20},
                          23);
      },
      "past the 16 tokens");
  unstored.allocate(3, {.tokens = tail, .block_hashes = hashes, .num_named_hashes = named, .num_unstored_tokens = 20},
                    2);
  expect_refused<kv::KvCacheError>(
      unstored,
      [&] { BOOST_TEST(unstored.try_append_slots({.seq = 3, .tokens = tail, .num_unstored_tokens = 18}, copies)); },
      "append to sequence 3: its unstored tokens reach position 38, past the 0 tokens");
}

BOOST_AUTO_TEST_CASE(salted_prompts_never_share) {
  kv::KvCacheManager manager(small_config(16));
  const Tokens prompt = iota_tokens(9);
  manager.allocate(1, {prompt, 1}, 9);
  BOOST_TEST(manager.allocate(2, {prompt, 2}, 9) == 0);
  BOOST_TEST(manager.allocate(3, {prompt, 1}, 9) == 8);
}

BOOST_AUTO_TEST_CASE(freed_prompts_stay_cached_and_evict_tail_first) {
  std::ostringstream log_text;
  kv::KvEventLog log(log_text);
  kv::KvCacheManager manager(small_config(4), &log);
  const Tokens prompt = iota_tokens(16);
  manager.allocate(1, {prompt}, 16);
  manager.free(1);
  kv::KvStats stats = manager.stats();
  BOOST_TEST(stats.num_free_device_blocks == 4);
  BOOST_TEST(stats.num_cached_free_device_blocks == 4);
  BOOST_TEST(manager.device_pool().free_list() == Ids({3, 2, 1, 0}), boost::test_tools::per_element());
  // A different prompt of two blocks evicts the freed prompt's last two blocks, tail first.
  manager.allocate(2, {iota_tokens(8, 900)}, 8);
  BOOST_TEST(table(manager, 2) == Ids({3, 2}), boost::test_tools::per_element());
  BOOST_TEST(manager.stats().evictions == 2);
  // The head of the old prompt is still there.
  BOOST_TEST(manager.match_prefix({prompt}).num_cached_tokens == 8);
  manager.free(2);
  BOOST_TEST(manager.allocate(3, {prompt}, 16) == 8);
  BOOST_TEST(
      log_text.str().find("{\"step\":0,\"op\":\"evict\",\"block\":3}\n{\"step\":0,\"op\":\"evict\",\"block\":2}") !=
          std::string::npos,
      log_text.str());
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(prefix_caching_off_shares_nothing) {
  kv::KvCacheConfig config = small_config(16);
  config.enable_prefix_caching = false;
  kv::KvCacheManager manager(config);
  const Tokens prompt = iota_tokens(12);
  manager.allocate(1, {prompt}, 12);
  BOOST_TEST(manager.allocate(2, {prompt}, 12) == 0);
  BOOST_TEST(manager.stats().num_cached_device_blocks == 0);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(fork_shares_and_append_copies_a_shared_partial_block) {
  kv::KvCacheManager manager(small_config());
  manager.allocate(1, {iota_tokens(6)}, 6);  // blocks 0 (full) and 1 (2 of 4 slots)
  manager.fork(1, 2);
  BOOST_TEST(manager.device_pool().meta(0).ref_count == 2);
  BOOST_TEST(manager.device_pool().meta(1).ref_count == 2);
  const Tokens next{42};
  const auto copy = manager.append_slots(2, next);
  BOOST_REQUIRE(copy.has_value());
  BOOST_TEST(copy->src == 1);
  BOOST_TEST(copy->dst == 2);
  BOOST_TEST(table(manager, 1) == Ids({0, 1}), boost::test_tools::per_element());
  BOOST_TEST(table(manager, 2) == Ids({0, 2}), boost::test_tools::per_element());
  BOOST_TEST(manager.device_pool().meta(1).ref_count == 1);
  BOOST_TEST(manager.stats().num_filled_device_slots == 6 + 1 + 2);  // 4 + 2 shared, then the copy of 2 plus 1
  // The parent now owns its partial block alone: no copy.
  BOOST_TEST(!manager.append_slots(1, next).has_value());
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(fork_on_a_block_boundary_needs_no_copy) {
  kv::KvCacheManager manager(small_config());
  manager.allocate(1, {iota_tokens(8)}, 8);
  manager.fork(1, 2);
  BOOST_TEST(manager.num_blocks_to_append(2, 1) == 1);
  BOOST_TEST(!manager.append_slots(2, Tokens{5}).has_value());
  BOOST_TEST(manager.device_pool().meta(0).ref_count == 2);
  manager.free(1);
  BOOST_TEST(manager.device_pool().meta(0).ref_count == 1);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(beam_search_style_fork_and_free_every_step) {
  // Two beams; each step both fork, the worse child and the parents are freed.
  kv::KvCacheManager manager(small_config(32));
  manager.allocate(10, {iota_tokens(5)}, 5);
  manager.fork(10, 11);
  SeqId next_id = 12;
  std::vector<SeqId> beams{10, 11};
  for (int step = 0; step < 9; ++step) {
    std::vector<SeqId> children;
    for (const SeqId beam : beams) {
      for (int k = 0; k < 2; ++k) {
        const SeqId child = next_id++;
        manager.fork(beam, child);
        manager.append_slots(child, Tokens{step * 10 + k});
        children.push_back(child);
      }
    }
    for (const SeqId beam : beams) manager.free(beam);
    manager.free(children[1]);
    manager.free(children[2]);
    beams = {children[0], children[3]};
    manager.check_invariants();
  }
  for (const SeqId beam : beams) BOOST_TEST(manager.num_tokens(beam) == 14);
  for (const SeqId beam : beams) manager.free(beam);
  BOOST_TEST(manager.stats().num_free_device_blocks == 32);
}

BOOST_AUTO_TEST_CASE(admission_answers_ok_later_never_with_the_watermark) {
  kv::KvCacheConfig config = small_config(10);
  config.watermark = 0.2;  // two blocks
  kv::KvCacheManager manager(config);
  BOOST_TEST(manager.watermark_blocks() == 2);
  const kv::Headroom watermark{.reserve_blocks = 2, .min_free_after = 2};
  const Tokens too_long = iota_tokens(33);
  BOOST_TEST(manager.allocation_status({too_long}, 33, watermark) == kv::AllocStatus::never);      // 9 blocks > 10 - 2
  BOOST_TEST(manager.allocation_status({iota_tokens(32)}, 32, watermark) == kv::AllocStatus::ok);  // 8 blocks
  manager.allocate(1, {iota_tokens(16, 500)}, 16);                                                 // 6 free
  BOOST_TEST(manager.allocation_status({iota_tokens(16)}, 16, watermark) == kv::AllocStatus::ok);  // leaves 2
  BOOST_TEST(manager.allocation_status({iota_tokens(17)}, 17, watermark) == kv::AllocStatus::later);  // leaves 1
  BOOST_TEST(manager.allocation_status({iota_tokens(32)}, 8, watermark) == kv::AllocStatus::ok);      // a first chunk
  // A prefix hit on blocks in use costs no free block.
  Tokens shared = iota_tokens(16, 500);
  for (int i = 0; i < 8; ++i) shared.push_back(i);
  BOOST_TEST(manager.allocation_status({shared}, 24, watermark) == kv::AllocStatus::ok);
  // try_allocate answers the same in one call, and changes nothing unless ok.
  const Tokens seventeen = iota_tokens(17);
  BOOST_TEST(manager.try_allocate(2, {seventeen}, 17, watermark).status == kv::AllocStatus::later);
  BOOST_TEST(manager.try_allocate(2, {too_long}, 8, watermark).status == kv::AllocStatus::never);
  BOOST_TEST(!manager.contains(2));
  BOOST_TEST(manager.stats().num_free_device_blocks == 6);
  const kv::AllocResult admitted = manager.try_allocate(2, {shared}, 24, watermark);
  BOOST_TEST(admitted.status == kv::AllocStatus::ok);
  BOOST_TEST(admitted.num_cached_tokens == 16);
  BOOST_TEST(manager.stats().num_free_device_blocks == 4);  // 4 blocks hit, 2 new
  // Three blocks would leave one: not past the watermark, but without headroom they can be taken.
  const Tokens twelve = iota_tokens(12, 900);
  BOOST_TEST(manager.try_allocate(3, {twelve}, 12, watermark).status == kv::AllocStatus::later);
  BOOST_TEST(manager.try_allocate(3, {twelve}, 12, kv::Headroom{}).status == kv::AllocStatus::ok);
  BOOST_TEST(manager.stats().num_free_device_blocks == 1);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(running_out_of_blocks_is_refused_without_change) {
  kv::KvCacheManager manager(small_config(3));
  manager.allocate(1, {iota_tokens(9)}, 9);  // all three blocks
  expect_refused<kv::KvCacheFullError>(
      manager, [&] { manager.allocate(2, {iota_tokens(4, 50)}, 4); }, "needs 1 free device blocks, 0 are free");
  expect_refused<kv::KvCacheFullError>(
      manager, [&] { manager.append_slots(1, iota_tokens(4)); }, "needs 1 free device blocks");
  std::vector<kv::BlockCopy> copies;
  const Tokens four = iota_tokens(4);
  BOOST_TEST(!manager.try_append_slots({.seq = 1, .tokens = four}, copies));
  BOOST_TEST(manager.num_tokens(1) == 9);
  BOOST_TEST(manager.try_append_slots({.seq = 1, .tokens = std::span<const TokenId>(four).first(2)}, copies));
  BOOST_TEST(manager.num_tokens(1) == 11);
  BOOST_TEST(copies.empty());
  manager.check_invariants();
  manager.fork(1, 2);
  expect_refused<kv::KvCacheFullError>(
      manager, [&] { manager.append_slots(2, Tokens{1}); },
      "needs 1 free device blocks");  // the copy-on-write
}

BOOST_AUTO_TEST_CASE(a_group_append_fits_whole_or_changes_nothing) {
  kv::KvCacheManager manager(small_config(4));
  manager.allocate(1, {iota_tokens(4)}, 4);  // one full block each
  manager.allocate(2, {iota_tokens(4, 100)}, 4);
  const Tokens five = iota_tokens(5, 200);  // two new blocks each: four, two are free
  std::vector<kv::BlockCopy> copies;
  const kv::AppendRequest both[] = {{.seq = 1, .tokens = five}, {.seq = 2, .tokens = five}};
  BOOST_TEST(!manager.try_append_slots(both, copies));
  BOOST_TEST(manager.num_tokens(1) == 4);
  BOOST_TEST(manager.num_tokens(2) == 4);
  BOOST_TEST(manager.stats().num_free_device_blocks == 2);
  const Tokens one = iota_tokens(1, 300);
  const kv::AppendRequest small[] = {{.seq = 1, .tokens = one}, {.seq = 2, .tokens = one}};
  BOOST_TEST(!manager.try_append_slots(small, copies, /*keep_free_blocks=*/1));  // would leave none
  BOOST_TEST(manager.try_append_slots(small, copies));
  BOOST_TEST(manager.num_tokens(1) == 5);
  BOOST_TEST(manager.num_tokens(2) == 5);
  const kv::AppendRequest twice[] = {{.seq = 1, .tokens = one}, {.seq = 1, .tokens = one}};
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.try_append_slots(twice, copies); }, "appears twice");
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(bad_calls_name_the_problem_and_change_nothing) {
  kv::KvCacheManager manager(small_config());
  manager.allocate(1, {iota_tokens(5)}, 5);
  const Tokens prompt = iota_tokens(5);
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.allocate(1, {prompt}, 5); }, "already holds blocks");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.allocate(2, {prompt}, 6); }, "outside [1, prompt length 5]");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.allocate(2, {prompt}, 0); }, "num_tokens 0");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.allocate(2, {Tokens{}}, 1); }, "empty prompt");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.append_slots(7, Tokens{1}); }, "unknown sequence 7");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.fork(7, 8); }, "unknown sequence 7");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.fork(1, 1); }, "onto itself");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.slot(1, 5); }, "position 5 outside");
  manager.free(1);
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.free(1); }, "double free");
}

BOOST_AUTO_TEST_CASE(swap_moves_a_group_once_per_shared_block) {
  std::ostringstream log_text;
  kv::KvEventLog log(log_text);
  kv::KvCacheManager manager(small_config(8, 4), &log);
  manager.allocate(1, {iota_tokens(6)}, 6);
  manager.fork(1, 2);
  manager.append_slots(2, Tokens{9});  // copy-on-write: 1 -> {0,1}, 2 -> {0,2}
  const std::vector<SeqId> group{1, 2};
  const std::optional<std::vector<kv::BlockMove>> swapped_out = manager.try_swap_out(group);
  BOOST_TEST_REQUIRE(swapped_out.has_value());
  const std::vector<kv::BlockMove>& out = *swapped_out;
  BOOST_TEST(out.size() == 3u);  // blocks 0, 1, 2: block 0 once although both hold it
  BOOST_TEST((out[0] == kv::BlockMove{0, 0}));
  BOOST_TEST(manager.is_swapped(1));
  BOOST_TEST(manager.host_pool().meta(0).ref_count == 2);
  BOOST_TEST(manager.stats().num_free_device_blocks == 8);
  BOOST_TEST(manager.stats().num_free_host_blocks == 1);
  manager.check_invariants();
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.append_slots(1, Tokens{1}); }, "swapped out");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.swap_out(group); }, "already swapped out");

  const kv::SwapInResult swapped_in = manager.try_swap_in(group, kv::Headroom{});
  BOOST_TEST(swapped_in.status == kv::AllocStatus::ok);
  const std::vector<kv::BlockMove>& in = swapped_in.moves;
  BOOST_TEST(in.size() == 2u);  // full block 0 was still cached on the device: taken back, not copied
  BOOST_TEST(table(manager, 1)[0] == 0);
  BOOST_TEST(table(manager, 1)[0] == table(manager, 2)[0]);  // still shared
  BOOST_TEST(manager.device_pool().meta(table(manager, 1)[0]).ref_count == 2);
  BOOST_TEST(manager.num_tokens(2) == 7);
  BOOST_TEST(manager.stats().num_free_host_blocks == 4);
  manager.check_invariants();
  BOOST_TEST(
      log_text.str().find("\"op\":\"swap_out\",\"seqs\":[1,2],\"moves\":[[0,0],[1,1],[2,2]]") != std::string::npos,
      log_text.str());
}

BOOST_AUTO_TEST_CASE(swap_refusals) {
  kv::KvCacheManager manager(small_config(8, 2));
  manager.allocate(1, {iota_tokens(12)}, 12);
  const std::vector<SeqId> group{1};
  BOOST_TEST(!manager.try_swap_out(group).has_value());
  BOOST_TEST(!manager.is_swapped(1));
  expect_refused<kv::KvCacheFullError>(
      manager, [&] { manager.swap_out(group); }, "needs 3 free host blocks, 2 are free");
  const std::vector<SeqId> twice{1, 1};
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.swap_out(twice); }, "appears twice");
  expect_refused<kv::KvCacheError>(
      manager, [&] { manager.swap_in(group); }, "already on the device");

  kv::KvCacheManager no_swap(small_config(8, 0));
  no_swap.allocate(1, {iota_tokens(4)}, 4);
  expect_refused<kv::KvCacheError>(
      no_swap, [&] { no_swap.swap_out(group); }, "no host swap space");
}

BOOST_AUTO_TEST_CASE(swap_in_waits_for_space_and_reports_never) {
  kv::KvCacheManager manager(small_config(4, 8));
  manager.allocate(1, {iota_tokens(12)}, 12);
  const std::vector<SeqId> group{1};
  manager.swap_out(group);
  manager.allocate(2, {iota_tokens(8, 300)}, 8);  // 2 of 4 device blocks left
  BOOST_TEST(manager.try_swap_in(group, kv::Headroom{}).status == kv::AllocStatus::later);
  BOOST_TEST(manager.is_swapped(1));
  expect_refused<kv::KvCacheFullError>(
      manager, [&] { manager.swap_in(group); }, "needs 3 free device blocks");
  manager.free(2);
  // 3 blocks of 4, leaving 1: not with 2 kept free; never with a reserve of 2 (3 > 4 - 2).
  BOOST_TEST(manager.try_swap_in(group, {.reserve_blocks = 0, .min_free_after = 2}).status == kv::AllocStatus::later);
  BOOST_TEST(manager.try_swap_in(group, {.reserve_blocks = 2, .min_free_after = 0}).status == kv::AllocStatus::never);
  BOOST_TEST(manager.try_swap_in(group, {.reserve_blocks = 1, .min_free_after = 1}).status == kv::AllocStatus::ok);
  manager.free(1);
  BOOST_TEST(manager.stats().num_free_device_blocks == 4);
  BOOST_TEST(manager.stats().num_free_host_blocks == 8);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(swap_in_copies_only_what_the_device_lost) {
  kv::KvCacheManager manager(small_config(6, 8));
  manager.allocate(1, {iota_tokens(14)}, 14);  // blocks 0..2 full and cached, 3 partial
  const std::vector<SeqId> group{1};
  manager.swap_out(group);
  manager.allocate(2, {iota_tokens(16, 600)}, 16);  // blocks 3, 4, 5, then 2 (evicted)
  BOOST_TEST(manager.stats().evictions == 1);
  manager.free(2);
  const kv::SwapInResult swapped_in = manager.try_swap_in(group, kv::Headroom{});
  BOOST_TEST(swapped_in.status == kv::AllocStatus::ok);
  const std::vector<kv::BlockMove>& moves = swapped_in.moves;
  BOOST_TEST(moves.size() == 2u);  // the evicted block and the partial block; 0 and 1 come back
  BOOST_TEST(table(manager, 1) == Ids({0, 1, 2, 5}), boost::test_tools::per_element());
  BOOST_TEST(manager.stats().num_free_device_blocks == 2);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(swap_in_counts_one_revived_block_once) {
  // Found by the property test: two host copies of one content revive a single device block.
  kv::KvCacheManager manager(small_config(8, 8));
  manager.allocate(1, {Tokens{1, 2}}, 2);
  manager.fork(1, 2);
  manager.append_slots(1, Tokens{3, 4});  // copy-on-write: seq 1's block is cached
  manager.append_slots(2, Tokens{3, 4});  // seq 2 fills the original: same content, uncached
  const std::vector<SeqId> group{1, 2};
  manager.swap_out(group);
  manager.allocate(3, {iota_tokens(28, 500)}, 28);  // every free block but the cached one
  BOOST_TEST(manager.stats().num_free_device_blocks == 1);
  const kv::SwapInResult swapped_in = manager.try_swap_in(group, kv::Headroom{});
  BOOST_TEST(swapped_in.status == kv::AllocStatus::ok);
  BOOST_TEST(swapped_in.moves.empty());
  BOOST_TEST(table(manager, 1) == table(manager, 2), boost::test_tools::per_element());
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(swapped_in_blocks_serve_prefix_hits_again) {
  kv::KvCacheManager manager(small_config(3, 4));
  const Tokens prompt = iota_tokens(9);
  manager.allocate(1, {prompt}, 9);
  const std::vector<SeqId> group{1};
  manager.swap_out(group);
  manager.allocate(2, {iota_tokens(12, 700)}, 12);  // evicts all of prompt 1's cached blocks
  manager.free(2);
  manager.allocate(3, {iota_tokens(12, 800)}, 12);  // and the other prompt's
  manager.free(3);
  manager.swap_in(group);
  BOOST_TEST(manager.match_prefix({prompt}).num_cached_tokens == 8);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(reset_prefix_cache_forgets_every_prefix) {
  kv::KvCacheManager manager(small_config(8));
  const Tokens prompt = iota_tokens(9);
  manager.allocate(1, {prompt}, 9);
  manager.allocate(2, {iota_tokens(9, 400)}, 9);
  manager.free(2);
  BOOST_TEST(manager.reset_prefix_cache() == 4);
  BOOST_TEST(manager.match_prefix({prompt}).num_cached_tokens == 0);
  BOOST_TEST(manager.stats().num_cached_free_device_blocks == 0);
  manager.check_invariants();
}

BOOST_AUTO_TEST_CASE(freeing_a_swapped_sequence_releases_host_blocks) {
  kv::KvCacheManager manager(small_config(8, 4));
  manager.allocate(1, {iota_tokens(7)}, 7);
  const std::vector<SeqId> group{1};
  manager.swap_out(group);
  manager.free(1);
  BOOST_TEST(manager.stats().num_free_host_blocks == 4);
  BOOST_TEST(manager.stats().num_sequences == 0);
  manager.check_invariants();
}

BOOST_AUTO_TEST_SUITE_END()
