// The AVX2 dequantizers against the scalar ones they stand for (core/model/dequantize.cpp), bit
// for bit: every F16 and BF16 bit pattern (NaN payloads, subnormals, signed zeros), and random
// blocks of every quantized type that has one, odd block counts included.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "core/model/dequantize.h"
#include "cpu_ref/linear.h"
#include "cpu_ref/weight_decode.h"
#include "tests/cpu_ref/random_weights.h"

namespace pagedllm {
namespace {

using model::GgmlType;

// Whether two NaNs must also agree in their payload. A NaN that is only converted keeps its bits
// exactly; one that comes out of an add of two NaNs (a NaN scale times q plus a NaN min) carries
// whichever operand's payload the instruction keeps, and IEEE 754 leaves that open: a compiler may
// order the operands of the scalar code's add either way (Clang does, at -O1).
enum class NanPayload : bool { exact, any };

// Values of `bytes` (whole blocks of `type`) where `candidate` differs from the scalar
// dequantizer in any bit (two NaNs agreeing, with NanPayload::any).
std::size_t mismatches(GgmlType type, const std::vector<std::byte>& bytes, model::DequantizeBlocksFn candidate,
                       NanPayload nan = NanPayload::exact) {
  const model::GgmlTypeTraits traits = *model::ggml_type_traits(static_cast<std::uint32_t>(type));
  const std::size_t num_blocks = bytes.size() / traits.type_size;
  std::vector<float> scalar(num_blocks * traits.block_size, -7.0f);
  std::vector<float> other(scalar.size(), -9.0f);
  model::blocks_dequantizer(type)(bytes.data(), scalar.data(), num_blocks);
  candidate(bytes.data(), other.data(), num_blocks);
  std::size_t count = 0;
  for (std::size_t i = 0; i < scalar.size(); ++i) {
    if (nan == NanPayload::any && std::isnan(scalar[i]) && std::isnan(other[i])) continue;
    count += std::memcmp(&scalar[i], &other[i], sizeof(float)) != 0;
  }
  return count;
}

void check_against_scalar(GgmlType type, const std::vector<std::byte>& bytes, const char* what,
                          NanPayload nan = NanPayload::exact) {
  const std::size_t count = mismatches(type, bytes, cpu_ref::avx2_blocks_dequantizer(type), nan);
  BOOST_TEST(count == 0u, model::ggml_type_traits(static_cast<std::uint32_t>(type))->name
                              << " (" << what << "): " << count << " values differ");
}

// A wrong Q4_1 decoder (the nibble halves swapped), for the negative control.
void q4_1_halves_swapped(const std::byte* src, float* dst, std::size_t num_blocks) {
  model::blocks_dequantizer(GgmlType::q4_1)(src, dst, num_blocks);
  for (std::size_t b = 0; b < num_blocks; ++b) {
    for (std::size_t j = 0; j < 16; ++j) std::swap(dst[32 * b + j], dst[32 * b + j + 16]);
  }
}

BOOST_AUTO_TEST_SUITE(weight_decode)

BOOST_AUTO_TEST_CASE(every_16_bit_pattern_widens_as_the_scalar_code) {
  if (!cpu_ref::cpu_has_avx2()) {
    BOOST_TEST_MESSAGE("skipped: this CPU has no AVX2, so no AVX2 dequantizer runs");
    return;
  }
  // 65536 patterns plus 3, so the scalar tail after the last 8 runs too.
  std::vector<std::byte> bytes((65536 + 3) * 2);
  for (std::uint32_t i = 0; i < 65536 + 3; ++i) {
    const auto bits = static_cast<std::uint16_t>(i);
    std::memcpy(bytes.data() + 2 * i, &bits, sizeof bits);
  }
  check_against_scalar(GgmlType::f16, bytes, "every bit pattern");
  check_against_scalar(GgmlType::bf16, bytes, "every bit pattern");
}

BOOST_AUTO_TEST_CASE(random_blocks_decode_as_the_scalar_code) {
  if (!cpu_ref::cpu_has_avx2()) {
    BOOST_TEST_MESSAGE("skipped: this CPU has no AVX2, so no AVX2 dequantizer runs");
    return;
  }
  int checked = 0;
  for (const GgmlType type :
       {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1, GgmlType::q2_k, GgmlType::q3_k,
        GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k, GgmlType::q8_k}) {
    if (cpu_ref::avx2_blocks_dequantizer(type) == nullptr) continue;  // decoded by the scalar code itself
    ++checked;
    // 13 blocks of 32 or 256 values: the 8-block scale batches and a partial one.
    const std::int64_t block_size = model::ggml_type_traits(static_cast<std::uint32_t>(type))->block_size;
    const std::int64_t cols = block_size * 13;
    check_against_scalar(type, test::random_matrix(type, 3, cols, 17), "random");
    // Raw random bytes, scales included (NaN, Inf and subnormal scales among them).
    std::vector<std::byte> raw = test::random_matrix(type, 3, cols, 18);
    std::uint32_t state = 12345;
    for (std::byte& b : raw) {
      state = state * 1664525u + 1013904223u;
      b = static_cast<std::byte>(state >> 24);
    }
    check_against_scalar(type, raw, "raw bytes");
  }
  BOOST_TEST(checked == 8);  // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K
}

// The fp16 scales of the 32-value block types widen 8 at a time by F16C, packed from 8 blocks'
// headers: every 16-bit pattern as d (and as m, in another order), signalling NaNs, infinities and
// subnormals included. (F16C quiets a signalling NaN where fp16_to_float keeps it; a scale is
// multiplied before use, which quiets it in the scalar code too, so only F16 weights, above, can
// tell the difference.) Where a NaN d meets a NaN m, either payload is right (NanPayload).
BOOST_AUTO_TEST_CASE(every_fp16_scale_widens_as_the_scalar_code) {
  if (!cpu_ref::cpu_has_avx2()) {
    BOOST_TEST_MESSAGE("skipped: this CPU has no AVX2, so no AVX2 dequantizer runs");
    return;
  }
  for (const GgmlType type : {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1}) {
    const std::size_t type_size = model::ggml_type_traits(static_cast<std::uint32_t>(type))->type_size;
    const bool with_min = type == GgmlType::q4_1 || type == GgmlType::q5_1;
    constexpr std::uint32_t kBlocks = 65536 + 5;  // and a partial batch of scales at the end
    std::vector<std::byte> bytes = test::random_matrix(type, 1, 32 * static_cast<std::int64_t>(kBlocks), 19);
    for (std::uint32_t i = 0; i < kBlocks; ++i) {
      const auto d = static_cast<std::uint16_t>(i);
      const auto m = static_cast<std::uint16_t>(i * 40503u);  // odd: every pattern once, shuffled
      std::memcpy(bytes.data() + i * type_size, &d, sizeof d);
      if (with_min) std::memcpy(bytes.data() + i * type_size + 2, &m, sizeof m);
    }
    check_against_scalar(type, bytes, "every fp16 scale", NanPayload::any);
  }
}

// The comparison can fail: a decoder with the nibble halves swapped is caught.
BOOST_AUTO_TEST_CASE(a_wrong_decoder_is_caught) {
  const std::vector<std::byte> bytes = test::random_matrix(GgmlType::q4_1, 1, 64, 3);
  BOOST_TEST(mismatches(GgmlType::q4_1, bytes, q4_1_halves_swapped) > 0u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm
