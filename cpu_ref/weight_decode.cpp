// AVX2 dequantizers: each type's blocks decoded by its format in block_formats_avx2.h (the vector
// form of its scalar twin in core/model/dequantize.cpp) and stored.
#include "cpu_ref/weight_decode.h"

#include <cstdint>
#include <cstring>

#include "cpu_ref/block_formats_avx2.h"

namespace pagedllm::cpu_ref {
namespace {

PAGEDLLM_AVX2 void decode_f16(const std::byte* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, avx2::fp16x8_to_float8(avx2::load_16_bytes(src + 2 * i)));
  }
  for (; i < n; ++i) dst[i] = avx2::load_fp16(src + 2 * i);
}

PAGEDLLM_AVX2 void decode_bf16(const std::byte* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_slli_epi32(_mm256_cvtepu16_epi32(avx2::load_16_bytes(src + 2 * i)), 16);
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(bits));
  }
  for (; i < n; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, src + 2 * i, sizeof bits);
    dst[i] = model::bf16_to_float(bits);
  }
}

template <typename F>
PAGEDLLM_AVX2 void decode(const std::byte* src, float* dst, std::size_t num_blocks) {
  avx2::decode_blocks<F>(src, dst, num_blocks);
}

}  // namespace

model::DequantizeBlocksFn avx2_blocks_dequantizer(model::GgmlType type) noexcept {
  switch (type) {
    case model::GgmlType::f16:
      return decode_f16;
    case model::GgmlType::bf16:
      return decode_bf16;
    case model::GgmlType::q8_0:
      return decode<avx2::Q8_0Format>;
    case model::GgmlType::q4_0:
      return decode<avx2::Q4_0Format>;
    case model::GgmlType::q4_1:
      return decode<avx2::Q4_1Format>;
    case model::GgmlType::q5_0:
      return decode<avx2::Q5_0Format>;
    case model::GgmlType::q5_1:
      return decode<avx2::Q5_1Format>;
    case model::GgmlType::q4_k:
      return decode<avx2::Q4_KFormat>;
    case model::GgmlType::q5_k:
      return decode<avx2::Q5_KFormat>;
    case model::GgmlType::q6_k:
      return decode<avx2::Q6_KFormat>;
    default:
      return nullptr;
  }
}

model::DequantizeBlocksFn weight_dequantizer(model::GgmlType type, bool avx2) noexcept {
  const model::DequantizeBlocksFn vector = avx2 ? avx2_blocks_dequantizer(type) : nullptr;
  return vector != nullptr ? vector : model::blocks_dequantizer(type);
}

}  // namespace pagedllm::cpu_ref
