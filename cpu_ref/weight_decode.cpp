// AVX2 dequantizers, each the vector form of its scalar twin in core/model/dequantize.cpp: the
// same block layout, the same scale products computed once per (sub-)block in scalar code, and
// per value the same fp32 multiply (and add or subtract) with the same operands in the same
// order, never fused (-ffp-contract=off; no "fma" target).
#include "cpu_ref/weight_decode.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/model/half.h"

namespace pagedllm::cpu_ref {
namespace {

#define PAGEDLLM_AVX2 __attribute__((target("avx2")))

inline float load_fp16(const std::byte* bytes) {
  std::uint16_t bits;
  std::memcpy(&bits, bytes, sizeof bits);
  return model::fp16_to_float(bits);
}

inline __m128i load_16_bytes(const std::byte* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// 8 fp16 bit patterns (the low 16 bits of each 32-bit lane) widened exactly as
// model::fp16_to_float: normal values rebiased, Inf and NaN keep their mantissa, zeros and
// subnormals as mantissa * 2^-24 (exact in fp32).
PAGEDLLM_AVX2 inline __m256 fp16_to_float8(__m256i half) {
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(half, _mm256_set1_epi32(0x8000)), 16);
  const __m256i magnitude = _mm256_and_si256(half, _mm256_set1_epi32(0x7fff));
  const __m256i exponent = _mm256_srli_epi32(magnitude, 10);
  const __m256i shifted = _mm256_slli_epi32(magnitude, 13);
  const __m256i normal = _mm256_add_epi32(shifted, _mm256_set1_epi32((127 - 15) << 23));
  const __m256i special = _mm256_or_si256(shifted, _mm256_set1_epi32(0x7f800000));
  const __m256 tiny = _mm256_mul_ps(_mm256_cvtepi32_ps(magnitude), _mm256_set1_ps(0x1p-24f));
  __m256i bits = _mm256_blendv_epi8(normal, special, _mm256_cmpeq_epi32(exponent, _mm256_set1_epi32(0x1f)));
  bits = _mm256_blendv_epi8(bits, _mm256_castps_si256(tiny), _mm256_cmpeq_epi32(exponent, _mm256_setzero_si256()));
  return _mm256_castsi256_ps(_mm256_or_si256(bits, sign));
}

// The fp16 at `first + i * stride` for i < count (at most 8), widened as model::fp16_to_float:
// one vector conversion for the scales of 8 blocks instead of 8 scalar ones.
PAGEDLLM_AVX2 inline void fp16_scales(const std::byte* first, std::size_t stride, std::size_t count, float* out) {
  std::int32_t bits[8] = {};
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t half;
    std::memcpy(&half, first + i * stride, sizeof half);
    bits[i] = half;
  }
  const __m256i packed = _mm256_setr_epi32(bits[0], bits[1], bits[2], bits[3], bits[4], bits[5], bits[6], bits[7]);
  _mm256_storeu_ps(out, fp16_to_float8(packed));
}

// Runs block(src, dst, d[, m]) over the blocks of a 32-value type of `kTypeSize` bytes whose
// fp16 d sits at byte 0 (and, kWithMin, an fp16 m at byte 2); scales converted 8 blocks at a time.
template <std::size_t kTypeSize, bool kWithMin, typename Block>
PAGEDLLM_AVX2 inline void for_each_block32(const std::byte* src, float* dst, std::size_t num_blocks, Block block) {
  for (std::size_t first = 0; first < num_blocks; first += 8) {
    const std::size_t count = num_blocks - first < 8 ? num_blocks - first : 8;
    float d[8];
    float m[8] = {};
    fp16_scales(src + first * kTypeSize, kTypeSize, count, d);
    if constexpr (kWithMin) fp16_scales(src + first * kTypeSize + 2, kTypeSize, count, m);
    for (std::size_t i = 0; i < count; ++i) {
      block(src + (first + i) * kTypeSize, dst + (first + i) * 32, _mm256_set1_ps(d[i]), _mm256_set1_ps(m[i]));
    }
  }
}

// Bytes 0..7 and 8..15 of `v` as 8 fp32 each: signed or unsigned 8-bit integers.
PAGEDLLM_AVX2 inline __m256 low8_signed(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
PAGEDLLM_AVX2 inline __m256 high8_signed(__m128i v) { return low8_signed(_mm_srli_si128(v, 8)); }
PAGEDLLM_AVX2 inline __m256 low8_unsigned(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }
PAGEDLLM_AVX2 inline __m256 high8_unsigned(__m128i v) { return low8_unsigned(_mm_srli_si128(v, 8)); }

PAGEDLLM_AVX2 void decode_f16(const std::byte* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, fp16_to_float8(_mm256_cvtepu16_epi32(load_16_bytes(src + 2 * i))));
  }
  for (; i < n; ++i) dst[i] = load_fp16(src + 2 * i);
}

PAGEDLLM_AVX2 void decode_bf16(const std::byte* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_slli_epi32(_mm256_cvtepu16_epi32(load_16_bytes(src + 2 * i)), 16);
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(bits));
  }
  for (; i < n; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, src + 2 * i, sizeof bits);
    dst[i] = model::bf16_to_float(bits);
  }
}

// Q8_0, 34 bytes: fp16 d, 32 int8; x = q * d.
PAGEDLLM_AVX2 void decode_q8_0(const std::byte* src, float* dst, std::size_t num_blocks) {
  for_each_block32<34, false>(src, dst, num_blocks,
                              [](const std::byte* block, float* out, __m256 d, __m256) PAGEDLLM_AVX2 {
                                for (int half = 0; half < 2; ++half) {
                                  const __m128i q = load_16_bytes(block + 2 + 16 * half);
                                  _mm256_storeu_ps(out + 16 * half, _mm256_mul_ps(low8_signed(q), d));
                                  _mm256_storeu_ps(out + 16 * half + 8, _mm256_mul_ps(high8_signed(q), d));
                                }
                              });
}

// The 16 low nibbles and the 16 high nibbles of 16 bytes.
PAGEDLLM_AVX2 inline void split_nibbles(__m128i bytes, __m128i& low, __m128i& high) {
  const __m128i mask = _mm_set1_epi8(0x0f);
  low = _mm_and_si128(bytes, mask);
  high = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
}

// The 32 values of a block from their unsigned integers (values 0..15 in `low`, 16..31 in
// `high`): d * (q - offset), each product rounded.
PAGEDLLM_AVX2 inline void store_offset_scaled(float* out, __m256 d, __m128i low, __m128i high, char offset) {
  low = _mm_sub_epi8(low, _mm_set1_epi8(offset));
  high = _mm_sub_epi8(high, _mm_set1_epi8(offset));
  _mm256_storeu_ps(out, _mm256_mul_ps(d, low8_signed(low)));
  _mm256_storeu_ps(out + 8, _mm256_mul_ps(d, high8_signed(low)));
  _mm256_storeu_ps(out + 16, _mm256_mul_ps(d, low8_signed(high)));
  _mm256_storeu_ps(out + 24, _mm256_mul_ps(d, high8_signed(high)));
}

// The same as (d * q) + m, the product rounded, then the sum.
PAGEDLLM_AVX2 inline void store_scaled_plus_min(float* out, __m256 d, __m256 m, __m128i low, __m128i high) {
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_mul_ps(d, low8_unsigned(low)), m));
  _mm256_storeu_ps(out + 8, _mm256_add_ps(_mm256_mul_ps(d, high8_unsigned(low)), m));
  _mm256_storeu_ps(out + 16, _mm256_add_ps(_mm256_mul_ps(d, low8_unsigned(high)), m));
  _mm256_storeu_ps(out + 24, _mm256_add_ps(_mm256_mul_ps(d, high8_unsigned(high)), m));
}

// Q4_0, 18 bytes: fp16 d, 16 bytes of nibbles (value j: low nibble of byte j, j + 16: its high
// nibble); x = d * (q - 8).
PAGEDLLM_AVX2 void decode_q4_0(const std::byte* src, float* dst, std::size_t num_blocks) {
  for_each_block32<18, false>(src, dst, num_blocks,
                              [](const std::byte* block, float* out, __m256 d, __m256) PAGEDLLM_AVX2 {
                                __m128i low;
                                __m128i high;
                                split_nibbles(load_16_bytes(block + 2), low, high);
                                store_offset_scaled(out, d, low, high, 8);
                              });
}

// Q4_1, 20 bytes: fp16 d, fp16 m, nibbles as Q4_0; x = (d * q) + m.
PAGEDLLM_AVX2 void decode_q4_1(const std::byte* src, float* dst, std::size_t num_blocks) {
  for_each_block32<20, true>(src, dst, num_blocks,
                             [](const std::byte* block, float* out, __m256 d, __m256 m) PAGEDLLM_AVX2 {
                               __m128i low;
                               __m128i high;
                               split_nibbles(load_16_bytes(block + 4), low, high);
                               store_scaled_plus_min(out, d, m, low, high);
                             });
}

// 16 bits (bit j: value j) as 16 bytes of 0x10 (set) or 0 (clear): the fifth bit of Q5 values.
PAGEDLLM_AVX2 inline __m128i fifth_bits(std::uint32_t bits) {
  const __m128i spread = _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(bits & 0xffffu)),
                                          _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const __m128i select = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(spread, select), select), _mm_set1_epi8(0x10));
}

// The 32 five-bit values of a Q5_0 / Q5_1 block: nibbles as Q4_0, the fifth bit of value j in
// bit j of qh.
PAGEDLLM_AVX2 inline void five_bit_values(const std::byte* qh_bytes, const std::byte* qs, __m128i& low, __m128i& high) {
  std::uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof qh);
  split_nibbles(load_16_bytes(qs), low, high);
  low = _mm_or_si128(low, fifth_bits(qh));
  high = _mm_or_si128(high, fifth_bits(qh >> 16));
}

// Q5_0, 22 bytes: fp16 d, u32 qh, 16 bytes of nibbles; x = d * (q - 16).
PAGEDLLM_AVX2 void decode_q5_0(const std::byte* src, float* dst, std::size_t num_blocks) {
  for_each_block32<22, false>(src, dst, num_blocks,
                              [](const std::byte* block, float* out, __m256 d, __m256) PAGEDLLM_AVX2 {
                                __m128i low;
                                __m128i high;
                                five_bit_values(block + 2, block + 6, low, high);
                                store_offset_scaled(out, d, low, high, 16);
                              });
}

// Q5_1, 24 bytes: fp16 d, fp16 m, u32 qh, 16 bytes of nibbles; x = (d * q) + m.
PAGEDLLM_AVX2 void decode_q5_1(const std::byte* src, float* dst, std::size_t num_blocks) {
  for_each_block32<24, true>(src, dst, num_blocks,
                             [](const std::byte* block, float* out, __m256 d, __m256 m) PAGEDLLM_AVX2 {
                               __m128i low;
                               __m128i high;
                               five_bit_values(block + 4, block + 8, low, high);
                               store_scaled_plus_min(out, d, m, low, high);
                             });
}

// Q4_K, 144 bytes: fp16 d, fp16 dmin, 12 bytes of scales and mins, 128 bytes of nibbles
// (sub-block j: the low (j even) or high (j odd) nibbles of bytes 32 (j / 2) .. +31);
// x = (d * scale) * q - (dmin * min).
PAGEDLLM_AVX2 void decode_q4_k(const std::byte* src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b, src += 144, dst += 256) {
    const float d = load_fp16(src);
    const float dmin = load_fp16(src + 2);
    int scale[8];
    int min[8];
    model::unpack_k_scales(src + 4, scale, min);
    for (int pair = 0; pair < 4; ++pair) {
      const std::byte* qs = src + 16 + 32 * pair;
      for (int half = 0; half < 2; ++half) {  // 16 bytes: values l = 16 * half .. + 15
        __m128i nibbles[2];
        split_nibbles(load_16_bytes(qs + 16 * half), nibbles[0], nibbles[1]);
        for (int odd = 0; odd < 2; ++odd) {
          const int sub = 2 * pair + odd;
          const __m256 dl = _mm256_set1_ps(d * static_cast<float>(scale[sub]));
          const __m256 ml = _mm256_set1_ps(dmin * static_cast<float>(min[sub]));
          float* out = dst + 32 * sub + 16 * half;
          _mm256_storeu_ps(out, _mm256_sub_ps(_mm256_mul_ps(dl, low8_unsigned(nibbles[odd])), ml));
          _mm256_storeu_ps(out + 8, _mm256_sub_ps(_mm256_mul_ps(dl, high8_unsigned(nibbles[odd])), ml));
        }
      }
    }
  }
}

// Q5_K, 176 bytes: fp16 d, fp16 dmin, 12 bytes of scales and mins (as Q4_K), 32 bytes qh, 128
// bytes of nibbles (as Q4_K); sub-block j's fifth bit of value l is bit j of qh[l].
// x = (d * scale) * q - (dmin * min).
PAGEDLLM_AVX2 void decode_q5_k(const std::byte* src, float* dst, std::size_t num_blocks) {
  const __m128i one = _mm_set1_epi8(1);
  for (std::size_t b = 0; b < num_blocks; ++b, src += 176, dst += 256) {
    const float d = load_fp16(src);
    const float dmin = load_fp16(src + 2);
    int scale[8];
    int min[8];
    model::unpack_k_scales(src + 4, scale, min);
    for (int pair = 0; pair < 4; ++pair) {
      const std::byte* qs = src + 48 + 32 * pair;
      for (int half = 0; half < 2; ++half) {  // values l = 16 * half .. + 15
        __m128i nibbles[2];
        split_nibbles(load_16_bytes(qs + 16 * half), nibbles[0], nibbles[1]);
        const __m128i qh = load_16_bytes(src + 16 + 16 * half);
        for (int odd = 0; odd < 2; ++odd) {
          const int sub = 2 * pair + odd;
          const __m128i fifth = _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(qh, _mm_cvtsi32_si128(sub)), one), 4);
          const __m128i q = _mm_or_si128(nibbles[odd], fifth);
          const __m256 dl = _mm256_set1_ps(d * static_cast<float>(scale[sub]));
          const __m256 ml = _mm256_set1_ps(dmin * static_cast<float>(min[sub]));
          float* out = dst + 32 * sub + 16 * half;
          _mm256_storeu_ps(out, _mm256_sub_ps(_mm256_mul_ps(dl, low8_unsigned(q)), ml));
          _mm256_storeu_ps(out + 8, _mm256_sub_ps(_mm256_mul_ps(dl, high8_unsigned(q)), ml));
        }
      }
    }
  }
}

// Q6_K, 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales, fp16 d.
// In each half h of 128 values, value 64n + l takes nibble n of ql[64h + l] and value 32s + l
// bits 2s..2s+1 of qh[32h + l]; x = (d * scale) * (q - 32).
PAGEDLLM_AVX2 void decode_q6_k(const std::byte* src, float* dst, std::size_t num_blocks) {
  const __m128i low_mask = _mm_set1_epi8(0x0f);
  const __m128i high_mask = _mm_set1_epi8(0x03);
  const __m128i thirty_two = _mm_set1_epi8(32);
  for (std::size_t b = 0; b < num_blocks; ++b, src += 210, dst += 256) {
    const float d = load_fp16(src + 208);
    for (int group = 0; group < 16; ++group) {
      const int scale = static_cast<std::int8_t>(std::to_integer<std::uint8_t>(src[192 + group]));
      const __m256 dl = _mm256_set1_ps(d * static_cast<float>(scale));
      const int half = group / 8;
      const int within = (group % 8) * 16;
      const __m128i low_shift = _mm_cvtsi32_si128(4 * (within / 64));
      const __m128i high_shift = _mm_cvtsi32_si128(2 * (within / 32));
      const __m128i low =
          _mm_and_si128(_mm_srl_epi16(load_16_bytes(src + half * 64 + within % 64), low_shift), low_mask);
      const __m128i high =
          _mm_and_si128(_mm_srl_epi16(load_16_bytes(src + 128 + half * 32 + within % 32), high_shift), high_mask);
      const __m128i q = _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), thirty_two);
      _mm256_storeu_ps(dst + 16 * group, _mm256_mul_ps(dl, low8_signed(q)));
      _mm256_storeu_ps(dst + 16 * group + 8, _mm256_mul_ps(dl, high8_signed(q)));
    }
  }
}

#undef PAGEDLLM_AVX2

}  // namespace

model::DequantizeBlocksFn avx2_blocks_dequantizer(model::GgmlType type) noexcept {
  switch (type) {
    case model::GgmlType::f16:
      return decode_f16;
    case model::GgmlType::bf16:
      return decode_bf16;
    case model::GgmlType::q8_0:
      return decode_q8_0;
    case model::GgmlType::q4_0:
      return decode_q4_0;
    case model::GgmlType::q4_1:
      return decode_q4_1;
    case model::GgmlType::q5_0:
      return decode_q5_0;
    case model::GgmlType::q5_1:
      return decode_q5_1;
    case model::GgmlType::q4_k:
      return decode_q4_k;
    case model::GgmlType::q5_k:
      return decode_q5_k;
    case model::GgmlType::q6_k:
      return decode_q6_k;
    default:
      return nullptr;
  }
}

model::DequantizeBlocksFn weight_dequantizer(model::GgmlType type, bool avx2) noexcept {
  const model::DequantizeBlocksFn vector = avx2 ? avx2_blocks_dequantizer(type) : nullptr;
  return vector != nullptr ? vector : model::blocks_dequantizer(type);
}

}  // namespace pagedllm::cpu_ref
