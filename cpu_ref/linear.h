// y = x W^T (+ b): the projection GEMM of the CPU reference engine (Hugging Face nn.Linear).
//
// Batch- and thread-count-invariant bit for bit: every output y[r][o] is exactly
// dot(x[r, :], w[o, :]) of cpu_ref/dot.h (16 fixed lanes, fixed tail, fixed combine tree), then
// + bias[o] when a bias is given. Rows and outputs are tiled for register and cache reuse, but
// a tile only shares loads: each element keeps its own accumulators, so it sees the same
// operations whether it is computed alone, in a batch of 33, or in any row of a tile. OpenMP
// splits the output tiles (schedule(static)), never a reduction.
//
// Weights in a stored type other than F32 (F16, BF16, ggml quantized types) are decoded a tile of
// output rows at a time into a per-thread fp32 buffer (weight_decode.h: the load-time
// dequantizer's values, with AVX2 for the common types), then run through the same tiled kernel:
// the result is bit-identical to dequantizing the whole matrix first, and each weight is decoded
// once per call, whatever the number of rows.
//
// The kernel exists three times: generic x86-64 (SSE2), AVX2 and AVX-512 (chosen at run time
// with __builtin_cpu_supports). All perform the same fp32 operations on the same lanes, without
// FMA, so their results are identical; only the register width (4, 8 or all 16 lanes of an
// element in one register) and so the tile shapes differ. Stored weights need AVX2 for their
// vector decoders, which the AVX-512 kernel uses too.
#pragma once

#include <cstdint>
#include <span>

#include "cpu_ref/weight_matrix.h"

namespace pagedllm::cpu_ref {

enum class LinearKernel {
  best,     // the widest of the ones below the CPU has
  generic,  // baseline x86-64 (SSE2) code
  avx2,     // requires the CPU to support AVX2 (checked: PAGEDLLM_ASSERT)
  avx512,   // requires AVX-512F (checked: PAGEDLLM_ASSERT)
};

// Views only: nothing is owned. All matrices are dense and row-major. `y` must not overlap `x`,
// `weight` or `bias`.
struct LinearArgs {
  const float* x = nullptr;     // [num_rows, in_features]
  WeightMatrix weight;          // [out_features, in_features] (nn.Linear layout)
  const float* bias = nullptr;  // [out_features], or nullptr for none
  float* y = nullptr;           // [num_rows, out_features], written
  std::int64_t num_rows = 0;
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  LinearKernel kernel = LinearKernel::best;
};

void linear(const LinearArgs& args);

// Several independent linears (q, k and v of a layer; gate and up) in one OpenMP region: their
// outputs are handed out together, so the threads meet once instead of once per linear. Each
// result is bit-identical to linear() alone. Outputs must not overlap any input.
void linear_each(std::span<const LinearArgs> linears);

// Whether this CPU can run LinearKernel::avx2 (AVX2 and F16C) / avx512; what `best` resolves to.
bool cpu_has_avx2() noexcept;
bool cpu_has_avx512() noexcept;
LinearKernel resolve_linear_kernel(LinearKernel kernel) noexcept;
const char* linear_kernel_name(LinearKernel kernel) noexcept;

}  // namespace pagedllm::cpu_ref
