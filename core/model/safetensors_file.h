// safetensors files (Hugging Face), parsed from a memory map; tensor data is read in place.
//
// Layout: u64 little-endian header length N, then N bytes of JSON (possibly padded with trailing
// spaces), then the data section:
//   {"<tensor>": {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"<key>": "<string>", ...}}
// Offsets are relative to the start of the data section; data is row-major, little endian.
// pagedllm reads F32, F16 and BF16 tensors; other dtypes are named and refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/mapped_file.h"

namespace pagedllm::model {

enum class SafetensorsDtype { f32, f16, bf16 };

std::string_view to_string(SafetensorsDtype dtype) noexcept;  // "F32", "F16", "BF16"
std::size_t dtype_size(SafetensorsDtype dtype) noexcept;      // bytes per element
// nullopt for a dtype pagedllm does not read (whether the format knows it or not).
std::optional<SafetensorsDtype> parse_safetensors_dtype(std::string_view text) noexcept;

struct SafetensorsTensorInfo {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::f32;
  std::vector<std::uint64_t> shape;  // outermost first (row-major); empty for a scalar
  std::uint64_t begin = 0;           // data_offsets, relative to the data section
  std::uint64_t end = 0;
  std::uint64_t num_elements = 0;

  std::uint64_t num_bytes() const noexcept { return end - begin; }
};

// What the header says, validated against the file size: every dtype is supported, every
// tensor's bytes lie inside the data section, match its shape and overlap no other tensor.
struct SafetensorsHeader {
  std::vector<SafetensorsTensorInfo> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
  std::uint64_t data_offset = 0;  // file offset of the data section: 8 + N
  std::uint64_t data_size = 0;    // bytes from data_offset to the end of the file

  const SafetensorsTensorInfo* find(std::string_view name) const noexcept;
};

// Parses and validates a safetensors header from the file's bytes; throws ModelFormatError
// naming `file_name`, the tensor or field at fault, and what was expected against what was
// found. Never reads out of bounds (fuzzed: tests/fuzz/fuzz_safetensors_header.cpp).
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> bytes, const std::string& file_name);

// A tensor's values widened to fp32 (exact for F32, F16 and BF16).
std::vector<float> tensor_to_f32(const SafetensorsTensorInfo& tensor, std::span<const std::byte> data);
// A tensor's values as bf16 bits (BF16 copied; F32 and F16 rounded to nearest even).
std::vector<std::uint16_t> tensor_to_bf16(const SafetensorsTensorInfo& tensor, std::span<const std::byte> data);

class SafetensorsFile {
 public:
  explicit SafetensorsFile(std::string path);  // maps the file and parses its header

  const std::string& path() const noexcept { return file_->path(); }
  const SafetensorsHeader& header() const noexcept { return header_; }
  const std::vector<SafetensorsTensorInfo>& tensors() const noexcept { return header_.tensors; }

  const SafetensorsTensorInfo* find_tensor(std::string_view name) const noexcept { return header_.find(name); }
  // Throws ModelFormatError naming the file and the tensor when it is absent.
  const SafetensorsTensorInfo& tensor(std::string_view name) const;
  // The tensor's bytes inside the mapping (not necessarily aligned to the element size).
  std::span<const std::byte> tensor_data(const SafetensorsTensorInfo& tensor) const noexcept;
  // The mapping, for weights that keep pointing into it after this object is gone.
  std::shared_ptr<const MappedFile> mapping() const noexcept { return file_; }

  std::vector<float> read_f32(std::string_view name) const;
  std::vector<std::uint16_t> read_bf16(std::string_view name) const;

 private:
  std::shared_ptr<const MappedFile> file_;  // never null; shared with weights loaded in place
  SafetensorsHeader header_;
};

}  // namespace pagedllm::model
