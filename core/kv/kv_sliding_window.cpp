// The sliding-window side of the KV manager: a sequence of a windowed model releases the blocks
// that no query of it will read again, so that its memory is bounded by the window, not by its
// length (at most ceil(window / block_size) + 1 blocks in decode).
//
// The query at position p reads positions [p - window + 1, p] (kv/attention_window.h), and every
// later query reads later positions, so before an append whose first query is at position
// num_tokens, the blocks wholly before first_visible_position(num_tokens) are dead for this
// sequence. Releasing drops the sequence's reference only: a block registered in the prefix cache
// goes to the free list still cached (another request with the same prompt can hit it until it is
// evicted, since a block's KV depends on its prefix alone, window or not), and a block that a fork
// shares stays with its other holders (reference counts).
#include <algorithm>

#include "core/common/check.h"
#include "core/kv/attention_window.h"
#include "core/kv/kv_cache_manager.h"

namespace pagedllm::kv {

std::span<const BlockId> KvCacheManager::live_blocks(const SequenceKv& state) {
  return std::span<const BlockId>(state.block_table).subspan(static_cast<size_t>(state.num_released_blocks));
}

int32_t KvCacheManager::num_live_blocks(SeqId seq) const {
  return static_cast<int32_t>(live_blocks(sequence(seq)).size());
}

int32_t KvCacheManager::num_blocks_outside_window(int32_t first_query_position) const {
  if (config_.sliding_window <= 0) return 0;
  return first_visible_position(first_query_position, config_.sliding_window) / config_.block_size;
}

int32_t KvCacheManager::num_blocks_freed_by_window(const SequenceKv& state) const {
  if (config_.sliding_window <= 0 || state.tier != Tier::device) return 0;
  const int32_t end =
      std::min(num_blocks_outside_window(state.num_tokens), static_cast<int32_t>(state.block_table.size()));
  int32_t freed = 0;
  // A cached block is not counted: once free it may be revived by a prefix hit in the same step
  // (a recompute's rejoining sibling plans its hits before this append runs).
  for (int32_t i = state.num_released_blocks; i < end; ++i) {
    const BlockMeta& meta = device_.meta(state.block_table[static_cast<size_t>(i)]);
    if (meta.ref_count == 1 && !meta.is_cached) ++freed;
  }
  return freed;
}

void KvCacheManager::release_outside_window(SeqId seq, SequenceKv& state, int32_t first_query_position) {
  const int32_t end = num_blocks_outside_window(first_query_position);
  if (end <= state.num_released_blocks) return;
  PAGEDLLM_ASSERT(state.tier == Tier::device, "window release of a swapped-out sequence");
  PAGEDLLM_ASSERT(first_query_position <= state.num_tokens, "window release past the sequence's tokens");
  PAGEDLLM_ASSERT(end <= static_cast<int32_t>(state.block_table.size()), "window release past the block table");
  scratch_released_.clear();
  // The latest first, as free() does: of the released cached blocks, the later ones are evicted first.
  for (int32_t i = end; i-- > state.num_released_blocks;) {
    BlockId& block = state.block_table[static_cast<size_t>(i)];
    PAGEDLLM_ASSERT(block != kNoBlock, "window release of a released block");
    release_device_block(block, block_fill(state, static_cast<size_t>(i)));
    scratch_released_.push_back(block);
    block = kNoBlock;
  }
  state.num_released_blocks = end;
  if (event_log_) {
    std::reverse(scratch_released_.begin(), scratch_released_.end());  // table order in the log
    event_log_->release_outside_window(seq, scratch_released_);
  }
}

}  // namespace pagedllm::kv
