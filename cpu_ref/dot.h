// The one fp32 dot product of cpu_ref: a fixed sequence of operations for a given length, so a
// result never depends on the batch, the row, the thread count or the instruction set.
//
// Definition (n elements of a and b):
//   - 16 lane sums acc[0..15], each starting at +0.0f;
//   - body: for k in [0, n16) with n16 = n - n % 16: acc[k % 16] = acc[k % 16] + a[k] * b[k]
//     (product rounded to fp32, then the sum rounded: the build has -ffp-contract=off, so no
//     fused multiply-add);
//   - tail: for k in [n16, n): acc[k - n16] = acc[k - n16] + a[k] * b[k];
//   - combine: fold (j, j + 8) for j < 8, then (j, j + 4), (j, j + 2), (j, j + 1).
// The body is a plain loop over a float[16] array, which compilers vectorize without
// reassociating anything (4 SSE, 2 AVX or 1 AVX-512 register hold the 16 lanes). linear.cpp's
// tiled kernels follow this definition exactly; the tests check them against it bit for bit.
#pragma once

#include <cstdint>

namespace pagedllm::cpu_ref {

inline constexpr int kDotLanes = 16;

// Folds the 16 lane sums in the fixed tree order above, from lanes held in vectors (GCC vector
// extensions or __m128 / __m256 / __m512): parts[p] holds lanes [p * width, (p + 1) * width) for a
// width of 4, 8 or 16 floats. Each level of the tree is one vector addition, in registers. Inline
// wider parts only into code compiled for AVX (AVX-512).
template <typename V, int kWidth = sizeof(V) / sizeof(float)>
[[gnu::always_inline]] inline float combine_lane_parts(const V (&parts)[kDotLanes / kWidth]) noexcept {
  using Quarter = float __attribute__((vector_size(4 * sizeof(float))));
  Quarter quarter;
  if constexpr (kWidth == 16) {
    using Half = float __attribute__((vector_size(8 * sizeof(float))));
    const Half half = __builtin_shufflevector(parts[0], parts[0], 0, 1, 2, 3, 4, 5, 6, 7) +
                      __builtin_shufflevector(parts[0], parts[0], 8, 9, 10, 11, 12, 13, 14, 15);
    quarter = __builtin_shufflevector(half, half, 0, 1, 2, 3) + __builtin_shufflevector(half, half, 4, 5, 6, 7);
  } else if constexpr (kWidth == 8) {
    const V half = parts[0] + parts[1];  // half[j] = acc[j] + acc[j + 8]
    quarter = __builtin_shufflevector(half, half, 0, 1, 2, 3) + __builtin_shufflevector(half, half, 4, 5, 6, 7);
  } else {
    static_assert(kWidth == 4, "combine_lane_parts: 4, 8 or 16 lanes per vector");
    quarter = (parts[0] + parts[2]) + (parts[1] + parts[3]);  // half[j] + half[j + 4]
  }
  const float pair0 = quarter[0] + quarter[2];
  const float pair1 = quarter[1] + quarter[3];
  return pair0 + pair1;
}

// The same fold from an array of the 16 lane sums (4-wide vectors: SSE2, every x86-64 CPU).
inline float combine_lanes(const float (&acc)[kDotLanes]) noexcept {
  using Quarter = float __attribute__((vector_size(4 * sizeof(float))));
  Quarter parts[kDotLanes / 4];
  __builtin_memcpy(parts, acc, sizeof parts);
  return combine_lane_parts<Quarter>(parts);
}

// dot(a[0, n), b[0, n)) in the fixed order above.
inline float dot(const float* a, const float* b, std::int64_t n) noexcept {
  float acc[kDotLanes] = {};
  const std::int64_t n16 = n - n % kDotLanes;
  for (std::int64_t k = 0; k < n16; k += kDotLanes) {
    for (int j = 0; j < kDotLanes; ++j) acc[j] += a[k + j] * b[k + j];
  }
  for (std::int64_t k = n16; k < n; ++k) acc[k - n16] += a[k] * b[k];
  return combine_lanes(acc);
}

}  // namespace pagedllm::cpu_ref
