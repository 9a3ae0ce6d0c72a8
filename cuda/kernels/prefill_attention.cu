#include "cuda/kernels/prefill_attention.h"

// The CPU emulation (tests/cuda/cpu_emulation/emu.h) brings its own nvcuda::wmma.
#if !defined(PAGEDLLM_CPU_EMULATION)
#include <mma.h>
#endif

#include <cmath>
#include <string>

#include "core/kv/attention_window.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/device_types.cuh"

namespace pagedllm::cuda {
namespace {

using detail::DeviceKvLayout;
using detail::kVecElems;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
// Rows of a tile are (query token, head of the GQA group) pairs of one KV head, token-major: with
// a group of g heads a tile holds 64 / g tokens, and each K/V tile it loads serves all 64 rows.
constexpr int kRowTile = 64;
constexpr int kKeyTile = 16;  // one key per lane of a half warp when scoring
constexpr int kRowsPerWarp = kRowTile / kWarps;
constexpr int kRowPairsPerWarp = kRowsPerWarp / 2;  // a warp scores two rows at a time
static_assert(kRowTile % (2 * kWarps) == 0 && kThreads % kRowTile == 0 && 2 * kKeyTile == 32);

struct PrefillKernelArgs {
  DeviceKvLayout layout;
  int32_t layer;
  int32_t num_heads;
  int64_t q_stride;  // elements between tokens' q rows
  int32_t group_size;
  const int32_t* query_starts;
  const int32_t* context_starts;
  const int32_t* block_tables;
  int32_t max_blocks_per_seq;
  float scale;
  int32_t sliding_window;  // kv::kNoSlidingWindow or the keys a query sees
};

// Grid (row tiles, num_kv_heads, num_seqs), kThreads threads. Static shared memory at head_dim
// 128: q 64 x 129 + K/V 16 x 129 + probabilities 64 x 17 + 3 x 64 floats = 46,400 bytes.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    prefill_attention_kernel(const T* __restrict__ kv_cache, const T* __restrict__ q, T* __restrict__ out,
                             PrefillKernelArgs args) {
  constexpr int kPad = kHeadDim + 1;  // rows one float apart in banks: column-wise reads are conflict free
  constexpr int kThreadsPerRow = kThreads / kRowTile;
  constexpr int kAccPerThread = kHeadDim / kThreadsPerRow;
  __shared__ float q_s[kRowTile][kPad];
  __shared__ float kv_s[kKeyTile][kPad];
  __shared__ float p_s[kRowTile][kKeyTile + 1];
  __shared__ float row_max[kRowTile];
  __shared__ float row_sum[kRowTile];
  __shared__ float row_corr[kRowTile];

  const int seq = blockIdx.z;
  const int kv_head = blockIdx.y;
  const int group = args.group_size;
  const int row0 = blockIdx.x * kRowTile;
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int query_begin = args.query_starts[seq];
  const int query_len = args.query_starts[seq + 1] - query_begin;
  const int num_rows = query_len * group;
  if (row0 >= num_rows) return;
  const int rows = min(kRowTile, num_rows - row0);
  const int context_start = args.context_starts[seq];
  const int block_size = args.layout.block_size;
  const int32_t* table = args.block_tables + static_cast<int64_t>(seq) * args.max_blocks_per_seq;
  // Keys up to the tile's last query token, from the window start of its first (its earliest).
  const int num_keys = min(context_start + (row0 + rows - 1) / group + 1, args.max_blocks_per_seq * block_size);
  const int first_key = kv::first_visible_position(context_start + row0 / group, args.sliding_window);
  const auto token_of = [&](int r) { return (row0 + r) / group; };  // within the chunk
  const auto head_of = [&](int r) { return kv_head * group + (row0 + r) % group; };

  for (int idx = tid; idx < kRowTile * kHeadDim; idx += kThreads) {
    const int r = idx / kHeadDim;
    const int d = idx % kHeadDim;
    float value = 0.0f;
    if (r < rows) {
      value = detail::to_float(
          q[static_cast<int64_t>(query_begin + token_of(r)) * args.q_stride + head_of(r) * kHeadDim + d]);
    }
    q_s[r][d] = value;
  }
  if (tid < kRowTile) {
    row_max[tid] = -INFINITY;
    row_sum[tid] = 0.0f;
  }

  // Stages one key or value tile as fp32, zeros outside [first_key, num_keys).
  auto load_tile = [&](int kind, int k0) {
    constexpr int kVecsPerRow = kHeadDim / kVecElems;
    for (int idx = tid; idx < kKeyTile * kVecsPerRow; idx += kThreads) {
      const int c = idx / kVecsPerRow;
      const int v = idx % kVecsPerRow;
      const int key = k0 + c;
      float vals[kVecElems];
      if (key >= first_key && key < num_keys) {
        const int32_t block = table[key / block_size];
        detail::load_vec8(
            kv_cache + args.layout.element_offset(args.layer, kind, block, kv_head, key % block_size) + v * kVecElems,
            vals);
      } else {
#pragma unroll
        for (int e = 0; e < kVecElems; ++e) vals[e] = 0.0f;
      }
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) kv_s[c][v * kVecElems + e] = vals[e];
    }
  };

  const int acc_row = tid / kThreadsPerRow;
  const int acc_col = tid % kThreadsPerRow;
  float acc[kAccPerThread];
#pragma unroll
  for (int j = 0; j < kAccPerThread; ++j) acc[j] = 0.0f;

  // Scoring: warp w owns rows w * kRowsPerWarp + [0, kRowsPerWarp), two at a time (half warp h
  // takes the pair's row h); the lane's key is column lane % 16. Each key element read from
  // shared memory serves all the rows a lane scores.
  const int half = lane / kKeyTile;
  const int key_col = lane % kKeyTile;
  const int first_row = warp * kRowsPerWarp + half;

  for (int k0 = first_key - first_key % kKeyTile; k0 < num_keys; k0 += kKeyTile) {
    load_tile(0, k0);
    __syncthreads();
    const int key = k0 + key_col;
    float dot[kRowPairsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowPairsPerWarp; ++i) dot[i] = 0.0f;
#pragma unroll 8
    for (int d = 0; d < kHeadDim; ++d) {
      const float k = kv_s[key_col][d];
#pragma unroll
      for (int i = 0; i < kRowPairsPerWarp; ++i) dot[i] += q_s[first_row + 2 * i][d] * k;
    }
#pragma unroll
    for (int i = 0; i < kRowPairsPerWarp; ++i) {
      const int r = first_row + 2 * i;
      const int position = context_start + token_of(r);
      const bool visible = r < rows && key < num_keys && key <= position &&
                           key >= kv::first_visible_position(position, args.sliding_window);
      const float s = visible ? dot[i] * args.scale : -INFINITY;
      const float m_old = row_max[r];
      const float m_new = fmaxf(m_old, detail::warp_max(s, kKeyTile));
      // A row with no visible key yet keeps max -inf: no exp(-inf - -inf) = NaN.
      const float p = m_new == -INFINITY ? 0.0f : expf(s - m_new);
      const float corr = m_new == -INFINITY ? 1.0f : expf(m_old - m_new);
      const float p_total = detail::warp_sum(p, kKeyTile);
      p_s[r][key_col] = p;
      __syncwarp();  // every lane has read row_max[r] before lane 0 of the half warp updates it
      if (key_col == 0) {
        row_max[r] = m_new;
        row_sum[r] = row_sum[r] * corr + p_total;
        row_corr[r] = corr;
      }
    }
    __syncthreads();  // keys consumed; probabilities and corrections visible
    load_tile(1, k0);
    __syncthreads();
    const float corr = row_corr[acc_row];
#pragma unroll
    for (int j = 0; j < kAccPerThread; ++j) {
      const int d = acc_col + j * kThreadsPerRow;
      float a = acc[j] * corr;
#pragma unroll
      for (int c = 0; c < kKeyTile; ++c) a += p_s[acc_row][c] * kv_s[c][d];
      acc[j] = a;
    }
    __syncthreads();  // before the next tile overwrites kv_s and p_s
  }

  if (acc_row < rows) {
    const float inv_sum = 1.0f / row_sum[acc_row];
    T* dst =
        out + (static_cast<int64_t>(query_begin + token_of(acc_row)) * args.num_heads + head_of(acc_row)) * kHeadDim;
#pragma unroll
    for (int j = 0; j < kAccPerThread; ++j) dst[acc_col + j * kThreadsPerRow] = detail::from_float<T>(acc[j] * inv_sum);
  }
}

// --- tensor-core kernel ----------------------------------------------------------------------

namespace wmma = nvcuda::wmma;

constexpr int kTcWarps = 4;
constexpr int kTcThreads = 32 * kTcWarps;
constexpr int kTcRows = 16 * kTcWarps;  // a warp owns 16 rows: one MMA tile's height
constexpr int kTcKeys = 32;             // keys per tile: two MMA tiles wide
constexpr int kPad16 = 8;               // 16-bit rows padded by 16 bytes (WMMA: ldm a multiple of 8)
constexpr int kPadF32 = 4;              // fp32 rows padded by 16 bytes (WMMA: ldm a multiple of 4)
static_assert(kTcRows == kRowTile, "both kernels tile rows alike: the launch grid is shared");

// Grid (row tiles, num_kv_heads, num_seqs), kTcThreads threads. Static shared memory at head_dim
// 128, bf16: q 64 x 136 + K/V 32 x 136 (2 bytes) + scores 4 x 16 x 36 (4 bytes) + probabilities
// 4 x 16 x 40 (2 bytes) = 40,448 bytes. Every WMMA pointer is 32-byte aligned (rows of 272, 144
// and 80 bytes; tiles start at multiples of 16 rows or 16 columns).
//
// Lane l of a warp owns row l / 2 of the warp's 16 and keys (l % 2) * 16 + [0, 16) of each tile for
// the softmax, and the same row's columns (l % 2) * 8 + [0, 8) of each 16-column output tile.
// Pass 1 gives each row its max m and sum l of exp2(s - m) over every visible key (online over the
// tiles, in registers of the lane pair); pass 2 writes p = exp2(s - m) as T and accumulates P V in
// fragments; the output is that over l.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kTcThreads)
    prefill_attention_tc_kernel(const T* __restrict__ kv_cache, const T* __restrict__ q, T* __restrict__ out,
                                PrefillKernelArgs args) {
  constexpr int kLdq = kHeadDim + kPad16;  // q_s and kv_s rows
  constexpr int kLds = kTcKeys + kPadF32;  // scores
  constexpr int kLdp = kTcKeys + kPad16;   // probabilities
  constexpr int kOutTiles = kHeadDim / 16;
  constexpr int kVecsPerRow = kHeadDim / kVecElems;
  __shared__ __align__(32) T q_s[kTcRows * kLdq];
  __shared__ __align__(32) T kv_s[kTcKeys * kLdq];
  __shared__ __align__(32) float s_s[kTcWarps][16 * kLds];
  __shared__ __align__(32) T p_s[kTcWarps][16 * kLdp];

  const int seq = blockIdx.z;
  const int kv_head = blockIdx.y;
  const int group = args.group_size;
  // The last row tiles, which attend the most keys, are launched first: less tail at the grid's end.
  const int row0 = (gridDim.x - 1 - blockIdx.x) * kTcRows;
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int query_begin = args.query_starts[seq];
  const int query_len = args.query_starts[seq + 1] - query_begin;
  const int num_rows = query_len * group;
  if (row0 >= num_rows) return;
  const int rows = min(kTcRows, num_rows - row0);
  const int context_start = args.context_starts[seq];
  const int block_size = args.layout.block_size;
  const int32_t* table = args.block_tables + static_cast<int64_t>(seq) * args.max_blocks_per_seq;
  const int num_keys = min(context_start + (row0 + rows - 1) / group + 1, args.max_blocks_per_seq * block_size);
  const int first_key = kv::first_visible_position(context_start + row0 / group, args.sliding_window);
  const auto token_of = [&](int r) { return (row0 + r) / group; };
  const auto head_of = [&](int r) { return kv_head * group + (row0 + r) % group; };

  // q as stored, zeros past the chunk's rows (q_stride may leave rows unaligned: element copies).
  for (int idx = tid; idx < kTcRows * kHeadDim; idx += kTcThreads) {
    const int r = idx / kHeadDim;
    const int d = idx % kHeadDim;
    q_s[r * kLdq + d] =
        r < rows ? q[static_cast<int64_t>(query_begin + token_of(r)) * args.q_stride + head_of(r) * kHeadDim + d]
                 : detail::from_float<T>(0.0f);
  }
  // One K or V tile as stored, zeros outside [first_key, num_keys) (released blocks hold NaN: a
  // zero probability times NaN would still be NaN).
  auto load_tile = [&](int kind, int k0) {
    for (int idx = tid; idx < kTcKeys * kVecsPerRow; idx += kTcThreads) {
      const int c = idx / kVecsPerRow;
      const int v = idx % kVecsPerRow;
      const int key = k0 + c;
      detail::Vec8<T> vec;
      vec.raw = make_uint4(0u, 0u, 0u, 0u);
      if (key >= first_key && key < num_keys) {
        const int32_t block = table[key / block_size];
        vec.raw = *reinterpret_cast<const uint4*>(
            kv_cache + args.layout.element_offset(args.layer, kind, block, kv_head, key % block_size) + v * kVecElems);
      }
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) kv_s[c * kLdq + v * kVecElems + e] = vec.elems[e];
    }
  };

  const int warp_row0 = 16 * warp;
  float* scores = s_s[warp];
  T* probabilities = p_s[warp];
  // S = Q K^T for the warp's 16 rows and the tile's keys, into `scores` (kv_s holds K).
  auto score_tile = [&]() {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> s[kTcKeys / 16];
#pragma unroll
    for (int n = 0; n < kTcKeys / 16; ++n) wmma::fill_fragment(s[n], 0.0f);
#pragma unroll
    for (int d0 = 0; d0 < kHeadDim; d0 += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
      wmma::load_matrix_sync(a, q_s + warp_row0 * kLdq + d0, kLdq);
#pragma unroll
      for (int n = 0; n < kTcKeys / 16; ++n) {
        // K^T as a column-major (d x key) operand is K row-major as stored: no transpose.
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
        wmma::load_matrix_sync(b, kv_s + 16 * n * kLdq + d0, kLdq);
        wmma::mma_sync(s[n], a, b, s[n]);
      }
    }
#pragma unroll
    for (int n = 0; n < kTcKeys / 16; ++n) wmma::store_matrix_sync(scores + 16 * n, s[n], kLds, wmma::mem_row_major);
    __syncwarp();  // each lane reads rows the others stored
  };

  const int my_row = warp_row0 + lane / 2;  // within the block's tile
  const int key_part = (lane % 2) * 16;
  const int position = context_start + token_of(my_row);
  const int window_first = kv::first_visible_position(position, args.sliding_window);
  const bool row_valid = my_row < rows;
  const auto visible = [&](int key) {
    return row_valid && key >= first_key && key >= window_first && key <= position && key < num_keys;
  };
  const float scale_log2 = args.scale * 1.44269504088896341f;  // scores in log2 units: exp2 below
  const int first_tile = first_key - first_key % kTcKeys;
  // The lane's 16 scores of the tile, scaled, as 4 float4 reads (16-byte aligned: rows of 144 bytes,
  // a lane's half at 64; one read each where scalar reads would meet 4-way bank conflicts).
  float lane_scores[16];
  auto read_scores = [&]() {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 v = reinterpret_cast<const float4*>(scores + (lane / 2) * kLds + key_part)[i];
      lane_scores[4 * i] = v.x * scale_log2;
      lane_scores[4 * i + 1] = v.y * scale_log2;
      lane_scores[4 * i + 2] = v.z * scale_log2;
      lane_scores[4 * i + 3] = v.w * scale_log2;
    }
  };

  // Pass 1: each row's max and sum.
  float row_max = -INFINITY;
  float row_sum = 0.0f;
  for (int k0 = first_tile; k0 < num_keys; k0 += kTcKeys) {
    load_tile(0, k0);
    __syncthreads();
    score_tile();
    read_scores();
    float tile_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < 16; ++c) {
      if (visible(k0 + key_part + c)) tile_max = fmaxf(tile_max, lane_scores[c]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float new_max = fmaxf(row_max, tile_max);
    float tile_sum = 0.0f;
    if (new_max != -INFINITY) {  // no visible key yet: nothing to add, and no exp2(-inf - -inf)
#pragma unroll
      for (int c = 0; c < 16; ++c) {
        if (visible(k0 + key_part + c)) tile_sum += exp2f(lane_scores[c] - new_max);
      }
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    if (new_max != -INFINITY) {
      row_sum = row_sum * exp2f(row_max - new_max) + tile_sum;  // exp2(-inf) = 0 for the first
      row_max = new_max;
    }
    __syncthreads();  // every warp is done with this K tile before the next load
  }

  // Pass 2: O = P V with P = exp2(s - m), in fragments across every tile.
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> o[kOutTiles];
#pragma unroll
  for (int j = 0; j < kOutTiles; ++j) wmma::fill_fragment(o[j], 0.0f);
  for (int k0 = first_tile; k0 < num_keys; k0 += kTcKeys) {
    load_tile(0, k0);
    __syncthreads();
    score_tile();
    read_scores();
#pragma unroll
    for (int half = 0; half < 2; ++half) {  // 8 probabilities a 16-byte store (rows of 80 bytes)
      float p[kVecElems];
#pragma unroll
      for (int e = 0; e < kVecElems; ++e) {
        const int c = half * kVecElems + e;
        p[e] = visible(k0 + key_part + c) ? exp2f(lane_scores[c] - row_max) : 0.0f;
      }
      detail::store_vec8(probabilities + (lane / 2) * kLdp + key_part + half * kVecElems, p);
    }
    __syncthreads();  // K consumed by every warp; probabilities visible to the warp
    load_tile(1, k0);
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[kTcKeys / 16];
#pragma unroll
    for (int kk = 0; kk < kTcKeys / 16; ++kk) wmma::load_matrix_sync(a[kk], probabilities + 16 * kk, kLdp);
#pragma unroll
    for (int j = 0; j < kOutTiles; ++j) {
#pragma unroll
      for (int kk = 0; kk < kTcKeys / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
        wmma::load_matrix_sync(b, kv_s + 16 * kk * kLdq + 16 * j, kLdq);
        wmma::mma_sync(o[j], a[kk], b, o[j]);
      }
    }
    __syncthreads();  // before the next tile overwrites kv_s
  }

  // Out = O / l, a 16-column tile at a time through the warp's score buffer.
  const float inv_sum = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
  T* dst = row_valid ? out + (static_cast<int64_t>(query_begin + token_of(my_row)) * args.num_heads + head_of(my_row)) *
                                 kHeadDim
                     : nullptr;
#pragma unroll
  for (int j = 0; j < kOutTiles; ++j) {
    wmma::store_matrix_sync(scores, o[j], kLds, wmma::mem_row_major);
    __syncwarp();
    if (row_valid) {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int col = (lane % 2) * 8 + e;
        dst[16 * j + col] = detail::from_float<T>(scores[(lane / 2) * kLds + col] * inv_sum);
      }
    }
    __syncwarp();  // read before the next tile is stored
  }
}

template <typename T, int kHeadDim>
void launch(const PrefillAttentionParams& p, cudaStream_t stream) {
  PrefillKernelArgs args{};
  args.layout = DeviceKvLayout{p.layout.num_kv_heads, p.layout.head_dim, p.layout.block_size, p.layout.num_blocks};
  args.layer = p.layer;
  args.num_heads = p.num_heads;
  args.q_stride = p.q_stride != 0 ? p.q_stride : static_cast<int64_t>(p.num_heads) * kHeadDim;
  args.group_size = p.num_heads / p.layout.num_kv_heads;
  args.query_starts = p.query_starts;
  args.context_starts = p.context_starts;
  args.block_tables = p.block_tables;
  args.max_blocks_per_seq = p.max_blocks_per_seq;
  args.scale = p.scale;
  args.sliding_window = p.sliding_window;
  const int64_t max_rows = static_cast<int64_t>(p.max_query_len) * args.group_size;
  const dim3 grid(static_cast<unsigned>((max_rows + kRowTile - 1) / kRowTile),
                  static_cast<unsigned>(p.layout.num_kv_heads), static_cast<unsigned>(p.num_seqs));
  // Moves: per (row tile, KV head) the K and V rows of positions [the window start of the tile's
  // first query (0 without a window), the tile's last query]:
  //   sum over tiles of 2 * keys * head_dim * 2 bytes, a KV head read once per 64 rows
  // (64 / group tokens of all its group's heads), plus q and out once. Scalar fp32 FMAs: compute-
  // bound for long chunks (no tensor cores yet).
  // The tensor-core kernel moves the same K/V bytes plus K once more (two passes), and computes
  // QK^T twice: 3 MMAs of 2 x 16 x 16 x 16 FLOPs per 16 x 16 x 16 tile where one pass needs 2.
  if (p.kernel == PrefillKernel::tensor_core) {
    prefill_attention_tc_kernel<T, kHeadDim><<<grid, kTcThreads, 0, stream>>>(
        static_cast<const T*>(p.kv_cache), static_cast<const T*>(p.q), static_cast<T*>(p.out), args);
  } else {
    prefill_attention_kernel<T, kHeadDim><<<grid, kThreads, 0, stream>>>(
        static_cast<const T*>(p.kv_cache), static_cast<const T*>(p.q), static_cast<T*>(p.out), args);
  }
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void validate(const PrefillAttentionParams& p) {
  using detail::require;
  const kv::KvLayout& l = p.layout;
  require(p.dtype == DType::bf16 || p.dtype == DType::fp16, "prefill_attention: unknown dtype");
  require(p.kernel == PrefillKernel::tensor_core || p.kernel == PrefillKernel::simt,
          "prefill_attention: unknown kernel");
  require(l.head_dim == 64 || l.head_dim == 128,
          "prefill_attention: head_dim must be 64 or 128, got " + std::to_string(l.head_dim));
  require(l.block_size > 0 && l.num_kv_heads > 0 && l.num_blocks > 0 && l.num_layers > 0,
          "prefill_attention: the layout needs a block size, KV heads, blocks and layers");
  require(p.layer >= 0 && p.layer < l.num_layers, "prefill_attention: layer out of range");
  require(p.num_heads > 0 && p.num_heads % l.num_kv_heads == 0,
          "prefill_attention: num_heads must be a positive multiple of num_kv_heads");
  require(p.num_seqs >= 0 && p.num_seqs <= 65535, "prefill_attention: num_seqs must be in [0, 65535]");
  require(l.num_kv_heads <= 65535, "prefill_attention: num_kv_heads must be at most 65535");
  require(std::isfinite(p.scale) && p.scale > 0.0f, "prefill_attention: scale must be positive");
  require(p.sliding_window >= 0, "prefill_attention: sliding_window must be 0 (none) or positive");
  require(p.q_stride == 0 || p.q_stride >= static_cast<int64_t>(p.num_heads) * l.head_dim,
          "prefill_attention: q_stride must be 0 (packed) or at least num_heads * head_dim");
  if (p.num_seqs == 0) return;
  require(p.kv_cache != nullptr && p.q != nullptr && p.out != nullptr && p.query_starts != nullptr &&
              p.context_starts != nullptr && p.block_tables != nullptr,
          "prefill_attention: null pointer");
  require(reinterpret_cast<std::uintptr_t>(p.kv_cache) % 16 == 0,
          "prefill_attention: kv_cache must be 16-byte aligned");
  require(p.max_query_len >= 0 && p.max_blocks_per_seq > 0,
          "prefill_attention: max_query_len and max_blocks_per_seq must be set");
}

void prefill_attention(const PrefillAttentionParams& params, cudaStream_t stream) {
  validate(params);
  if (params.num_seqs == 0 || params.max_query_len == 0) return;
  const bool bf16 = params.dtype == DType::bf16;
  if (params.layout.head_dim == 64) {
    bf16 ? launch<__nv_bfloat16, 64>(params, stream) : launch<__half, 64>(params, stream);
  } else {
    bf16 ? launch<__nv_bfloat16, 128>(params, stream) : launch<__half, 128>(params, stream);
  }
}

}  // namespace pagedllm::cuda
