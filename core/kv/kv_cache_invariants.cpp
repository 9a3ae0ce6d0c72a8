// KvCacheManager::check_invariants: the whole-state audit that tests run after every operation.
#include <stdexcept>
#include <string>
#include <vector>

#include "core/kv/kv_cache_manager.h"

namespace pagedllm::kv {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::logic_error("kv cache invariant broken: " + what); }

const char* tier_name(Tier tier) { return tier == Tier::device ? "device" : "host"; }

// Reference counts and free-list membership of one tier against the tables that hold it.
void check_pool(const BlockPool& pool, const std::vector<int32_t>& table_refs) {
  const std::vector<BlockId> free_list = pool.free_list();
  if (static_cast<int32_t>(free_list.size()) != pool.num_free()) {
    fail(std::string(tier_name(pool.tier())) + " free list holds " + std::to_string(free_list.size()) +
         " blocks but num_free is " + std::to_string(pool.num_free()));
  }
  std::vector<bool> on_free_list(static_cast<size_t>(pool.num_blocks()), false);
  bool seen_cached = false;
  for (const BlockId block : free_list) {
    if (on_free_list[static_cast<size_t>(block)]) fail("block " + std::to_string(block) + " is twice on the free list");
    on_free_list[static_cast<size_t>(block)] = true;
    const bool cached = pool.meta(block).is_cached;
    if (seen_cached && !cached) {
      fail("uncached free block " + std::to_string(block) + " sits behind cached ones (eviction order)");
    }
    seen_cached = seen_cached || cached;
  }
  int32_t used = 0;
  for (BlockId block = 0; block < pool.num_blocks(); ++block) {
    const BlockMeta& meta = pool.meta(block);
    const int32_t expected = table_refs[static_cast<size_t>(block)];
    if (meta.ref_count != expected) {
      fail(std::string(tier_name(pool.tier())) + " block " + std::to_string(block) + " has ref_count " +
           std::to_string(meta.ref_count) + " but " + std::to_string(expected) + " tables hold it");
    }
    if ((meta.ref_count == 0) != on_free_list[static_cast<size_t>(block)]) {
      fail(std::string(tier_name(pool.tier())) + " block " + std::to_string(block) +
           (meta.ref_count == 0 ? " is unreferenced but not on the free list" : " is both held and on the free list"));
    }
    if (meta.ref_count > 0) ++used;
  }
  if (used + pool.num_free() != pool.num_blocks()) fail("free + used != total");
}

}  // namespace

void KvCacheManager::check_invariants() const {
  const int32_t block_size = config_.block_size;
  std::vector<int32_t> device_refs(static_cast<size_t>(device_.num_blocks()), 0);
  std::vector<int32_t> host_refs(static_cast<size_t>(host_.num_blocks()), 0);
  std::vector<int32_t> device_fills(static_cast<size_t>(device_.num_blocks()), -1);
  std::vector<int32_t> host_fills(static_cast<size_t>(host_.num_blocks()), -1);

  int32_t num_live = 0;
  for (const SequenceKv& state : sequence_slots_) {
    if (!state.live) continue;
    ++num_live;
    const std::string name = "sequence " + std::to_string(state.id);
    if (find_sequence(state.id) != &state) fail(name + " is not indexed at its slot");
    if (static_cast<int32_t>(state.block_table.size()) != blocks_for_tokens(state.num_tokens)) {
      fail(name + " holds " + std::to_string(state.block_table.size()) + " blocks for " +
           std::to_string(state.num_tokens) + " tokens");
    }
    if (state.num_tentative < 0 || state.num_tentative > state.num_tokens ||
        (state.num_tentative > 0 && state.tier != Tier::device)) {
      fail(name + " holds " + std::to_string(state.num_tentative) + " tentative slots");
    }
    // A last block of unstored tokens is hashed from its name when it fills: its hasher is empty.
    const int32_t tail_hashed = state.tail_unstored ? 0 : (state.num_tokens - state.num_tentative) % block_size;
    if (config_.enable_prefix_caching && state.tail_hasher.num_tokens() != tail_hashed) {
      fail(name + " has hashed " + std::to_string(state.tail_hasher.num_tokens()) + " tokens of its last block");
    }
    const BlockPool& tier_pool = state.tier == Tier::device ? device_ : host_;
    std::vector<int32_t>& refs = state.tier == Tier::device ? device_refs : host_refs;
    std::vector<int32_t>& fills = state.tier == Tier::device ? device_fills : host_fills;
    // Sliding window: the released entries are a prefix of the table, wholly before the window of
    // the sequence's last query (so never read again).
    if (state.num_released_blocks < 0 || state.num_released_blocks > static_cast<int32_t>(state.block_table.size())) {
      fail(name + " has " + std::to_string(state.num_released_blocks) + " released blocks");
    }
    if (state.num_released_blocks > num_blocks_outside_window(std::max(state.num_tokens - 1, 0))) {
      fail(name + " released " + std::to_string(state.num_released_blocks) + " blocks, inside its sliding window");
    }
    for (size_t i = 0; i < state.block_table.size(); ++i) {
      const BlockId block = state.block_table[i];
      const bool released = i < static_cast<size_t>(state.num_released_blocks);
      if (released != (block == kNoBlock)) fail(name + " has a released entry outside its released prefix");
      if (released) continue;
      if (block < 0 || block >= tier_pool.num_blocks()) fail(name + " holds an out-of-range block id");
      ++refs[static_cast<size_t>(block)];
      // Every holder of a block must agree on how full it is (a shared block is never written).
      const int32_t fill = block_fill(state, i);
      int32_t& seen = fills[static_cast<size_t>(block)];
      if (seen != -1 && seen != fill) {
        fail(name + " sees block " + std::to_string(block) + " filled to " + std::to_string(fill) +
             ", another holder to " + std::to_string(seen));
      }
      seen = fill;
    }
    const bool partial = state.num_tokens % block_size != 0;
    if (state.tier == Tier::device && partial && !state.last_block_maybe_shared &&
        device_.meta(state.block_table.back()).ref_count > 1) {
      fail(name + " shares its partial last block without the copy-on-write hint");
    }
  }
  if (num_live != static_cast<int32_t>(sequence_index_.size())) fail("sequence index size out of step");
  check_pool(device_, device_refs);
  check_pool(host_, host_refs);

  int32_t cached = 0;
  int32_t cached_free = 0;
  int64_t filled = 0;
  for (BlockId block = 0; block < device_.num_blocks(); ++block) {
    const BlockMeta& meta = device_.meta(block);
    if (meta.ref_count > 0) filled += device_fills[static_cast<size_t>(block)];
    if (!meta.is_cached) continue;
    ++cached;
    if (meta.ref_count == 0) ++cached_free;
    if (!meta.has_hash) fail("cached block " + std::to_string(block) + " has no hash");
    if (prefix_cache_.find(meta.hash) != block) {
      fail("cached block " + std::to_string(block) + " is not the cache entry for its hash");
    }
  }
  if (cached != static_cast<int32_t>(prefix_cache_.size())) {
    fail("prefix cache has " + std::to_string(prefix_cache_.size()) + " entries but " + std::to_string(cached) +
         " blocks are marked cached");
  }
  if (cached_free != num_cached_free_) fail("cached-free count out of step");
  if (filled != device_slots_filled_) fail("filled-slot count out of step");
}

}  // namespace pagedllm::kv
