// The prefix cache's index: block hash -> device block, as a flat open-addressing table.
//
// Every block that fills is inserted and every evicted block erased, so this sits on the append
// path; a node-based std::unordered_map cost ~400 ns per insert+erase at 100k blocks
// (docs/BENCHMARKS.md). Linear probing over a power-of-two array at most half full, with
// backward-shift deletion (no tombstones), keeps each operation to about one cache line.
#pragma once

#include <cstdint>
#include <vector>

#include "core/kv/block_hash.h"
#include "core/kv/block_pool.h"

namespace pagedllm::kv {

class PrefixIndex {
 public:
  explicit PrefixIndex(int32_t max_entries);

  BlockId find(const BlockHash& hash) const;  // kNoBlock when absent
  bool insert(const BlockHash& hash, BlockId block);  // false (and no change) when present
  void erase(const BlockHash& hash);  // precondition: present
  void clear();
  int32_t size() const { return size_; }

  // Calls fn(hash, block) for every entry, in table order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Slot& slot : slots_) {
      if (slot.block != kNoBlock) fn(slot.hash, slot.block);
    }
  }

 private:
  struct Slot {
    BlockHash hash;
    BlockId block = kNoBlock;  // kNoBlock marks an empty slot
  };

  size_t home(const BlockHash& hash) const { return static_cast<size_t>(hash.lo) & mask_; }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int32_t size_ = 0;
  int32_t max_entries_ = 0;
};

}  // namespace pagedllm::kv
