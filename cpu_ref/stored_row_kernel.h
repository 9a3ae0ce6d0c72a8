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

}  // namespace pagedllm::cpu_ref
