// The prefix cache's index: block hash -> the device block holding that content.
#pragma once

#include <cstdint>

#include "core/kv/block_hash.h"
#include "core/kv/flat_index.h"

namespace pagedllm::kv {

// The low word of a BlockHash is already well mixed.
struct BlockHashBits {
  uint64_t operator()(const BlockHash& hash) const { return hash.lo; }
};

using PrefixIndex = FlatIndex<BlockHash, BlockHashBits>;

}  // namespace pagedllm::kv
