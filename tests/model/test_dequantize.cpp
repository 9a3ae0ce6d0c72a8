// Dequantization of hand-built blocks (expected values worked out by hand from the block layouts),
// quantization against bytes produced by gguf-py, and quantize -> dequantize error bounds.
// The bit-for-bit comparison with gguf-py on random data is tests/pypi/check_dequant.py.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/model/dequantize.h"
#include "core/model/half.h"
#include "core/model/quantize.h"

namespace model = pagedllm::model;
using model::GgmlType;

namespace {

// One block of `type`, zero-filled, with little-endian field setters.
struct Block {
  explicit Block(GgmlType block_type)
      : type(block_type), bytes(model::ggml_type_traits(static_cast<std::uint32_t>(block_type))->type_size) {}

  Block& byte(std::size_t at, int value) {
    bytes.at(at) = static_cast<std::byte>(value);
    return *this;
  }
  Block& fp16(std::size_t at, float value) {
    const std::uint16_t bits = model::float_to_fp16(value);
    BOOST_TEST_REQUIRE(model::fp16_to_float(bits) == value);  // the test's scales are exact
    byte(at, bits & 0xff);
    return byte(at + 1, bits >> 8);
  }
  Block& u32(std::size_t at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) byte(at + i, static_cast<int>((value >> (8 * i)) & 0xff));
    return *this;
  }

  std::vector<float> dequantize() const {
    const auto traits = model::ggml_type_traits(static_cast<std::uint32_t>(type));
    std::vector<float> out(traits->block_size);
    model::dequantize_row(type, bytes, out);
    return out;
  }

  GgmlType type;
  std::vector<std::byte> bytes;
};

std::vector<std::byte> hex_bytes(const std::string& hex) {
  std::vector<std::byte> bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

std::string to_hex(const std::vector<std::byte>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (const std::byte b : bytes) {
    hex += kDigits[std::to_integer<int>(b) >> 4];
    hex += kDigits[std::to_integer<int>(b) & 0xf];
  }
  return hex;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dequantize)

BOOST_AUTO_TEST_CASE(unquantized_types_widen_exactly) {
  const std::vector<std::byte> f16 = hex_bytes("003c00c0ff7b0100");  // 1, -2, 65504, 2^-24
  std::vector<float> out(4);
  model::dequantize_row(GgmlType::f16, f16, out);
  BOOST_TEST(out == (std::vector<float>{1.0f, -2.0f, 65504.0f, 0x1p-24f}), boost::test_tools::per_element());
  model::dequantize_row(GgmlType::bf16, hex_bytes("803f00c0c93f7f7f"), out);
  BOOST_TEST(out == (std::vector<float>{1.0f, -2.0f, 1.5703125f, 0x1.fep127f}), boost::test_tools::per_element());
  std::vector<float> f32_out(2);
  model::dequantize_row(GgmlType::f32, hex_bytes("0000c03f000080bf"), f32_out);
  BOOST_TEST(f32_out == (std::vector<float>{1.5f, -1.0f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(q4_0_is_scale_times_nibble_minus_8_low_nibbles_first) {
  Block block(GgmlType::q4_0);
  block.fp16(0, 0.5f).byte(2, 0x1f);
  for (int j = 1; j < 16; ++j) block.byte(2 + j, 0x88);
  std::vector<float> expected(32, 0.0f);
  expected[0] = 3.5f;    // low nibble 15: (15 - 8) * 0.5
  expected[16] = -3.5f;  // high nibble 1: (1 - 8) * 0.5
  BOOST_TEST(block.dequantize() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(q4_1_is_scale_times_nibble_plus_min) {
  Block block(GgmlType::q4_1);
  block.fp16(0, 0.25f).fp16(2, -1.0f);
  for (int j = 0; j < 16; ++j) block.byte(4 + j, 0x44);
  block.byte(4 + 3, 0xf0);
  std::vector<float> expected(32, 0.0f);  // 4 * 0.25 - 1
  expected[3] = -1.0f;                    // 0 * 0.25 - 1
  expected[19] = 2.75f;                   // 15 * 0.25 - 1
  BOOST_TEST(block.dequantize() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(q5_0_takes_the_fifth_bit_of_value_j_from_bit_j_of_qh) {
  Block block(GgmlType::q5_0);
  block.fp16(0, 1.0f).u32(2, (1u << 2) | (1u << 20)).byte(6 + 2, 0x3f);
  std::vector<float> expected(32, -16.0f);  // nibble 0, fifth bit 0
  expected[2] = 15.0f;                      // 15 | 16 - 16
  expected[18] = -13.0f;                    // high nibble 3, bit 18 clear
  expected[20] = 0.0f;                      // high nibble of byte 4 is 0, bit 20 set: 16 - 16
  BOOST_TEST(block.dequantize() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(q5_1_is_scale_times_five_bit_value_plus_min) {
  Block block(GgmlType::q5_1);
  block.fp16(0, 0.5f).fp16(2, 2.0f).u32(4, 0x80000001u).byte(8 + 0, 0x21).byte(8 + 15, 0xa0);
  std::vector<float> expected(32, 2.0f);
  expected[0] = 10.5f;   // (1 | 16) * 0.5 + 2
  expected[16] = 3.0f;   // 2 * 0.5 + 2
  expected[31] = 15.0f;  // (10 | 16) * 0.5 + 2
  BOOST_TEST(block.dequantize() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(q8_0_is_scale_times_signed_byte) {
  Block block(GgmlType::q8_0);
  block.fp16(0, 0.125f).byte(2 + 0, 0x80).byte(2 + 1, 0x7f).byte(2 + 2, 0xff).byte(2 + 31, 0x08);
  std::vector<float> expected(32, 0.0f);
  expected[0] = -16.0f;   // -128 * 0.125
  expected[1] = 15.875f;  // 127 * 0.125
  expected[2] = -0.125f;  // -1 * 0.125
  expected[31] = 1.0f;    // 8 * 0.125
  BOOST_TEST(block.dequantize() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(q2_k_applies_each_groups_scale_and_min_to_2_bit_values) {
  // scales: low nibble scale, high nibble min; d 0.5, dmin 0.25.
  Block block(GgmlType::q2_k);
  block.byte(0, 0x21).byte(2, 0x12).byte(4, 0x03).byte(6, 0x44).byte(9, 0x15);
  block.byte(16 + 0, 0xe4);        // values 0, 32, 64, 96: q = 0, 1, 2, 3
  block.byte(16 + 32 + 17, 0x03);  // value 128 + 17 = 145: q = 3
  block.fp16(80, 0.5f).fp16(82, 0.25f);
  const std::vector<float> out = block.dequantize();
  BOOST_TEST(out[0] == -0.5f);  // group 0 (scale 1, min 2): 0 - 0.5
  BOOST_TEST(out[15] == -0.5f);
  BOOST_TEST(out[32] == 0.75f);  // group 2 (scale 2, min 1): 0.5 * 2 * 1 - 0.25
  BOOST_TEST(out[33] == -0.25f);
  BOOST_TEST(out[64] == 3.0f);  // group 4 (scale 3, min 0): 0.5 * 3 * 2
  BOOST_TEST(out[65] == 0.0f);
  BOOST_TEST(out[96] == 5.0f);  // group 6 (scale 4, min 4): 0.5 * 4 * 3 - 1
  BOOST_TEST(out[97] == -1.0f);
  BOOST_TEST(out[145] == 7.25f);  // group 9 (scale 5, min 1): 0.5 * 5 * 3 - 0.25
  BOOST_TEST(out[146] == -0.25f);
  BOOST_TEST(out[200] == 0.0f);
}

BOOST_AUTO_TEST_CASE(q3_k_unpacks_6_bit_scales_and_subtracts_4_where_the_hmask_bit_is_clear) {
  Block block(GgmlType::q3_k);
  // 6-bit scales (stored + 32): group 0 = 33 (+1), group 9 = 30 (-2), all others 32 (0).
  block.byte(96 + 0, 0x01).byte(96 + 1, 0xe0);
  block.byte(96 + 8, 0xaa).byte(96 + 9, 0x9a).byte(96 + 10, 0xaa).byte(96 + 11, 0xaa);
  block.fp16(108, 0.5f);
  block.byte(32 + 0, 0x03).byte(32 + 1, 0x02);  // values 0 and 1: low bits 3 and 2
  block.byte(0, 0x01);                          // value 0: high bit set (no -4)
  block.byte(32 + 48, 0x01).byte(16, 0x10);     // value 144: low bits 1, hmask[16] bit 4 set
  const std::vector<float> out = block.dequantize();
  BOOST_TEST(out[0] == 1.5f);     // 0.5 * 1 * 3
  BOOST_TEST(out[1] == -1.0f);    // 0.5 * 1 * (2 - 4)
  BOOST_TEST(out[2] == -2.0f);    // 0.5 * 1 * (0 - 4)
  BOOST_TEST(out[144] == -1.0f);  // 0.5 * -2 * 1
  BOOST_TEST(out[145] == 4.0f);   // 0.5 * -2 * (0 - 4)
  BOOST_TEST(out[16] == 0.0f);    // group 1: scale 0
}

namespace {

// Q4_K / Q5_K scales: sub-block 0 scale 3 min 2; sub-block 5 scale 23 min 33 (6-bit values split
// between the low nibbles of byte 9 and bits 6..7 of bytes 1 and 5).
void set_k_scales(Block& block) {
  block.byte(4 + 0, 3).byte(4 + 4, 2);
  block.byte(4 + 1, 0x40).byte(4 + 5, 0x80).byte(4 + 9, 0x17);
  block.fp16(0, 0.5f).fp16(2, 1.0f);
}

}  // namespace

BOOST_AUTO_TEST_CASE(q4_k_uses_packed_6_bit_scales_and_mins_per_32_values) {
  Block block(GgmlType::q4_k);
  set_k_scales(block);
  block.byte(16 + 0, 0x0a);       // value 0: low nibble 10
  block.byte(16 + 64 + 7, 0xf0);  // value 5 * 32 + 7: high nibble 15
  const std::vector<float> out = block.dequantize();
  BOOST_TEST(out[0] == 13.0f);  // 0.5 * 3 * 10 - 1 * 2
  BOOST_TEST(out[1] == -2.0f);
  BOOST_TEST(out[167] == 139.5f);  // 0.5 * 23 * 15 - 33
  BOOST_TEST(out[168] == -33.0f);
  BOOST_TEST(out[135] == 0.0f);  // sub-block 4: scale 0, min 0
  BOOST_TEST(out[40] == 0.0f);
}

BOOST_AUTO_TEST_CASE(q5_k_adds_the_fifth_bit_from_bit_j_of_qh) {
  Block block(GgmlType::q5_k);
  set_k_scales(block);
  block.byte(48 + 0, 0x0a).byte(48 + 64 + 7, 0xf0);
  block.byte(16 + 0, 0x01).byte(16 + 7, 0x20);  // qh[0] bit 0, qh[7] bit 5
  const std::vector<float> out = block.dequantize();
  BOOST_TEST(out[0] == 37.0f);  // 0.5 * 3 * (10 + 16) - 2
  BOOST_TEST(out[1] == -2.0f);
  BOOST_TEST(out[167] == 323.5f);  // 0.5 * 23 * (15 + 16) - 33
  BOOST_TEST(out[7] == -2.0f);     // qh[7] bit 0 is clear
  BOOST_TEST(out[168] == -33.0f);
}

BOOST_AUTO_TEST_CASE(q6_k_combines_4_low_and_2_high_bits_with_signed_scales) {
  Block block(GgmlType::q6_k);
  block.byte(192 + 0, 2).byte(192 + 11, 0xfd).byte(192 + 15, 1);  // scales 2, -3, 1
  block.fp16(208, 0.25f);
  block.byte(0, 0x05).byte(128 + 0, 0x02);         // value 0: 5 | 2 << 4 = 37
  block.byte(64 + 52, 0x0f).byte(128 + 52, 0x0c);  // value 180: 15 | 3 << 4 = 63
  block.byte(64 + 48, 0x90).byte(128 + 48, 0x40);  // value 240: 9 | 1 << 4 = 25
  const std::vector<float> out = block.dequantize();
  BOOST_TEST(out[0] == 2.5f);       // 0.25 * 2 * (37 - 32)
  BOOST_TEST(out[1] == -16.0f);     // 0.25 * 2 * (0 - 32)
  BOOST_TEST(out[180] == -23.25f);  // 0.25 * -3 * (63 - 32)
  BOOST_TEST(out[240] == -1.75f);   // 0.25 * 1 * (25 - 32)
  BOOST_TEST(out[16] == -0.0f);     // group 1: scale 0
}

BOOST_AUTO_TEST_CASE(q8_k_is_fp32_scale_times_signed_byte) {
  Block block(GgmlType::q8_k);
  block.byte(3, 0x3f);  // d = 0.5f (0x3f000000)
  block.byte(4 + 0, 0x80).byte(4 + 255, 0x7f);
  for (int i = 0; i < 32; ++i) block.byte(260 + i, 0xff);  // block sums: not part of the values
  const std::vector<float> out = block.dequantize();
  BOOST_TEST(out[0] == -64.0f);
  BOOST_TEST(out[255] == 63.5f);
  BOOST_TEST(out[100] == 0.0f);
}

BOOST_AUTO_TEST_CASE(several_blocks_are_dequantized_in_order) {
  Block first(GgmlType::q8_0);
  Block second(GgmlType::q8_0);
  first.fp16(0, 1.0f).byte(2, 5);
  second.fp16(0, 2.0f).byte(2, 5);
  std::vector<std::byte> row = first.bytes;
  row.insert(row.end(), second.bytes.begin(), second.bytes.end());
  std::vector<float> out(64);
  model::dequantize_row(GgmlType::q8_0, row, out);
  BOOST_TEST(out[0] == 5.0f);
  BOOST_TEST(out[32] == 10.0f);
}

BOOST_AUTO_TEST_CASE(mismatched_sizes_and_unsupported_types_are_refused) {
  std::vector<std::byte> bytes(34);
  std::vector<float> out(32);
  std::vector<float> partial(31);
  BOOST_CHECK_THROW(model::dequantize_row(GgmlType::q8_0, std::span(bytes).first(33), out), std::invalid_argument);
  BOOST_CHECK_THROW(model::dequantize_row(GgmlType::q8_0, bytes, partial), std::invalid_argument);
  BOOST_CHECK_THROW(model::dequantize_row(GgmlType::q8_1, std::vector<std::byte>(40), out), std::invalid_argument);
  BOOST_CHECK_THROW(model::dequantize_row(static_cast<GgmlType>(77), bytes, out), std::invalid_argument);
  std::vector<float> f32_out(8);
  BOOST_CHECK_THROW(model::dequantize_row(GgmlType::f32, bytes, f32_out), std::invalid_argument);
  BOOST_CHECK_NO_THROW(model::dequantize_row(GgmlType::q8_0, {}, std::span<float>()));
}

BOOST_AUTO_TEST_CASE(every_type_pagedllm_dequantizes_says_so_in_its_traits) {
  for (const GgmlType type : {GgmlType::f32, GgmlType::f16, GgmlType::bf16, GgmlType::q4_0, GgmlType::q4_1,
                              GgmlType::q5_0, GgmlType::q5_1, GgmlType::q8_0, GgmlType::q2_k, GgmlType::q3_k,
                              GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k, GgmlType::q8_k}) {
    const auto traits = model::ggml_type_traits(static_cast<std::uint32_t>(type));
    BOOST_TEST_REQUIRE(traits.has_value());
    BOOST_TEST(traits->dequantizable, traits->name);
  }
  BOOST_TEST(!model::ggml_type_traits(static_cast<std::uint32_t>(GgmlType::q8_1))->dequantizable);
  BOOST_TEST(!model::ggml_type_traits(16).has_value());  // IQ2_XXS: unknown to pagedllm
  BOOST_TEST(model::ggml_type_traits(12)->type_size == 144u);
  BOOST_TEST(model::ggml_type_traits(14)->type_size == 210u);
  BOOST_TEST(model::ggml_type_traits(15)->type_size == 292u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(quantize)

namespace {

// Inputs and gguf-py 0.19's `gguf.quants.quantize` output for them (hex, one block).
const std::vector<float> kRamp = {  // (j - 15.5) / 8
    -0x1.fp+0f, -0x1.dp+0f, -0x1.bp+0f, -0x1.9p+0f, -0x1.7p+0f, -0x1.5p+0f, -0x1.3p+0f, -0x1.1p+0f,
    -0x1.ep-1f, -0x1.ap-1f, -0x1.6p-1f, -0x1.2p-1f, -0x1.cp-2f, -0x1.4p-2f, -0x1.8p-3f, -0x1.0p-4f,
    0x1.0p-4f,  0x1.8p-3f,  0x1.4p-2f,  0x1.cp-2f,  0x1.2p-1f,  0x1.6p-1f,  0x1.ap-1f,  0x1.ep-1f,
    0x1.1p+0f,  0x1.3p+0f,  0x1.5p+0f,  0x1.7p+0f,  0x1.9p+0f,  0x1.bp+0f,  0x1.dp+0f,  0x1.fp+0f};
const std::vector<float> kNormal = {  // numpy default_rng(7).standard_normal(32) as float32
    0x1.427a32p-10f, 0x1.31ea5ap-2f,  -0x1.18b798p-2f, -0x1.c7fba8p-1f, -0x1.d19538p-2f, -0x1.fbb918p-1f,
    0x1.ecb246p-5f,  0x1.571858p+0f,  -0x1.f804fcp-2f, -0x1.3daee2p-1f, 0x1.f59928p-2f,  0x1.6d73cap-2f,
    0x1.afc6dap-4f,  -0x1.dc664ep-1f, -0x1.df430ap-6f, 0x1.63fec8p-1f,  -0x1.581e72p+0f, -0x1.d4993ap-2f,
    -0x1.e6b688p+0f, -0x1.4a1f26p+0f, -0x1.d77bf2p+0f, -0x1.e17776p-3f, -0x1.44776p+0f,  0x1.15c652p-2f,
    0x1.4106b6p-3f,  -0x1.7ed5a6p-3f, -0x1.42252ep+1f, -0x1.13cf8ep-1f, -0x1.8d51dap-5f, 0x1.d01d16p-4f,
    -0x1.87b6fap+0f, -0x1.e93828p-2f};
// Ties of |max| (2 at index 3 before -2 at index 10) and values on rounding boundaries.
const std::vector<float> kTies = {0.0f,  -0.25f, 0.5f,  2.0f,   1.0f,  -1.25f, 1.5f,  -1.75f, 2.0f,   0.0f, -2.0f,
                                  -0.5f, 0.75f,  -1.0f, 1.25f,  -1.5f, 1.75f,  -2.0f, 0.0f,   -0.25f, 0.5f, -0.75f,
                                  1.0f,  -1.25f, 1.5f,  -1.75f, 2.0f,  0.0f,   0.25f, -0.5f,  0.75f,  -1.0f};
// Halves for Q8_0's round-half-away-from-zero.
const std::vector<float> kHalves = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f, 126.5f, -126.5f, 0,
                                    0,      0,    0,    0,    0,     0,     0,     0,    0,      0,       0,
                                    0,      0,    0,    0,    0,     0,     0,     0,    0,      0};

struct Golden {
  GgmlType type;
  const std::vector<float>* input;
  const char* hex;
};

const Golden kGolden[] = {
    {GgmlType::q4_0, &kRamp, "c033809191a2a2b3b3c4c4d5d5e6e6f7f7f8"},
    {GgmlType::q4_0, &kNormal, "0935487927452775489c86760a698885386a"},
    {GgmlType::q4_0, &kTies, "00b418f9869064bd42df20f80f8a75ac53ce"},
    {GgmlType::q4_0, &kHalves, "f0cb8088888888888888808f888888888888"},
    {GgmlType::q4_1, &kRamp, "2234c0bf80809191a2a2b3b3c4c4d5d5e6e6f7f7"},
    {GgmlType::q4_1, &kNormal, "1d3409c15a8b295638965abfa8970c8baaa64a8c"},
    {GgmlType::q4_1, &kTies, "443400c0e707797f9b53bd31df17f0768a64ac42"},
    {GgmlType::q4_1, &kHalves, "3a4ce8d77f787878777777787f70777777777777"},
    {GgmlType::q5_0, &kRamp, "c02f0000ffff102132435465768798a9bacbdcedfeff"},
    {GgmlType::q5_0, &kNormal, "0931c3dc803170d24e8a4dfa80291dfc03d2011a60d4"},
    {GgmlType::q5_0, &kTies, "00b0a3aeaeaa20f20c20c86a84ae40e00f04ea48a68c"},
    {GgmlType::q5_0, &kHalves, "f0c7fefeffff0000000000000000000f000000000000"},
    {GgmlType::q5_1, &kRamp, "0030c0bf0000ffff00112233445566778899aabbccddeeff"},
    {GgmlType::q5_1, &kNormal, "f62f09c1d7dda2bb941752ad512ca56f503f0807455d840a"},
    {GgmlType::q5_1, &kTies, "213000c05d53555dd00e03ef37a67b62bf20f00c15c85984"},
    {GgmlType::q5_1, &kHalves, "1748e8d78f010000fff0f0f0fffffff0fff0ffffffffffff"},
    {GgmlType::q8_0, &kRamp, "d0238189919aa2aab2bac3cbd3dbe3ecf4fc040c141d252d353d464e565e666f777f"},
    {GgmlType::q8_0, &kNormal, "1325000ff2d3e9ce0344e7e1191205d1ff23bce9a0bfa3f4c00e08f781e5fe06b3e8"},
    {GgmlType::q8_0, &kTies, "082400f0207f40b15f917f0081e030c04fa16f8100f020d040b15f917f0010e030c0"},
    {GgmlType::q8_0, &kHalves, "003c7f010203fffefd047f8100000000000000000000000000000000000000000000"},
};

std::vector<float> random_values(std::size_t count, float scale, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float& value : values) value = normal(generator);
  return values;
}

}  // namespace

BOOST_AUTO_TEST_CASE(blocks_match_the_bytes_gguf_py_writes) {
  for (const Golden& golden : kGolden) {
    const auto name = model::ggml_type_traits(static_cast<std::uint32_t>(golden.type))->name;
    BOOST_TEST(to_hex(model::quantize(golden.type, *golden.input)) == golden.hex, name);
  }
}

BOOST_AUTO_TEST_CASE(an_all_zero_block_has_a_zero_scale_and_dequantizes_to_zeros) {
  const std::vector<float> zeros(32, 0.0f);
  BOOST_TEST(to_hex(model::quantize(GgmlType::q8_0, zeros)) == std::string(68, '0'));
  BOOST_TEST(to_hex(model::quantize(GgmlType::q4_0, zeros)) == "0080" + std::string(32, '8'));
  for (const GgmlType type : {GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1, GgmlType::q8_0}) {
    std::vector<float> back(32, 1.0f);
    model::dequantize_row(type, model::quantize(type, zeros), back);
    BOOST_TEST(back == zeros, boost::test_tools::per_element());
  }
}

// Per value: the rounding step (half a scale; a whole one where Q4_0/Q5_0 clip the value opposite
// the block's signed maximum) plus what storing d and min as fp16 (relative 2^-11) can add.
BOOST_AUTO_TEST_CASE(quantize_then_dequantize_stays_within_the_rounding_bound) {
  const std::vector<float> values = random_values(32 * 256, 3.0f, 11);
  struct Case {
    GgmlType type;
    float steps;      // scale = range / steps
    float max_error;  // in scales
    bool symmetric;
  };
  for (const Case c : {Case{GgmlType::q8_0, 127, 0.5f, true}, Case{GgmlType::q4_0, 8, 1.0f, true},
                       Case{GgmlType::q5_0, 16, 1.0f, true}, Case{GgmlType::q4_1, 15, 0.5f, false},
                       Case{GgmlType::q5_1, 31, 0.5f, false}}) {
    std::vector<float> back(values.size());
    model::dequantize_row(c.type, model::quantize(c.type, values), back);
    for (std::size_t first = 0; first < values.size(); first += 32) {
      float low = values[first], high = values[first], amax = 0;
      for (std::size_t j = first; j < first + 32; ++j) {
        low = std::min(low, values[j]);
        high = std::max(high, values[j]);
        amax = std::max(amax, std::fabs(values[j]));
      }
      const float scale = c.symmetric ? amax / c.steps : (high - low) / c.steps;
      const float fp16_slack = (2.0f * c.steps * scale + std::fabs(low)) * 0x1p-11f;
      for (std::size_t j = first; j < first + 32; ++j) {
        BOOST_TEST_REQUIRE(std::fabs(back[j] - values[j]) <= c.max_error * scale + fp16_slack,
                           "type " << static_cast<int>(c.type) << " value " << j);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(f16_and_bf16_round_each_value_to_nearest) {
  const std::vector<float> values = random_values(1000, 100.0f, 5);
  const std::vector<std::byte> f16 = model::quantize(GgmlType::f16, values);
  const std::vector<std::byte> bf16 = model::quantize(GgmlType::bf16, values);
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint16_t h, b;
    std::memcpy(&h, f16.data() + 2 * i, 2);
    std::memcpy(&b, bf16.data() + 2 * i, 2);
    BOOST_TEST_REQUIRE(h == model::float_to_fp16(values[i]));
    BOOST_TEST_REQUIRE(b == model::float_to_bf16(values[i]));
  }
  BOOST_TEST(model::quantize(GgmlType::f32, values).size() == 4 * values.size());
}

BOOST_AUTO_TEST_CASE(mismatched_sizes_and_unquantizable_types_are_refused) {
  const std::vector<float> values(64, 1.0f);
  std::vector<std::byte> out(68);
  BOOST_CHECK_NO_THROW(model::quantize_row(GgmlType::q8_0, values, out));
  BOOST_CHECK_THROW(model::quantize_row(GgmlType::q8_0, values, std::span(out).first(67)), std::invalid_argument);
  BOOST_CHECK_THROW(model::quantize_row(GgmlType::q8_0, std::span(values).first(40), out), std::invalid_argument);
  BOOST_CHECK_THROW(model::quantize(GgmlType::q4_k, std::vector<float>(256)), std::invalid_argument);
  BOOST_CHECK_THROW(model::quantize(GgmlType::q8_1, values), std::invalid_argument);
  BOOST_TEST(!model::is_quantizable(GgmlType::q6_k));
  BOOST_TEST(model::is_quantizable(GgmlType::q5_1));
}

BOOST_AUTO_TEST_SUITE_END()
