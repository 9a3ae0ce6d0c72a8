// Groups a step's block moves (swap_out or swap_in) into runs of consecutive source blocks that
// land on consecutive destination blocks, so a swap issues one copy per run and (layer, kind)
// chunk range instead of one per block per layer (vLLM issue 7577). Host-only, no CUDA.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/kv/block_ops.h"
#include "core/kv/block_pool.h"

namespace pagedllm::cuda {

struct SwapRun {
  kv::BlockId src = kv::kNoBlock;  // first source block
  kv::BlockId dst = kv::kNoBlock;  // first destination block
  int32_t num_blocks = 0;          // src + i -> dst + i for i < num_blocks
  friend bool operator==(const SwapRun&, const SwapRun&) = default;
};

// Runs covering exactly `moves`, ordered by source block. Throws KernelArgumentError when a block
// id is negative or not below its tier's block count, or when two moves write one destination.
std::vector<SwapRun> plan_swap_runs(std::span<const kv::BlockMove> moves, int32_t num_src_blocks,
                                    int32_t num_dst_blocks);

}  // namespace pagedllm::cuda
