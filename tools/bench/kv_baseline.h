// The nano-vllm-style baseline block manager bench_kv measures pagedllm against; header-only, so it inlines.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/common/types.h"

namespace pagedllm::kv_bench {

// The nano-vllm-style baseline: nano-vllm's block manager (engine/block_manager.py) transcribed to
// C++ with the plain containers such a port would use. It is the reference point, not a strawman,
// so it stays faithful except for three changes that can only make it faster or bounded: a block
// taken for new content drops its stale prefix-cache entry (nano-vllm never erases, so its map
// grows without bound), lookups stop after the first miss, and the maps are reserved up front as
// pagedllm's prefix cache is. A sequence's block table and token ids share one map entry (the
// Python keeps both on the Sequence object). It has no copy-on-write and no swap, as nano-vllm.
class BaselineBlockManager {
 public:
  static constexpr bool kHasCowAndSwap = false;

  BaselineBlockManager(int32_t num_blocks, int32_t block_size)
      : block_size_(block_size),
        ref_counts_(static_cast<size_t>(num_blocks), 0),
        block_hashes_(static_cast<size_t>(num_blocks), kNoHash),
        block_tokens_(static_cast<size_t>(num_blocks)) {
    for (int block = 0; block < num_blocks; ++block) free_ids_.push_back(block);
    used_ids_.reserve(static_cast<size_t>(num_blocks));
    hash_to_block_.reserve(static_cast<size_t>(num_blocks));
  }

  void begin_step(int64_t /*step*/) {}
  int32_t num_free_blocks() const { return static_cast<int32_t>(free_ids_.size()); }

  // nano-vllm's can_allocate, then allocate.
  std::optional<int32_t> try_allocate(SeqId seq_id, std::span<const TokenId> prompt) {
    if (num_free_blocks() < blocks_for(prompt.size())) return std::nullopt;
    return allocate(seq_id, prompt);
  }

  // nano-vllm's allocate: walks the prompt's blocks, sharing cached ones until the first miss.
  int32_t allocate(SeqId seq_id, std::span<const TokenId> prompt) {
    Sequence& seq = sequences_[seq_id];
    seq.tokens.assign(prompt.begin(), prompt.end());
    const int32_t num_blocks = blocks_for(prompt.size());
    seq.block_table.reserve(static_cast<size_t>(num_blocks));
    uint64_t hash = kNoHash;
    bool cache_miss = false;
    int32_t cached_tokens = 0;
    for (int32_t i = 0; i < num_blocks; ++i) {
      const std::span<const TokenId> tokens = block_of(prompt, i);
      const bool full = static_cast<int32_t>(tokens.size()) == block_size_;
      hash = full ? hash_tokens(hash, tokens) : kNoHash;
      int block = cache_miss || !full ? -1 : find_cached(hash, tokens);
      if (block < 0) {
        cache_miss = true;
        block = take_block(free_ids_.front());
        if (full) remember(block, hash, tokens);
      } else {
        cached_tokens += block_size_;
        if (used_ids_.contains(block)) {
          ++ref_counts_[static_cast<size_t>(block)];
        } else {
          take_block(block);  // a hit on a free block: a linear search of the free deque
          remember(block, hash, tokens);
        }
      }
      seq.block_table.push_back(block);
    }
    return cached_tokens;
  }

  int32_t match_prefix(std::span<const TokenId> prompt) const {
    uint64_t hash = kNoHash;
    int32_t cached_tokens = 0;
    for (int32_t i = 0; i < blocks_for(prompt.size()); ++i) {
      const std::span<const TokenId> tokens = block_of(prompt, i);
      if (static_cast<int32_t>(tokens.size()) != block_size_) break;
      hash = hash_tokens(hash, tokens);
      if (find_cached(hash, tokens) < 0) break;
      cached_tokens += block_size_;
    }
    return cached_tokens;
  }

  // nano-vllm's can_append, asked before the token joins the sequence, then append.
  std::optional<int64_t> try_append(SeqId seq_id, TokenId token) {
    if (!can_append(seq_id)) return std::nullopt;
    return append(seq_id, token);
  }

  bool can_append(SeqId seq_id) const {
    const Sequence& seq = sequences_.at(seq_id);
    const bool needs_block = seq.tokens.size() % static_cast<size_t>(block_size_) == 0;
    return free_ids_.size() >= (needs_block ? size_t{1} : size_t{0});
  }

  // nano-vllm's may_append, after the token has joined the sequence.
  int64_t append(SeqId seq_id, TokenId token) {
    Sequence& seq = sequences_.at(seq_id);
    seq.tokens.push_back(token);
    const size_t offset = seq.tokens.size() % static_cast<size_t>(block_size_);
    std::vector<int>& table = seq.block_table;
    if (offset == 1) {  // the token opens a block
      table.push_back(take_block(free_ids_.front()));
    } else if (offset == 0) {  // the token filled the last block: offer it to the prefix cache
      const uint64_t parent = table.size() > 1 ? block_hashes_[static_cast<size_t>(table[table.size() - 2])] : kNoHash;
      const auto tokens = std::span<const TokenId>(seq.tokens).last(static_cast<size_t>(block_size_));
      remember(table.back(), hash_tokens(parent, tokens), tokens);
    }
    return table.back();
  }

  void fork(SeqId parent, SeqId child) {
    Sequence copy = sequences_.at(parent);
    for (const int block : copy.block_table) ++ref_counts_[static_cast<size_t>(block)];
    sequences_.emplace(child, std::move(copy));
  }

  // nano-vllm's deallocate: the tail is released first.
  void free(SeqId seq_id) {
    const auto it = sequences_.find(seq_id);
    const std::vector<int>& table = it->second.block_table;
    for (auto block = table.rbegin(); block != table.rend(); ++block) {
      if (--ref_counts_[static_cast<size_t>(*block)] == 0) {
        used_ids_.erase(*block);
        free_ids_.push_back(*block);
      }
    }
    sequences_.erase(it);
  }

 private:
  struct Sequence {
    std::vector<int> block_table;
    std::vector<TokenId> tokens;
  };

  static constexpr uint64_t kNoHash = std::numeric_limits<uint64_t>::max();

  // std::hash of the block's tokens folded with hash_combine, chained over the parent block's hash
  // the way nano-vllm chains xxhash.
  static uint64_t hash_tokens(uint64_t parent, std::span<const TokenId> tokens) {
    uint64_t seed = std::hash<uint64_t>{}(parent);
    for (const TokenId token : tokens) {
      seed ^= std::hash<TokenId>{}(token) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
    }
    return seed;
  }

  int32_t blocks_for(size_t num_tokens) const {
    const auto block_size = static_cast<size_t>(block_size_);
    return static_cast<int32_t>((num_tokens + block_size - 1) / block_size);
  }

  std::span<const TokenId> block_of(std::span<const TokenId> tokens, int32_t index) const {
    const size_t begin = static_cast<size_t>(index) * static_cast<size_t>(block_size_);
    return tokens.subspan(begin, std::min(static_cast<size_t>(block_size_), tokens.size() - begin));
  }

  // The cached block for `hash`, if its tokens match (nano-vllm checks them too), else -1.
  int find_cached(uint64_t hash, std::span<const TokenId> tokens) const {
    const auto it = hash_to_block_.find(hash);
    if (it == hash_to_block_.end()) return -1;
    const std::vector<TokenId>& held = block_tokens_[static_cast<size_t>(it->second)];
    return std::equal(held.begin(), held.end(), tokens.begin(), tokens.end()) ? it->second : -1;
  }

  // nano-vllm's _allocate_block: the block leaves the free deque (at once from the front, by a
  // linear search elsewhere), joins the used set, and forgets its old content.
  int take_block(int block) {
    const auto index = static_cast<size_t>(block);
    if (block_hashes_[index] != kNoHash) {
      const auto it = hash_to_block_.find(block_hashes_[index]);
      if (it != hash_to_block_.end() && it->second == block) hash_to_block_.erase(it);
      block_hashes_[index] = kNoHash;
    }
    block_tokens_[index].clear();
    ref_counts_[index] = 1;
    if (free_ids_.front() == block) {
      free_ids_.pop_front();
    } else {
      free_ids_.erase(std::find(free_ids_.begin(), free_ids_.end(), block));
    }
    used_ids_.insert(block);
    return block;
  }

  // nano-vllm's Block.update plus its hash_to_block_id entry.
  void remember(int block, uint64_t hash, std::span<const TokenId> tokens) {
    const auto index = static_cast<size_t>(block);
    block_hashes_[index] = hash;
    block_tokens_[index].assign(tokens.begin(), tokens.end());
    hash_to_block_[hash] = block;
  }

  int32_t block_size_;
  std::deque<int> free_ids_;
  std::unordered_set<int> used_ids_;
  std::vector<int> ref_counts_;
  std::vector<uint64_t> block_hashes_;              // kNoHash until the block is full
  std::vector<std::vector<TokenId>> block_tokens_;  // a full block's tokens, checked on a hit
  std::unordered_map<uint64_t, int> hash_to_block_;
  std::unordered_map<int64_t, Sequence> sequences_;  // block tables (and token ids) by sequence
};

}  // namespace pagedllm::kv_bench
