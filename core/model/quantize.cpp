#include "core/model/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/model/half.h"

// Bit equality with gguf-py needs x * id rounded to fp32 before the offset is added: no fused
// multiply-add. GCC contracts across statements in C++ even under -std=c++20 (its ISO default of
// -ffp-contract=off is for C only) when the target has FMA (-march=native, aarch64).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace pagedllm::model {
namespace {

constexpr int kBlock = 32;  // values per block of every type quantized here

inline void store_fp16(std::byte* out, float value) {
  const std::uint16_t bits = float_to_fp16(value);
  std::memcpy(out, &bits, sizeof bits);
}

inline std::byte to_byte(int value) { return static_cast<std::byte>(value & 0xff); }

// numpy's float32 -> (u)int8 cast as it runs on x86: a truncating conversion to int32 (INT32_MIN
// for NaN, inf and out-of-range values) of which the low byte is kept. Only blocks of subnormal
// values (whose scale's reciprocal overflows) reach values outside 0..31 or -127..127.
inline int low_byte_of_cast(float value) {
  const bool in_range = std::isfinite(value) && value > -2147483648.0f && value < 2147483648.0f;
  const std::int64_t wide = in_range ? static_cast<std::int64_t>(value) : INT32_MIN;
  return static_cast<int>(static_cast<std::uint64_t>(wide) & 0xffu);
}

// 1 / d, or 0 for an all-zero block (gguf-py's `np.where(d == 0, 0, 1 / d)`).
inline float inverse_or_zero(float d) { return d == 0.0f ? 0.0f : 1.0f / d; }

// The value of largest magnitude, sign kept; the first one on ties (numpy's argmax).
float signed_absmax(const float* x) {
  float best = x[0];
  for (int j = 1; j < kBlock; ++j) {
    if (std::fabs(x[j]) > std::fabs(best)) best = x[j];
  }
  return best;
}

void min_max(const float* x, float& lowest, float& highest) {
  lowest = x[0];
  highest = x[0];
  for (int j = 1; j < kBlock; ++j) {
    lowest = std::min(lowest, x[j]);
    highest = std::max(highest, x[j]);
  }
}

// Packs 32 values of at most 4 bits: value j < 16 in the low nibble of byte j, j + 16 in its high.
void pack_nibbles(const int* q, std::byte* out) {
  for (int j = 0; j < 16; ++j) out[j] = to_byte((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
}

// The fifth bits of 32 values as a little-endian u32 (bit j = value j).
void pack_fifth_bits(const int* q, std::byte* out) {
  std::uint32_t qh = 0;
  for (int j = 0; j < kBlock; ++j) qh |= static_cast<std::uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(out, &qh, sizeof qh);
}

// Symmetric: d = (signed absmax) / -levels, q = trunc(x / d + levels + 0.5) clipped to 2 levels.
// Q4_0 (levels 8): [fp16 d][16 nibble bytes]. Q5_0 (levels 16): [fp16 d][u32 qh][16 bytes].
void quantize_symmetric(const float* x, int levels, int* q, float& d) {
  d = signed_absmax(x) / static_cast<float>(-levels);
  const float id = inverse_or_zero(d);
  const float offset = static_cast<float>(levels) + 0.5f;
  for (int j = 0; j < kBlock; ++j) {
    const float scaled = x[j] * id;
    const float shifted = scaled + offset;
    q[j] = std::min(low_byte_of_cast(std::trunc(shifted)), 2 * levels - 1);
  }
}

// Asymmetric: d = (max - min) / top, q = trunc((x - min) / d + 0.5) clipped to [0, top].
// Q4_1 (top 15): [fp16 d][fp16 min][16 bytes]. Q5_1 (top 31): [fp16 d][fp16 min][u32 qh][16 bytes].
void quantize_asymmetric(const float* x, int top, int* q, float& d, float& lowest) {
  float highest;
  min_max(x, lowest, highest);
  d = (highest - lowest) / static_cast<float>(top);
  const float id = inverse_or_zero(d);
  for (int j = 0; j < kBlock; ++j) {
    const float centred = x[j] - lowest;
    const float scaled = centred * id;
    const float shifted = scaled + 0.5f;
    q[j] = std::min(low_byte_of_cast(std::trunc(shifted)), top);
  }
}

void quantize_q4_0(const float* x, std::byte* out) {
  int q[kBlock];
  float d;
  quantize_symmetric(x, 8, q, d);
  store_fp16(out, d);
  pack_nibbles(q, out + 2);
}

void quantize_q5_0(const float* x, std::byte* out) {
  int q[kBlock];
  float d;
  quantize_symmetric(x, 16, q, d);
  store_fp16(out, d);
  pack_fifth_bits(q, out + 2);
  pack_nibbles(q, out + 6);
}

void quantize_q4_1(const float* x, std::byte* out) {
  int q[kBlock];
  float d;
  float lowest;
  quantize_asymmetric(x, 15, q, d, lowest);
  store_fp16(out, d);
  store_fp16(out + 2, lowest);
  pack_nibbles(q, out + 4);
}

void quantize_q5_1(const float* x, std::byte* out) {
  int q[kBlock];
  float d;
  float lowest;
  quantize_asymmetric(x, 31, q, d, lowest);
  store_fp16(out, d);
  store_fp16(out + 2, lowest);
  pack_fifth_bits(q, out + 4);
  pack_nibbles(q, out + 8);
}

// Q8_0: [fp16 d][32 int8], d = absmax / 127, q = x / d rounded half away from zero (as ggml's
// reference quantizer, which gguf-py reproduces).
void quantize_q8_0(const float* x, std::byte* out) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = inverse_or_zero(d);
  store_fp16(out, d);
  for (int j = 0; j < kBlock; ++j) {
    out[2 + j] = to_byte(low_byte_of_cast(std::round(x[j] * id)));
  }
}

}  // namespace

bool is_quantizable(GgmlType type) noexcept {
  switch (type) {
    case GgmlType::f32:
    case GgmlType::f16:
    case GgmlType::bf16:
    case GgmlType::q4_0:
    case GgmlType::q4_1:
    case GgmlType::q5_0:
    case GgmlType::q5_1:
    case GgmlType::q8_0:
      return true;
    default:
      return false;
  }
}

void quantize_row(GgmlType type, std::span<const float> src, std::span<std::byte> dst) {
  const std::optional<GgmlTypeTraits> traits = ggml_type_traits(static_cast<std::uint32_t>(type));
  if (!traits || !is_quantizable(type)) {
    throw std::invalid_argument(
        "quantize_row: cannot quantize to type " +
        (traits ? std::string(traits->name) : std::to_string(static_cast<std::uint32_t>(type))));
  }
  if (src.size() % traits->block_size != 0) {
    throw std::invalid_argument("quantize_row: " + std::to_string(src.size()) + " values are not whole " +
                                std::string(traits->name) + " blocks of " + std::to_string(traits->block_size));
  }
  const std::size_t num_blocks = src.size() / traits->block_size;
  if (dst.size() != num_blocks * traits->type_size) {
    throw std::invalid_argument("quantize_row: " + std::to_string(src.size()) + " values need " +
                                std::to_string(num_blocks * traits->type_size) + " bytes of " +
                                std::string(traits->name) + ", got " + std::to_string(dst.size()));
  }
  void (*quantize_block)(const float*, std::byte*) = nullptr;
  switch (type) {
    case GgmlType::f32:
      if (!src.empty()) std::memcpy(dst.data(), src.data(), dst.size());
      return;
    case GgmlType::f16:
      for (std::size_t i = 0; i < src.size(); ++i) store_fp16(dst.data() + 2 * i, src[i]);
      return;
    case GgmlType::bf16:
      for (std::size_t i = 0; i < src.size(); ++i) {
        const std::uint16_t bits = float_to_bf16(src[i]);
        std::memcpy(dst.data() + 2 * i, &bits, sizeof bits);
      }
      return;
    case GgmlType::q4_0:
      quantize_block = quantize_q4_0;
      break;
    case GgmlType::q4_1:
      quantize_block = quantize_q4_1;
      break;
    case GgmlType::q5_0:
      quantize_block = quantize_q5_0;
      break;
    case GgmlType::q5_1:
      quantize_block = quantize_q5_1;
      break;
    case GgmlType::q8_0:
      quantize_block = quantize_q8_0;
      break;
    default:
      throw std::logic_error("quantize_row: quantizable type without a quantizer");
  }
  for (std::size_t b = 0; b < num_blocks; ++b) {
    quantize_block(src.data() + b * kBlock, dst.data() + b * traits->type_size);
  }
}

std::vector<std::byte> quantize(GgmlType type, std::span<const float> src) {
  const std::optional<GgmlTypeTraits> traits = ggml_type_traits(static_cast<std::uint32_t>(type));
  const std::size_t num_bytes = traits ? src.size() / traits->block_size * traits->type_size : std::size_t{0};
  std::vector<std::byte> out(num_bytes);
  quantize_row(type, src, out);
  return out;
}

}  // namespace pagedllm::model
