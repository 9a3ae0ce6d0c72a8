// The dequantizers cpu_ref's kernels decode stored weights with.
//
// For F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K an AVX2 version: the same fp32
// operations as model::blocks_dequantizer's scalar code (the same scale products, then the same
// multiply and add per value, each rounded; integer work for the unpacking and for F16's
// widening), so the values are bit-identical, NaN payloads included; only the number of values
// one instruction covers differs. tests/cpu_ref/test_weight_decode.cpp checks every one against
// the scalar code on random blocks, all 65536 F16 patterns included.
#pragma once

#include "core/model/dequantize.h"
#include "core/model/ggml_type.h"

namespace pagedllm::cpu_ref {

// The AVX2 dequantizer of `type`, or nullptr where there is none (the caller must check that the
// CPU has AVX2 before calling it).
model::DequantizeBlocksFn avx2_blocks_dequantizer(model::GgmlType type) noexcept;

// What a kernel decodes `type` with: the AVX2 version when `avx2` and one exists, else the
// scalar one (nullptr for a type that cannot be dequantized).
model::DequantizeBlocksFn weight_dequantizer(model::GgmlType type, bool avx2) noexcept;

}  // namespace pagedllm::cpu_ref
