#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/model/dequantize.h"
#include "core/model/gguf_file.h"
#include "core/model/gguf_writer.h"
#include "core/model/half.h"
#include "core/model/model_errors.h"
#include "core/model/quantize.h"

namespace model = pagedllm::model;
using model::GgmlType;
using model::GgufValue;
using model::GgufValueType;

namespace {

// A file name in the temp directory, removed at the end of the test.
class TempPath {
 public:
  explicit TempPath(const std::string& stem) {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             (stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".gguf"))
                .string();
  }
  ~TempPath() { std::filesystem::remove(path_); }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& str() const noexcept { return path_; }

 private:
  std::string path_;
};

std::vector<std::byte> pattern_bytes(std::size_t count, int seed) {
  std::vector<std::byte> bytes(count);
  for (std::size_t i = 0; i < count; ++i) bytes[i] = static_cast<std::byte>((i * 37 + seed) & 0xff);
  return bytes;
}

std::vector<float> ramp(std::size_t count) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = std::sin(static_cast<float>(i) * 0.37f) * 3.0f;
  return values;
}

template <typename T>
const T& alternative(const model::GgufFile& file, const std::string& key, GgufValueType type) {
  const GgufValue* value = file.find(key);
  BOOST_TEST_REQUIRE(value != nullptr, key);
  BOOST_TEST_REQUIRE((value->type == type), key);
  const T* held = std::get_if<T>(&value->value);
  BOOST_TEST_REQUIRE(held != nullptr, key);
  return *held;
}

std::uint64_t u(const model::GgufFile& file, const std::string& key, GgufValueType type) {
  return alternative<std::uint64_t>(file, key, type);
}
std::int64_t i(const model::GgufFile& file, const std::string& key, GgufValueType type) {
  return alternative<std::int64_t>(file, key, type);
}

struct TensorSpec {
  std::string name;
  std::vector<std::uint64_t> dims;
  GgmlType type;
  std::vector<std::byte> data;
};

std::vector<TensorSpec> several_tensors() {
  return {
      {"f32.matrix", {3, 2}, GgmlType::f32, pattern_bytes(3 * 2 * 4, 1)},
      {"bf16.odd", {5}, GgmlType::bf16, pattern_bytes(5 * 2, 2)},  // 10 bytes: padded
      {"f16.vector", {64}, GgmlType::f16, pattern_bytes(64 * 2, 3)},
      {"q8_0.weight", {32, 3}, GgmlType::q8_0, model::quantize(GgmlType::q8_0, ramp(96))},
      {"q4_1.cube", {64, 2, 3}, GgmlType::q4_1, model::quantize(GgmlType::q4_1, ramp(384))},
      {"q6_k.raw", {256}, GgmlType::q6_k, pattern_bytes(210, 4)},
      {"blk.0.four_dims", {32, 1, 2, 1}, GgmlType::q5_0, model::quantize(GgmlType::q5_0, ramp(64))},
  };
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gguf_writer)

BOOST_AUTO_TEST_CASE(every_value_type_and_tensor_reads_back_unchanged) {
  model::GgufWriter writer;
  writer.add_string("general.architecture", "llama");
  writer.add_u8("v.u8", 200);
  writer.add_i8("v.i8", -100);
  writer.add_u16("v.u16", 65535);
  writer.add_i16("v.i16", -32768);
  writer.add_u32("v.u32", 4000000000u);
  writer.add_i32("v.i32", -2000000000);
  writer.add_u64("v.u64", std::numeric_limits<std::uint64_t>::max());
  writer.add_i64("v.i64", std::numeric_limits<std::int64_t>::min());
  writer.add_f32("v.f32", 1.5e-3f);
  writer.add_f64("v.f64", -2.718281828459045);
  writer.add_bool("v.true", true);
  writer.add_bool("v.false", false);
  writer.add_string("v.string", std::string("h\xc3\xa9llo\0world", 12));
  writer.add_string("v.empty", "");
  writer.add_string_array("a.strings", {"<s>", "", "\xe2\x96\x81the"});
  const std::vector<float> scores = {0.5f, -1.25f, std::numeric_limits<float>::infinity()};
  writer.add_f32_array("a.f32", scores);
  const std::vector<std::int32_t> token_types = {1, -3, 2147483647};
  writer.add_i32_array("a.i32", token_types);
  const std::vector<std::uint32_t> ids = {0, 4294967295u};
  writer.add_u32_array("a.u32", ids);
  writer.add_array("a.u8", GgufValueType::u8,
                   {{GgufValueType::u8, std::uint64_t{7}}, {GgufValueType::u8, std::int64_t{255}}});
  writer.add_array("a.bool", GgufValueType::boolean, {{GgufValueType::boolean, true}, {GgufValueType::boolean, false}});
  writer.add_array("a.f64", GgufValueType::f64, {{GgufValueType::f64, 0.1}});
  writer.add_array("a.empty", GgufValueType::i64, {});
  const GgufValue inner{GgufValueType::array,
                        model::GgufArray{GgufValueType::i16, {{GgufValueType::i16, std::int64_t{-5}}}}};
  writer.add_array("a.nested", GgufValueType::array, {inner, inner});
  const std::vector<TensorSpec> tensors = several_tensors();
  for (const TensorSpec& tensor : tensors) writer.add_tensor(tensor.name, tensor.dims, tensor.type, tensor.data);
  BOOST_TEST(writer.num_keys() == 24u);
  BOOST_TEST(writer.num_tensors() == tensors.size());

  const TempPath path("gguf_writer_every_type");
  writer.write(path.str());
  const model::GgufFile file(path.str());
  BOOST_TEST(file.version() == 3u);
  BOOST_TEST(file.header().alignment == 32u);
  BOOST_TEST(file.header().metadata.size() == 24u);  // no key the caller did not add
  BOOST_TEST(file.get_string("general.architecture") == "llama");
  BOOST_TEST(u(file, "v.u8", GgufValueType::u8) == 200u);
  BOOST_TEST(i(file, "v.i8", GgufValueType::i8) == -100);
  BOOST_TEST(u(file, "v.u16", GgufValueType::u16) == 65535u);
  BOOST_TEST(i(file, "v.i16", GgufValueType::i16) == -32768);
  BOOST_TEST(u(file, "v.u32", GgufValueType::u32) == 4000000000u);
  BOOST_TEST(i(file, "v.i32", GgufValueType::i32) == -2000000000);
  BOOST_TEST(u(file, "v.u64", GgufValueType::u64) == std::numeric_limits<std::uint64_t>::max());
  BOOST_TEST(i(file, "v.i64", GgufValueType::i64) == std::numeric_limits<std::int64_t>::min());
  BOOST_TEST(alternative<double>(file, "v.f32", GgufValueType::f32) == static_cast<double>(1.5e-3f));
  BOOST_TEST(alternative<double>(file, "v.f64", GgufValueType::f64) == -2.718281828459045);
  BOOST_TEST(alternative<bool>(file, "v.true", GgufValueType::boolean) == true);
  BOOST_TEST(alternative<bool>(file, "v.false", GgufValueType::boolean) == false);
  BOOST_TEST(file.get_string("v.string") == std::string("h\xc3\xa9llo\0world", 12));
  BOOST_TEST(file.get_string("v.empty").empty());
  BOOST_TEST(file.get_string_array("a.strings") == (std::vector<std::string>{"<s>", "", "\xe2\x96\x81the"}),
             boost::test_tools::per_element());
  const auto& f32_array = alternative<model::GgufArray>(file, "a.f32", GgufValueType::array);
  BOOST_TEST_REQUIRE(f32_array.items.size() == 3u);
  BOOST_TEST((f32_array.element_type == GgufValueType::f32));
  BOOST_TEST(std::get<double>(f32_array.items[1].value) == -1.25);
  BOOST_TEST(std::isinf(std::get<double>(f32_array.items[2].value)));
  BOOST_TEST(file.get_int_array("a.i32") == (std::vector<std::int64_t>{1, -3, 2147483647}),
             boost::test_tools::per_element());
  BOOST_TEST(file.get_int_array("a.u32") == (std::vector<std::int64_t>{0, 4294967295}),
             boost::test_tools::per_element());
  BOOST_TEST(file.get_int_array("a.u8") == (std::vector<std::int64_t>{7, 255}), boost::test_tools::per_element());
  const auto& bools = alternative<model::GgufArray>(file, "a.bool", GgufValueType::array);
  BOOST_TEST_REQUIRE(bools.items.size() == 2u);
  BOOST_TEST(std::get<bool>(bools.items[0].value));
  BOOST_TEST(!std::get<bool>(bools.items[1].value));
  const auto& doubles = alternative<model::GgufArray>(file, "a.f64", GgufValueType::array);
  BOOST_TEST(std::get<double>(doubles.items.at(0).value) == 0.1);
  const auto& empty = alternative<model::GgufArray>(file, "a.empty", GgufValueType::array);
  BOOST_TEST(empty.items.empty());
  BOOST_TEST((empty.element_type == GgufValueType::i64));
  const auto& nested = alternative<model::GgufArray>(file, "a.nested", GgufValueType::array);
  BOOST_TEST_REQUIRE(nested.items.size() == 2u);
  const auto& nested_inner = std::get<model::GgufArray>(nested.items[1].value);
  BOOST_TEST((nested_inner.element_type == GgufValueType::i16));
  BOOST_TEST(std::get<std::int64_t>(nested_inner.items.at(0).value) == -5);

  BOOST_TEST_REQUIRE(file.tensors().size() == tensors.size());
  std::uint64_t expected_offset = 0;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const model::GgufTensorInfo& info = file.tensors()[t];
    BOOST_TEST(info.name == tensors[t].name);
    BOOST_TEST(info.dims == tensors[t].dims, boost::test_tools::per_element());  // innermost first
    BOOST_TEST((info.type == tensors[t].type), info.name);
    BOOST_TEST(info.offset == expected_offset, info.name);
    const auto data = file.tensor_data(info);
    BOOST_TEST(std::vector<std::byte>(data.begin(), data.end()) == tensors[t].data, info.name);
    expected_offset += (tensors[t].data.size() + 31) / 32 * 32;
  }
  BOOST_TEST(file.header().data_offset % 32 == 0u);
  BOOST_TEST(std::filesystem::file_size(path.str()) == file.header().data_offset + expected_offset);
  BOOST_TEST(!std::filesystem::exists(path.str() + ".partial"));
}

BOOST_AUTO_TEST_CASE(general_alignment_sets_the_padding_of_every_tensor) {
  model::GgufWriter writer;
  writer.add_u32("general.alignment", 64);
  BOOST_TEST(writer.alignment() == 64u);
  for (const TensorSpec& tensor : several_tensors())
    writer.add_tensor(tensor.name, tensor.dims, tensor.type, tensor.data);
  const TempPath path("gguf_writer_alignment");
  writer.write(path.str());
  const model::GgufFile file(path.str());
  BOOST_TEST(file.header().alignment == 64u);
  BOOST_TEST(file.header().data_offset % 64 == 0u);
  for (const model::GgufTensorInfo& info : file.tensors()) BOOST_TEST(info.offset % 64 == 0u, info.name);
  BOOST_TEST(file.tensors().back().offset > 0u);
}

BOOST_AUTO_TEST_CASE(a_file_without_tensors_is_a_valid_header) {
  model::GgufWriter writer;
  writer.add_string("general.name", "empty");
  const TempPath path("gguf_writer_empty");
  writer.write(path.str());
  const model::GgufFile file(path.str());
  BOOST_TEST(file.tensors().empty());
  BOOST_TEST(file.get_string("general.name") == "empty");
}

BOOST_AUTO_TEST_CASE(written_tensors_dequantize_like_their_rows) {
  const std::vector<float> values = ramp(32 * 8);
  model::GgufWriter writer;
  writer.add_tensor("q4_0", {64, 4}, GgmlType::q4_0, model::quantize(GgmlType::q4_0, values));
  writer.add_tensor("f32", {256}, GgmlType::f32, model::quantize(GgmlType::f32, values));
  writer.add_tensor("q8_1", {32}, GgmlType::q8_1, std::vector<std::byte>(40));
  const TempPath path("gguf_writer_dequantize");
  writer.write(path.str());
  const model::GgufFile file(path.str());

  const std::vector<float> f32 = model::dequantize_tensor(file, *file.find_tensor("f32"));
  BOOST_TEST(f32 == values, boost::test_tools::per_element());
  const std::vector<float> q4 = model::dequantize_tensor(file, *file.find_tensor("q4_0"));
  std::vector<float> expected(values.size());
  model::dequantize_row(GgmlType::q4_0, model::quantize(GgmlType::q4_0, values), expected);
  BOOST_TEST(q4 == expected, boost::test_tools::per_element());
  const std::vector<std::uint16_t> bf16 = model::dequantize_tensor_bf16(file, *file.find_tensor("q4_0"));
  BOOST_TEST_REQUIRE(bf16.size() == q4.size());
  for (std::size_t k = 0; k < q4.size(); ++k) BOOST_TEST_REQUIRE(bf16[k] == model::float_to_bf16(q4[k]));
  BOOST_CHECK_THROW(model::dequantize_tensor(file, *file.find_tensor("q8_1")), model::ModelFormatError);
  BOOST_CHECK_THROW(model::dequantize_tensor_bf16(file, *file.find_tensor("q8_1")), model::ModelFormatError);
}

BOOST_AUTO_TEST_CASE(bf16_dequantization_of_a_large_tensor_crosses_chunk_boundaries) {
  const std::vector<float> values = ramp(32 * 5000);  // several 64K-value chunks and a partial one
  model::GgufWriter writer;
  writer.add_tensor("q8_0", {32 * 1000, 5}, GgmlType::q8_0, model::quantize(GgmlType::q8_0, values));
  const TempPath path("gguf_writer_bf16");
  writer.write(path.str());
  const model::GgufFile file(path.str());
  const std::vector<float> f32 = model::dequantize_tensor(file, file.tensors()[0]);
  const std::vector<std::uint16_t> bf16 = model::dequantize_tensor_bf16(file, file.tensors()[0]);
  BOOST_TEST_REQUIRE(bf16.size() == f32.size());
  for (std::size_t k = 0; k < f32.size(); ++k) BOOST_TEST_REQUIRE(bf16[k] == model::float_to_bf16(f32[k]));
}

BOOST_AUTO_TEST_CASE(bad_keys_and_values_are_refused_and_leave_the_writer_unchanged) {
  model::GgufWriter writer;
  writer.add_u32("k", 1);
  BOOST_CHECK_THROW(writer.add_u32("k", 2), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add("u8.too.big", {GgufValueType::u8, std::uint64_t{256}}), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add("i8.too.small", {GgufValueType::i8, std::int64_t{-129}}), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add("u32.negative", {GgufValueType::u32, std::int64_t{-1}}), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add("i64.too.big", {GgufValueType::i64, std::uint64_t{1} << 63}), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add("string.holding.int", {GgufValueType::string, std::uint64_t{1}}), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add("f32.huge", {GgufValueType::f32, 1e300}), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add("unknown.type", {static_cast<GgufValueType>(13), std::uint64_t{1}}),
                    std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_array("array.mixed", GgufValueType::u8,
                                     {{GgufValueType::u8, std::uint64_t{1}}, {GgufValueType::u16, std::uint64_t{1}}}),
                    std::invalid_argument);
  GgufValue deep{GgufValueType::i8, std::int64_t{1}};
  for (int level = 0; level < 5; ++level) {
    const GgufValueType element_type = deep.type;
    deep = GgufValue{GgufValueType::array, model::GgufArray{element_type, {deep}}};
  }
  BOOST_CHECK_THROW(writer.add("array.too.deep", deep), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_u16("general.alignment", 64), std::invalid_argument);  // gguf-py wants u32
  BOOST_CHECK_THROW(writer.add_u32("general.alignment", 48), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_u32("general.alignment", 0), std::invalid_argument);
  BOOST_TEST(writer.num_keys() == 1u);
  BOOST_TEST(writer.alignment() == 32u);
}

BOOST_AUTO_TEST_CASE(bad_tensors_are_refused) {
  model::GgufWriter writer;
  writer.add_tensor("t", {32}, GgmlType::q8_0, std::vector<std::byte>(34));
  BOOST_CHECK_THROW(writer.add_tensor("t", {32}, GgmlType::q8_0, std::vector<std::byte>(34)), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_tensor("short", {32}, GgmlType::q8_0, std::vector<std::byte>(33)),
                    std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_tensor("partial.block", {16, 2}, GgmlType::q8_0, std::vector<std::byte>(34)),
                    std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_tensor("five.dims", {1, 1, 1, 1, 1}, GgmlType::f32, std::vector<std::byte>(4)),
                    std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_tensor("no.dims", {}, GgmlType::f32, {}), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_tensor("zero.dim", {4, 0}, GgmlType::f32, {}), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_tensor("", {1}, GgmlType::f32, std::vector<std::byte>(4)), std::invalid_argument);
  BOOST_CHECK_THROW(writer.add_tensor(std::string(64, 'x'), {1}, GgmlType::f32, std::vector<std::byte>(4)),
                    std::invalid_argument);
  BOOST_CHECK_NO_THROW(writer.add_tensor(std::string(63, 'x'), {1}, GgmlType::f32, std::vector<std::byte>(4)));
  BOOST_CHECK_THROW(writer.add_tensor("unknown.type", {1}, static_cast<GgmlType>(77), std::vector<std::byte>(4)),
                    std::invalid_argument);
  BOOST_TEST(writer.num_tensors() == 2u);
}

BOOST_AUTO_TEST_CASE(an_unwritable_path_throws_and_leaves_no_partial_file) {
  model::GgufWriter writer;
  writer.add_u8("k", 1);
  const std::string path = (std::filesystem::temp_directory_path() / "no_such_dir_pagedllm" / "x.gguf").string();
  BOOST_CHECK_THROW(writer.write(path), std::runtime_error);
  BOOST_TEST(!std::filesystem::exists(path + ".partial"));
}

BOOST_AUTO_TEST_SUITE_END()
