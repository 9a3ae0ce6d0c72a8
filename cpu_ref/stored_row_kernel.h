// One input row times stored weights, decoded in registers: linear's kernel for a batch of one
// row (a decode step at batch 1), where decoding a tile into memory first would cost a store and
// a load per weight that no other row shares.
//
// Bit-identical to linear's tiled path: each weight is the value weight_decode's dequantizer
// produces (the same format code, block_formats_avx2.h), and each output keeps dot.h's 16 lanes
// (k mod 16), adds in increasing k and folds them with combine_lanes. kStoredRowOuts outputs run
// side by side, so each x vector is loaded once for all of them and their 2 * kStoredRowOuts
// accumulator chains overlap (one output alone waits on its adds' latency).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/model/ggml_type.h"
#include "cpu_ref/linear.h"

namespace pagedllm::cpu_ref {

inline constexpr std::int64_t kStoredRowOuts = 4;

// Computes y[row][o] (+ bias[o]) for o in [o_begin, o_end) straight from a.weight.
using StoredRowFn = void (*)(const LinearArgs& a, std::int64_t row, std::int64_t o_begin, std::int64_t o_end);

// The AVX2 kernel for `type` with rows of `in_features` values, or nullptr where there is none
// (a type without an AVX2 format; F16 / BF16 rows not a multiple of 32 values). The caller must
// check that the CPU has AVX2.
StoredRowFn avx2_stored_row_kernel(model::GgmlType type, std::int64_t in_features) noexcept;

// The AVX-512 kernel (stored_row_kernel_avx512.cpp), or nullptr for a type it does not cover
// (then the AVX2 one serves). An element's 16 lanes sit in one register; 4-bit types decode by
// table: the 16 values a block's nibbles can take, computed once per block with the dequantizer's
// operations, then picked per weight by one permute. The caller must check for AVX-512F.
StoredRowFn avx512_stored_row_kernel(model::GgmlType type) noexcept;

// Both kernels' walk over one row's outputs [o_begin, o_end), kStoredRowOuts at a time: `dot`
// computes y[o] = dot(x, w[o]) over `num_blocks` blocks of Format; past o_end the weight
// pointers repeat the last row (computed, never stored).
template <typename Format, typename DotFn>
inline void for_each_output_group(const LinearArgs& a, std::int64_t row, std::int64_t o_begin, std::int64_t o_end,
                                  DotFn dot) {
  constexpr int O = static_cast<int>(kStoredRowOuts);
  const float* x = a.x + row * a.in_features;
  const auto num_blocks = static_cast<std::size_t>(a.in_features) / Format::kBlockValues;
  float* out = a.y + row * a.out_features;
  for (std::int64_t o0 = o_begin; o0 < o_end; o0 += O) {
    const std::byte* w[O];
    for (int o = 0; o < O; ++o) w[o] = a.weight.data + std::min(o0 + o, o_end - 1) * a.weight.row_bytes;
    float y[O];
    dot(x, w, num_blocks, y);
    for (std::int64_t o = o0; o < std::min(o0 + O, o_end); ++o) out[o] = a.bias ? y[o - o0] + a.bias[o] : y[o - o0];
  }
}

}  // namespace pagedllm::cpu_ref
