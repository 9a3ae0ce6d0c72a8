// dot(x, w[o]) for kStoredRowOuts weight rows at once, each 32 weights decoded into four AVX
// vectors and multiplied at once: lanes 0..7 of a 16-value step in acc[o][0], 8..15 in
// acc[o][1], exactly dot.h's lanes.
#include "cpu_ref/stored_row_kernel.h"

#include <algorithm>

#include "cpu_ref/block_formats_avx2.h"
#include "cpu_ref/dot.h"

namespace pagedllm::cpu_ref {
namespace {

template <typename F, int O>
PAGEDLLM_AVX2 void dot_stored_rows(const float* x, const std::byte* const (&w)[O], std::size_t num_blocks,
                                   float (&y)[O]) {
  constexpr int kChunks = static_cast<int>(F::kBlockValues / 32);
  __m256 acc[O][2];
  for (int o = 0; o < O; ++o) acc[o][0] = acc[o][1] = _mm256_setzero_ps();  // +0.0f, as dot.h
  for (std::size_t first = 0; first < num_blocks; first += F::kGroupBlocks) {
    const std::size_t count = std::min(num_blocks - first, F::kGroupBlocks);
    typename F::Scales scales[O];
    for (int o = 0; o < O; ++o) F::scales(w[o] + first * F::kBlockBytes, count, scales[o]);
    for (std::size_t i = 0; i < count; ++i) {
      for (int c = 0; c < kChunks; ++c) {
        const float* xk = x + (first + i) * F::kBlockValues + 32 * c;
        for (int o = 0; o < O; ++o) {
          __m256 v[4];
          F::chunk(w[o] + (first + i) * F::kBlockBytes, scales[o], i, c, v);
          // x * w, product rounded, then the sum: the operations of dot.h, in its order.
          acc[o][0] = _mm256_add_ps(acc[o][0], _mm256_mul_ps(_mm256_loadu_ps(xk), v[0]));
          acc[o][1] = _mm256_add_ps(acc[o][1], _mm256_mul_ps(_mm256_loadu_ps(xk + 8), v[1]));
          acc[o][0] = _mm256_add_ps(acc[o][0], _mm256_mul_ps(_mm256_loadu_ps(xk + 16), v[2]));
          acc[o][1] = _mm256_add_ps(acc[o][1], _mm256_mul_ps(_mm256_loadu_ps(xk + 24), v[3]));
        }
      }
    }
  }
  for (int o = 0; o < O; ++o) y[o] = combine_lane_parts<__m256>(acc[o]);
}

template <typename F>
void stored_row(const LinearArgs& a, std::int64_t row, std::int64_t o_begin, std::int64_t o_end) {
  for_each_output_group<F>(a, row, o_begin, o_end, dot_stored_rows<F, static_cast<int>(kStoredRowOuts)>);
}

}  // namespace

StoredRowFn avx2_stored_row_kernel(model::GgmlType type, std::int64_t in_features) noexcept {
  switch (type) {
    case model::GgmlType::f16:
      return in_features % 32 == 0 ? stored_row<avx2::F16Format> : nullptr;
    case model::GgmlType::bf16:
      return in_features % 32 == 0 ? stored_row<avx2::BF16Format> : nullptr;
    case model::GgmlType::q8_0:
      return stored_row<avx2::Q8_0Format>;
    case model::GgmlType::q4_0:
      return stored_row<avx2::Q4_0Format>;
    case model::GgmlType::q4_1:
      return stored_row<avx2::Q4_1Format>;
    case model::GgmlType::q5_0:
      return stored_row<avx2::Q5_0Format>;
    case model::GgmlType::q5_1:
      return stored_row<avx2::Q5_1Format>;
    case model::GgmlType::q4_k:
      return stored_row<avx2::Q4_KFormat>;
    case model::GgmlType::q5_k:
      return stored_row<avx2::Q5_KFormat>;
    case model::GgmlType::q6_k:
      return stored_row<avx2::Q6_KFormat>;
    default:
      return nullptr;
  }
}

}  // namespace pagedllm::cpu_ref
