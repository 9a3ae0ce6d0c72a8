#include "cpu_ref/host_kv_store.h"

#include <algorithm>

#include "core/common/check.h"
#include "core/sched/step_plan.h"

namespace pagedllm::cpu_ref {

HostKvStore::HostKvStore(const kv::KvLayout& device_layout, std::int32_t num_host_blocks)
    : device_layout_(device_layout), host_layout_(device_layout) {
  PAGEDLLM_ASSERT(device_layout.num_layers > 0 && device_layout.num_kv_heads > 0 && device_layout.head_dim > 0 &&
                      device_layout.block_size > 0 && device_layout.num_blocks >= 0 && num_host_blocks >= 0,
                  "HostKvStore: bad layout");
  host_layout_.num_blocks = num_host_blocks;
  device_.assign(device_layout_.total_elements(), 0.0f);
  host_.assign(host_layout_.total_elements(), 0.0f);
}

void HostKvStore::write(std::int32_t layer, kv::BlockId block, std::int32_t slot, const float* k, const float* v) {
  const kv::KvLayout& l = device_layout_;
  PAGEDLLM_ASSERT(layer >= 0 && layer < l.num_layers, "HostKvStore::write: layer out of range");
  PAGEDLLM_ASSERT(block >= 0 && block < l.num_blocks, "HostKvStore::write: block out of range");
  PAGEDLLM_ASSERT(slot >= 0 && slot < l.block_size, "HostKvStore::write: slot out of range");
  const std::size_t head_dim = static_cast<std::size_t>(l.head_dim);
  for (std::int32_t h = 0; h < l.num_kv_heads; ++h) {
    std::copy_n(k + h * head_dim, head_dim, device_.data() + l.element_offset(layer, kv::KvKind::key, block, h, slot));
    std::copy_n(v + h * head_dim, head_dim,
                device_.data() + l.element_offset(layer, kv::KvKind::value, block, h, slot));
  }
}

const float* HostKvStore::device_vector(std::int32_t layer, kv::KvKind kind, kv::BlockId block, std::int32_t kv_head,
                                        std::int32_t slot) const {
  const kv::KvLayout& l = device_layout_;
  PAGEDLLM_ASSERT(layer >= 0 && layer < l.num_layers, "HostKvStore: layer out of range");
  PAGEDLLM_ASSERT(block >= 0 && block < l.num_blocks, "HostKvStore: block out of range");
  PAGEDLLM_ASSERT(kv_head >= 0 && kv_head < l.num_kv_heads, "HostKvStore: kv head out of range");
  PAGEDLLM_ASSERT(slot >= 0 && slot < l.block_size, "HostKvStore: slot out of range");
  return device_.data() + l.element_offset(layer, kind, block, kv_head, slot);
}

std::span<const float> HostKvStore::chunk(kv::Tier tier, std::int32_t layer, kv::KvKind kind, kv::BlockId block) const {
  const bool device = tier == kv::Tier::device;
  const kv::KvLayout& l = device ? device_layout_ : host_layout_;
  PAGEDLLM_ASSERT(layer >= 0 && layer < l.num_layers, "HostKvStore::chunk: layer out of range");
  PAGEDLLM_ASSERT(block >= 0 && block < l.num_blocks, "HostKvStore::chunk: block out of range");
  const float* data = device ? device_.data() : host_.data();
  return {data + l.chunk_offset(layer, kind, block), l.chunk_elements()};
}

void HostKvStore::move_block(const kv::KvLayout& from_layout, const float* from_data, kv::BlockId from,
                             const kv::KvLayout& to_layout, float* to_data, kv::BlockId to) {
  PAGEDLLM_ASSERT(from >= 0 && from < from_layout.num_blocks, "HostKvStore: source block out of range");
  PAGEDLLM_ASSERT(to >= 0 && to < to_layout.num_blocks, "HostKvStore: target block out of range");
  const std::size_t n = from_layout.chunk_elements();
  for (std::int32_t layer = 0; layer < from_layout.num_layers; ++layer) {
    for (const kv::KvKind kind : {kv::KvKind::key, kv::KvKind::value}) {
      std::copy_n(from_data + from_layout.chunk_offset(layer, kind, from), n,
                  to_data + to_layout.chunk_offset(layer, kind, to));
    }
  }
}

void HostKvStore::swap_out(std::span<const kv::BlockMove> moves) {
  for (const kv::BlockMove& m : moves) {
    move_block(device_layout_, device_.data(), m.src, host_layout_, host_.data(), m.dst);
  }
}

void HostKvStore::swap_in(std::span<const kv::BlockMove> moves) {
  for (const kv::BlockMove& m : moves) {
    move_block(host_layout_, host_.data(), m.src, device_layout_, device_.data(), m.dst);
  }
}

void HostKvStore::copy(std::span<const kv::BlockCopy> copies) {
  for (const kv::BlockCopy& c : copies) {
    PAGEDLLM_ASSERT(c.src != c.dst, "HostKvStore::copy: a block copied onto itself");
    move_block(device_layout_, device_.data(), c.src, device_layout_, device_.data(), c.dst);
  }
}

void HostKvStore::apply_block_operations(const sched::StepPlan& plan) {
  swap_out(plan.swap_out);
  swap_in(plan.swap_in);
  copy(plan.copies);
}

}  // namespace pagedllm::cpu_ref
