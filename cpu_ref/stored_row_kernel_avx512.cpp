// stored_row_kernel.h's AVX-512 kernels: one register holds an output's 16 dot lanes, and 32
// weights arrive as two 16-value vectors (values 16c .. 16c + 15 go to lanes 0..15 in order of k,
// exactly dot.h's lanes).
//
// The 4-bit types decode by table. Every nibble q of a Q4_0 / Q4_1 block, or of a Q4_K sub-block,
// decodes to f(q) = d * (q - 8), (d * q) + m or (dl * q) - ml: 16 possible values, computed for
// q = 0..15 with the dequantizer's own operations and operand order (so each is bit-identical to
// what it decodes to there), once per block, then picked for each weight by vpermps. That
// replaces a conversion, a multiply and an add per weight with one permute. The 5-bit types
// (Q5_0, Q5_1: d * (q - 16), (d * q) + m) do the same with 32 values in two registers and
// vpermt2ps. Q8_0 is converted directly.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge source, which its own
// -Wmaybe-uninitialized then flags once inlined (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu_ref/block_formats_avx2.h"
#include "cpu_ref/dot.h"
#include "cpu_ref/stored_row_kernel.h"

#define PAGEDLLM_AVX512 __attribute__((target("avx512f,f16c")))  // F16C: block_formats_avx2.h widens scales with it

namespace pagedllm::cpu_ref {
namespace {

// The 16 bytes at `p` widened to 16 int32 as they are loaded.
PAGEDLLM_AVX512 inline __m512i bytes16(const std::byte* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

PAGEDLLM_AVX512 inline __m512i low_nibbles16(const std::byte* p) {
  return _mm512_and_si512(bytes16(p), _mm512_set1_epi32(0x0f));
}
PAGEDLLM_AVX512 inline __m512i high_nibbles16(const std::byte* p) { return _mm512_srli_epi32(bytes16(p), 4); }

// q = 0..15 as floats, and q - 8.
PAGEDLLM_AVX512 inline __m512 nibble_values() {
  return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
PAGEDLLM_AVX512 inline __m512 offset_nibble_values() {
  return _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
}

// Each format: the AVX2 format's block layout and scales, and chunk c of block i (values
// 32c .. 32c + 31) as two vectors of 16.
struct Q4_0Table : avx2::Q4_0Format {
  PAGEDLLM_AVX512 static void chunk16(const std::byte* block, const Scales& s, std::size_t i, int, __m512 (&v)[2]) {
    const __m512 table = _mm512_mul_ps(_mm512_set1_ps(s.d[i]), offset_nibble_values());  // d * (q - 8)
    v[0] = _mm512_permutexvar_ps(low_nibbles16(block + 2), table);
    v[1] = _mm512_permutexvar_ps(high_nibbles16(block + 2), table);
  }
};

struct Q4_1Table : avx2::Q4_1Format {
  PAGEDLLM_AVX512 static void chunk16(const std::byte* block, const Scales& s, std::size_t i, int, __m512 (&v)[2]) {
    const __m512 table =
        _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(s.d[i]), nibble_values()), _mm512_set1_ps(s.m[i]));  // (d * q) + m
    v[0] = _mm512_permutexvar_ps(low_nibbles16(block + 4), table);
    v[1] = _mm512_permutexvar_ps(high_nibbles16(block + 4), table);
  }
};

// The 5-bit types: q = nibble | fifth bit << 4 takes 32 values, so the table spans two registers
// and vpermt2ps picks from both (index bit 4 chooses the register). The fifth bits of 16 values
// go in as a mask: one masked OR sets bit 4 of the indices whose bit in qh is set.
PAGEDLLM_AVX512 inline void five_bit_indices16(const std::byte* qs, std::uint32_t qh, __m512i (&q)[2]) {
  const __m512i bytes = bytes16(qs);
  const __m512i sixteen = _mm512_set1_epi32(16);
  const __m512i low = _mm512_and_si512(bytes, _mm512_set1_epi32(0x0f));
  const __m512i high = _mm512_srli_epi32(bytes, 4);
  q[0] = _mm512_mask_or_epi32(low, static_cast<__mmask16>(qh & 0xffffu), low, sixteen);  // values 0..15
  q[1] = _mm512_mask_or_epi32(high, static_cast<__mmask16>(qh >> 16), high, sixteen);    // values 16..31
}

PAGEDLLM_AVX512 inline std::uint32_t load_u32(const std::byte* p) {
  std::uint32_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

struct Q5_0Table : avx2::Q5_0Format {
  PAGEDLLM_AVX512 static void chunk16(const std::byte* block, const Scales& s, std::size_t i, int, __m512 (&v)[2]) {
    const __m512 d = _mm512_set1_ps(s.d[i]);
    // d * (q - 16): q - 16 runs -16..-1 over q = 0..15 and 0..15 over q = 16..31.
    const __m512 low_table = _mm512_mul_ps(d, _mm512_sub_ps(nibble_values(), _mm512_set1_ps(16)));
    const __m512 high_table = _mm512_mul_ps(d, nibble_values());
    __m512i q[2];
    five_bit_indices16(block + 6, load_u32(block + 2), q);
    for (int half = 0; half < 2; ++half) v[half] = _mm512_permutex2var_ps(low_table, q[half], high_table);
  }
};

struct Q5_1Table : avx2::Q5_1Format {
  PAGEDLLM_AVX512 static void chunk16(const std::byte* block, const Scales& s, std::size_t i, int, __m512 (&v)[2]) {
    const __m512 d = _mm512_set1_ps(s.d[i]);
    const __m512 m = _mm512_set1_ps(s.m[i]);
    const __m512 low_table = _mm512_add_ps(_mm512_mul_ps(d, nibble_values()), m);  // (d * q) + m, q = 0..15
    const __m512 high_table =
        _mm512_add_ps(_mm512_mul_ps(d, _mm512_add_ps(nibble_values(), _mm512_set1_ps(16))), m);  // q = 16..31
    __m512i q[2];
    five_bit_indices16(block + 8, load_u32(block + 4), q);
    for (int half = 0; half < 2; ++half) v[half] = _mm512_permutex2var_ps(low_table, q[half], high_table);
  }
};

struct Q4_KTable : avx2::Q4_KFormat {
  PAGEDLLM_AVX512 static void chunk16(const std::byte* block, const Scales& s, std::size_t, int sub, __m512 (&v)[2]) {
    const __m512 table = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(s.dl[sub]), nibble_values()),
                                       _mm512_set1_ps(s.ml[sub]));  // (dl * q) - ml
    const std::byte* qs = block + 16 + 32 * (sub / 2);              // sub-block: one nibble of 32 bytes
    for (int half = 0; half < 2; ++half) {
      const __m512i q = sub % 2 == 0 ? low_nibbles16(qs + 16 * half) : high_nibbles16(qs + 16 * half);
      v[half] = _mm512_permutexvar_ps(q, table);
    }
  }
};

// Q6_K: 64 values with one scale per 16 would need a table per 16 values, so they are converted:
// the format's 16 int8 (q - 32) widened at once, then the scale product, as the dequantizer.
struct Q6_KDirect : avx2::Q6_KFormat {
  PAGEDLLM_AVX512 static void chunk16(const std::byte* block, const Scales& s, std::size_t, int c, __m512 (&v)[2]) {
    for (int part = 0; part < 2; ++part) {
      const int group = 2 * c + part;
      const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(group_values(block, group)));
      v[part] = _mm512_mul_ps(_mm512_set1_ps(s.dl[group]), q);  // (d * scale) * (q - 32)
    }
  }
};

struct Q8_0Direct : avx2::Q8_0Format {
  PAGEDLLM_AVX512 static void chunk16(const std::byte* block, const Scales& s, std::size_t i, int, __m512 (&v)[2]) {
    const __m512 d = _mm512_set1_ps(s.d[i]);
    for (int half = 0; half < 2; ++half) {
      const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * half)));
      v[half] = _mm512_mul_ps(_mm512_cvtepi32_ps(q), d);  // q * d
    }
  }
};

template <typename F, int O>
PAGEDLLM_AVX512 void dot_stored_rows(const float* x, const std::byte* const (&w)[O], std::size_t num_blocks,
                                     float (&y)[O]) {
  constexpr int kChunks = static_cast<int>(F::kBlockValues / 32);
  __m512 acc[O][1];
  for (int o = 0; o < O; ++o) acc[o][0] = _mm512_setzero_ps();  // +0.0f, as dot.h
  for (std::size_t first = 0; first < num_blocks; first += F::kGroupBlocks) {
    const std::size_t count = num_blocks - first < F::kGroupBlocks ? num_blocks - first : F::kGroupBlocks;
    typename F::Scales scales[O];
    for (int o = 0; o < O; ++o) F::scales(w[o] + first * F::kBlockBytes, count, scales[o]);
    for (std::size_t i = 0; i < count; ++i) {
      for (int c = 0; c < kChunks; ++c) {
        const float* xk = x + (first + i) * F::kBlockValues + 32 * c;
        for (int o = 0; o < O; ++o) {
          __m512 v[2];
          F::chunk16(w[o] + (first + i) * F::kBlockBytes, scales[o], i, c, v);
          // x * w, product rounded, then the sum: the operations of dot.h, in its order.
          acc[o][0] = _mm512_add_ps(acc[o][0], _mm512_mul_ps(_mm512_loadu_ps(xk), v[0]));
          acc[o][0] = _mm512_add_ps(acc[o][0], _mm512_mul_ps(_mm512_loadu_ps(xk + 16), v[1]));
        }
      }
    }
  }
  for (int o = 0; o < O; ++o) y[o] = combine_lane_parts<__m512>(acc[o]);
}

template <typename F>
void stored_row(const LinearArgs& a, std::int64_t row, std::int64_t o_begin, std::int64_t o_end) {
  for_each_output_group<F>(a, row, o_begin, o_end, dot_stored_rows<F, static_cast<int>(kStoredRowOuts)>);
}

}  // namespace

StoredRowFn avx512_stored_row_kernel(model::GgmlType type) noexcept {
  switch (type) {
    case model::GgmlType::q4_0:
      return stored_row<Q4_0Table>;
    case model::GgmlType::q4_1:
      return stored_row<Q4_1Table>;
    case model::GgmlType::q5_0:
      return stored_row<Q5_0Table>;
    case model::GgmlType::q5_1:
      return stored_row<Q5_1Table>;
    case model::GgmlType::q4_k:
      return stored_row<Q4_KTable>;
    case model::GgmlType::q6_k:
      return stored_row<Q6_KDirect>;
    case model::GgmlType::q8_0:
      return stored_row<Q8_0Direct>;
    default:
      return nullptr;
  }
}

}  // namespace pagedllm::cpu_ref
