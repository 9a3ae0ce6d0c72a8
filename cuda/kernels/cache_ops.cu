#include "cuda/kernels/cache_ops.h"

#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/device_types.cuh"
#include "cuda/kernels/swap_plan.h"

namespace pagedllm::cuda {
namespace {

using detail::DeviceKvLayout;
using detail::kVecElems;

constexpr int kWriteThreads = 128;
constexpr int kCopyThreads = 256;

DeviceKvLayout device_layout(const kv::KvLayout& l) {
  return DeviceKvLayout{l.num_kv_heads, l.head_dim, l.block_size, l.num_blocks};
}

// Grid (num_tokens), kWriteThreads threads; rows move as 16-byte vectors, unconverted.
__global__ void __launch_bounds__(kWriteThreads)
    write_kv_cache_kernel(uint16_t* __restrict__ kv_cache, const uint16_t* __restrict__ key,
                          const uint16_t* __restrict__ value, int64_t key_stride, int64_t value_stride,
                          const int64_t* __restrict__ slot_mapping, DeviceKvLayout layout, int32_t layer) {
  const int token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0 || slot >= static_cast<int64_t>(layout.num_blocks) * layout.block_size) return;
  const int32_t block = static_cast<int32_t>(slot / layout.block_size);
  const int32_t offset = static_cast<int32_t>(slot % layout.block_size);
  const int vecs_per_head = layout.head_dim / kVecElems;
  const int vecs_per_kind = layout.num_kv_heads * vecs_per_head;
  for (int idx = threadIdx.x; idx < 2 * vecs_per_kind; idx += kWriteThreads) {
    const int kind = idx / vecs_per_kind;
    const int head = (idx % vecs_per_kind) / vecs_per_head;
    const int v = idx % vecs_per_head;
    const uint16_t* src = kind == 0 ? key + token * key_stride : value + token * value_stride;
    src += static_cast<int64_t>(head) * layout.head_dim + v * kVecElems;
    uint16_t* dst = kv_cache + layout.element_offset(layer, kind, block, head, offset) + v * kVecElems;
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
  }
}

// Grid (num_pairs, 2 * num_layers), kCopyThreads threads: one (layer, kind) chunk per block.
__global__ void __launch_bounds__(kCopyThreads)
    copy_blocks_kernel(uint16_t* __restrict__ kv_cache, const int32_t* __restrict__ pairs, DeviceKvLayout layout) {
  const int32_t src = pairs[2 * blockIdx.x];
  const int32_t dst = pairs[2 * blockIdx.x + 1];
  if (src < 0 || src >= layout.num_blocks || dst < 0 || dst >= layout.num_blocks) return;
  const int32_t layer = blockIdx.y / 2;
  const int32_t kind = blockIdx.y % 2;
  const uint4* from = reinterpret_cast<const uint4*>(kv_cache + layout.chunk_offset(layer, kind, src));
  uint4* to = reinterpret_cast<uint4*>(kv_cache + layout.chunk_offset(layer, kind, dst));
  const int64_t vecs = layout.chunk_elements() / kVecElems;
  for (int64_t i = threadIdx.x; i < vecs; i += kCopyThreads) to[i] = from[i];
}

bool aligned16(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0; }

void validate_layout(const kv::KvLayout& l, const char* what) {
  detail::require(l.num_layers > 0 && l.num_kv_heads > 0 && l.block_size > 0 && l.num_blocks > 0,
                  std::string(what) + ": the layout needs layers, KV heads, a block size and blocks");
  detail::require(l.head_dim > 0 && l.head_dim % kVecElems == 0,
                  std::string(what) + ": head_dim must be a positive multiple of 8, got " + std::to_string(l.head_dim));
}

}  // namespace

void validate(const WriteKvCacheParams& p) {
  using detail::require;
  validate_layout(p.layout, "write_kv_cache");
  require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "write_kv_cache: unknown dtype");
  require(p.layer >= 0 && p.layer < p.layout.num_layers, "write_kv_cache: layer out of range");
  require(p.num_tokens >= 0, "write_kv_cache: negative num_tokens");
  const int64_t row = static_cast<int64_t>(p.layout.num_kv_heads) * p.layout.head_dim;
  const int64_t key_stride = p.key_stride == 0 ? row : p.key_stride;
  const int64_t value_stride = p.value_stride == 0 ? row : p.value_stride;
  require(key_stride >= row && value_stride >= row && key_stride % kVecElems == 0 && value_stride % kVecElems == 0,
          "write_kv_cache: strides must be at least num_kv_heads * head_dim and multiples of 8");
  if (p.num_tokens == 0) return;
  require(p.kv_cache != nullptr && p.key != nullptr && p.value != nullptr && p.slot_mapping != nullptr,
          "write_kv_cache: null pointer");
  require(aligned16(p.kv_cache) && aligned16(p.key) && aligned16(p.value),
          "write_kv_cache: kv_cache, key and value must be 16-byte aligned");
}

void write_kv_cache(const WriteKvCacheParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_tokens == 0) return;
  const int64_t row = static_cast<int64_t>(p.layout.num_kv_heads) * p.layout.head_dim;
  // Moves: num_tokens * 2 * num_kv_heads * head_dim * 2 bytes read and as many written.
  write_kv_cache_kernel<<<static_cast<unsigned>(p.num_tokens), kWriteThreads, 0, stream>>>(
      static_cast<uint16_t*>(p.kv_cache), static_cast<const uint16_t*>(p.key), static_cast<const uint16_t*>(p.value),
      p.key_stride == 0 ? row : p.key_stride, p.value_stride == 0 ? row : p.value_stride, p.slot_mapping,
      device_layout(p.layout), p.layer);
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

void validate(const CopyBlocksParams& p) {
  validate_layout(p.layout, "copy_blocks");
  detail::require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "copy_blocks: unknown dtype");
  detail::require(p.num_pairs >= 0, "copy_blocks: negative num_pairs");
  detail::require(p.layout.num_layers * 2 <= 65535, "copy_blocks: too many layers for one launch");
  if (p.num_pairs == 0) return;
  detail::require(p.kv_cache != nullptr && p.pairs != nullptr, "copy_blocks: null pointer");
  detail::require(aligned16(p.kv_cache), "copy_blocks: kv_cache must be 16-byte aligned");
}

void copy_blocks(const CopyBlocksParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_pairs == 0) return;
  const dim3 grid(static_cast<unsigned>(p.num_pairs), static_cast<unsigned>(2 * p.layout.num_layers));
  // Moves: num_pairs * 2 * num_layers chunks of num_kv_heads * block_size * head_dim * 2 bytes,
  // each read once and written once.
  copy_blocks_kernel<<<grid, kCopyThreads, 0, stream>>>(static_cast<uint16_t*>(p.kv_cache), p.pairs,
                                                        device_layout(p.layout));
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

void validate(const SwapParams& p) {
  validate_layout(p.device_layout, "swap_blocks");
  validate_layout(p.host_layout, "swap_blocks");
  const kv::KvLayout& d = p.device_layout;
  const kv::KvLayout& h = p.host_layout;
  detail::require(d.num_layers == h.num_layers && d.num_kv_heads == h.num_kv_heads && d.head_dim == h.head_dim &&
                      d.block_size == h.block_size,
                  "swap_blocks: device and host layouts must differ in num_blocks only");
  detail::require(p.device_kv != nullptr && p.host_kv != nullptr, "swap_blocks: null pointer");
}

int32_t swap_blocks(const SwapParams& p, std::span<const kv::BlockMove> moves, cudaStream_t stream) {
  validate(p);
  const bool out = p.direction == SwapDirection::device_to_host;
  const kv::KvLayout& src_layout = out ? p.device_layout : p.host_layout;
  const kv::KvLayout& dst_layout = out ? p.host_layout : p.device_layout;
  const auto* src = static_cast<const char*>(out ? p.device_kv : p.host_kv);
  auto* dst = static_cast<char*>(out ? p.host_kv : p.device_kv);
  const std::vector<SwapRun> runs = plan_swap_runs(moves, src_layout.num_blocks, dst_layout.num_blocks);
  const std::size_t chunk_bytes = src_layout.chunk_elements() * kDTypeBytes;
  const cudaMemcpyKind kind = out ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  int32_t calls = 0;
  // Moves: 2 * num_layers * moves.size() chunks of chunk_bytes over PCIe / NVLink-C2C.
  for (const SwapRun& run : runs) {
    for (int32_t layer = 0; layer < src_layout.num_layers; ++layer) {
      for (const kv::KvKind kv_kind : {kv::KvKind::key, kv::KvKind::value}) {
        const std::size_t from = src_layout.chunk_offset(layer, kv_kind, run.src) * kDTypeBytes;
        const std::size_t to = dst_layout.chunk_offset(layer, kv_kind, run.dst) * kDTypeBytes;
        PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(dst + to, src + from,
                                            chunk_bytes * static_cast<std::size_t>(run.num_blocks), kind, stream));
        ++calls;
      }
    }
  }
  return calls;
}

}  // namespace pagedllm::cuda
