#include "cuda/kernels/sampling.h"

#include "core/sampling/uniform_draw.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/block_reduce.cuh"

namespace pagedllm::cuda {
namespace {

constexpr int kArgmaxThreads = 256;
constexpr int kSampleThreads = 512;
constexpr int kBins = 256;
// Sampling weights in (0, 1] become integers w * 2^40: integer sums are exact and independent of
// the order of the atomics, so a row's result is deterministic. Weights below 2^-40 of the top
// token's get no mass (they can still pass top-k, but are never drawn).
constexpr double kMassScale = 1099511627776.0;  // 2^40

__device__ detail::ArgmaxCandidate row_argmax(const float* row, int vocab, float* values, int* indices) {
  detail::ArgmaxCandidate best{-INFINITY, 0x7fffffff};
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) best = detail::better(best, {row[i], i});
  return detail::block_argmax(best, values, indices);
}

// Grid (num_rows), kArgmaxThreads threads.
__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(const float* __restrict__ logits, int32_t vocab, int32_t* __restrict__ out) {
  __shared__ float values[32];
  __shared__ int indices[32];
  const detail::ArgmaxCandidate best =
      row_argmax(logits + static_cast<int64_t>(blockIdx.x) * vocab, vocab, values, indices);
  if (threadIdx.x == 0) out[blockIdx.x] = best.index;
}

struct RowWeights {
  const float* row;
  float inv_temperature;
  float scaled_max;
  // Weight bits as an order-preserving key (weights are >= 0, so IEEE bits order as integers).
  __device__ uint32_t key(int i) const {
    // Explicit roundings: no FMA contraction, so every pass computes the same weight and the
    // top token's weight is exactly exp(0) = 1.
    const float w = expf(__fsub_rn(__fmul_rn(row[i], inv_temperature), scaled_max));
    return __float_as_uint(w);
  }
  __device__ static unsigned long long mass(uint32_t key) {
    return static_cast<unsigned long long>(static_cast<double>(__uint_as_float(key)) * kMassScale);
  }
};

// The largest key threshold t (>= lower) with sum of value(key) over tokens with key >= t at
// least `target`, found by a most-significant-byte-first radix descent (4 passes of 8 bits).
// count_mode: value = 1 (top-k: t is the k-th largest weight); else value = mass (top-p).
// All threads call it; all get the result.
__device__ uint32_t radix_threshold(const RowWeights& w, int vocab, uint32_t lower, bool count_mode,
                                    unsigned long long target, unsigned long long* hist, uint32_t* shared_prefix,
                                    unsigned long long* shared_above) {
  if (threadIdx.x == 0) {
    *shared_prefix = 0;
    *shared_above = 0;
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < kBins; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    const uint32_t prefix = *shared_prefix;
    // Bits above this pass's byte must equal the prefix chosen so far (none on the first pass).
    const uint32_t high_mask = shift == 24 ? 0u : ~((1u << (shift + 8)) - 1u);
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
      const uint32_t key = w.key(i);
      if (key < lower || (key & high_mask) != (prefix & high_mask)) continue;
      atomicAdd(&hist[(key >> shift) & 0xffu], count_mode ? 1ull : RowWeights::mass(key));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const unsigned long long start = *shared_above;
      unsigned long long above = start;
      int chosen = -1;
      for (int b = kBins - 1; b >= 0; --b) {
        if (above + hist[b] >= target) {
          chosen = b;
          break;
        }
        above += hist[b];
      }
      // Unreachable target (not for valid input: callers pass target <= the eligible total):
      // take the lowest bin, which keeps more tokens, never fewer.
      if (chosen < 0) {
        chosen = 0;
        above -= hist[0];
      }
      *shared_prefix = prefix | (static_cast<uint32_t>(chosen) << shift);
      *shared_above = above;
    }
    __syncthreads();
  }
  return *shared_prefix;
}

// Inclusive prefix sum over the block in thread order; `total` receives the block's sum.
// `warp_sums`: 32 entries of shared memory. All threads call it.
__device__ unsigned long long block_inclusive_sum(unsigned long long v, unsigned long long* warp_sums,
                                                  unsigned long long& total) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int num_warps = blockDim.x / 32;
  for (int offset = 1; offset < 32; offset *= 2) {
    const unsigned long long other = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= offset) v += other;
  }
  if (lane == 31) warp_sums[warp] = v;
  __syncthreads();
  unsigned long long before = 0;
  total = 0;
  for (int w = 0; w < num_warps; ++w) {
    if (w < warp) before += warp_sums[w];
    total += warp_sums[w];
  }
  __syncthreads();  // warp_sums is free again when this returns
  return before + v;
}

// Grid (num_rows), kSampleThreads threads.
__global__ void __launch_bounds__(kSampleThreads) sample_kernel(TopKTopPParams p) {
  __shared__ unsigned long long warp_sums[32];
  __shared__ unsigned long long hist[kBins];
  __shared__ float values[32];
  __shared__ int indices[32];
  __shared__ uint32_t shared_prefix;
  __shared__ unsigned long long shared_above;
  __shared__ unsigned long long shared_total;
  __shared__ int found;

  const int row_index = blockIdx.x;
  const int vocab = p.vocab_size;
  const float* row = p.logits + static_cast<int64_t>(row_index) * vocab;
  const float temperature = p.temperatures[row_index];
  const detail::ArgmaxCandidate best = row_argmax(row, vocab, values, indices);
  if (!(temperature >= kGreedyTemperatureCuda) || best.value == -INFINITY) {
    if (threadIdx.x == 0) p.out_tokens[row_index] = best.index;
    return;
  }
  RowWeights w{row, 1.0f / temperature, 0.0f};
  w.scaled_max = __fmul_rn(best.value, w.inv_temperature);  // the top token's weight is exactly exp(0) = 1

  // Top-k: the k-th largest weight.
  const int top_k = p.top_k[row_index];
  uint32_t threshold = 0;
  if (top_k > 0 && top_k < vocab) {
    threshold =
        radix_threshold(w, vocab, 0, true, static_cast<unsigned long long>(top_k), hist, &shared_prefix, &shared_above);
  }
  // Top-p over the tokens top-k kept: the smallest top set holding top_p of their mass.
  const float top_p = p.top_p[row_index];
  if (top_p < 1.0f) {
    if (threadIdx.x == 0) shared_total = 0;
    __syncthreads();
    unsigned long long local = 0;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
      const uint32_t key = w.key(i);
      if (key >= threshold) local += RowWeights::mass(key);
    }
    atomicAdd(&shared_total, local);
    __syncthreads();
    const unsigned long long kept = shared_total;
    unsigned long long target = static_cast<unsigned long long>(static_cast<double>(top_p) * static_cast<double>(kept));
    if (target == 0) target = 1;
    threshold = radix_threshold(w, vocab, threshold, false, target, hist, &shared_prefix, &shared_above);
  }

  // The draw, as the host sampler draws: u in [0, 1) scales the kept mass, and the first token in
  // rank order (weight descending, ties by lower id) whose cumulative mass reaches it wins. A
  // third radix descent finds the weight t of that token (the mass of weights above t falls
  // short of the target, with t's it reaches it); then the tokens of weight t, in id order
  // (a block-wide prefix sum per chunk of kSampleThreads tokens), settle the tie. Tokens with zero
  // mass can never be first to reach it.
  __syncthreads();
  if (threadIdx.x == 0) {
    shared_total = 0;
    found = -1;
  }
  __syncthreads();
  unsigned long long local = 0;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    const uint32_t key = w.key(i);
    if (key >= threshold) local += RowWeights::mass(key);
  }
  atomicAdd(&shared_total, local);
  __syncthreads();
  const unsigned long long total = shared_total;
  // The host sampler's draw (core/sampling/uniform_draw.h); every thread computes the same number.
  const double u = sampling::uniform_draw(p.seeds[row_index], p.streams[row_index], p.positions[row_index]);
  unsigned long long target = static_cast<unsigned long long>(ceil(u * static_cast<double>(total)));
  if (target < 1) target = 1;
  if (target > total) target = total;
  const uint32_t drawn_key = radix_threshold(w, vocab, threshold, false, target, hist, &shared_prefix, &shared_above);
  unsigned long long running = shared_above;  // the mass of the weights above drawn_key

  for (int base = 0; base < vocab; base += kSampleThreads) {
    const int i = base + static_cast<int>(threadIdx.x);
    unsigned long long mass = 0;
    if (i < vocab) {
      const uint32_t key = w.key(i);
      if (key == drawn_key) mass = RowWeights::mass(key);
    }
    unsigned long long chunk_total = 0;
    const unsigned long long inclusive = block_inclusive_sum(mass, warp_sums, chunk_total);
    if (mass > 0 && running + inclusive >= target && running + inclusive - mass < target) found = i;
    running += chunk_total;
    __syncthreads();  // `found` visible to every thread
    if (found >= 0) break;
  }
  if (threadIdx.x == 0) p.out_tokens[row_index] = found >= 0 ? found : best.index;
}

}  // namespace

void validate(const ArgmaxParams& p) {
  detail::require(p.num_rows >= 0 && p.vocab_size > 0, "argmax: bad shape");
  if (p.num_rows == 0) return;
  detail::require(p.logits != nullptr && p.out_tokens != nullptr, "argmax: null pointer");
}

void argmax(const ArgmaxParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_rows == 0) return;
  // Moves: num_rows * vocab_size * 4 bytes read, num_rows * 4 bytes written.
  argmax_kernel<<<static_cast<unsigned>(p.num_rows), kArgmaxThreads, 0, stream>>>(p.logits, p.vocab_size, p.out_tokens);
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

void validate(const TopKTopPParams& p) {
  detail::require(p.num_rows >= 0 && p.vocab_size > 0, "sample_top_k_top_p: bad shape");
  if (p.num_rows == 0) return;
  detail::require(p.logits != nullptr && p.temperatures != nullptr && p.top_k != nullptr && p.top_p != nullptr &&
                      p.seeds != nullptr && p.streams != nullptr && p.positions != nullptr && p.out_tokens != nullptr,
                  "sample_top_k_top_p: null pointer");
}

void sample_top_k_top_p(const TopKTopPParams& p, cudaStream_t stream) {
  validate(p);
  if (p.num_rows == 0) return;
  // Moves: each row's logits (vocab_size * 4 bytes) read about 15 times (argmax, 4 radix passes
  // per filter and 4 for the draw, mass, the tie scan); L2-resident for one row at a time.
  // Latency-bound, not tuned.
  sample_kernel<<<static_cast<unsigned>(p.num_rows), kSampleThreads, 0, stream>>>(p);
  PAGEDLLM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedllm::cuda
