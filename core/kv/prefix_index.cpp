#include "core/kv/prefix_index.h"

#include <bit>

#include "core/common/check.h"

namespace pagedllm::kv {

PrefixIndex::PrefixIndex(int32_t max_entries) : max_entries_(max_entries) {
  PAGEDLLM_ASSERT(max_entries >= 0, "prefix index size must not be negative");
  // At most half full: short probe runs even when every block is cached.
  const size_t capacity = std::bit_ceil(static_cast<size_t>(max_entries) * 2 + 2);
  slots_.resize(capacity);
  mask_ = capacity - 1;
}

BlockId PrefixIndex::find(const BlockHash& hash) const {
  for (size_t i = home(hash);; i = (i + 1) & mask_) {
    const Slot& slot = slots_[i];
    if (slot.block == kNoBlock) return kNoBlock;
    if (slot.hash == hash) return slot.block;
  }
}

bool PrefixIndex::insert(const BlockHash& hash, BlockId block) {
  PAGEDLLM_ASSERT(block != kNoBlock, "prefix index insert of no block");
  size_t i = home(hash);
  for (; slots_[i].block != kNoBlock; i = (i + 1) & mask_) {
    if (slots_[i].hash == hash) return false;
  }
  PAGEDLLM_ASSERT(size_ < max_entries_, "prefix index holds more entries than device blocks");
  slots_[i] = Slot{hash, block};
  ++size_;
  return true;
}

void PrefixIndex::erase(const BlockHash& hash) {
  size_t hole = home(hash);
  while (true) {
    PAGEDLLM_ASSERT(slots_[hole].block != kNoBlock, "prefix index erase of an absent hash");
    if (slots_[hole].hash == hash) break;
    hole = (hole + 1) & mask_;
  }
  // Backward-shift deletion: pull later entries of the probe run into the hole when their home
  // does not lie (cyclically) between the hole and their current slot.
  for (size_t next = (hole + 1) & mask_; slots_[next].block != kNoBlock; next = (next + 1) & mask_) {
    const size_t next_home = home(slots_[next].hash);
    const bool stays = ((next - next_home) & mask_) < ((next - hole) & mask_);
    if (stays) continue;
    slots_[hole] = slots_[next];
    hole = next;
  }
  slots_[hole].block = kNoBlock;
  --size_;
}

void PrefixIndex::clear() {
  for (Slot& slot : slots_) slot.block = kNoBlock;
  size_ = 0;
}

}  // namespace pagedllm::kv
