#include "core/kv/block_pool.h"

#include "core/common/check.h"

namespace pagedllm::kv {

BlockPool::BlockPool(Tier tier, int32_t num_blocks) : tier_(tier) {
  PAGEDLLM_ASSERT(num_blocks >= 0, "block pool size must not be negative");
  blocks_.resize(static_cast<size_t>(num_blocks));
  for (BlockId id = 0; id < num_blocks; ++id) push_tail(id);  // ids are handed out in order
}

void BlockPool::check_id(BlockId id) const { PAGEDLLM_ASSERT(id >= 0 && id < num_blocks(), "block id out of range"); }

const BlockMeta& BlockPool::meta(BlockId id) const {
  check_id(id);
  return blocks_[static_cast<size_t>(id)];
}

BlockMeta& BlockPool::meta(BlockId id) {
  check_id(id);
  return blocks_[static_cast<size_t>(id)];
}

BlockId BlockPool::allocate() {
  PAGEDLLM_ASSERT(free_head_ != kNoBlock, "allocate from an empty block pool");
  const BlockId id = free_head_;
  unlink(id);
  blocks_[static_cast<size_t>(id)].ref_count = 1;
  return id;
}

void BlockPool::acquire(BlockId id) {
  BlockMeta& block = meta(id);
  if (block.ref_count == 0) unlink(id);
  ++block.ref_count;
}

bool BlockPool::release(BlockId id) {
  BlockMeta& block = meta(id);
  PAGEDLLM_ASSERT(block.ref_count > 0, "release of a free block (double free)");
  if (--block.ref_count > 0) return false;
  if (block.is_cached) {
    push_tail(id);
  } else {
    push_head(id);
  }
  return true;
}

std::vector<BlockId> BlockPool::free_list() const {
  std::vector<BlockId> ids;
  ids.reserve(static_cast<size_t>(num_free_));
  for (BlockId id = free_head_; id != kNoBlock; id = blocks_[static_cast<size_t>(id)].next_free) {
    ids.push_back(id);
    PAGEDLLM_ASSERT(ids.size() <= blocks_.size(), "free list has a cycle");
  }
  return ids;
}

void BlockPool::push_head(BlockId id) {
  BlockMeta& block = blocks_[static_cast<size_t>(id)];
  block.prev_free = kNoBlock;
  block.next_free = free_head_;
  if (free_head_ != kNoBlock) {
    blocks_[static_cast<size_t>(free_head_)].prev_free = id;
  } else {
    free_tail_ = id;
  }
  free_head_ = id;
  ++num_free_;
}

void BlockPool::push_tail(BlockId id) {
  BlockMeta& block = blocks_[static_cast<size_t>(id)];
  block.next_free = kNoBlock;
  block.prev_free = free_tail_;
  if (free_tail_ != kNoBlock) {
    blocks_[static_cast<size_t>(free_tail_)].next_free = id;
  } else {
    free_head_ = id;
  }
  free_tail_ = id;
  ++num_free_;
}

void BlockPool::unlink(BlockId id) {
  BlockMeta& block = blocks_[static_cast<size_t>(id)];
  PAGEDLLM_ASSERT(block.ref_count == 0, "unlink of a block that is not free");
  if (block.prev_free != kNoBlock) {
    blocks_[static_cast<size_t>(block.prev_free)].next_free = block.next_free;
  } else {
    free_head_ = block.next_free;
  }
  if (block.next_free != kNoBlock) {
    blocks_[static_cast<size_t>(block.next_free)].prev_free = block.prev_free;
  } else {
    free_tail_ = block.prev_free;
  }
  block.prev_free = kNoBlock;
  block.next_free = kNoBlock;
  --num_free_;
}

}  // namespace pagedllm::kv
