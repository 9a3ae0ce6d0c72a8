// GGUF (v2 and v3) files: header, metadata key/values and tensor directory, parsed from a
// memory map; tensor data is read in place.
//
// Layout (little endian): magic "GGUF", u32 version, u64 tensor_count, u64 kv_count, then the
// key/values, then per tensor {string name, u32 n_dims, u64 dims[n_dims], u32 type, u64 offset},
// then padding to `general.alignment` (default 32), then the data section; tensor offsets are
// relative to the start of the data section. Dims are innermost first (dims[0] is the row length).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/model/ggml_type.h"
#include "core/model/mapped_file.h"

namespace pagedllm::model {

// Limits of the format that the reader enforces and the writer keeps to.
inline constexpr std::uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr std::uint32_t kGgufMaxDims = 4;         // ggml's GGML_MAX_DIMS
inline constexpr int kGgufMaxArrayNesting = 4;

enum class GgufValueType : std::uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

struct GgufValue;

struct GgufArray {
  GgufValueType element_type = GgufValueType::u8;
  std::vector<GgufValue> items;
};

// One metadata value. Integers keep their sign class (u64 / i64), floats widen to double.
struct GgufValue {
  GgufValueType type = GgufValueType::u8;
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string, GgufArray> value;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<std::uint64_t> dims;  // innermost first, as stored (dims[0] = row length)
  GgmlType type = GgmlType::f32;
  std::uint64_t offset = 0;  // from the start of the data section
  std::uint64_t num_elements = 0;
  std::uint64_t num_bytes = 0;  // num_elements / block_size * type_size
};

// What the header says, validated against the file size: every tensor's bytes lie inside the
// data section, every type is known, every row length is a multiple of the type's block size.
struct GgufHeader {
  std::uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensorInfo> tensors;
  std::uint64_t alignment = 32;
  std::uint64_t data_offset = 0;  // file offset of the data section
};

// Parses and validates a GGUF header from the file's bytes; throws ModelFormatError naming
// `file_name`, the key or tensor at fault, and what was expected. Never reads out of bounds
// (fuzzed: tests/fuzz).
GgufHeader parse_gguf_header(std::span<const std::byte> bytes, const std::string& file_name);

class GgufFile {
 public:
  explicit GgufFile(std::string path);  // maps the file and parses its header

  const std::string& path() const noexcept { return file_->path(); }
  const GgufHeader& header() const noexcept { return header_; }
  std::uint32_t version() const noexcept { return header_.version; }
  const std::vector<GgufTensorInfo>& tensors() const noexcept { return header_.tensors; }

  const GgufValue* find(const std::string& key) const;
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  // The tensor's bytes inside the mapping.
  std::span<const std::byte> tensor_data(const GgufTensorInfo& tensor) const;
  // The mapping, for weights that keep pointing into it after this object is gone.
  std::shared_ptr<const MappedFile> mapping() const noexcept { return file_; }

  // Typed metadata access. get_* throws ModelFormatError (naming the key and the expected
  // type) when the key is missing or has another type; find_* returns nullopt when missing
  // and throws on a type mismatch. Any integer type converts to a u64 / i64 that holds it.
  std::uint64_t get_u64(const std::string& key) const;
  std::optional<std::uint64_t> find_u64(const std::string& key) const;
  std::optional<std::int64_t> find_i64(const std::string& key) const;
  std::optional<double> find_f64(const std::string& key) const;  // any float or integer
  std::optional<bool> find_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::optional<std::string> find_string(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<std::int64_t> get_int_array(const std::string& key) const;  // any integer element

 private:
  std::shared_ptr<const MappedFile> file_;  // never null; shared with weights loaded in place
  GgufHeader header_;
  std::map<std::string, std::size_t> tensor_index_;
};

}  // namespace pagedllm::model
