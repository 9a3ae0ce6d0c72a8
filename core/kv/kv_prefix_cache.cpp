// The prefix cache side of the KV manager: matching a prompt's leading full blocks against cached
// content, registering blocks as they fill, forgetting everything cached.
#include <string>

#include "core/common/check.h"
#include "core/kv/kv_cache_manager.h"
#include "core/kv/kv_errors.h"

namespace pagedllm::kv {

PrefixMatch KvCacheManager::match_prefix(PromptRef prompt) const { return match_prefix(prompt, nullptr); }

PrefixMatch KvCacheManager::match_prefix(PromptRef prompt, std::vector<BlockId>* hits) const {
  PrefixMatch match;
  const int32_t prompt_len = prompt.num_tokens();
  if (!config_.enable_prefix_caching || prompt_len == 0) return match;
  const int32_t block_size = config_.block_size;
  // Stop one token short of the prompt: the last prompt token must run to produce logits.
  const int32_t max_hits = (prompt_len - 1) / block_size;
  const bool precomputed = !prompt.block_hashes.empty();
  if (precomputed && prompt.block_hashes.size() != static_cast<size_t>(prompt_len / block_size)) {
    throw KvCacheError("kv cache: PromptRef carries " + std::to_string(prompt.block_hashes.size()) +
                       " block hashes for " + std::to_string(prompt_len / block_size) + " full blocks");
  }
  if (max_hits == 0) return match;  // nothing to hit, nothing read: a short prompt needs no hashes
  if (prompt.num_unstored_tokens > 0 && !precomputed) {
    throw KvCacheError("kv cache: a prompt with " + std::to_string(prompt.num_unstored_tokens) +
                       " unstored tokens needs its block hashes given");
  }
  BlockHash hash = kRootBlockHash;
  for (int32_t i = 0; i < max_hits; ++i) {
    hash = precomputed
               ? prompt.block_hashes[static_cast<size_t>(i)]
               : hash_block(hash, prompt.tokens.subspan(static_cast<size_t>(i) * block_size, block_size), prompt.salt);
    const BlockId block = prefix_cache_.find(hash);
    if (block == kNoBlock) break;
    ++match.num_hit_blocks;
    if (device_.meta(block).ref_count == 0) ++match.num_free_hit_blocks;
    if (hits) hits->push_back(block);
  }
  match.num_cached_tokens = match.num_hit_blocks * block_size;
  return match;
}

void KvCacheManager::register_full_block(SequenceKv& state, BlockId block, const BlockHash& hash,
                                         std::vector<BlockId>* cached) {
  state.tail_hasher.reset(hash, state.salt);
  state.tail_unstored = false;
  BlockMeta& meta = device_.meta(block);
  meta.hash = hash;
  meta.has_hash = true;
  meta.num_hashed_tokens = state.num_tokens;
  // The first block to hold a prefix stays its cache entry; a later duplicate is left uncached.
  if (!prefix_cache_.insert(hash, block)) return;
  meta.is_cached = true;
  if (cached) cached->push_back(block);
}

int32_t KvCacheManager::reset_prefix_cache() {
  int32_t uncached = 0;
  prefix_cache_.for_each([&](const BlockHash&, BlockId block) {
    BlockMeta& meta = device_.meta(block);
    meta.is_cached = false;
    if (meta.ref_count == 0) --num_cached_free_;
    ++uncached;
  });
  prefix_cache_.clear();
  PAGEDLLM_ASSERT(num_cached_free_ == 0, "cached-free count out of step after reset");
  if (event_log_) event_log_->reset_prefix_cache(uncached);
  return uncached;
}

}  // namespace pagedllm::kv
