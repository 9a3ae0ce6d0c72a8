// Where a token's keys and values live inside a tier's KV memory: the same in every executor,
// so that a block id (and a swap or copy-on-write of it) means the same thing in cpu_ref, cuda
// and sim.
//
// A tier is one flat array of elements (fp32 in cpu_ref; bf16 on the GPU) laid out as
//   [layer][kind: 0 = K, 1 = V][block][kv_head][slot in block][head_dim]
// ("HND" within a block). One (layer, kind, block) chunk is contiguous: num_kv_heads *
// block_size * head_dim elements. A decode kernel reads one KV head's [block_size][head_dim]
// tile contiguously and shares it across that head's query group (grouped-query attention).
// Swapping or copying block b moves 2 * num_layers chunks, one per (layer, kind).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kv/block_pool.h"

namespace pagedllm::kv {

enum class KvKind : int32_t { key = 0, value = 1 };

struct KvLayout {
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t block_size = 16;
  int32_t num_blocks = 0;  // blocks in this tier

  // Elements of one (layer, kind, block) chunk.
  std::size_t chunk_elements() const noexcept { return static_cast<std::size_t>(num_kv_heads) * block_size * head_dim; }
  // Elements of the whole tier.
  std::size_t total_elements() const noexcept {
    return chunk_elements() * 2 * static_cast<std::size_t>(num_layers) * num_blocks;
  }
  // First element of a (layer, kind, block) chunk.
  std::size_t chunk_offset(int32_t layer, KvKind kind, BlockId block) const noexcept {
    const auto index =
        (static_cast<std::size_t>(layer) * 2 + static_cast<std::size_t>(kind)) * static_cast<std::size_t>(num_blocks) +
        static_cast<std::size_t>(block);
    return index * chunk_elements();
  }
  // First element of one token's vector for one KV head.
  std::size_t element_offset(int32_t layer, KvKind kind, BlockId block, int32_t kv_head, int32_t slot) const noexcept {
    return chunk_offset(layer, kind, block) +
           (static_cast<std::size_t>(kv_head) * block_size + static_cast<std::size_t>(slot)) * head_dim;
  }
};

}  // namespace pagedllm::kv
