// The stored weight types as AVX2 registers: each type's one definition of how 32 consecutive
// values of a row come out of its blocks, used both to decode into memory (weight_decode.cpp)
// and to multiply straight from the stored bytes (stored_row_kernel.cpp).
//
// Every value is the one model::blocks_dequantizer's scalar code produces: the same scale
// products computed once per (sub-)block in scalar code, then per value the same fp32 multiply
// (and add or subtract) on the same operands in the same order, each rounded, never fused
// (-ffp-contract=off; no "fma" target). Integer work unpacks the bits.
//
// A format F describes a row as a sequence of blocks of F::kBlockValues values (F::kBlockBytes
// bytes each) and provides:
//   F::Scales                       the scale values of up to kGroupBlocks consecutive blocks
//   F::scales(first, count, s)      computes them for blocks first[0 .. count)
//   F::chunk(block, s, i, c, v)     values [32c, 32c + 32) of block i of the group (at `block`),
//                                   as four vectors of 8 in order
// Internal to cpu_ref: include only from files compiled for x86-64.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/model/dequantize.h"
#include "core/model/half.h"

// F16C comes with every AVX2 CPU (cpu_has_avx2 checks for both).
#define PAGEDLLM_AVX2 __attribute__((target("avx2,f16c")))

namespace pagedllm::cpu_ref::avx2 {

inline float load_fp16(const std::byte* bytes) {
  std::uint16_t bits;
  std::memcpy(&bits, bytes, sizeof bits);
  return model::fp16_to_float(bits);
}

PAGEDLLM_AVX2 inline __m128i load_16_bytes(const std::byte* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// 8 fp16 bit patterns (the low 16 bits of each 32-bit lane) widened exactly as
// model::fp16_to_float, bit by bit: normal values rebiased, Inf and NaN keep their mantissa, zeros
// and subnormals as mantissa * 2^-24 (exact in fp32).
PAGEDLLM_AVX2 inline __m256 fp16_bits_to_float8(__m256i half) {
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

// 8 packed fp16 values widened exactly as model::fp16_to_float. F16C's conversion is exact and
// agrees with it on every pattern but the signalling NaNs, whose quiet bit it sets (fp16_to_float
// keeps the mantissa as it is), so a vector with a NaN in it is redone bit by bit: a compare and a
// branch that real weights never take. The bit-level path alone cost 12 operations per 8 values;
// widening the scales that way took about a fifth of the batch-1 Q4_1 kernel's time.
PAGEDLLM_AVX2 inline __m256 fp16x8_to_float8(__m128i halves) {
  const __m256 widened = _mm256_cvtph_ps(halves);
  const __m256 nan = _mm256_cmp_ps(widened, widened, _CMP_UNORD_Q);
  if (_mm256_testz_ps(nan, nan)) [[likely]]
    return widened;
  return fp16_bits_to_float8(_mm256_cvtepu16_epi32(halves));
}

// The 32-bit words at `first + i * stride` for i < count (at most 8; zeros after): the first two
// fp16 of 8 blocks (a 32-value block has at least 18 bytes), loaded at once. A full group, the
// common case, is unrolled so the words go straight into the vector.
PAGEDLLM_AVX2 inline __m256i block_words(const std::byte* first, std::size_t stride, std::size_t count) {
  std::uint32_t words[8] = {};
  if (count == 8) {
    for (std::size_t i = 0; i < 8; ++i) std::memcpy(&words[i], first + i * stride, sizeof(std::uint32_t));
  } else {
    for (std::size_t i = 0; i < count; ++i) std::memcpy(&words[i], first + i * stride, sizeof(std::uint32_t));
  }
  return _mm256_setr_epi32(static_cast<int>(words[0]), static_cast<int>(words[1]), static_cast<int>(words[2]),
                           static_cast<int>(words[3]), static_cast<int>(words[4]), static_cast<int>(words[5]),
                           static_cast<int>(words[6]), static_cast<int>(words[7]));
}

// Bytes 0..7 and 8..15 of `v` as 8 fp32 each: signed or unsigned 8-bit integers.
PAGEDLLM_AVX2 inline __m256 low8_signed(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
PAGEDLLM_AVX2 inline __m256 high8_signed(__m128i v) { return low8_signed(_mm_srli_si128(v, 8)); }
PAGEDLLM_AVX2 inline __m256 low8_unsigned(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }
PAGEDLLM_AVX2 inline __m256 high8_unsigned(__m128i v) { return low8_unsigned(_mm_srli_si128(v, 8)); }

// The 16 low nibbles and the 16 high nibbles of 16 bytes.
PAGEDLLM_AVX2 inline void split_nibbles(__m128i bytes, __m128i& low, __m128i& high) {
  const __m128i mask = _mm_set1_epi8(0x0f);
  low = _mm_and_si128(bytes, mask);
  high = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
}

// The low (or high) nibbles of the 8 bytes at `p` as 8 32-bit integers: the bytes widened as they
// are loaded, then one mask (or shift) per 8 values.
PAGEDLLM_AVX2 inline __m256i low_nibbles8(const std::byte* p) {
  return _mm256_and_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))),
                          _mm256_set1_epi32(0x0f));
}
PAGEDLLM_AVX2 inline __m256i high_nibbles8(const std::byte* p) {
  return _mm256_srli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))), 4);
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

// The 32 values of a block from their unsigned integers (values 0..15 in `low`, 16..31 in
// `high`): d * (q - offset), each product rounded.
PAGEDLLM_AVX2 inline void offset_scaled(__m256 d, __m128i low, __m128i high, char offset, __m256 (&v)[4]) {
  low = _mm_sub_epi8(low, _mm_set1_epi8(offset));
  high = _mm_sub_epi8(high, _mm_set1_epi8(offset));
  v[0] = _mm256_mul_ps(d, low8_signed(low));
  v[1] = _mm256_mul_ps(d, high8_signed(low));
  v[2] = _mm256_mul_ps(d, low8_signed(high));
  v[3] = _mm256_mul_ps(d, high8_signed(high));
}

// The same as (d * q) + m, the product rounded, then the sum.
PAGEDLLM_AVX2 inline void scaled_plus_min(__m256 d, __m256 m, __m128i low, __m128i high, __m256 (&v)[4]) {
  v[0] = _mm256_add_ps(_mm256_mul_ps(d, low8_unsigned(low)), m);
  v[1] = _mm256_add_ps(_mm256_mul_ps(d, high8_unsigned(low)), m);
  v[2] = _mm256_add_ps(_mm256_mul_ps(d, low8_unsigned(high)), m);
  v[3] = _mm256_add_ps(_mm256_mul_ps(d, high8_unsigned(high)), m);
}

// Types of 32-value blocks whose fp16 d sits at byte 0 (and, kWithMin, an fp16 m at byte 2):
// scales widened 8 blocks at a time.
template <std::size_t kTypeSize, bool kWithMin>
struct Block32Scales {
  static constexpr std::size_t kBlockBytes = kTypeSize;
  static constexpr std::size_t kBlockValues = 32;
  static constexpr std::size_t kGroupBlocks = 8;
  struct Scales {
    float d[8];
    float m[8];
  };
  PAGEDLLM_AVX2 static void scales(const std::byte* first, std::size_t count, Scales& s) {
    const __m256i words = block_words(first, kTypeSize, count);  // d in the low half, m (or data) high
    // Each 128-bit lane's low halves to its low 8 bytes, high halves to its high 8 bytes; then the
    // quadwords in order d0-3, d4-7, m0-3, m4-7.
    const __m256i split =
        _mm256_shuffle_epi8(words, _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8,
                                                    9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
    const __m256i halves = _mm256_permute4x64_epi64(split, 0xd8);
    _mm256_storeu_ps(s.d, fp16x8_to_float8(_mm256_castsi256_si128(halves)));
    if constexpr (kWithMin) _mm256_storeu_ps(s.m, fp16x8_to_float8(_mm256_extracti128_si256(halves, 1)));
  }
};

// Q8_0, 34 bytes: fp16 d, 32 int8; x = q * d.
struct Q8_0Format : Block32Scales<34, false> {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales& s, std::size_t i, int, __m256 (&v)[4]) {
    const __m256 d = _mm256_set1_ps(s.d[i]);
    for (int j = 0; j < 4; ++j) {  // 8 int8, widened as they are loaded
      const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * j)));
      v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(q), d);
    }
  }
};

// Q4_0, 18 bytes: fp16 d, 16 bytes of nibbles (value j: low nibble of byte j, j + 16: its high
// nibble); x = d * (q - 8).
struct Q4_0Format : Block32Scales<18, false> {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales& s, std::size_t i, int, __m256 (&v)[4]) {
    const __m256 d = _mm256_set1_ps(s.d[i]);
    const __m256i eight = _mm256_set1_epi32(8);
    const std::byte* qs = block + 2;
    v[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(low_nibbles8(qs), eight)));
    v[1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(low_nibbles8(qs + 8), eight)));
    v[2] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(high_nibbles8(qs), eight)));
    v[3] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(high_nibbles8(qs + 8), eight)));
  }
};

// Q4_1, 20 bytes: fp16 d, fp16 m, nibbles as Q4_0; x = (d * q) + m.
struct Q4_1Format : Block32Scales<20, true> {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales& s, std::size_t i, int, __m256 (&v)[4]) {
    const __m256 d = _mm256_set1_ps(s.d[i]);
    const __m256 m = _mm256_set1_ps(s.m[i]);
    const std::byte* qs = block + 4;
    v[0] = _mm256_add_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(low_nibbles8(qs))), m);
    v[1] = _mm256_add_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(low_nibbles8(qs + 8))), m);
    v[2] = _mm256_add_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(high_nibbles8(qs))), m);
    v[3] = _mm256_add_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(high_nibbles8(qs + 8))), m);
  }
};

// Q5_0, 22 bytes: fp16 d, u32 qh, 16 bytes of nibbles; x = d * (q - 16).
struct Q5_0Format : Block32Scales<22, false> {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales& s, std::size_t i, int, __m256 (&v)[4]) {
    __m128i low;
    __m128i high;
    five_bit_values(block + 2, block + 6, low, high);
    offset_scaled(_mm256_set1_ps(s.d[i]), low, high, 16, v);
  }
};

// Q5_1, 24 bytes: fp16 d, fp16 m, u32 qh, 16 bytes of nibbles; x = (d * q) + m.
struct Q5_1Format : Block32Scales<24, true> {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales& s, std::size_t i, int, __m256 (&v)[4]) {
    __m128i low;
    __m128i high;
    five_bit_values(block + 4, block + 8, low, high);
    scaled_plus_min(_mm256_set1_ps(s.d[i]), _mm256_set1_ps(s.m[i]), low, high, v);
  }
};

// The scale and min products of a Q4_K / Q5_K block's 8 sub-blocks of 32: d * scale, dmin * min.
struct KScales {
  float dl[8];
  float ml[8];
};
// The 8 six-bit scales and mins of a Q4_K / Q5_K block's bytes 4..15 (model::unpack_k_scales'
// layout: scale j and min j of the first four sit in the low 6 bits of bytes j and j + 4; of the
// last four, the low and high nibbles of byte j + 8 hold their low 4 bits and the top 2 bits of
// bytes j and j + 4 their high 2), unpacked 4 at a time in 32-bit words, then widened and
// multiplied 8 at a time: the same products as the scalar code's, without its 16 byte-by-byte
// unpacks and 16 scalar multiplies per block and output.
PAGEDLLM_AVX2 inline void k_scales(const std::byte* block, KScales& s) {
  std::uint32_t words[4];  // fp16 d and dmin, then the 12 bytes of scales and mins
  std::memcpy(words, block, sizeof words);
  const __m256 d_dmin = fp16x8_to_float8(_mm_cvtsi32_si128(static_cast<int>(words[0])));
  const std::uint32_t low6 = 0x3f3f3f3fu;
  const std::uint32_t low4 = 0x0f0f0f0fu;
  const std::uint32_t top2 = 0x30303030u;  // bits 6-7 of each byte, shifted down by 2
  const std::uint64_t scales = (words[1] & low6) | std::uint64_t{(words[3] & low4) | ((words[1] >> 2) & top2)} << 32;
  const std::uint64_t mins = (words[2] & low6) | std::uint64_t{((words[3] >> 4) & low4) | ((words[2] >> 2) & top2)}
                                                     << 32;
  const __m256 d = _mm256_permutevar8x32_ps(d_dmin, _mm256_setzero_si256());
  const __m256 dmin = _mm256_permutevar8x32_ps(d_dmin, _mm256_set1_epi32(1));
  _mm256_storeu_ps(s.dl, _mm256_mul_ps(d, low8_unsigned(_mm_cvtsi64_si128(static_cast<long long>(scales)))));
  _mm256_storeu_ps(s.ml, _mm256_mul_ps(dmin, low8_unsigned(_mm_cvtsi64_si128(static_cast<long long>(mins)))));
}

// Q4_K and Q5_K: 256-value blocks of `kTypeSize` bytes, scales unpacked a block at a time.
template <std::size_t kTypeSize>
struct KBlockScales {
  static constexpr std::size_t kBlockBytes = kTypeSize;
  static constexpr std::size_t kBlockValues = 256;
  static constexpr std::size_t kGroupBlocks = 1;
  using Scales = KScales;
  PAGEDLLM_AVX2 static void scales(const std::byte* first, std::size_t, Scales& s) { k_scales(first, s); }
};

// Q4_K, 144 bytes: fp16 d, fp16 dmin, 12 bytes of scales and mins, 128 bytes of nibbles
// (sub-block j: the low (j even) or high (j odd) nibbles of bytes 32 (j / 2) .. +31);
// x = (d * scale) * q - (dmin * min). A chunk is a sub-block.
struct Q4_KFormat : KBlockScales<144> {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales& s, std::size_t, int sub, __m256 (&v)[4]) {
    const std::byte* qs = block + 16 + 32 * (sub / 2);
    const __m256 dl = _mm256_set1_ps(s.dl[sub]);
    const __m256 ml = _mm256_set1_ps(s.ml[sub]);
    for (int j = 0; j < 4; ++j) {  // values 8j .. 8j + 7 of the sub-block
      const __m256i q = sub % 2 == 0 ? low_nibbles8(qs + 8 * j) : high_nibbles8(qs + 8 * j);
      v[j] = _mm256_sub_ps(_mm256_mul_ps(dl, _mm256_cvtepi32_ps(q)), ml);
    }
  }
};

// Q5_K, 176 bytes: fp16 d, fp16 dmin, 12 bytes of scales and mins (as Q4_K), 32 bytes qh, 128
// bytes of nibbles (as Q4_K); sub-block j's fifth bit of value l is bit j of qh[l].
// x = (d * scale) * q - (dmin * min). A chunk is a sub-block.
struct Q5_KFormat : KBlockScales<176> {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales& s, std::size_t, int sub, __m256 (&v)[4]) {
    const std::byte* qs = block + 48 + 32 * (sub / 2);
    const __m256 dl = _mm256_set1_ps(s.dl[sub]);
    const __m256 ml = _mm256_set1_ps(s.ml[sub]);
    const __m128i one = _mm_set1_epi8(1);
    for (int half = 0; half < 2; ++half) {  // values l = 16 * half .. + 15 of the sub-block
      __m128i nibbles[2];
      split_nibbles(load_16_bytes(qs + 16 * half), nibbles[0], nibbles[1]);
      const __m128i qh = load_16_bytes(block + 16 + 16 * half);
      const __m128i fifth = _mm_slli_epi16(_mm_and_si128(_mm_srl_epi16(qh, _mm_cvtsi32_si128(sub)), one), 4);
      const __m128i q = _mm_or_si128(nibbles[sub % 2], fifth);
      v[2 * half] = _mm256_sub_ps(_mm256_mul_ps(dl, low8_unsigned(q)), ml);
      v[2 * half + 1] = _mm256_sub_ps(_mm256_mul_ps(dl, high8_unsigned(q)), ml);
    }
  }
};

// Q6_K, 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales, fp16 d.
// In each half h of 128 values, value 64n + l takes nibble n of ql[64h + l] and value 32s + l
// bits 2s..2s+1 of qh[32h + l]; x = (d * scale) * (q - 32), one scale per 16 values.
struct Q6_KFormat {
  static constexpr std::size_t kBlockBytes = 210;
  static constexpr std::size_t kBlockValues = 256;
  static constexpr std::size_t kGroupBlocks = 1;
  struct Scales {
    float dl[16];
  };
  PAGEDLLM_AVX2 static void scales(const std::byte* first, std::size_t, Scales& s) {
    const __m256 d = _mm256_set1_ps(load_fp16(first + 208));
    const __m128i scales = load_16_bytes(first + 192);              // 16 int8
    _mm256_storeu_ps(s.dl, _mm256_mul_ps(d, low8_signed(scales)));  // d * scale, 8 at a time
    _mm256_storeu_ps(s.dl + 8, _mm256_mul_ps(d, high8_signed(scales)));
  }
  // q - 32 of the 16 values of scale group `group` (values 16 group .. + 15), as int8.
  PAGEDLLM_AVX2 static __m128i group_values(const std::byte* block, int group) {
    const int half = group / 8;
    const int within = (group % 8) * 16;
    const __m128i low_shift = _mm_cvtsi32_si128(4 * (within / 64));
    const __m128i high_shift = _mm_cvtsi32_si128(2 * (within / 32));
    const __m128i low =
        _mm_and_si128(_mm_srl_epi16(load_16_bytes(block + half * 64 + within % 64), low_shift), _mm_set1_epi8(0x0f));
    const __m128i high = _mm_and_si128(_mm_srl_epi16(load_16_bytes(block + 128 + half * 32 + within % 32), high_shift),
                                       _mm_set1_epi8(0x03));
    return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
  }
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales& s, std::size_t, int c, __m256 (&v)[4]) {
    for (int part = 0; part < 2; ++part) {  // 16 values each, one scale
      const int group = 2 * c + part;
      const __m128i q = group_values(block, group);
      const __m256 dl = _mm256_set1_ps(s.dl[group]);
      v[2 * part] = _mm256_mul_ps(dl, low8_signed(q));
      v[2 * part + 1] = _mm256_mul_ps(dl, high8_signed(q));
    }
  }
};

// F16 and BF16 have no blocks or scales; a "block" here is 32 values, so a row of them must be a
// whole number of 32 (the store path decodes any length).
struct HalfBlocks {
  static constexpr std::size_t kBlockBytes = 64;
  static constexpr std::size_t kBlockValues = 32;
  static constexpr std::size_t kGroupBlocks = 1;
  struct Scales {};
  static void scales(const std::byte*, std::size_t, Scales&) {}
};

struct F16Format : HalfBlocks {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales&, std::size_t, int, __m256 (&v)[4]) {
    for (int j = 0; j < 4; ++j) v[j] = fp16x8_to_float8(load_16_bytes(block + 16 * j));
  }
};

struct BF16Format : HalfBlocks {
  PAGEDLLM_AVX2 static void chunk(const std::byte* block, const Scales&, std::size_t, int, __m256 (&v)[4]) {
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load_16_bytes(block + 16 * j)), 16));
    }
  }
};

// Decodes `num_blocks` blocks at `src` into `dst` (num_blocks * F::kBlockValues floats).
template <typename F>
PAGEDLLM_AVX2 inline void decode_blocks(const std::byte* src, float* dst, std::size_t num_blocks) {
  for (std::size_t first = 0; first < num_blocks; first += F::kGroupBlocks) {
    const std::size_t count = num_blocks - first < F::kGroupBlocks ? num_blocks - first : F::kGroupBlocks;
    typename F::Scales s;
    F::scales(src + first * F::kBlockBytes, count, s);
    for (std::size_t i = 0; i < count; ++i) {
      const std::byte* block = src + (first + i) * F::kBlockBytes;
      float* out = dst + (first + i) * F::kBlockValues;
      for (int c = 0; c < static_cast<int>(F::kBlockValues / 32); ++c) {
        __m256 v[4];
        F::chunk(block, s, i, c, v);
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(out + 32 * c + 8 * j, v[j]);
      }
    }
  }
}

}  // namespace pagedllm::cpu_ref::avx2
