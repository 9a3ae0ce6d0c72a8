#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/model/half.h"

namespace model = pagedllm::model;

namespace {

bool fp16_is_nan(std::uint16_t bits) { return (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0; }
bool bf16_is_nan(std::uint16_t bits) { return (bits & 0x7f80u) == 0x7f80u && (bits & 0x007fu) != 0; }

// The value of an fp16 bit pattern from its definition, in double (exact).
double fp16_reference(std::uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  const double sign = (bits & 0x8000u) != 0 ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa == 0 ? sign * std::numeric_limits<double>::infinity() : NAN;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

float from_bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

}  // namespace

BOOST_AUTO_TEST_SUITE(half)

BOOST_AUTO_TEST_CASE(every_fp16_widens_to_its_exact_value_and_narrows_back_to_itself) {
  for (std::uint32_t code = 0; code < 65536; ++code) {
    const auto bits = static_cast<std::uint16_t>(code);
    const float value = model::fp16_to_float(bits);
    if (fp16_is_nan(bits)) {
      BOOST_TEST_REQUIRE(std::isnan(value), "fp16 0x" << std::hex << code);
      const std::uint16_t back = model::float_to_fp16(value);
      BOOST_TEST_REQUIRE(fp16_is_nan(back), "fp16 0x" << std::hex << code);
      BOOST_TEST_REQUIRE((back & 0x8000u) == (bits & 0x8000u), "sign of NaN 0x" << std::hex << code);
      continue;
    }
    BOOST_TEST_REQUIRE(static_cast<double>(value) == fp16_reference(bits), "fp16 0x" << std::hex << code);
    BOOST_TEST_REQUIRE(std::signbit(value) == ((bits & 0x8000u) != 0), "fp16 0x" << std::hex << code);
    BOOST_TEST_REQUIRE(model::float_to_fp16(value) == bits, "fp16 0x" << std::hex << code);
  }
}

BOOST_AUTO_TEST_CASE(every_bf16_widens_to_the_upper_half_of_an_fp32_and_narrows_back) {
  for (std::uint32_t code = 0; code < 65536; ++code) {
    const auto bits = static_cast<std::uint16_t>(code);
    const float value = model::bf16_to_float(bits);
    BOOST_TEST_REQUIRE(std::bit_cast<std::uint32_t>(value) == code << 16);
    const std::uint16_t back = model::float_to_bf16(value);
    if (bf16_is_nan(bits)) {
      BOOST_TEST_REQUIRE(bf16_is_nan(back), "bf16 0x" << std::hex << code);
      BOOST_TEST_REQUIRE((back & 0x8000u) == (bits & 0x8000u));
    } else {
      BOOST_TEST_REQUIRE(back == bits, "bf16 0x" << std::hex << code);
    }
  }
}

// Between every two neighbouring finite fp16 values a < b: the midpoint goes to the one with an
// even mantissa, anything a little below it to a, a little above to b.
BOOST_AUTO_TEST_CASE(fp16_rounds_to_nearest_with_ties_to_even_between_every_neighbouring_pair) {
  for (std::uint32_t low = 0; low < 0x7bff; ++low) {
    for (const std::uint32_t sign : {0x0000u, 0x8000u}) {
      const auto a = static_cast<std::uint16_t>(sign | low);
      const auto b = static_cast<std::uint16_t>(sign | (low + 1));
      const float mid = (model::fp16_to_float(a) + model::fp16_to_float(b)) / 2;  // exact
      const std::uint16_t even = (low & 1u) == 0 ? a : b;
      BOOST_TEST_REQUIRE(model::float_to_fp16(mid) == even, "between 0x" << std::hex << a << " and 0x" << b);
      BOOST_TEST_REQUIRE(model::float_to_fp16(std::nextafter(mid, 0.0f)) == a);
      BOOST_TEST_REQUIRE(model::float_to_fp16(std::nextafter(mid, sign ? -INFINITY : INFINITY)) == b);
    }
  }
}

BOOST_AUTO_TEST_CASE(bf16_rounds_to_nearest_with_ties_to_even_between_every_neighbouring_pair) {
  for (std::uint32_t low = 0; low < 0x7f7f; ++low) {
    for (const std::uint32_t sign : {0x0000u, 0x8000u}) {
      const auto a = static_cast<std::uint16_t>(sign | low);
      const auto b = static_cast<std::uint16_t>(sign | (low + 1));
      const float mid = from_bits((static_cast<std::uint32_t>(a) << 16) | 0x8000u);
      const std::uint16_t even = (low & 1u) == 0 ? a : b;
      BOOST_TEST_REQUIRE(model::float_to_bf16(mid) == even, "between 0x" << std::hex << a << " and 0x" << b);
      BOOST_TEST_REQUIRE(model::float_to_bf16(std::nextafter(mid, 0.0f)) == a);
      BOOST_TEST_REQUIRE(model::float_to_bf16(std::nextafter(mid, sign ? -INFINITY : INFINITY)) == b);
    }
  }
}

BOOST_AUTO_TEST_CASE(chosen_fp16_roundings_tie_to_even) {
  BOOST_TEST(model::float_to_fp16(1.0f + 0x1p-11f) == 0x3c00);      // halfway 1 .. 1+2^-10: even 1
  BOOST_TEST(model::float_to_fp16(1.0f + 3 * 0x1p-11f) == 0x3c02);  // halfway, even is the upper
  BOOST_TEST(model::float_to_fp16(-(1.0f + 0x1p-11f)) == 0xbc00);
  BOOST_TEST(model::float_to_fp16(2049.0f) == 0x6800);  // 2048 and 2050: even 2048
  BOOST_TEST(model::float_to_fp16(2051.0f) == 0x6802);  // 2050 and 2052: even 2052
  BOOST_TEST(model::float_to_fp16(0.1f) == 0x2e66);
  BOOST_TEST(model::float_to_fp16(-0.0f) == 0x8000);
}

BOOST_AUTO_TEST_CASE(chosen_bf16_roundings_tie_to_even) {
  BOOST_TEST(model::float_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
  BOOST_TEST(model::float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
  BOOST_TEST(model::float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
  BOOST_TEST(model::float_to_bf16(-0.0f) == 0x8000);
  BOOST_TEST(model::float_to_bf16(0.1f) == 0x3dcd);
  BOOST_TEST(model::float_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  BOOST_TEST(model::float_to_bf16(from_bits(0x00018000u)) == 0x0002);  // subnormal tie, up to even
}

BOOST_AUTO_TEST_CASE(fp16_subnormals_round_and_tiny_values_flush_to_signed_zero) {
  BOOST_TEST(model::fp16_to_float(0x0001) == 0x1p-24f);
  BOOST_TEST(model::fp16_to_float(0x03ff) == 1023 * 0x1p-24f);
  BOOST_TEST(model::fp16_to_float(0x8001) == -0x1p-24f);
  BOOST_TEST(model::float_to_fp16(0x1p-24f) == 0x0001);
  BOOST_TEST(model::float_to_fp16(0x1p-25f) == 0x0000);            // tie between 0 and 2^-24: even 0
  BOOST_TEST(model::float_to_fp16(0x1.000002p-25f) == 0x0001);     // just above the tie
  BOOST_TEST(model::float_to_fp16(3 * 0x1p-25f) == 0x0002);        // tie between 1 and 2 ulps: even 2
  BOOST_TEST(model::float_to_fp16(1023.5f * 0x1p-24f) == 0x0400);  // rounds up into the normals
  BOOST_TEST(model::float_to_fp16(0x1p-30f) == 0x0000);
  BOOST_TEST(model::float_to_fp16(-0x1p-30f) == 0x8000);
  BOOST_TEST(model::float_to_fp16(std::numeric_limits<float>::denorm_min()) == 0x0000);
}

BOOST_AUTO_TEST_CASE(values_beyond_the_largest_finite_overflow_to_infinity) {
  BOOST_TEST(model::float_to_fp16(65504.0f) == 0x7bff);
  BOOST_TEST(model::float_to_fp16(65519.996f) == 0x7bff);  // below the tie with 65536
  BOOST_TEST(model::float_to_fp16(65520.0f) == 0x7c00);    // the tie goes to even: 2^16 = inf
  BOOST_TEST(model::float_to_fp16(1.0e6f) == 0x7c00);
  BOOST_TEST(model::float_to_fp16(-1.0e6f) == 0xfc00);
  BOOST_TEST(model::float_to_fp16(INFINITY) == 0x7c00);
  BOOST_TEST(model::float_to_fp16(-INFINITY) == 0xfc00);
  BOOST_TEST(std::isinf(model::fp16_to_float(0x7c00)));
  BOOST_TEST(model::float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
  BOOST_TEST(model::float_to_bf16(-std::numeric_limits<float>::max()) == 0xff80);
  BOOST_TEST(model::float_to_bf16(from_bits(0x7f7f7fffu)) == 0x7f7f);  // just below the tie
  BOOST_TEST(model::float_to_bf16(INFINITY) == 0x7f80);
}

BOOST_AUTO_TEST_CASE(nans_stay_nan_with_their_sign) {
  BOOST_TEST(fp16_is_nan(model::float_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  BOOST_TEST(fp16_is_nan(model::float_to_fp16(from_bits(0x7f800001u))));  // payload only in low bits
  BOOST_TEST((model::float_to_fp16(from_bits(0xff800001u)) & 0x8000u) != 0u);
  BOOST_TEST(bf16_is_nan(model::float_to_bf16(from_bits(0x7f800001u))));  // would truncate to inf
  BOOST_TEST(model::float_to_bf16(from_bits(0xffc00000u)) == 0xffc0);
}

BOOST_AUTO_TEST_SUITE_END()
