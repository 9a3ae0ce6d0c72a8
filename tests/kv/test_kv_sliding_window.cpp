// The KV manager under a sliding window: blocks wholly before the window of a sequence's next
// query are released (vLLM v1's SlidingWindowManager), so a long sequence's memory is bounded by
// the window; forks, swaps, the prefix cache and the event log stay consistent.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/kv/attention_window.h"
#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_event_log.h"
#include "tests/kv/token_ranges.h"

namespace kv = pagedllm::kv;
using pagedllm::SeqId;
using pagedllm::TokenId;
using Tokens = std::vector<TokenId>;

namespace {

using pagedllm::test::iota_tokens;

kv::KvCacheConfig window_config(int32_t block_size, int32_t window, int32_t device_blocks = 64,
                                int32_t host_blocks = 32) {
  kv::KvCacheConfig config;
  config.block_size = block_size;
  config.num_device_blocks = device_blocks;
  config.num_host_blocks = host_blocks;
  config.watermark = 0.0;
  config.sliding_window = window;
  return config;
}

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

// The table as the executors see it: released entries form a prefix of kNoBlock, and every
// position the last query reads has a block.
void check_table(const kv::KvCacheManager& manager, SeqId seq, int32_t window) {
  const auto table = manager.block_table(seq);
  const int32_t num_tokens = manager.num_tokens(seq);
  const int32_t block_size = manager.config().block_size;
  const auto released = static_cast<int32_t>(table.size()) - manager.num_live_blocks(seq);
  for (int32_t i = 0; i < static_cast<int32_t>(table.size()); ++i) {
    BOOST_TEST((table[static_cast<size_t>(i)] == kv::kNoBlock) == (i < released), "entry " << i);
  }
  const int32_t first_read = kv::first_visible_position(num_tokens - 1, window);
  BOOST_TEST(released * block_size <= first_read);
  for (int32_t position = first_read; position < num_tokens; ++position) {
    BOOST_CHECK_NO_THROW(manager.slot(seq, position));
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(kv_sliding_window)

// A sequence several windows long, its prompt prefilled in chunks, then decoded one token at a
// time: after a decode append it holds at most ceil(window / block_size) + 1 blocks, after a
// chunk of k tokens at most ceil((window - 1 + k) / block_size) + 1; the used device blocks are
// exactly its live ones (released blocks went back to the free list).
BOOST_AUTO_TEST_CASE(a_long_sequence_holds_at_most_the_window_blocks) {
  struct Case {
    int32_t block_size;
    int32_t window;
    int32_t prompt;
    int32_t chunk;
    int32_t total;
  };
  // clang-format off
  const std::vector<Case> cases = {
      {4, 1, 9, 4, 40},   {4, 4, 9, 4, 40},   {4, 5, 10, 3, 41},  {4, 8, 17, 5, 50},
      {4, 13, 30, 7, 80}, {16, 16, 40, 16, 200}, {16, 32, 100, 32, 200}, {16, 37, 64, 20, 230},
      {1, 3, 5, 2, 30},   {8, 100, 20, 8, 50},  // a window longer than the sequence releases nothing
  };
  // clang-format on
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT("block " << c.block_size << " window " << c.window << " chunk " << c.chunk) {
      kv::KvCacheManager manager(window_config(c.block_size, c.window, 256));
      const Tokens tokens = iota_tokens(c.total);
      const SeqId seq = 1;
      manager.allocate(seq, {.tokens = std::span(tokens).first(static_cast<size_t>(c.prompt))},
                       std::min(c.chunk, c.prompt));
      manager.check_invariants();
      int32_t n = manager.num_tokens(seq);
      while (n < c.total) {
        const int32_t k = n < c.prompt ? std::min(c.chunk, c.prompt - n) : 1;
        manager.append_slots(seq, std::span(tokens).subspan(static_cast<size_t>(n), static_cast<size_t>(k)));
        n += k;
        manager.check_invariants();
        check_table(manager, seq, c.window);
        const int32_t bound = ceil_div(c.window - 1 + k, c.block_size) + 1;
        BOOST_TEST(manager.num_live_blocks(seq) <= bound, "at " << n << " tokens");
        BOOST_TEST(manager.stats().num_used_device_blocks() == manager.num_live_blocks(seq));
      }
      if (c.window >= c.total) BOOST_TEST(manager.num_live_blocks(seq) == ceil_div(c.total, c.block_size));
      manager.free(seq);
      manager.check_invariants();
      BOOST_TEST(manager.stats().num_used_device_blocks() == 0);
    }
  }
}

// Forks share every live block and inherit the released prefix; a shared block is freed only
// when its last holder releases it (reference counts), and an append past the window by one
// holder leaves the other's table untouched.
BOOST_AUTO_TEST_CASE(forks_share_blocks_until_every_holder_releases_them) {
  kv::KvCacheManager manager(window_config(4, 5, 16));
  const Tokens prompt = iota_tokens(12);  // 3 full blocks
  manager.allocate(1, {.tokens = prompt}, 12);
  manager.fork(1, 2);
  manager.fork(1, 3);
  manager.check_invariants();
  BOOST_TEST(manager.stats().num_used_device_blocks() == 3);
  // Seq 1's query at 12 reads [8, 12]: blocks 0 and 1 are dead for it, still held by 2 and 3.
  manager.append_slots(1, Tokens{500});
  manager.check_invariants();
  BOOST_TEST(manager.num_live_blocks(1) == 2);
  BOOST_TEST(manager.num_live_blocks(2) == 3);
  BOOST_TEST(manager.stats().num_used_device_blocks() == 4);  // 3 shared + seq 1's new block
  manager.append_slots(2, Tokens{600});
  manager.check_invariants();
  BOOST_TEST(manager.stats().num_used_device_blocks() == 5);  // blocks 0 and 1 still held by seq 3
  manager.append_slots(3, Tokens{700});
  manager.check_invariants();
  BOOST_TEST(manager.stats().num_used_device_blocks() == 4);  // block 2 shared, three new blocks
  // A fork of a sequence with released blocks shares only its live ones.
  manager.fork(3, 4);
  manager.check_invariants();
  BOOST_TEST(manager.num_live_blocks(4) == 2);
  BOOST_TEST(manager.block_table(4).front() == kv::kNoBlock);
  for (const SeqId seq : {1, 2, 3, 4}) manager.free(seq);
  manager.check_invariants();
  BOOST_TEST(manager.stats().num_used_device_blocks() == 0);
}

// Beam search: every step forks the survivors and frees the rest; the live blocks of the whole
// beam stay bounded by the window.
BOOST_AUTO_TEST_CASE(beam_search_forks_and_frees_stay_bounded) {
  kv::KvCacheManager manager(window_config(4, 6, 64));
  const Tokens prompt = iota_tokens(9);
  manager.allocate(1, {.tokens = prompt}, 9);
  std::vector<SeqId> beams{1};
  SeqId next = 2;
  for (int32_t step = 0; step < 30; ++step) {
    // Two children of the first beam replace the beams (as a beam search that keeps width 2).
    const SeqId parent = beams.front();
    std::vector<SeqId> children{next, next + 1};
    next += 2;
    for (const SeqId child : children) manager.fork(parent, child);
    for (const SeqId old : beams) manager.free(old);
    for (size_t i = 0; i < children.size(); ++i) {
      manager.append_slots(children[i], Tokens{static_cast<TokenId>(1000 + 10 * step + static_cast<int32_t>(i))});
    }
    beams = children;
    manager.check_invariants();
    for (const SeqId seq : beams) BOOST_TEST(manager.num_live_blocks(seq) <= ceil_div(6, 4) + 1);
    BOOST_TEST(manager.stats().num_used_device_blocks() <= 2 * (ceil_div(6, 4) + 1));
  }
}

// Swap-out moves only live blocks; the released prefix stays kNoBlock on the host and after the
// swap-in, and the sequence goes on appending and releasing.
BOOST_AUTO_TEST_CASE(swap_round_trips_move_only_live_blocks) {
  kv::KvCacheManager manager(window_config(4, 6, 16, 8));
  const Tokens tokens = iota_tokens(40);
  manager.allocate(1, {.tokens = std::span(tokens).first(20)}, 20);
  for (int32_t n = 20; n < 30; ++n) manager.append_slots(1, std::span(tokens).subspan(static_cast<size_t>(n), 1));
  manager.fork(1, 2);
  manager.append_slots(2, Tokens{900});
  manager.check_invariants();
  const int32_t live_1 = manager.num_live_blocks(1);
  const int32_t released_1 = static_cast<int32_t>(manager.block_table(1).size()) - live_1;
  BOOST_TEST(released_1 > 0);
  const std::vector<SeqId> group{1, 2};
  const std::vector<kv::BlockMove> out = manager.swap_out(group);
  manager.check_invariants();
  // Distinct live blocks of the group, each moved once.
  BOOST_TEST(static_cast<int32_t>(out.size()) ==
             manager.stats().num_host_blocks - manager.stats().num_free_host_blocks);
  BOOST_TEST(manager.stats().num_used_device_blocks() == 0);
  BOOST_TEST(manager.block_table(1)[0] == kv::kNoBlock);
  BOOST_TEST(manager.num_live_blocks(1) == live_1);
  const std::vector<kv::BlockMove> in = manager.swap_in(group);
  manager.check_invariants();
  BOOST_TEST(in.size() <= out.size());  // blocks still cached on the device come back without a copy
  BOOST_TEST(manager.stats().num_free_host_blocks == manager.stats().num_host_blocks);
  BOOST_TEST(manager.num_live_blocks(1) == live_1);
  for (const SeqId seq : group) check_table(manager, seq, 6);
  for (int32_t n = 30; n < 40; ++n) {
    manager.append_slots(1, std::span(tokens).subspan(static_cast<size_t>(n), 1));
    manager.check_invariants();
    BOOST_TEST(manager.num_live_blocks(1) <= ceil_div(6, 4) + 1);
  }
}

// A released full block stays in the prefix cache (free, evictable): a later request with the
// same prompt still hits the prompt's early blocks, which is valid because a block's KV depends
// on its prefix alone, window or not. Hits before the window of the first query computed are
// not taken. (vLLM's sliding-window hit needs only the window's blocks cached; here a hit is still
// a run of leading blocks, so it also needs the released ones not evicted.)
BOOST_AUTO_TEST_CASE(released_prompt_blocks_still_serve_prefix_hits) {
  kv::KvCacheManager manager(window_config(4, 5, 32));
  const Tokens prompt = iota_tokens(21);
  manager.allocate(1, {.tokens = prompt}, 21);
  for (int32_t i = 0; i < 8; ++i) manager.append_slots(1, Tokens{static_cast<TokenId>(800 + i)});
  manager.check_invariants();
  BOOST_TEST(manager.block_table(1)[0] == kv::kNoBlock);
  BOOST_TEST(manager.stats().num_cached_free_device_blocks > 0);
  const kv::PrefixMatch match = manager.match_prefix({.tokens = prompt});
  BOOST_TEST(match.num_cached_tokens == 20);  // 5 full blocks, stopping short of the prompt
  BOOST_TEST(match.num_free_hit_blocks > 0);  // the released ones, revived by the hit
  const int32_t used_before = manager.stats().num_used_device_blocks();
  BOOST_TEST(manager.allocate(2, {.tokens = prompt}, 21) == 20);
  manager.check_invariants();
  // Its first query (position 20) reads [16, 20]: the hits before are not even taken (as vLLM
  // puts null blocks there), only block 4 of the prompt and one new block for position 20.
  const auto table = manager.block_table(2);
  BOOST_TEST(table.size() == 6u);
  for (size_t i = 0; i < 4; ++i) BOOST_TEST(table[i] == kv::kNoBlock);
  BOOST_TEST(manager.num_live_blocks(2) == 2);
  BOOST_TEST(manager.stats().num_used_device_blocks() == used_before + 2);
  check_table(manager, 2, 5);
  manager.append_slots(2, Tokens{900});
  manager.check_invariants();
  check_table(manager, 2, 5);
}

// Appending needs no free block when the window releases one the sequence held alone. A cached
// block is not counted: once free, a prefix hit in the same step may revive it.
BOOST_AUTO_TEST_CASE(an_append_counts_the_blocks_the_window_frees) {
  kv::KvCacheConfig uncached = window_config(4, 4, 2, 0);
  uncached.enable_prefix_caching = false;
  kv::KvCacheManager manager(uncached);
  const Tokens prompt = iota_tokens(8);
  manager.allocate(1, {.tokens = prompt}, 8);
  BOOST_TEST(manager.stats().num_free_device_blocks == 0);
  BOOST_TEST(manager.num_blocks_to_append(1, 1) == 0);  // one new block, one released
  std::vector<kv::BlockCopy> copies;
  const Tokens next{42};
  BOOST_TEST(manager.try_append_slots(kv::AppendRequest{.seq = 1, .tokens = next}, copies));
  manager.check_invariants();
  BOOST_TEST(manager.num_live_blocks(1) == 2);
  // With prefix caching the released block stays cached: not counted (the append still fits,
  // releasing before it takes a block).
  kv::KvCacheManager cached(window_config(4, 4, 2, 0));
  cached.allocate(1, {.tokens = prompt}, 8);
  BOOST_TEST(cached.num_blocks_to_append(1, 1) == 1);
  // Without a window the same append does not fit.
  kv::KvCacheConfig plain = window_config(4, 0, 2, 0);
  plain.enable_prefix_caching = false;
  kv::KvCacheManager unwindowed(plain);
  unwindowed.allocate(1, {.tokens = prompt}, 8);
  BOOST_TEST(unwindowed.num_blocks_to_append(1, 1) == 1);
  BOOST_TEST(!unwindowed.try_append_slots(kv::AppendRequest{.seq = 1, .tokens = next}, copies));
}

// Every release is one event-log line, the blocks in table order; a free lists only live blocks.
BOOST_AUTO_TEST_CASE(each_release_is_one_event_log_line) {
  std::ostringstream log_text;
  kv::KvEventLog log(log_text);
  kv::KvCacheManager manager(window_config(4, 4, 16), &log);
  const Tokens prompt = iota_tokens(12);
  manager.allocate(7, {.tokens = prompt}, 12);
  manager.append_slots(7, Tokens{1});  // query at 12 reads [9, 12]: blocks 0 and 1 released
  manager.free(7);
  const std::string text = log_text.str();
  const kv::BlockId b0 = 0;
  BOOST_TEST(text.find(R"({"step":0,"op":"release_window","seq":7,"blocks":[)" + std::to_string(b0)) !=
             std::string::npos);
  const size_t release = text.find("release_window");
  const size_t free_line = text.find(R"("op":"free")");
  BOOST_TEST(release < free_line);
  BOOST_TEST(text.find("-1") == std::string::npos, text);  // no released entry is ever logged
}

BOOST_AUTO_TEST_CASE(a_prompt_shorter_than_the_window_fits_a_cache_smaller_than_the_window) {
  // Window 64 on blocks of 4: a long sequence holds 17 blocks; a 10-token prompt needs 3.
  kv::KvCacheManager manager(window_config(4, 64, 8));
  const Tokens prompt = iota_tokens(10);
  BOOST_TEST(manager.allocation_status({.tokens = prompt}, 10, {}) == kv::AllocStatus::ok);
  const Tokens long_prompt = iota_tokens(40);  // 10 blocks at once at some point: never
  BOOST_TEST(manager.allocation_status({.tokens = long_prompt}, 40, {}) == kv::AllocStatus::never);
}

BOOST_AUTO_TEST_CASE(a_negative_window_is_refused) {
  kv::KvCacheConfig config = window_config(4, -1);
  BOOST_CHECK_THROW(kv::KvCacheManager manager(config), std::exception);
}

BOOST_AUTO_TEST_SUITE_END()
