// Random weights in any ggml type, for the tests of cpu_ref's stored-weight paths.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/model/ggml_type.h"
#include "core/model/half.h"
#include "core/model/quantize.h"

namespace pagedllm::test {

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return values;
}

// Uniform in [lo, hi), from mt19937(seed), in order.
inline std::vector<float> uniform_floats(std::size_t n, std::uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng);
  return values;
}

inline void put_fp16(std::vector<std::byte>& bytes, std::size_t offset, float value) {
  const std::uint16_t bits = model::float_to_fp16(value);
  std::memcpy(bytes.data() + offset, &bits, sizeof bits);
}

// [rows, cols] of `type`: quantized from random values where pagedllm quantizes the type; for
// the K-quants (no quantizer) random blocks whose fp16 (Q8_K: fp32) scales are set to finite
// values of a trained model's size, so every bit of the packed fields is exercised.
inline std::vector<std::byte> random_matrix(model::GgmlType type, std::int64_t rows, std::int64_t cols,
                                            std::uint32_t seed) {
  if (model::is_quantizable(type)) {
    return model::quantize(type, random_floats(static_cast<std::size_t>(rows * cols), seed, 0.05f));
  }
  const model::GgmlTypeTraits traits = *model::ggml_type_traits(static_cast<std::uint32_t>(type));
  const std::size_t num_blocks = static_cast<std::size_t>(rows * cols) / traits.block_size;
  std::vector<std::byte> bytes(num_blocks * traits.type_size);
  std::mt19937 rng(seed);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
  std::uniform_real_distribution<float> scale(1e-4f, 2e-3f);
  for (std::size_t b = 0; b < num_blocks; ++b) {
    const std::size_t block = b * traits.type_size;
    switch (type) {
      case model::GgmlType::q2_k:
        put_fp16(bytes, block + 80, scale(rng));
        put_fp16(bytes, block + 82, scale(rng));
        break;
      case model::GgmlType::q3_k:
        put_fp16(bytes, block + 108, scale(rng));
        break;
      case model::GgmlType::q4_k:
      case model::GgmlType::q5_k:
        put_fp16(bytes, block, scale(rng));
        put_fp16(bytes, block + 2, scale(rng));
        break;
      case model::GgmlType::q6_k:
        put_fp16(bytes, block + 208, scale(rng));
        break;
      case model::GgmlType::q8_k: {
        const float d = scale(rng);
        std::memcpy(bytes.data() + block, &d, sizeof d);
        break;
      }
      default:
        BOOST_FAIL("random_matrix: no recipe for this type");
    }
  }
  return bytes;
}

}  // namespace pagedllm::test
