// A fixed pool of KV blocks of one memory tier: metadata only, no KV data.
//
// Blocks live in a flat array indexed by BlockId. Free blocks form an intrusive doubly linked
// list in eviction order: the head is taken first. Blocks that hold no reusable content go to the
// head; blocks whose content is registered in the prefix cache go to the tail, so the list is LRU
// over cached content and every operation (allocate, acquire, release, remove from the middle)
// is O(1). A free block keeps its hash until it is allocated again, which is what lets a freed
// prompt be found by a later request.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kv/block_hash.h"

namespace pagedllm::kv {

using BlockId = int32_t;  // index into one tier's pool; the same id means the same memory in every executor
inline constexpr BlockId kNoBlock = -1;

enum class Tier : uint8_t { device, host };

struct BlockMeta {
  BlockHash hash;                 // chained content hash; meaningful only when has_hash
  int32_t ref_count = 0;          // block tables holding this block; 0 <=> on the free list
  int32_t num_hashed_tokens = 0;  // prefix length the hash covers (block index + 1) * block_size
  BlockId prev_free = kNoBlock;   // free-list links, valid only while ref_count == 0
  BlockId next_free = kNoBlock;
  bool has_hash = false;   // content is full and hashed
  bool is_cached = false;  // registered in the prefix cache (device tier only)
};

class BlockPool {
 public:
  BlockPool(Tier tier, int32_t num_blocks);

  Tier tier() const { return tier_; }
  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t num_free() const { return num_free_; }
  int32_t num_used() const { return num_blocks() - num_free_; }

  const BlockMeta& meta(BlockId id) const;
  BlockMeta& meta(BlockId id);

  // Takes the head of the free list (the block least worth keeping) with ref_count 1 and its old
  // metadata left in place: the caller must look at has_hash / is_cached before resetting it.
  // Precondition: num_free() > 0.
  BlockId allocate();

  // One more reference. A free block (a prefix-cache hit on released content) leaves the free list.
  void acquire(BlockId id);

  // One reference less. Returns true when the block became free; it then joins the tail of the
  // free list if its content is cached, the head otherwise.
  bool release(BlockId id);

  // The free list from head (next to be allocated) to tail; O(n), for checks and tests.
  std::vector<BlockId> free_list() const;

 private:
  void push_head(BlockId id);
  void push_tail(BlockId id);
  void unlink(BlockId id);
  void check_id(BlockId id) const;

  Tier tier_;
  std::vector<BlockMeta> blocks_;
  BlockId free_head_ = kNoBlock;
  BlockId free_tail_ = kNoBlock;
  int32_t num_free_ = 0;
};

}  // namespace pagedllm::kv
