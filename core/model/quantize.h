// fp32 -> ggml tensor types, for writing GGUF files (`pagedllm make-model`).
//
// Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 follow gguf-py's numpy `gguf.quants.quantize` bit for bit (the
// same scale choice, fp32 rounding order and rounding of each value); F16 and BF16 round to
// nearest even as numpy's float16 cast and gguf-py's BF16 do; F32 is a copy. The K-quants are not
// quantizable: gguf-py has no quantizer for them to follow.
//
// One known difference: a Q4_1/Q5_1 block whose minimum is zero and that holds both +0.0 and -0.0
// stores the first of them as its min, while numpy's SIMD reduction picks either (the choice
// depends on positions and on the CPU's code path); the two files then differ in that sign bit.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/model/ggml_type.h"

namespace pagedllm::model {

// Whether quantize_row accepts `type`.
bool is_quantizable(GgmlType type) noexcept;

// Quantizes src.size() values into dst, which must hold exactly src.size() / block_size blocks.
// Throws std::invalid_argument when src.size() is not a multiple of the block size, dst has
// another size, or the type is not quantizable.
void quantize_row(GgmlType type, std::span<const float> src, std::span<std::byte> dst);

// As quantize_row, into a new buffer of the right size.
std::vector<std::byte> quantize(GgmlType type, std::span<const float> src);

}  // namespace pagedllm::model
