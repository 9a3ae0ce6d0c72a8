// GGUF header parsing: a hand-assembled file reads back, and every kind of damage is reported
// with the file, the key or tensor at fault and what was expected.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/model/gguf_file.h"
#include "core/model/model_errors.h"
#include "tests/model/format_error_checks.h"

namespace pagedllm::model {
namespace {

// Assembles GGUF bytes field by field, so each test can damage exactly one thing.
struct GgufBytes {
  std::vector<std::byte> bytes;

  template <typename T>
  GgufBytes& put(T value) {
    const auto* raw = reinterpret_cast<const std::byte*>(&value);
    bytes.insert(bytes.end(), raw, raw + sizeof(T));
    return *this;
  }
  GgufBytes& put_string(const std::string& text) {
    put<std::uint64_t>(text.size());
    const auto* raw = reinterpret_cast<const std::byte*>(text.data());
    bytes.insert(bytes.end(), raw, raw + text.size());
    return *this;
  }
  GgufBytes& pad_to(std::size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(std::byte{0});
    return *this;
  }
};

constexpr std::uint32_t kMagic = 0x46554747;

// A valid v3 file: 3 key/values (u32, string, string array), 2 tensors (F32 [4], Q8_0 [32 x 2]).
GgufBytes valid_file(std::uint64_t second_offset = 32, std::uint64_t first_type = 0) {
  GgufBytes file;
  file.put(kMagic).put<std::uint32_t>(3).put<std::uint64_t>(2).put<std::uint64_t>(3);
  file.put_string("llama.block_count").put<std::uint32_t>(4).put<std::uint32_t>(30);
  file.put_string("general.architecture").put<std::uint32_t>(8).put_string("llama");
  file.put_string("tokenizer.ggml.tokens")
      .put<std::uint32_t>(9)
      .put<std::uint32_t>(8)
      .put<std::uint64_t>(2)
      .put_string("a")
      .put_string("b");
  file.put_string("small")
      .put<std::uint32_t>(1)
      .put<std::uint64_t>(4)
      .put<std::uint32_t>(static_cast<std::uint32_t>(first_type))
      .put<std::uint64_t>(0);
  file.put_string("quant")
      .put<std::uint32_t>(2)
      .put<std::uint64_t>(32)
      .put<std::uint64_t>(2)
      .put<std::uint32_t>(8)
      .put<std::uint64_t>(second_offset);
  file.pad_to(32);
  for (int i = 0; i < 4; ++i) file.put<float>(static_cast<float>(i) + 0.5f);
  file.pad_to(32);
  for (int i = 0; i < 2 * 34; ++i) file.put<std::uint8_t>(static_cast<std::uint8_t>(i));
  return file;
}

std::string parse_error(const std::vector<std::byte>& bytes) {
  try {
    parse_gguf_header(bytes, "m.gguf");
  } catch (const ModelFormatError& error) {
    BOOST_TEST(error.file() == "m.gguf");
    return error.what();
  }
  BOOST_FAIL("expected a ModelFormatError");
  return {};
}

using testing::contains;

}  // namespace

BOOST_AUTO_TEST_SUITE(gguf_file)

BOOST_AUTO_TEST_CASE(a_valid_file_reads_back_every_key_and_tensor) {
  const GgufBytes file = valid_file();
  const GgufHeader header = parse_gguf_header(file.bytes, "m.gguf");
  BOOST_TEST(header.version == 3u);
  BOOST_TEST(header.metadata.size() == 3u);
  BOOST_TEST(std::get<std::uint64_t>(header.metadata.at("llama.block_count").value) == 30u);
  BOOST_TEST(std::get<std::string>(header.metadata.at("general.architecture").value) == "llama");
  const auto& tokens = std::get<GgufArray>(header.metadata.at("tokenizer.ggml.tokens").value);
  BOOST_TEST(tokens.items.size() == 2u);
  BOOST_TEST(std::get<std::string>(tokens.items[1].value) == "b");
  BOOST_REQUIRE(header.tensors.size() == 2u);
  BOOST_TEST(header.tensors[0].num_bytes == 16u);
  BOOST_TEST(header.tensors[1].type == GgmlType::q8_0);
  BOOST_TEST(header.tensors[1].num_elements == 64u);
  BOOST_TEST(header.tensors[1].num_bytes == 68u);  // 2 blocks of 34 bytes
  BOOST_TEST(header.data_offset % 32 == 0u);
}

BOOST_AUTO_TEST_CASE(gguf_file_maps_tensor_bytes_and_typed_metadata) {
  const GgufBytes file = valid_file();
  const std::string path = "/tmp/pagedllm_test_gguf_file.gguf";
  {
    std::FILE* out = std::fopen(path.c_str(), "wb");
    BOOST_REQUIRE(out != nullptr);
    std::fwrite(file.bytes.data(), 1, file.bytes.size(), out);
    std::fclose(out);
  }
  const GgufFile gguf(path);
  BOOST_TEST(gguf.get_u64("llama.block_count") == 30u);
  BOOST_TEST(gguf.get_string("general.architecture") == "llama");
  BOOST_TEST(gguf.get_string_array("tokenizer.ggml.tokens").size() == 2u);
  BOOST_TEST(!gguf.find_u64("missing.key").has_value());
  BOOST_CHECK_THROW(gguf.get_u64("general.architecture"), ModelFormatError);
  BOOST_CHECK_THROW(gguf.get_string("missing.key"), ModelFormatError);
  const GgufTensorInfo* small = gguf.find_tensor("small");
  BOOST_REQUIRE(small != nullptr);
  const auto data = gguf.tensor_data(*small);
  float values[4];
  std::memcpy(values, data.data(), sizeof(values));
  BOOST_TEST(values[3] == 3.5f);
  std::remove(path.c_str());
}

BOOST_AUTO_TEST_CASE(a_wrong_magic_says_it_is_not_gguf) {
  GgufBytes file = valid_file();
  file.bytes[0] = std::byte{'X'};
  BOOST_TEST(contains(parse_error(file.bytes), "magic"));
}

BOOST_AUTO_TEST_CASE(an_unsupported_version_is_named) {
  GgufBytes file = valid_file();
  file.bytes[4] = std::byte{7};
  const std::string message = parse_error(file.bytes);
  BOOST_TEST(contains(message, "version 2 or 3, found 7"));
}

BOOST_AUTO_TEST_CASE(every_truncation_point_is_an_error_never_a_crash) {
  const GgufBytes file = valid_file();
  for (std::size_t size = 0; size < file.bytes.size(); ++size) {
    const std::vector<std::byte> cut(file.bytes.begin(), file.bytes.begin() + static_cast<long>(size));
    BOOST_CHECK_THROW(parse_gguf_header(cut, "m.gguf"), ModelFormatError);
  }
}

BOOST_AUTO_TEST_CASE(tensor_data_beyond_the_file_names_the_tensor) {
  const GgufBytes file = valid_file(/*second_offset=*/64);
  const std::string message = parse_error(file.bytes);
  BOOST_TEST(contains(message, "tensor 'quant'"));
  BOOST_TEST(contains(message, "outside the data section"));
}

BOOST_AUTO_TEST_CASE(a_misaligned_tensor_offset_is_rejected) {
  const GgufBytes file = valid_file(/*second_offset=*/16);
  BOOST_TEST(contains(parse_error(file.bytes), "not a multiple of the alignment"));
}

BOOST_AUTO_TEST_CASE(an_unknown_tensor_type_is_named) {
  const GgufBytes file = valid_file(32, /*first_type=*/99);
  const std::string message = parse_error(file.bytes);
  BOOST_TEST(contains(message, "tensor 'small'"));
  BOOST_TEST(contains(message, "unknown ggml type code 99"));
}

BOOST_AUTO_TEST_CASE(a_string_longer_than_the_file_is_caught_before_allocation) {
  GgufBytes file;
  file.put(kMagic).put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(1);
  file.put<std::uint64_t>(std::uint64_t{1} << 62);  // key length
  file.put<std::uint64_t>(0);                       // a few bytes, so that the key count fits
  BOOST_TEST(contains(parse_error(file.bytes), "truncated"));
}

BOOST_AUTO_TEST_CASE(an_array_count_beyond_the_file_is_caught_before_allocation) {
  GgufBytes file;
  file.put(kMagic).put<std::uint32_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(1);
  file.put_string("k").put<std::uint32_t>(9).put<std::uint32_t>(10).put<std::uint64_t>(1ull << 60);
  const std::string message = parse_error(file.bytes);
  BOOST_TEST(contains(message, "key 'k'"));
  BOOST_TEST(contains(message, "does not fit"));
}

BOOST_AUTO_TEST_CASE(a_row_length_not_divisible_by_the_block_size_is_rejected) {
  GgufBytes file;
  file.put(kMagic).put<std::uint32_t>(3).put<std::uint64_t>(1).put<std::uint64_t>(0);
  file.put_string("w").put<std::uint32_t>(1).put<std::uint64_t>(30).put<std::uint32_t>(8).put<std::uint64_t>(0);
  file.pad_to(32);
  for (int i = 0; i < 64; ++i) file.put<std::uint8_t>(0);
  const std::string message = parse_error(file.bytes);
  BOOST_TEST(contains(message, "tensor 'w'"));
  BOOST_TEST(contains(message, "block size 32"));
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_named) {
  try {
    GgufFile file("/nonexistent/dir/model.gguf");
    BOOST_FAIL("expected an error");
  } catch (const ModelFormatError& error) {
    BOOST_TEST(contains(error.what(), "/nonexistent/dir/model.gguf"));
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::model
