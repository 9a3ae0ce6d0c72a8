// HostKvStore: the KV memory of the CPU reference engine, both tiers, in fp32.
//
// The device tier (what attention reads) and the host tier (where swapped-out blocks wait) are
// each one flat array in the shared layout of core/kv/kv_layout.h:
//   [layer][kind: K, V][block][kv_head][slot][head_dim]
// with the same num_layers, num_kv_heads, head_dim and block_size; only num_blocks differs.
// The store owns both arrays (zero-initialized). Block ids are the KV manager's: the plan's
// swaps and copy-on-writes are applied here by moving whole (layer, kind, block) chunks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/kv/block_ops.h"
#include "core/kv/block_pool.h"
#include "core/kv/kv_layout.h"

namespace pagedllm::sched {
struct StepPlan;
}

namespace pagedllm::cpu_ref {

class HostKvStore {
 public:
  // device_layout.num_blocks: device blocks; num_host_blocks: blocks of the swap tier (may be 0).
  HostKvStore(const kv::KvLayout& device_layout, std::int32_t num_host_blocks);

  const kv::KvLayout& device_layout() const noexcept { return device_layout_; }
  const kv::KvLayout& host_layout() const noexcept { return host_layout_; }

  // Stores one token's keys and values at (block, slot) of the device tier for one layer.
  // k and v are [num_kv_heads][head_dim], as the k / v projections produce them.
  void write(std::int32_t layer, kv::BlockId block, std::int32_t slot, const float* k, const float* v);

  // One token's vector for one KV head in the device tier: [head_dim].
  const float* device_vector(std::int32_t layer, kv::KvKind kind, kv::BlockId block, std::int32_t kv_head,
                             std::int32_t slot) const;

  // One (layer, kind, block) chunk of a tier: [num_kv_heads][block_size][head_dim].
  std::span<const float> chunk(kv::Tier tier, std::int32_t layer, kv::KvKind kind, kv::BlockId block) const;

  // Whole tiers, in the layout above (what paged_attention reads).
  const float* device_data() const noexcept { return device_.data(); }
  const float* host_data() const noexcept { return host_.data(); }

  // The plan's block operations in its order: swap_out, swap_in, copies.
  void apply_block_operations(const sched::StepPlan& plan);
  void swap_out(std::span<const kv::BlockMove> moves);  // device `from` -> host `to`
  void swap_in(std::span<const kv::BlockMove> moves);   // host `from` -> device `to`
  void copy(std::span<const kv::BlockCopy> copies);     // device `src` -> device `dst`

 private:
  // Copies block `from` of one tier to block `to` of another (or the same): 2 * num_layers chunks.
  void move_block(const kv::KvLayout& from_layout, const float* from_data, kv::BlockId from,
                  const kv::KvLayout& to_layout, float* to_data, kv::BlockId to);

  kv::KvLayout device_layout_;
  kv::KvLayout host_layout_;
  std::vector<float> device_;  // device_layout_.total_elements()
  std::vector<float> host_;    // host_layout_.total_elements()
};

}  // namespace pagedllm::cpu_ref
