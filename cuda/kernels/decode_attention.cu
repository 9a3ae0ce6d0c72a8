#include "cuda/kernels/decode_attention.h"

#include <cmath>
#include <string>

#include "core/kv/attention_window.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/device_types.cuh"

namespace pagedllm::cuda {
namespace {

using detail::DeviceKvLayout;
using detail::kVecElems;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kMinBlockSize = 8;
constexpr int kMaxPartitionBlocks = kDecodePartitionTokens / kMinBlockSize;
constexpr int kUnroll = 4;  // K/V rows in flight per thread before the math that uses them

struct DecodeKernelArgs {
  DeviceKvLayout layout;
  int32_t layer;
  int32_t num_heads;
  int64_t q_stride;          // elements between sequences' q rows
  int32_t group_size;        // query heads per KV head
  int32_t num_group_chunks;  // thread blocks sharing one KV head when group_size > kGroup
  const int32_t* block_tables;
  int32_t max_blocks_per_seq;
  const int32_t* seq_lens;
  int32_t max_seq_len;
  int32_t partition_tokens;  // a power of two, at most kDecodePartitionTokens (block sizes are too)
  float scale;
  int32_t sliding_window;  // kv::kNoSlidingWindow or the keys a query sees
  float* partial_out;      // [num_seqs][num_heads][num_partitions][head_dim]; null: no split
  float* partial_max;      // [num_seqs][num_heads][num_partitions]
  float* partial_sum;      // [num_seqs][num_heads][num_partitions]
};

// Sums each of kValues partial sums over the kLanes lanes that hold one row (lanes that differ in
// their low bits), and returns which of them values[0] then holds whole. Each level of the
// butterfly also halves what a lane carries: the lane with the level's bit set keeps the upper
// half and sends the lower, its partner the reverse. So a GQA group's 4 scores over 16 lanes take
// 2 + 1 + 1 + 1 = 5 shuffles instead of 4 x 4 (the H200 session, 2026-11-28, found the GQA kernel
// at 30% of the copy bandwidth against 71% for MHA, whose one score takes 4). The lanes whose bits
// below the halving levels are 0 hold distinct values (lane_in_row % (kLanes / kValues) == 0).
template <int kValues, int kLanes>
__device__ __forceinline__ int transpose_reduce(float (&values)[kValues], int lane_in_row) {
  static_assert(kValues <= kLanes && (kValues & (kValues - 1)) == 0 && (kLanes & (kLanes - 1)) == 0);
  int index = 0;
  int count = kValues;
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    const bool upper = (lane_in_row & offset) != 0;
    if (count > 1) {  // known at compile time once the loop is unrolled
      const int half = count / 2;
#pragma unroll
      for (int j = 0; j < half; ++j) {
        const float keep = upper ? values[j + half] : values[j];
        const float give = upper ? values[j] : values[j + half];
        values[j] = keep + __shfl_xor_sync(0xffffffffu, give, offset);
      }
      if (upper) index += half;
      count = half;
    } else {
      values[0] += __shfl_xor_sync(0xffffffffu, values[0], offset);
    }
  }
  return index;
}

// Grid (num_kv_heads * num_group_chunks, num_seqs, num_partitions), kThreads threads.
// Thread mapping: kLanesPerRow lanes hold one K or V row (8 elements each, one 16-byte load);
// a warp covers kRowsPerWarp consecutive tokens, the block kRowsPerPass tokens per pass.
template <typename T, int kHeadDim, int kGroup>
__global__ void __launch_bounds__(kThreads)
    decode_attention_kernel(const T* __restrict__ kv_cache, const T* __restrict__ q, T* __restrict__ out,
                            DecodeKernelArgs args) {
  constexpr int kLanesPerRow = kHeadDim / kVecElems;
  constexpr int kRowsPerWarp = 32 / kLanesPerRow;
  constexpr int kRowsPerPass = kWarps * kRowsPerWarp;
  constexpr int kScoreFloats = kGroup * kDecodePartitionTokens;
  constexpr int kReduceFloats = kWarps * kGroup * kHeadDim;
  static_assert(kHeadDim % (kVecElems * 4) == 0 && kLanesPerRow <= 32);

  __shared__ float q_s[kGroup][kHeadDim];
  // Scores, then probabilities, then (after the P.V loop) the cross-warp reduction buffer.
  __shared__ float scratch[kScoreFloats > kReduceFloats ? kScoreFloats : kReduceFloats];
  __shared__ int32_t blocks_s[kMaxPartitionBlocks];
  __shared__ float max_s[kGroup];
  __shared__ float sum_s[kGroup];

  const int kv_head = blockIdx.x / args.num_group_chunks;
  const int chunk = blockIdx.x % args.num_group_chunks;
  const int seq = blockIdx.y;
  const int partition = blockIdx.z;
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;

  const int seq_len = min(min(args.seq_lens[seq], args.max_seq_len), args.max_blocks_per_seq * args.layout.block_size);
  // The partition's keys that the query (at position seq_len - 1) sees: [part_start, part_end).
  const int window_start = kv::first_visible_position(seq_len - 1, args.sliding_window);
  const int part_end = min((partition + 1) * args.partition_tokens, seq_len);
  const int part_start = max(partition * args.partition_tokens, window_start);
  if (part_start >= part_end) return;  // the whole block: this sequence is shorter, or the window starts later
  const int n = part_end - part_start;
  const int first_head = kv_head * args.group_size + chunk * kGroup;
  const int group = min(kGroup, args.group_size - chunk * kGroup);

  // Prefetch the partition's block ids and the group's query vectors.
  // Both powers of two: a partition covers whole blocks (block_size <= partition_tokens) or lies
  // inside one block (an unpaged-like layout, block_size > partition_tokens). A window that starts
  // inside the partition starts its range mid-partition: the blocks before it are not fetched.
  const int block_size = args.layout.block_size;
  const int first_block = part_start / block_size;
  const int num_part_blocks = (part_start + n - 1) / block_size - first_block + 1;
  const int32_t* table = args.block_tables + static_cast<int64_t>(seq) * args.max_blocks_per_seq;
  for (int b = tid; b < num_part_blocks; b += kThreads) blocks_s[b] = table[first_block + b];
  for (int idx = tid; idx < kGroup * kHeadDim; idx += kThreads) {
    const int g = idx / kHeadDim;
    const int d = idx % kHeadDim;
    const int64_t at = static_cast<int64_t>(seq) * args.q_stride + (first_head + g) * kHeadDim + d;
    q_s[g][d] = g < group ? detail::to_float(q[at]) : 0.0f;
  }
  __syncthreads();

  const int row_in_pass = warp * kRowsPerWarp + lane / kLanesPerRow;
  const int vec = lane % kLanesPerRow;
  // 0 unless a block spans partitions or the window starts inside a block.
  const int start_in_block = part_start - first_block * block_size;
  auto row_pointer = [&](int kind, int i) {
    const int in_part_blocks = start_in_block + i;
    const int32_t block = blocks_s[in_part_blocks / block_size];
    return kv_cache + args.layout.element_offset(args.layer, kind, block, kv_head, in_part_blocks % block_size) +
           vec * kVecElems;
  };

  float q_reg[kGroup][kVecElems];
#pragma unroll
  for (int g = 0; g < kGroup; ++g)
#pragma unroll
    for (int e = 0; e < kVecElems; ++e) q_reg[g][e] = q_s[g][vec * kVecElems + e];

  // Phase 1: scores of every query head of the group against each key row, read once.
  for (int i0 = 0; i0 < n; i0 += kRowsPerPass * kUnroll) {
    float k_reg[kUnroll][kVecElems];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * kRowsPerPass + row_in_pass;
      if (i < n) {
        detail::load_vec8(row_pointer(0, i), k_reg[u]);
      } else {
#pragma unroll
        for (int e = 0; e < kVecElems; ++e) k_reg[u][e] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * kRowsPerPass + row_in_pass;
      float dots[kGroup];
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        dots[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < kVecElems; ++e) dots[g] += q_reg[g][e] * k_reg[u][e];
      }
      // Every lane takes part, in range or not; then one lane per head writes its whole score.
      const int g = transpose_reduce<kGroup, kLanesPerRow>(dots, vec);
      if (vec % (kLanesPerRow / kGroup) == 0 && i < n && g < group) {
        scratch[g * kDecodePartitionTokens + i] = dots[0] * args.scale;
      }
    }
  }
  __syncthreads();

  // Phase 2: softmax of each head's scores within the partition (one warp per head).
  for (int g = warp; g < group; g += kWarps) {
    float* scores = scratch + g * kDecodePartitionTokens;
    float m = -INFINITY;
    for (int i = lane; i < n; i += 32) m = fmaxf(m, scores[i]);
    m = detail::warp_max(m);
    float s = 0.0f;
    for (int i = lane; i < n; i += 32) {
      const float p = expf(scores[i] - m);
      scores[i] = p;
      s += p;
    }
    s = detail::warp_sum(s);
    if (lane == 0) {
      max_s[g] = m;
      sum_s[g] = s;
    }
  }
  __syncthreads();

  // Phase 3: unnormalized sum of p * V, each value row read once for the whole group.
  float acc[kGroup][kVecElems];
#pragma unroll
  for (int g = 0; g < kGroup; ++g)
#pragma unroll
    for (int e = 0; e < kVecElems; ++e) acc[g][e] = 0.0f;
  for (int i0 = 0; i0 < n; i0 += kRowsPerPass * kUnroll) {
    float v_reg[kUnroll][kVecElems];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * kRowsPerPass + row_in_pass;
      if (i < n) {
        detail::load_vec8(row_pointer(1, i), v_reg[u]);
      } else {
#pragma unroll
        for (int e = 0; e < kVecElems; ++e) v_reg[u][e] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * kRowsPerPass + row_in_pass;
      if (i < n) {
#pragma unroll
        for (int g = 0; g < kGroup; ++g) {
          const float p = g < group ? scratch[g * kDecodePartitionTokens + i] : 0.0f;
#pragma unroll
          for (int e = 0; e < kVecElems; ++e) acc[g][e] += p * v_reg[u][e];
        }
      }
    }
  }
  // Rows of one warp: combine the lanes holding the same 8 elements.
#pragma unroll
  for (int g = 0; g < kGroup; ++g)
#pragma unroll
    for (int e = 0; e < kVecElems; ++e)
#pragma unroll
      for (int offset = kLanesPerRow; offset < 32; offset *= 2)
        acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], offset);
  __syncthreads();  // every thread is done reading probabilities: scratch becomes the reduce buffer
  if (lane < kLanesPerRow) {
#pragma unroll
    for (int g = 0; g < kGroup; ++g)
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) scratch[(warp * kGroup + g) * kHeadDim + vec * kVecElems + e] = acc[g][e];
  }
  __syncthreads();

  const bool split = args.partial_out != nullptr;
  for (int idx = tid; idx < group * kHeadDim; idx += kThreads) {
    const int g = idx / kHeadDim;
    const int d = idx % kHeadDim;
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += scratch[(w * kGroup + g) * kHeadDim + d];
    const int64_t head_row = static_cast<int64_t>(seq) * args.num_heads + first_head + g;
    if (split) {
      const int64_t part_row = head_row * gridDim.z + partition;
      args.partial_out[part_row * kHeadDim + d] = total;
      if (d == 0) {
        args.partial_max[part_row] = max_s[g];
        args.partial_sum[part_row] = sum_s[g];
      }
    } else {
      out[head_row * kHeadDim + d] = detail::from_float<T>(total / sum_s[g]);
    }
  }
}

// Grid (num_heads, num_seqs), kThreads threads: log-sum-exp merge of a head's partitions.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    merge_partitions_kernel(T* __restrict__ out, const float* __restrict__ partial_out,
                            const float* __restrict__ partial_max, const float* __restrict__ partial_sum,
                            const int32_t* __restrict__ seq_lens, int32_t max_seq_len, int32_t partition_tokens,
                            int32_t max_partitions, int32_t sliding_window) {
  const int head = blockIdx.x;
  const int seq = blockIdx.y;
  const int seq_len = min(seq_lens[seq], max_seq_len);
  const int parts = min((seq_len + partition_tokens - 1) / partition_tokens, max_partitions);
  // Partitions wholly before the window wrote nothing.
  const int first_part = kv::first_visible_position(seq_len - 1, sliding_window) / partition_tokens;
  const int64_t head_row = static_cast<int64_t>(seq) * gridDim.x + head;
  const float* maxes = partial_max + head_row * max_partitions;
  const float* sums = partial_sum + head_row * max_partitions;
  float global_max = -INFINITY;
  for (int p = first_part; p < parts; ++p) global_max = fmaxf(global_max, maxes[p]);
  float denom = 0.0f;
  for (int p = first_part; p < parts; ++p) denom += expf(maxes[p] - global_max) * sums[p];
  for (int d = threadIdx.x; d < kHeadDim; d += kThreads) {
    float total = 0.0f;
    for (int p = first_part; p < parts; ++p)
      total += expf(maxes[p] - global_max) * partial_out[(head_row * max_partitions + p) * kHeadDim + d];
    out[head_row * kHeadDim + d] = detail::from_float<T>(total / denom);
  }
}

struct Workspace {
  float* partial_out = nullptr;
  float* partial_max = nullptr;
  float* partial_sum = nullptr;
};

std::size_t partial_rows(const DecodeAttentionParams& p, int32_t partitions) {
  return static_cast<std::size_t>(p.num_seqs) * static_cast<std::size_t>(p.num_heads) *
         static_cast<std::size_t>(partitions);
}

template <typename T, int kHeadDim, int kGroup>
void launch_group(const DecodeAttentionParams& p, DecodeKernelArgs args, int32_t partitions, cudaStream_t stream) {
  args.num_group_chunks = (args.group_size + kGroup - 1) / kGroup;
  const dim3 grid(static_cast<unsigned>(p.layout.num_kv_heads * args.num_group_chunks),
                  static_cast<unsigned>(p.num_seqs), static_cast<unsigned>(partitions));
  // Moves: every K and V row of each sequence once per (KV head, group chunk):
  //   2 * sum(min(seq_len, window)) * num_kv_heads * num_group_chunks * head_dim * 2 bytes,
  // plus q and out (num_seqs * num_heads * head_dim * 2 bytes each); with a split, the fp32
  // partials num_seqs * num_heads * partitions * (head_dim + 2) * 4 bytes written and read back.
  decode_attention_kernel<T, kHeadDim, kGroup><<<grid, kThreads, 0, stream>>>(
      static_cast<const T*>(p.kv_cache), static_cast<const T*>(p.q), static_cast<T*>(p.out), args);
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

template <typename T, int kHeadDim>
void launch(const DecodeAttentionParams& p, cudaStream_t stream) {
  const int32_t partitions = decode_attention_num_partitions(p);
  DecodeKernelArgs args{};
  args.layout = DeviceKvLayout{p.layout.num_kv_heads, p.layout.head_dim, p.layout.block_size, p.layout.num_blocks};
  args.layer = p.layer;
  args.num_heads = p.num_heads;
  args.q_stride = p.q_stride != 0 ? p.q_stride : static_cast<int64_t>(p.num_heads) * kHeadDim;
  args.group_size = p.num_heads / p.layout.num_kv_heads;
  args.block_tables = p.block_tables;
  args.max_blocks_per_seq = p.max_blocks_per_seq;
  args.seq_lens = p.seq_lens;
  args.max_seq_len = p.max_seq_len;
  args.partition_tokens = p.partition_tokens;
  args.scale = p.scale;
  args.sliding_window = p.sliding_window;
  if (partitions > 1) {
    const std::size_t rows = partial_rows(p, partitions);
    args.partial_out = static_cast<float*>(p.workspace);
    args.partial_max = args.partial_out + rows * kHeadDim;
    args.partial_sum = args.partial_max + rows;
  }
  if (args.group_size == 1) {
    launch_group<T, kHeadDim, 1>(p, args, partitions, stream);
  } else if (args.group_size <= 4) {
    launch_group<T, kHeadDim, 4>(p, args, partitions, stream);
  } else {
    launch_group<T, kHeadDim, 8>(p, args, partitions, stream);
  }
  if (partitions > 1) {
    const dim3 grid(static_cast<unsigned>(p.num_heads), static_cast<unsigned>(p.num_seqs));
    // Moves: the partials again (num_seqs * num_heads * partitions * (head_dim + 2) * 4 bytes
    // read) and out (num_seqs * num_heads * head_dim * 2 bytes written).
    merge_partitions_kernel<T, kHeadDim>
        <<<grid, kThreads, 0, stream>>>(static_cast<T*>(p.out), args.partial_out, args.partial_max, args.partial_sum,
                                        p.seq_lens, p.max_seq_len, p.partition_tokens, partitions, p.sliding_window);
    PAGEDLLM_CUDA_CHECK(cudaGetLastError());
  }
}

bool aligned16(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0; }

}  // namespace

int32_t choose_decode_partition_tokens(int32_t num_kv_heads, int32_t num_seqs, int32_t max_seq_len, int32_t num_sms) {
  int32_t tokens = kDecodePartitionTokens;
  const int64_t target = 2 * static_cast<int64_t>(num_sms);
  const int32_t smallest = kMinDecodePartitionTokens;
  auto blocks = [&](int32_t t) { return static_cast<int64_t>(num_kv_heads) * num_seqs * ((max_seq_len + t - 1) / t); };
  while (tokens / 2 >= smallest && blocks(tokens) < target) tokens /= 2;
  return tokens;
}

int32_t decode_attention_num_partitions(const DecodeAttentionParams& params) {
  if (params.max_seq_len <= 0 || params.partition_tokens <= 0) return 1;
  return (params.max_seq_len + params.partition_tokens - 1) / params.partition_tokens;
}

std::size_t decode_attention_workspace_bytes(const DecodeAttentionParams& params) {
  const int32_t partitions = decode_attention_num_partitions(params);
  if (partitions <= 1 || params.num_seqs <= 0 || params.num_heads <= 0) return 0;
  const std::size_t rows = partial_rows(params, partitions);
  return rows * (static_cast<std::size_t>(params.layout.head_dim) + 2) * sizeof(float);
}

void validate(const DecodeAttentionParams& p) {
  using detail::require;
  const kv::KvLayout& l = p.layout;
  require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "decode_attention: unknown dtype");
  require(l.head_dim == 64 || l.head_dim == 128,
          "decode_attention: head_dim must be 64 or 128, got " + std::to_string(l.head_dim));
  require(
      l.block_size >= kMinBlockSize && l.block_size <= kMaxDecodeBlockSize && (l.block_size & (l.block_size - 1)) == 0,
      "decode_attention: block_size must be a power of two in [8, " + std::to_string(kMaxDecodeBlockSize) + "], got " +
          std::to_string(l.block_size));
  require(l.num_kv_heads > 0 && l.num_blocks > 0 && l.num_layers > 0,
          "decode_attention: the layout needs KV heads, blocks and layers");
  require(p.layer >= 0 && p.layer < l.num_layers, "decode_attention: layer out of range");
  require(p.num_heads > 0 && p.num_heads % l.num_kv_heads == 0,
          "decode_attention: num_heads must be a positive multiple of num_kv_heads");
  require(p.num_seqs >= 0, "decode_attention: negative num_seqs");
  require(std::isfinite(p.scale) && p.scale > 0.0f, "decode_attention: scale must be positive");
  require(p.sliding_window >= 0, "decode_attention: sliding_window must be 0 (none) or positive");
  require(p.q_stride == 0 || p.q_stride >= static_cast<int64_t>(p.num_heads) * l.head_dim,
          "decode_attention: q_stride must be 0 (packed) or at least num_heads * head_dim");
  const int32_t t = p.partition_tokens;
  require(t >= kMinDecodePartitionTokens && t <= kDecodePartitionTokens && (t & (t - 1)) == 0,
          "decode_attention: partition_tokens must be a power of two in [64, 512], got " + std::to_string(t));
  if (p.num_seqs == 0) return;
  require(
      p.kv_cache != nullptr && p.q != nullptr && p.out != nullptr && p.block_tables != nullptr && p.seq_lens != nullptr,
      "decode_attention: null pointer");
  require(aligned16(p.kv_cache) && aligned16(p.q) && aligned16(p.out),
          "decode_attention: kv_cache, q and out must be 16-byte aligned");
  require(p.max_seq_len > 0, "decode_attention: max_seq_len must be positive");
  require(static_cast<int64_t>(p.max_blocks_per_seq) * l.block_size >= p.max_seq_len,
          "decode_attention: max_blocks_per_seq * block_size is shorter than max_seq_len");
  require(p.num_seqs <= 65535, "decode_attention: at most 65535 sequences per launch");
  const std::size_t needed = decode_attention_workspace_bytes(p);
  if (needed > 0) {
    require(p.workspace != nullptr && p.workspace_bytes >= needed && aligned16(p.workspace),
            "decode_attention: workspace missing or smaller than decode_attention_workspace_bytes() = " +
                std::to_string(needed));
  }
}

void decode_attention(const DecodeAttentionParams& params, cudaStream_t stream) {
  validate(params);
  if (params.num_seqs == 0) return;
  const bool bf16 = params.dtype == DType::bf16;
  if (params.layout.head_dim == 64) {
    bf16 ? launch<__nv_bfloat16, 64>(params, stream) : launch<__half, 64>(params, stream);
  } else {
    bf16 ? launch<__nv_bfloat16, 128>(params, stream) : launch<__half, 128>(params, stream);
  }
}

}  // namespace pagedllm::cuda
