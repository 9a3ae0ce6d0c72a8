#include "core/model/dequantize.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/model/half.h"
#include "core/model/model_errors.h"

// Operation order follows gguf-py's numpy code (e.g. (d * scale) * q - dmin * min), each step
// rounded to fp32. Fused multiply-adds, which GCC forms in C++ even under -std=c++20 (its ISO
// default of -ffp-contract=off is for C only) when the target has FMA, cannot change a result
// here: every product that is then added is exact in fp32 (an fp16 scale has 11 significant bits,
// a 6-bit scale and a 5-bit value add at most 11 more), so rounding it first is a no-op.

namespace pagedllm::model {
namespace {

// Super-block size of the K-quants.
constexpr int kQkK = 256;

inline std::uint8_t byte_at(const std::byte* block, int index) { return std::to_integer<std::uint8_t>(block[index]); }

inline float load_fp16(const std::byte* bytes) {
  std::uint16_t bits;
  std::memcpy(&bits, bytes, sizeof bits);
  return fp16_to_float(bits);
}

inline std::uint32_t load_u32(const std::byte* bytes) {
  std::uint32_t value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

// Q4_0, 18 bytes: fp16 d, 16 bytes of nibbles. Value j < 16 is the low nibble of byte j, value
// j + 16 its high nibble; x = d * (q - 8).
void dequantize_q4_0(const std::byte* block, float* out) {
  const float d = load_fp16(block);
  const std::byte* qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    const int q = byte_at(qs, j);
    out[j] = d * static_cast<float>((q & 0x0f) - 8);
    out[j + 16] = d * static_cast<float>((q >> 4) - 8);
  }
}

// Q4_1, 20 bytes: fp16 d, fp16 m, 16 bytes of nibbles (as Q4_0); x = (d * q) + m.
void dequantize_q4_1(const std::byte* block, float* out) {
  const float d = load_fp16(block);
  const float m = load_fp16(block + 2);
  const std::byte* qs = block + 4;
  for (int j = 0; j < 16; ++j) {
    const int q = byte_at(qs, j);
    const float low = d * static_cast<float>(q & 0x0f);
    const float high = d * static_cast<float>(q >> 4);
    out[j] = low + m;
    out[j + 16] = high + m;
  }
}

// Q5_0, 22 bytes: fp16 d, u32 qh (bit j = fifth bit of value j), 16 bytes of nibbles (as Q4_0);
// x = d * (q - 16).
void dequantize_q5_0(const std::byte* block, float* out) {
  const float d = load_fp16(block);
  const std::uint32_t qh = load_u32(block + 2);
  const std::byte* qs = block + 6;
  for (int j = 0; j < 16; ++j) {
    const int q = byte_at(qs, j);
    const int low = (q & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int high = (q >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    out[j] = d * static_cast<float>(low - 16);
    out[j + 16] = d * static_cast<float>(high - 16);
  }
}

// Q5_1, 24 bytes: fp16 d, fp16 m, u32 qh, 16 bytes of nibbles (as Q5_0); x = (d * q) + m.
void dequantize_q5_1(const std::byte* block, float* out) {
  const float d = load_fp16(block);
  const float m = load_fp16(block + 2);
  const std::uint32_t qh = load_u32(block + 4);
  const std::byte* qs = block + 8;
  for (int j = 0; j < 16; ++j) {
    const int q = byte_at(qs, j);
    const int low = (q & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int high = (q >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    const float scaled_low = d * static_cast<float>(low);
    const float scaled_high = d * static_cast<float>(high);
    out[j] = scaled_low + m;
    out[j + 16] = scaled_high + m;
  }
}

// Q8_0, 34 bytes: fp16 d, 32 int8 values; x = q * d.
void dequantize_q8_0(const std::byte* block, float* out) {
  const float d = load_fp16(block);
  const std::byte* qs = block + 2;
  for (int j = 0; j < 32; ++j) {
    out[j] = static_cast<float>(static_cast<std::int8_t>(byte_at(qs, j))) * d;
  }
}

// Q2_K, 84 bytes: 16 scale bytes (low nibble scale, high nibble min, one per 16 values), 64
// bytes of 2-bit values, fp16 d, fp16 dmin. Values 128h + 32s + l come from bits 2s..2s+1 of
// byte 32h + l. x = (d * scale) * q - (dmin * min).
void dequantize_q2_k(const std::byte* block, float* out) {
  const std::byte* scales = block;
  const std::byte* qs = block + 16;
  const float d = load_fp16(block + 80);
  const float dmin = load_fp16(block + 82);
  for (int group = 0; group < 16; ++group) {
    const int scale = byte_at(scales, group);
    const float dl = d * static_cast<float>(scale & 0x0f);
    const float ml = dmin * static_cast<float>(scale >> 4);
    const std::byte* src = qs + (group / 8) * 32 + (group % 2) * 16;
    const int shift = 2 * ((group % 8) / 2);
    float* dst = out + group * 16;
    for (int k = 0; k < 16; ++k) {
      const float scaled = dl * static_cast<float>((byte_at(src, k) >> shift) & 3);
      dst[k] = scaled - ml;
    }
  }
}

// Q3_K, 110 bytes: 32 bytes hmask, 64 bytes of 2-bit values (as Q2_K), 12 bytes of 6-bit signed
// scales (+32), fp16 d. Value i's high bit is bit i / 32 of hmask[i % 32]; a clear bit subtracts
// 4. Scale g: low 4 bits from byte g % 8 (nibble g / 8), high 2 bits from byte 8 + g % 4 (bits
// 2 * (g / 4)). x = (d * (scale - 32)) * q.
void dequantize_q3_k(const std::byte* block, float* out) {
  const std::byte* hmask = block;
  const std::byte* qs = block + 32;
  const std::byte* scales = block + 96;
  const float d = load_fp16(block + 108);
  for (int group = 0; group < 16; ++group) {
    const int low = (byte_at(scales, group % 8) >> (4 * (group / 8))) & 0x0f;
    const int high = (byte_at(scales, 8 + group % 4) >> (2 * (group / 4))) & 0x03;
    const float dl = d * static_cast<float>((low | (high << 4)) - 32);
    const int first = group * 16;
    const std::byte* src = qs + (group / 8) * 32 + (group % 2) * 16;
    const int shift = 2 * ((group % 8) / 2);
    const int hbit = first / 32;
    const int hfirst = first % 32;
    float* dst = out + first;
    for (int k = 0; k < 16; ++k) {
      const int q_low = (byte_at(src, k) >> shift) & 3;
      const int q_high = (byte_at(hmask, hfirst + k) >> hbit) & 1;
      dst[k] = dl * static_cast<float>(q_low - (q_high != 0 ? 0 : 4));
    }
  }
}

}  // namespace

void unpack_k_scales(const std::byte* packed, int* scale, int* min) noexcept {
  for (int j = 0; j < 4; ++j) {
    scale[j] = byte_at(packed, j) & 0x3f;
    min[j] = byte_at(packed, j + 4) & 0x3f;
    scale[j + 4] = (byte_at(packed, j + 8) & 0x0f) | ((byte_at(packed, j) >> 2) & 0x30);
    min[j + 4] = (byte_at(packed, j + 8) >> 4) | ((byte_at(packed, j + 4) >> 2) & 0x30);
  }
}

namespace {

// Q4_K, 144 bytes: fp16 d, fp16 dmin, 12 bytes of scales/mins (8 sub-blocks of 32), 128 bytes
// of nibbles: sub-block j uses the low (j even) or high (j odd) nibbles of bytes 32 (j / 2) ..
// +31. x = (d * scale) * q - (dmin * min).
void dequantize_q4_k(const std::byte* block, float* out) {
  const float d = load_fp16(block);
  const float dmin = load_fp16(block + 2);
  int scale[8];
  int min[8];
  unpack_k_scales(block + 4, scale, min);
  const std::byte* qs = block + 16;
  for (int sub = 0; sub < 8; ++sub) {
    const float dl = d * static_cast<float>(scale[sub]);
    const float ml = dmin * static_cast<float>(min[sub]);
    const std::byte* src = qs + (sub / 2) * 32;
    const int shift = 4 * (sub % 2);
    float* dst = out + sub * 32;
    for (int l = 0; l < 32; ++l) {
      const float scaled = dl * static_cast<float>((byte_at(src, l) >> shift) & 0x0f);
      dst[l] = scaled - ml;
    }
  }
}

// Q5_K, 176 bytes: fp16 d, fp16 dmin, 12 bytes of scales/mins (as Q4_K), 32 bytes qh, 128 bytes
// of nibbles (as Q4_K). Sub-block j's fifth bit of value l is bit j of qh[l].
void dequantize_q5_k(const std::byte* block, float* out) {
  const float d = load_fp16(block);
  const float dmin = load_fp16(block + 2);
  int scale[8];
  int min[8];
  unpack_k_scales(block + 4, scale, min);
  const std::byte* qh = block + 16;
  const std::byte* qs = block + 48;
  for (int sub = 0; sub < 8; ++sub) {
    const float dl = d * static_cast<float>(scale[sub]);
    const float ml = dmin * static_cast<float>(min[sub]);
    const std::byte* src = qs + (sub / 2) * 32;
    const int shift = 4 * (sub % 2);
    float* dst = out + sub * 32;
    for (int l = 0; l < 32; ++l) {
      const int q = ((byte_at(src, l) >> shift) & 0x0f) | (((byte_at(qh, l) >> sub) & 1) << 4);
      const float scaled = dl * static_cast<float>(q);
      dst[l] = scaled - ml;
    }
  }
}

// Q6_K, 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales (one per
// 16 values), fp16 d. In each half h of 128 values, value 64n + l (l < 64) takes nibble n of
// ql[64h + l]; value 32s + l (l < 32) takes bits 2s..2s+1 of qh[32h + l].
// x = (d * scale) * (q - 32).
void dequantize_q6_k(const std::byte* block, float* out) {
  const std::byte* ql = block;
  const std::byte* qh = block + 128;
  const std::byte* scales = block + 192;
  const float d = load_fp16(block + 208);
  for (int group = 0; group < 16; ++group) {
    const float dl = d * static_cast<float>(static_cast<std::int8_t>(byte_at(scales, group)));
    const int half = group / 8;
    const int within = (group % 8) * 16;  // position inside the half
    const std::byte* low_src = ql + half * 64 + within % 64;
    const int low_shift = 4 * (within / 64);
    const std::byte* high_src = qh + half * 32 + within % 32;
    const int high_shift = 2 * (within / 32);
    float* dst = out + group * 16;
    for (int k = 0; k < 16; ++k) {
      const int q = ((byte_at(low_src, k) >> low_shift) & 0x0f) | (((byte_at(high_src, k) >> high_shift) & 0x03) << 4);
      dst[k] = dl * static_cast<float>(q - 32);
    }
  }
}

// Q8_K, 292 bytes: fp32 d, 256 int8 values, 16 int16 block sums (for dot products; unused here).
// x = d * q.
void dequantize_q8_k(const std::byte* block, float* out) {
  float d;
  std::memcpy(&d, block, sizeof d);
  const std::byte* qs = block + 4;
  for (int j = 0; j < kQkK; ++j) {
    out[j] = d * static_cast<float>(static_cast<std::int8_t>(byte_at(qs, j)));
  }
}

// One type's dequantizer over whole blocks: `Block` applied to each block of `kTypeSize` bytes.
template <void (*Block)(const std::byte*, float*), std::size_t kBlockSize, std::size_t kTypeSize>
void dequantize_blocks(const std::byte* src, float* dst, std::size_t num_blocks) {
  for (std::size_t b = 0; b < num_blocks; ++b) Block(src + b * kTypeSize, dst + b * kBlockSize);
}

void dequantize_f16(const std::byte* src, float* out) { *out = load_fp16(src); }
void dequantize_bf16(const std::byte* src, float* out) {
  std::uint16_t bits;
  std::memcpy(&bits, src, sizeof bits);
  *out = bf16_to_float(bits);
}

}  // namespace

DequantizeBlocksFn blocks_dequantizer(GgmlType type) noexcept {
  switch (type) {
    case GgmlType::f32:
      return [](const std::byte* src, float* dst, std::size_t n) {
        if (n != 0) std::memcpy(dst, src, n * sizeof(float));
      };
    case GgmlType::f16:
      return dequantize_blocks<dequantize_f16, 1, 2>;
    case GgmlType::bf16:
      return dequantize_blocks<dequantize_bf16, 1, 2>;
    case GgmlType::q4_0:
      return dequantize_blocks<dequantize_q4_0, 32, 18>;
    case GgmlType::q4_1:
      return dequantize_blocks<dequantize_q4_1, 32, 20>;
    case GgmlType::q5_0:
      return dequantize_blocks<dequantize_q5_0, 32, 22>;
    case GgmlType::q5_1:
      return dequantize_blocks<dequantize_q5_1, 32, 24>;
    case GgmlType::q8_0:
      return dequantize_blocks<dequantize_q8_0, 32, 34>;
    case GgmlType::q2_k:
      return dequantize_blocks<dequantize_q2_k, kQkK, 84>;
    case GgmlType::q3_k:
      return dequantize_blocks<dequantize_q3_k, kQkK, 110>;
    case GgmlType::q4_k:
      return dequantize_blocks<dequantize_q4_k, kQkK, 144>;
    case GgmlType::q5_k:
      return dequantize_blocks<dequantize_q5_k, kQkK, 176>;
    case GgmlType::q6_k:
      return dequantize_blocks<dequantize_q6_k, kQkK, 210>;
    case GgmlType::q8_k:
      return dequantize_blocks<dequantize_q8_k, kQkK, 292>;
    case GgmlType::q8_1:
      return nullptr;
  }
  return nullptr;
}

void dequantize_row(GgmlType type, std::span<const std::byte> src, std::span<float> dst) {
  const std::optional<GgmlTypeTraits> traits = ggml_type_traits(static_cast<std::uint32_t>(type));
  const DequantizeBlocksFn dequantize = traits && traits->dequantizable ? blocks_dequantizer(type) : nullptr;
  if (dequantize == nullptr) {
    throw std::invalid_argument(
        "dequantize_row: type " +
        (traits ? std::string(traits->name) : std::to_string(static_cast<std::uint32_t>(type))) +
        " cannot be dequantized");
  }
  if (dst.size() % traits->block_size != 0) {
    throw std::invalid_argument("dequantize_row: " + std::to_string(dst.size()) + " " + std::string(traits->name) +
                                " values are not whole blocks of " + std::to_string(traits->block_size));
  }
  const std::size_t expected_bytes = dst.size() / traits->block_size * traits->type_size;
  if (src.size() != expected_bytes) {
    throw std::invalid_argument("dequantize_row: " + std::to_string(dst.size()) + " " + std::string(traits->name) +
                                " values need " + std::to_string(expected_bytes) + " bytes, got " +
                                std::to_string(src.size()));
  }
  dequantize(src.data(), dst.data(), dst.size() / traits->block_size);
}

GgmlTypeTraits dequantizable_traits(const GgufFile& file, const GgufTensorInfo& tensor) {
  const std::optional<GgmlTypeTraits> traits = ggml_type_traits(static_cast<std::uint32_t>(tensor.type));
  if (!traits || !traits->dequantizable) {
    throw ModelFormatError(
        file.path(), "tensor '" + tensor.name + "'",
        "type " + (traits ? std::string(traits->name) : std::to_string(static_cast<std::uint32_t>(tensor.type))) +
            " cannot be dequantized (pagedllm computes from F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
            "Q2_K to Q6_K)");
  }
  return *traits;
}

std::vector<float> dequantize_tensor(const GgufFile& file, const GgufTensorInfo& tensor) {
  dequantizable_traits(file, tensor);
  std::vector<float> values(tensor.num_elements);
  dequantize_row(tensor.type, file.tensor_data(tensor), values);
  return values;
}

std::vector<std::uint16_t> dequantize_tensor_bf16(const GgufFile& file, const GgufTensorInfo& tensor) {
  const GgmlTypeTraits traits = dequantizable_traits(file, tensor);
  const std::span<const std::byte> data = file.tensor_data(tensor);
  // Through a bounded fp32 buffer: whole blocks, about 64K values at a time.
  const std::size_t num_blocks = tensor.num_elements / traits.block_size;
  const std::size_t blocks_per_chunk = std::max<std::size_t>(1, 65536 / traits.block_size);
  std::vector<std::uint16_t> values(tensor.num_elements);
  std::vector<float> chunk(blocks_per_chunk * traits.block_size);
  for (std::size_t first = 0; first < num_blocks; first += blocks_per_chunk) {
    const std::size_t count = std::min(blocks_per_chunk, num_blocks - first);
    const std::span<float> out(chunk.data(), count * traits.block_size);
    dequantize_row(tensor.type, data.subspan(first * traits.type_size, count * traits.type_size), out);
    std::transform(out.begin(), out.end(), values.begin() + static_cast<std::ptrdiff_t>(first * traits.block_size),
                   float_to_bf16);
  }
  return values;
}

}  // namespace pagedllm::model
