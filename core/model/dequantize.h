// ggml tensor types -> fp32 (and bf16 for the GPU executor).
//
// The results equal gguf-py's `gguf.quants.dequantize` bit for bit (tests/pypi/check_dequant.py):
// every product and sum is rounded to fp32 in the same order as its numpy code, never fused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/model/ggml_type.h"
#include "core/model/gguf_file.h"

namespace pagedllm::model {

// Dequantizes `num_blocks` whole blocks of one type from src into dst, unchecked: the inner loop of
// dequantize_row and of cpu_ref's kernels that decode weights as they compute (so both produce
// the same values, bit for bit).
using DequantizeBlocksFn = void (*)(const std::byte* src, float* dst, std::size_t num_blocks);

// The dequantizer of a dequantizable type; nullptr for any other.
DequantizeBlocksFn blocks_dequantizer(GgmlType type) noexcept;

// The 6-bit scales and mins of Q4_K and Q5_K, 8 of each in 12 bytes: for j < 4, scale j is the
// low 6 bits of byte j and min j those of byte j + 4; for j >= 4 the low 4 bits come from the
// nibbles of byte j + 4 (scale low, min high) and the top 2 bits from bits 6..7 of byte j - 4
// (scale) and j (min).
void unpack_k_scales(const std::byte* packed, int* scale, int* min) noexcept;

// Dequantizes dst.size() values of `type` from src, which must hold exactly
// dst.size() / block_size blocks. Throws std::invalid_argument when dst.size() is not a multiple
// of the block size, src has another size, or the type is not dequantizable.
void dequantize_row(GgmlType type, std::span<const std::byte> src, std::span<float> dst);

// The traits of a GGUF tensor's type when pagedllm can decode it; otherwise ModelFormatError
// naming the file, the tensor and its type.
GgmlTypeTraits dequantizable_traits(const GgufFile& file, const GgufTensorInfo& tensor);

// A whole tensor of a GGUF file, in the file's element order (dims[0] varies fastest).
// Throws ModelFormatError naming the file and tensor when its type is not dequantizable.
std::vector<float> dequantize_tensor(const GgufFile& file, const GgufTensorInfo& tensor);

// As dequantize_tensor, each value then rounded to bf16 (nearest even).
std::vector<std::uint16_t> dequantize_tensor_bf16(const GgufFile& file, const GgufTensorInfo& tensor);

}  // namespace pagedllm::model
