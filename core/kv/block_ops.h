// The block operations a step plan carries to the executors: copies within the device tier
// (copy-on-write) and moves between tiers (swap). Plain data; the KV manager decides them, the
// executors carry them out in plan order before the forward pass.
#pragma once

#include "core/common/types.h"
#include "core/kv/block_pool.h"

namespace pagedllm::kv {

// One block moved between tiers: swap out copies device block `src` to host block `dst`, swap in
// host `src` to device `dst`.
struct BlockMove {
  BlockId src = kNoBlock;
  BlockId dst = kNoBlock;
  friend bool operator==(const BlockMove&, const BlockMove&) = default;
};

// A copy-on-write within the device tier: the executor copies block `src` into `dst`.
struct BlockCopy {
  BlockId src = kNoBlock;
  BlockId dst = kNoBlock;
  friend bool operator==(const BlockCopy&, const BlockCopy&) = default;
};

}  // namespace pagedllm::kv
