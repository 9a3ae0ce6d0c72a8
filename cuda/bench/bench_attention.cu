// bench_cuda_attention: decode attention GB/s at batch 1/16/64 x context 1k/4k/32k, MHA (32/32)
// and GQA (32 query heads / 8 KV heads), bf16, head_dim 128, block size 16, as a percentage of
// the device-to-device cudaMemcpy bandwidth measured in the same run; prefill attention TFLOP/s
// on whole prompts (the same heads; tools/bench/sdpa_anchor.py --prefill times PyTorch's SDPA on
// the same shapes and FLOP count); then copy_blocks and swap_blocks against plain cudaMemcpy of
// the same bytes. Needs a GPU; says so and exits 1 without one.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_info.h"
#include "cuda/kernels/cache_ops.h"
#include "cuda/kernels/decode_attention.h"
#include "cuda/kernels/prefill_attention.h"

namespace cuda = pagedllm::cuda;
namespace kv = pagedllm::kv;

namespace {

constexpr int kWarmup = 3;
constexpr int kIters = 20;

struct Device {
  void* p = nullptr;
  explicit Device(std::size_t bytes) { PAGEDLLM_CUDA_CHECK(cudaMalloc(&p, bytes)); }
  ~Device() { cudaFree(p); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
};

// Average seconds per call of `body` (enqueued on the default stream).
template <typename Body>
double time_it(Body body) {
  cudaEvent_t start, stop;
  PAGEDLLM_CUDA_CHECK(cudaEventCreate(&start));
  PAGEDLLM_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmup; ++i) body();
  PAGEDLLM_CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < kIters; ++i) body();
  PAGEDLLM_CUDA_CHECK(cudaEventRecord(stop));
  PAGEDLLM_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  PAGEDLLM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  PAGEDLLM_CUDA_CHECK(cudaEventDestroy(start));
  PAGEDLLM_CUDA_CHECK(cudaEventDestroy(stop));
  return static_cast<double>(ms) / 1e3 / kIters;
}

// Device-to-device copy bandwidth, counting bytes read plus bytes written.
double memcpy_gbps() {
  const std::size_t bytes = std::size_t{1} << 30;
  Device a(bytes), b(bytes);
  const double s = time_it([&] { PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice)); });
  return 2.0 * static_cast<double>(bytes) / s / 1e9;
}

void bench_decode(double peak_gbps, int32_t num_sms, std::mt19937_64& rng) {
  std::printf(
      "\ndecode attention, bf16, head_dim 128, block 16 (bytes = K + V read + q + out);\n"
      "partition: 512, and the one choose_decode_partition_tokens picks for %d SMs\n",
      num_sms);
  std::printf("%-6s %-6s %-8s %-9s %10s %10s %8s\n", "heads", "batch", "context", "partition", "us", "GB/s",
              "% memcpy");
  const int32_t head_dim = 128;
  const int32_t block_size = 16;
  const int32_t num_heads = 32;
  for (const int32_t num_kv_heads : {32, 8}) {
    for (const int32_t batch : {1, 16, 64}) {
      for (const int32_t context : {1024, 2048, 4096, 32768}) {  // 64 x 2048 GQA: issue 20's target shape
        const int32_t blocks_per_seq = (context + block_size - 1) / block_size;
        const kv::KvLayout layout{1, num_kv_heads, head_dim, block_size, batch * blocks_per_seq};
        const std::size_t cache_bytes = layout.total_elements() * cuda::kDTypeBytes;
        std::size_t free_bytes = 0, total_bytes = 0;
        PAGEDLLM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        if (cache_bytes > free_bytes / 10 * 8) {
          std::printf("%2d/%-3d %-6d %-8d skipped: needs %.1f GiB of KV\n", num_heads, num_kv_heads, batch, context,
                      static_cast<double>(cache_bytes) / (1 << 30));
          continue;
        }
        Device cache(cache_bytes);
        PAGEDLLM_CUDA_CHECK(cudaMemset(cache.p, 0x3c, cache_bytes));  // small finite bf16 values
        const std::size_t q_bytes = static_cast<std::size_t>(batch) * num_heads * head_dim * cuda::kDTypeBytes;
        Device q(q_bytes), out(q_bytes);
        PAGEDLLM_CUDA_CHECK(cudaMemset(q.p, 0x3c, q_bytes));
        std::vector<int32_t> ids(static_cast<std::size_t>(layout.num_blocks));
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), rng);  // scattered blocks, as a long-running server's
        const std::vector<int32_t> lens(static_cast<std::size_t>(batch), context);
        Device tables(ids.size() * sizeof(int32_t)), lens_dev(lens.size() * sizeof(int32_t));
        PAGEDLLM_CUDA_CHECK(cudaMemcpy(tables.p, ids.data(), ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
        PAGEDLLM_CUDA_CHECK(cudaMemcpy(lens_dev.p, lens.data(), lens.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
        cuda::DecodeAttentionParams p;
        p.dtype = cuda::DType::bf16;
        p.layout = layout;
        p.kv_cache = cache.p;
        p.layer = 0;
        p.num_seqs = batch;
        p.num_heads = num_heads;
        p.q = q.p;
        p.out = out.p;
        p.block_tables = static_cast<const int32_t*>(tables.p);
        p.max_blocks_per_seq = blocks_per_seq;
        p.seq_lens = static_cast<const int32_t*>(lens_dev.p);
        p.max_seq_len = context;
        p.scale = 0.0883883f;
        const int32_t chosen = cuda::choose_decode_partition_tokens(num_kv_heads, batch, context, num_sms);
        for (const int32_t partition : {cuda::kDecodePartitionTokens, chosen}) {
          p.partition_tokens = partition;
          const std::size_t ws_bytes = std::max<std::size_t>(cuda::decode_attention_workspace_bytes(p), 16);
          Device ws(ws_bytes);
          p.workspace = ws.p;
          p.workspace_bytes = ws_bytes;
          const double s = time_it([&] { cuda::decode_attention(p, nullptr); });
          const double bytes = static_cast<double>(batch) * context * num_kv_heads * head_dim * 2 * 2 +
                               2.0 * static_cast<double>(q_bytes);
          const double gbps = bytes / s / 1e9;
          std::printf("%2d/%-3d %-6d %-8d %-9d %10.1f %10.1f %7.1f%%\n", num_heads, num_kv_heads, batch, context,
                      partition, s * 1e6, gbps, 100.0 * gbps / peak_gbps);
          if (chosen == cuda::kDecodePartitionTokens) break;  // one row when the choice is the default
        }
      }
    }
  }
}

// Causal prefill of whole prompts (no cached prefix): FLOPs = 4 * head_dim * num_heads * the
// (query, key) pairs, L (L + 1) / 2 per prompt of L tokens (QK^T and PV, a multiply-add = 2).
void bench_prefill(std::mt19937_64& rng) {
  std::printf(
      "\nprefill attention, bf16, head_dim 128, block 16, whole prompts (causal FLOPs: QK^T + PV;\n"
      "the tensor-core kernel computes QK^T twice, not counted)\n");
  std::printf("%-6s %-6s %-8s %12s %12s %12s %12s %10s\n", "heads", "batch", "prompt", "tc us", "tc TFLOP/s", "simt us",
              "simt TFLOP/s", "tc/simt");
  const int32_t head_dim = 128;
  const int32_t block_size = 16;
  const int32_t num_heads = 32;
  struct Shape {
    int32_t batch;
    int32_t prompt;
  };
  for (const int32_t num_kv_heads : {32, 8}) {
    for (const Shape shape : {Shape{1, 512}, Shape{1, 2048}, Shape{4, 2048}, Shape{1, 8192}}) {
      const int32_t blocks_per_seq = (shape.prompt + block_size - 1) / block_size;
      const kv::KvLayout layout{1, num_kv_heads, head_dim, block_size, shape.batch * blocks_per_seq};
      Device cache(layout.total_elements() * cuda::kDTypeBytes);
      PAGEDLLM_CUDA_CHECK(cudaMemset(cache.p, 0x3c, layout.total_elements() * cuda::kDTypeBytes));
      const int64_t num_tokens = int64_t{shape.batch} * shape.prompt;
      const std::size_t q_bytes = static_cast<std::size_t>(num_tokens) * num_heads * head_dim * cuda::kDTypeBytes;
      Device q(q_bytes), out(q_bytes);
      PAGEDLLM_CUDA_CHECK(cudaMemset(q.p, 0x3c, q_bytes));
      std::vector<int32_t> ids(static_cast<std::size_t>(layout.num_blocks));
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), rng);
      std::vector<int32_t> query_starts, context_starts(static_cast<std::size_t>(shape.batch), 0);
      for (int32_t s = 0; s <= shape.batch; ++s) query_starts.push_back(s * shape.prompt);
      Device tables(ids.size() * sizeof(int32_t)), starts(query_starts.size() * sizeof(int32_t)),
          contexts(context_starts.size() * sizeof(int32_t));
      PAGEDLLM_CUDA_CHECK(cudaMemcpy(tables.p, ids.data(), ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
      PAGEDLLM_CUDA_CHECK(
          cudaMemcpy(starts.p, query_starts.data(), query_starts.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
      PAGEDLLM_CUDA_CHECK(cudaMemcpy(contexts.p, context_starts.data(), context_starts.size() * sizeof(int32_t),
                                     cudaMemcpyHostToDevice));
      cuda::PrefillAttentionParams p;
      p.dtype = cuda::DType::bf16;
      p.layout = layout;
      p.kv_cache = cache.p;
      p.num_seqs = shape.batch;
      p.num_heads = num_heads;
      p.q = q.p;
      p.out = out.p;
      p.query_starts = static_cast<const int32_t*>(starts.p);
      p.context_starts = static_cast<const int32_t*>(contexts.p);
      p.block_tables = static_cast<const int32_t*>(tables.p);
      p.max_blocks_per_seq = blocks_per_seq;
      p.max_query_len = shape.prompt;
      p.scale = 0.0883883f;
      p.kernel = cuda::PrefillKernel::tensor_core;
      const double tc = time_it([&] { cuda::prefill_attention(p, nullptr); });
      p.kernel = cuda::PrefillKernel::simt;
      const double simt = time_it([&] { cuda::prefill_attention(p, nullptr); });
      const double pairs = static_cast<double>(shape.batch) * shape.prompt * (shape.prompt + 1.0) / 2.0;
      const double flops = 4.0 * head_dim * num_heads * pairs;
      std::printf("%2d/%-3d %-6d %-8d %12.1f %12.2f %12.1f %12.2f %9.2fx\n", num_heads, num_kv_heads, shape.batch,
                  shape.prompt, tc * 1e6, flops / tc / 1e12, simt * 1e6, flops / simt / 1e12, simt / tc);
    }
  }
}

void bench_copy_and_swap(double peak_gbps, std::mt19937_64& rng) {
  // A Llama-3-8B-like tier: 32 layers, 8 KV heads, head_dim 128, block 16 (32 KiB chunks).
  const kv::KvLayout device_layout{32, 8, 128, 16, 4096};
  const std::size_t device_bytes = device_layout.total_elements() * cuda::kDTypeBytes;
  const std::size_t chunk_bytes = device_layout.chunk_elements() * cuda::kDTypeBytes;
  Device tier(device_bytes);
  PAGEDLLM_CUDA_CHECK(cudaMemset(tier.p, 0x3c, device_bytes));
  std::vector<int32_t> ids(static_cast<std::size_t>(device_layout.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);

  const int32_t num_pairs = 512;
  std::vector<int32_t> pairs;
  for (int32_t i = 0; i < num_pairs; ++i) {
    pairs.push_back(ids[static_cast<std::size_t>(i)]);
    pairs.push_back(ids[static_cast<std::size_t>(num_pairs + i)]);
  }
  Device pairs_dev(pairs.size() * sizeof(int32_t));
  PAGEDLLM_CUDA_CHECK(cudaMemcpy(pairs_dev.p, pairs.data(), pairs.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  cuda::CopyBlocksParams copy{cuda::DType::bf16, device_layout, tier.p, static_cast<const int32_t*>(pairs_dev.p),
                              num_pairs};
  const double copy_bytes = 2.0 * num_pairs * 2 * device_layout.num_layers * static_cast<double>(chunk_bytes);
  const double copy_s = time_it([&] { cuda::copy_blocks(copy, nullptr); });
  std::printf("\ncopy_blocks: %d scattered blocks x %d layers x K,V: %.1f GB/s (%.1f%% of D2D memcpy)\n", num_pairs,
              device_layout.num_layers, copy_bytes / copy_s / 1e9, 100.0 * copy_bytes / copy_s / 1e9 / peak_gbps);

  kv::KvLayout host_layout = device_layout;
  host_layout.num_blocks = 1024;
  const std::size_t host_bytes = host_layout.total_elements() * cuda::kDTypeBytes;
  void* pinned = nullptr;
  PAGEDLLM_CUDA_CHECK(cudaHostAlloc(&pinned, host_bytes, cudaHostAllocDefault));
  const std::size_t moved_bytes = 512 * 2 * static_cast<std::size_t>(device_layout.num_layers) * chunk_bytes;
  const double plain_s =
      time_it([&] { PAGEDLLM_CUDA_CHECK(cudaMemcpyAsync(pinned, tier.p, moved_bytes, cudaMemcpyDeviceToHost)); });
  std::printf("cudaMemcpy D2H pinned, %.0f MiB: %.1f GB/s\n", static_cast<double>(moved_bytes) / (1 << 20),
              static_cast<double>(moved_bytes) / plain_s / 1e9);
  cuda::SwapParams swap{
      cuda::DType::bf16, device_layout, host_layout, tier.p, pinned, cuda::SwapDirection::device_to_host};
  for (const bool contiguous : {true, false}) {
    std::vector<kv::BlockMove> moves;
    for (int32_t i = 0; i < 512; ++i) moves.push_back({contiguous ? i : ids[static_cast<std::size_t>(i)], i});
    int32_t calls = 0;
    const double s = time_it([&] { calls = cuda::swap_blocks(swap, moves, nullptr); });
    std::printf("swap_blocks D2H, 512 %s blocks (%d copies): %.1f GB/s (%.1f%% of plain cudaMemcpy)\n",
                contiguous ? "contiguous" : "scattered", calls, static_cast<double>(moved_bytes) / s / 1e9,
                100.0 * plain_s / s);
  }
  PAGEDLLM_CUDA_CHECK(cudaFreeHost(pinned));
}

}  // namespace

int main() {
  const cuda::DeviceQuery query = cuda::query_devices();
  if (query.devices.empty()) {
    std::fprintf(stderr, "bench_cuda_attention: nothing to measure: %s\n", query.error.c_str());
    return 1;
  }
  try {
    std::printf("%s", cuda::describe_devices().c_str());
    std::mt19937_64 rng(1);
    const double peak = memcpy_gbps();
    std::printf("device-to-device cudaMemcpy: %.1f GB/s (read + write)\n", peak);
    bench_decode(peak, query.devices.front().multiprocessors, rng);
    bench_prefill(rng);
    bench_copy_and_swap(peak, rng);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_attention: %s\n", e.what());
    return 1;
  }
  return 0;
}
