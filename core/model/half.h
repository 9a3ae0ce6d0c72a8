// IEEE half (fp16) and bfloat16 <-> fp32, exact in the widening direction (every fp16 and bf16
// value is an fp32 value), round-to-nearest-even in the narrowing direction (NaN stays NaN).
#pragma once

#include <bit>
#include <cstdint>

namespace pagedllm::model {

inline float bf16_to_float(std::uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

inline std::uint16_t float_to_bf16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

inline float fp16_to_float(std::uint16_t half) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu;
  std::uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return std::bit_cast<float>(sign);
    // Subnormal: normalise. value = mantissa * 2^-24.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    const std::uint32_t biased = static_cast<std::uint32_t>(127 - 15 + 1 - shift);
    return std::bit_cast<float>(sign | (biased << 23) | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

inline std::uint16_t float_to_fp16(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow
  if (magnitude < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24 rounded to nearest even.
    if (magnitude < 0x33000000u) return sign;  // below half the smallest subnormal
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // 14 (exponent 112) .. 24 (exponent 102)
    std::uint32_t result = mantissa >> shift;
    const std::uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return static_cast<std::uint16_t>(sign | result);
  }
  std::uint32_t result = ((magnitude >> 13) - (112u << 10));
  const std::uint32_t remainder = magnitude & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

}  // namespace pagedllm::model
