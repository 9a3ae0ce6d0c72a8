// A random paged KV tier for the attention tests: every element random (unused blocks and other
// layers too, so a mis-addressed read shows), block tables drawn from a shuffled pool of ids (so
// they are non-contiguous and out of order), the same values on the device (16-bit) and for
// cpu_ref (fp32, rounded like the device copy).
#pragma once

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "core/kv/attention_window.h"
#include "core/kv/kv_layout.h"
#include "tests/cuda/gpu_test_util.h"

namespace pagedllm::cuda::testing {

struct PagedKv {
  kv::KvLayout layout;
  HalfData data;  // the tier: bits for the device, values for cpu_ref
  std::vector<std::vector<kv::BlockId>> tables;
  int32_t max_blocks_per_seq = 0;
  std::vector<int32_t> flat_tables;        // [num_seqs][max_blocks_per_seq], -1 past each table's end
  kv::BlockId spare_block = kv::kNoBlock;  // in no table
};

inline PagedKv make_paged_kv(DType dtype, int32_t num_layers, int32_t num_kv_heads, int32_t head_dim,
                             int32_t block_size, const std::vector<int32_t>& seq_lens, std::mt19937_64& rng) {
  PagedKv kv_tier;
  int32_t needed = 0;
  for (const int32_t len : seq_lens) {
    const int32_t blocks = (len + block_size - 1) / block_size;
    needed += blocks;
    kv_tier.max_blocks_per_seq = std::max(kv_tier.max_blocks_per_seq, blocks);
  }
  kv_tier.layout = kv::KvLayout{num_layers, num_kv_heads, head_dim, block_size, needed + 7};
  kv_tier.data = random_halves(dtype, kv_tier.layout.total_elements(), rng);
  std::vector<kv::BlockId> pool(static_cast<std::size_t>(kv_tier.layout.num_blocks));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::size_t next = 0;
  kv_tier.flat_tables.assign(seq_lens.size() * static_cast<std::size_t>(kv_tier.max_blocks_per_seq), -1);
  for (std::size_t s = 0; s < seq_lens.size(); ++s) {
    const int32_t blocks = (seq_lens[s] + block_size - 1) / block_size;
    std::vector<kv::BlockId> table(pool.begin() + static_cast<std::ptrdiff_t>(next),
                                   pool.begin() + static_cast<std::ptrdiff_t>(next + static_cast<std::size_t>(blocks)));
    next += static_cast<std::size_t>(blocks);
    std::copy(table.begin(), table.end(),
              kv_tier.flat_tables.begin() +
                  static_cast<std::ptrdiff_t>(s * static_cast<std::size_t>(kv_tier.max_blocks_per_seq)));
    kv_tier.tables.push_back(std::move(table));
  }
  kv_tier.spare_block = pool[next];
  return kv_tier;
}

// What the block manager does to a sliding-window sequence: the blocks wholly before the window
// of the sequence's earliest query (`earliest_positions[s]`) are released. cpu_ref's tables get
// kNoBlock there (its attention asserts on a read of one); the device tables point at the spare
// block, filled with NaN in every layer, so a kernel that read it would show NaN in its output.
inline void release_blocks_outside_window(PagedKv& kv_tier, DType dtype, const std::vector<int32_t>& earliest_positions,
                                          int32_t window) {
  const kv::KvLayout& layout = kv_tier.layout;
  const uint16_t nan_bits = dtype == DType::bf16 ? 0x7FC0 : 0x7E00;
  for (int32_t layer = 0; layer < layout.num_layers; ++layer) {
    for (const kv::KvKind kind : {kv::KvKind::key, kv::KvKind::value}) {
      const std::size_t at = layout.element_offset(layer, kind, kv_tier.spare_block, 0, 0);
      std::fill_n(kv_tier.data.bits.begin() + static_cast<std::ptrdiff_t>(at), layout.chunk_elements(), nan_bits);
    }
  }
  for (std::size_t s = 0; s < earliest_positions.size(); ++s) {
    const int32_t first_visible = kv::first_visible_position(earliest_positions[s], window);
    const auto released = static_cast<std::size_t>(first_visible / layout.block_size);
    for (std::size_t b = 0; b < released; ++b) {
      kv_tier.tables[s][b] = kv::kNoBlock;
      kv_tier.flat_tables[s * static_cast<std::size_t>(kv_tier.max_blocks_per_seq) + b] = kv_tier.spare_block;
    }
  }
}

}  // namespace pagedllm::cuda::testing
