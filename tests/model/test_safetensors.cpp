// safetensors: written files read back (single and sharded), and every kind of damage is
// reported with the file, the tensor or field at fault, and what was expected against found.
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model/half.h"
#include "core/model/model_errors.h"
#include "core/model/safetensors_checkpoint.h"
#include "core/model/safetensors_file.h"
#include "core/model/safetensors_writer.h"
#include "tests/model/format_error_checks.h"

namespace pagedllm::model {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    path =
        fs::temp_directory_path() / ("pagedllm_st_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  static int& counter() {
    static int next = 0;
    return next;
  }
};

// The raw bytes of a safetensors file: length, header text as given, then `num_data_bytes`.
std::vector<std::byte> raw_file(const std::string& header, std::size_t num_data_bytes = 0) {
  std::vector<std::byte> bytes(8 + header.size() + num_data_bytes, std::byte{0});
  const std::uint64_t length = header.size();
  std::memcpy(bytes.data(), &length, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

void write_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

using testing::error_of;

std::string header_error(const std::string& header, std::size_t num_data_bytes = 0) {
  const std::vector<std::byte> bytes = raw_file(header, num_data_bytes);
  return error_of([&] { parse_safetensors_header(bytes, "bad.safetensors"); });
}

using testing::contains;
using testing::expect_parts;

std::vector<float> ramp(std::size_t count, float scale) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = (static_cast<float>(i) - 3.0f) * scale;
  return values;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(safetensors)

BOOST_AUTO_TEST_CASE(written_file_reads_back_with_sorted_aligned_header_and_exact_values) {
  TempDir dir;
  const std::vector<float> big = ramp(6, 0.25f);  // exact in F16 and BF16
  const std::vector<float> odd = ramp(3, 1.5f);
  SafetensorsWriter writer;
  writer.add_f32("z.weight", {2, 3}, big, SafetensorsDtype::f16);
  writer.add_f32("a.bias", {3}, odd, SafetensorsDtype::f32);
  writer.add_f32("m.norm", {2, 3}, big, SafetensorsDtype::bf16);
  writer.add_f32("scalar", {}, std::vector<float>{7.0f});
  writer.add_f32("empty", {0, 4}, std::vector<float>{});
  writer.set_metadata("format", "pt");
  writer.write(dir.file("model.safetensors"));

  const SafetensorsFile file(dir.file("model.safetensors"));
  const SafetensorsHeader& header = file.header();
  BOOST_TEST(header.data_offset % 8 == 0u);
  BOOST_TEST(header.metadata.at("format") == "pt");
  std::vector<std::string> names;
  for (const SafetensorsTensorInfo& tensor : file.tensors()) {
    names.push_back(tensor.name);
    BOOST_TEST((header.data_offset + tensor.begin) % dtype_size(tensor.dtype) == 0u, tensor.name);
  }
  BOOST_TEST(names == std::vector<std::string>({"a.bias", "empty", "m.norm", "scalar", "z.weight"}),
             boost::test_tools::per_element());
  // The header text itself: metadata first, then tensors by name, space padded.
  std::ifstream in(dir.file("model.safetensors"), std::ios::binary);
  std::string text(header.data_offset, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  BOOST_TEST(text.substr(8, 17) == "{\"__metadata__\":{");
  BOOST_TEST(text.find("\"a.bias\"") < text.find("\"z.weight\""));

  BOOST_TEST(to_string(file.tensor("z.weight").dtype) == "F16");
  BOOST_TEST(file.tensor("z.weight").shape == std::vector<std::uint64_t>({2, 3}), boost::test_tools::per_element());
  BOOST_TEST(file.read_f32("z.weight") == big, boost::test_tools::per_element());
  BOOST_TEST(file.read_f32("m.norm") == big, boost::test_tools::per_element());
  BOOST_TEST(file.read_f32("a.bias") == odd, boost::test_tools::per_element());
  BOOST_TEST(file.read_f32("scalar") == std::vector<float>({7.0f}), boost::test_tools::per_element());
  BOOST_TEST(file.read_f32("empty").empty());
  BOOST_TEST(file.tensor("scalar").num_elements == 1u);
  const std::vector<std::uint16_t> bf16 = file.read_bf16("z.weight");
  for (std::size_t i = 0; i < big.size(); ++i) BOOST_TEST(bf16[i] == float_to_bf16(big[i]));
  expect_parts(error_of([&] { file.tensor("missing"); }), {dir.file("model.safetensors"), "tensor 'missing'"});
}

BOOST_AUTO_TEST_CASE(narrowing_rounds_to_nearest_even) {
  TempDir dir;
  const std::vector<float> values = {1.0f + 1.0f / 512.0f, 3.14159265f, -65504.0f, 1e-8f};
  SafetensorsWriter writer;
  writer.add_f32("w", {4}, values);
  writer.write(dir.file("w.safetensors"));
  const SafetensorsFile file(dir.file("w.safetensors"));
  const std::vector<std::uint16_t> bits = file.read_bf16("w");
  for (std::size_t i = 0; i < values.size(); ++i) BOOST_TEST(bits[i] == float_to_bf16(values[i]));
  BOOST_TEST(bits[0] == 0x3f80);  // 1 + 2^-9 is halfway between bf16 neighbours: ties to even
}

BOOST_AUTO_TEST_CASE(tensors_at_unaligned_offsets_read_correctly) {
  // Header length 21 puts the data section at offset 29: nothing is aligned.
  const std::string header = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  std::vector<std::byte> bytes = raw_file(header, 9);
  const float values[2] = {1.5f, -2.25f};
  std::memcpy(bytes.data() + 8 + header.size() + 1, values, sizeof values);
  TempDir dir;
  write_bytes(dir.file("u.safetensors"), bytes);
  const SafetensorsFile file(dir.file("u.safetensors"));
  BOOST_TEST(file.read_f32("t") == std::vector<float>({1.5f, -2.25f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(sharded_checkpoint_round_trips_through_the_index) {
  TempDir dir;
  SafetensorsWriter writer;
  for (int layer = 0; layer < 5; ++layer) {
    writer.add_f32("model.layers." + std::to_string(layer) + ".w", {4, 4}, ramp(16, static_cast<float>(layer + 1)),
                   SafetensorsDtype::bf16);  // 32 bytes
  }
  writer.add_f32("lm_head.weight", {8, 4}, ramp(32, 0.5f));  // 128 bytes: over budget alone
  const std::vector<std::string> shards = writer.write_sharded(dir.path.string(), 70);
  BOOST_TEST(shards.size() == 4u);  // [0,1] [2,3] [4] [lm_head]
  BOOST_TEST(fs::path(shards.front()).filename() == "model-00001-of-00004.safetensors");
  BOOST_TEST(fs::exists(dir.path / kSafetensorsIndexFile));

  const SafetensorsCheckpoint checkpoint(dir.path.string());
  BOOST_TEST(checkpoint.num_shards() == 4u);
  BOOST_TEST(checkpoint.num_tensors() == 6u);
  BOOST_TEST(checkpoint.shard_path("model.layers.0.w") == checkpoint.shard_path("model.layers.1.w"));
  BOOST_TEST(checkpoint.shard_path("model.layers.1.w") != checkpoint.shard_path("model.layers.2.w"));
  BOOST_TEST(checkpoint.read_f32("model.layers.3.w") == ramp(16, 4.0f), boost::test_tools::per_element());
  BOOST_TEST(checkpoint.read_f32("lm_head.weight") == ramp(32, 0.5f), boost::test_tools::per_element());
  BOOST_TEST(to_string(checkpoint.tensor("lm_head.weight").dtype) == "F32");
  expect_parts(error_of([&] { checkpoint.tensor("nope"); }), {kSafetensorsIndexFile.data(), "tensor 'nope'"});

  // The index's total_size is the sum of tensor bytes, as Hugging Face writes it.
  std::ifstream in(dir.path / kSafetensorsIndexFile);
  const auto index = nlohmann::json::parse(in);
  BOOST_TEST(index["metadata"]["total_size"].get<std::uint64_t>() == 5u * 32u + 128u);
}

BOOST_AUTO_TEST_CASE(checkpoint_opens_a_directory_with_a_single_file) {
  TempDir dir;
  SafetensorsWriter writer;
  writer.add_f32("w", {2}, std::vector<float>{1.0f, 2.0f});
  writer.write(dir.file("model.safetensors"));
  const SafetensorsCheckpoint checkpoint(dir.path.string());
  BOOST_TEST(checkpoint.num_shards() == 1u);
  BOOST_TEST(checkpoint.tensor_names() == std::vector<std::string>({"w"}), boost::test_tools::per_element());
  BOOST_TEST(checkpoint.read_f32("w") == std::vector<float>({1.0f, 2.0f}), boost::test_tools::per_element());
  const TempDir empty;
  expect_parts(error_of([&] { SafetensorsCheckpoint{empty.path.string()}; }),
               {empty.path.string(), "model.safetensors"});
}

BOOST_AUTO_TEST_CASE(missing_shard_names_the_index_the_shard_and_a_tensor) {
  TempDir dir;
  SafetensorsWriter writer;
  writer.add_f32("a", {1}, std::vector<float>{1.0f});
  writer.add_f32("b", {1}, std::vector<float>{2.0f});
  const std::vector<std::string> shards = writer.write_sharded(dir.path.string(), 4);
  fs::remove(shards[1]);
  expect_parts(error_of([&] { SafetensorsCheckpoint{dir.path.string()}; }),
               {kSafetensorsIndexFile.data(), "tensor 'b'", "model-00002-of-00002.safetensors", "does not exist"});
}

BOOST_AUTO_TEST_CASE(tensor_missing_from_its_shard_names_the_shard_and_the_tensor) {
  TempDir dir;
  SafetensorsWriter writer;
  writer.add_f32("a", {1}, std::vector<float>{1.0f});
  writer.write(dir.file("part.safetensors"));
  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"metadata": {}, "weight_map": {"a": "part.safetensors", "ghost": "part.safetensors"}})";
  expect_parts(error_of([&] { SafetensorsCheckpoint{dir.path.string()}; }),
               {dir.file("part.safetensors"), "tensor 'ghost'", "not in this shard"});
  std::ofstream(dir.file("model.safetensors.index.json")) << R"({"weight_map": {"a": "../x"}})";
  expect_parts(error_of([&] { SafetensorsCheckpoint{dir.path.string()}; }), {"tensor 'a'", "'../x'"});
  std::ofstream(dir.file("model.safetensors.index.json")) << R"({"metadata": {}})";
  expect_parts(error_of([&] { SafetensorsCheckpoint{dir.path.string()}; }), {"field 'weight_map'"});
}

BOOST_AUTO_TEST_CASE(short_file_and_header_length_beyond_the_file) {
  const std::vector<std::byte> tiny(5, std::byte{0});
  expect_parts(error_of([&] { parse_safetensors_header(tiny, "bad.safetensors"); }),
               {"bad.safetensors", "header length", "at least 8 bytes", "has 5"});
  std::vector<std::byte> bytes = raw_file("{}");
  const std::uint64_t too_long = 1000;
  std::memcpy(bytes.data(), &too_long, 8);
  expect_parts(error_of([&] { parse_safetensors_header(bytes, "bad.safetensors"); }),
               {"bad.safetensors", "header length", "claims 1000 bytes", "only 2"});
}

BOOST_AUTO_TEST_CASE(bad_json_and_wrong_top_level) {
  expect_parts(header_error(R"({"a": )"), {"bad.safetensors", "header", "invalid JSON"});
  expect_parts(header_error("[1, 2]"), {"bad.safetensors", "expected a JSON object", "array"});
  expect_parts(header_error("\xff\xfe"), {"bad.safetensors", "invalid JSON"});
  expect_parts(header_error(R"({"__metadata__": {"k": 1}})"),
               {"field '__metadata__'", "value of 'k'", "expected a string", "integer 1"});
  expect_parts(header_error(R"({"__metadata__": []})"), {"field '__metadata__'", "expected an object"});
  expect_parts(header_error(R"({"t": {"dtype":"F32","shape":[],"data_offsets":[0,4]},
                                "t": {"dtype":"F32","shape":[],"data_offsets":[4,8]}})",
                            8),
               {"tensor 't'", "appears twice"});
}

BOOST_AUTO_TEST_CASE(unknown_and_unsupported_dtypes_are_named) {
  expect_parts(header_error(R"({"w": {"dtype": "Q9", "shape": [1], "data_offsets": [0, 4]}})", 4),
               {"bad.safetensors", "tensor 'w'", "unknown dtype 'Q9'", "supported: F32, F16, BF16"});
  expect_parts(header_error(R"({"w": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", 8),
               {"bad.safetensors", "tensor 'w'", "unsupported dtype 'I64'", "supported: F32, F16, BF16"});
  expect_parts(header_error(R"({"w": {"dtype": 3, "shape": [1], "data_offsets": [0, 4]}})", 4),
               {"tensor 'w'", "'dtype'", "expected a string"});
}

BOOST_AUTO_TEST_CASE(missing_and_malformed_fields_are_named) {
  expect_parts(header_error(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4),
               {"tensor 'w'", "missing field 'shape'"});
  expect_parts(header_error(R"({"w": {"dtype": "F32", "shape": [1]}})", 4),
               {"tensor 'w'", "missing field 'data_offsets'"});
  expect_parts(header_error(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4),
               {"tensor 'w'", "missing field 'dtype'"});
  expect_parts(header_error(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 4]}})", 4),
               {"tensor 'w'", "'shape'", "expected non-negative integers", "negative integer -2"});
  expect_parts(header_error(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4),
               {"tensor 'w'", "'shape'", "number 1.5"});
  expect_parts(header_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}})", 8),
               {"tensor 'w'", "'data_offsets'", "expected [begin, end]", "found 3 numbers"});
  expect_parts(header_error(R"({"w": "F32"})"), {"tensor 'w'", "expected an object", "string"});
}

BOOST_AUTO_TEST_CASE(offsets_outside_the_data_section_or_reversed) {
  expect_parts(header_error(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8),
               {"bad.safetensors", "tensor 'w'", "[0, 16]", "beyond the data section of 8 bytes"});
  expect_parts(header_error(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8),
               {"tensor 'w'", "[8, 4]", "end is before begin"});
}

BOOST_AUTO_TEST_CASE(byte_count_must_match_the_shape) {
  expect_parts(header_error(R"({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 8]}})", 8),
               {"bad.safetensors", "tensor 'w'", "shape [2, 3] of BF16 needs 12 bytes", "[0, 8] hold 8"});
  expect_parts(header_error(R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 2],
                                       "data_offsets": [0, 8]}})",
                            8),
               {"tensor 'w'", "more elements than fit"});
}

BOOST_AUTO_TEST_CASE(overlapping_tensors_name_both) {
  expect_parts(header_error(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                "b": {"dtype": "F16", "shape": [2], "data_offsets": [6, 10]}})",
                            10),
               {"bad.safetensors", "tensor 'b'", "[6, 10]", "overlap tensor 'a' [0, 8]"});
  // Empty tensors occupy no bytes, wherever they point; adjacent tensors do not overlap.
  const std::vector<std::byte> ok = raw_file(
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]},
          "b": {"dtype": "F16", "shape": [1], "data_offsets": [8, 10]}})",
      10);
  const SafetensorsHeader header = parse_safetensors_header(ok, "ok.safetensors");
  BOOST_TEST(header.tensors.size() == 3u);
  BOOST_TEST(header.find("e") != nullptr);
  BOOST_TEST(header.find("f") == nullptr);
}

BOOST_AUTO_TEST_CASE(writer_refuses_inconsistent_tensors) {
  SafetensorsWriter writer;
  BOOST_CHECK_THROW(writer.add("w", SafetensorsDtype::f32, {3}, std::vector<std::byte>(8)), std::invalid_argument);
  writer.add("w", SafetensorsDtype::f32, {2}, std::vector<std::byte>(8));
  BOOST_CHECK_THROW(writer.add("w", SafetensorsDtype::f32, {2}, std::vector<std::byte>(8)), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add("__metadata__", SafetensorsDtype::f32, {2}, std::vector<std::byte>(8)),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace pagedllm::model
