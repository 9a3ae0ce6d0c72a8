// Writes GGUF v3 files (the layout is described in gguf_file.h).
//
// Key/values and tensors are written in the order they were added. Tensor data starts at the
// first multiple of the alignment after the tensor directory, and every tensor's data is padded
// with zeros to a multiple of the alignment (as llama.cpp and gguf-py write it), so each offset is
// aligned. The alignment is 32 unless a u32 `general.alignment` key says otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/model/ggml_type.h"
#include "core/model/gguf_file.h"

namespace pagedllm::model {

class GgufWriter {
 public:
  // Adds a key/value. Throws std::invalid_argument (naming the key) when the key was already
  // added, the value's alternative does not match its type (integers: any integer alternative
  // whose value fits; floats: double; arrays: every item of the element type, nested at most 4
  // deep), or `general.alignment` is not a u32 power of two up to 65536.
  void add(std::string key, GgufValue value);

  void add_u8(std::string key, std::uint8_t value);
  void add_i8(std::string key, std::int8_t value);
  void add_u16(std::string key, std::uint16_t value);
  void add_i16(std::string key, std::int16_t value);
  void add_u32(std::string key, std::uint32_t value);
  void add_i32(std::string key, std::int32_t value);
  void add_u64(std::string key, std::uint64_t value);
  void add_i64(std::string key, std::int64_t value);
  void add_f32(std::string key, float value);
  void add_f64(std::string key, double value);
  void add_bool(std::string key, bool value);
  void add_string(std::string key, std::string value);

  // Arrays: any element type through add_array, the common ones directly.
  void add_array(std::string key, GgufValueType element_type, std::vector<GgufValue> items);
  void add_string_array(std::string key, const std::vector<std::string>& values);
  void add_f32_array(std::string key, std::span<const float> values);
  void add_i32_array(std::string key, std::span<const std::int32_t> values);
  void add_u32_array(std::string key, std::span<const std::uint32_t> values);

  // Adds a tensor: dims innermost first (dims[0] is the row length, as GgufTensorInfo), `data`
  // its num_elements / block_size * type_size bytes. Throws std::invalid_argument (naming the
  // tensor) for a repeated or empty name, a name of 64 bytes or more (llama.cpp's limit), 0 or
  // more than 4 dims, a zero dim, a row length that is not whole blocks, or a size mismatch.
  void add_tensor(std::string name, std::vector<std::uint64_t> dims, GgmlType type, std::vector<std::byte> data);

  std::uint64_t alignment() const noexcept { return alignment_; }
  std::size_t num_keys() const noexcept { return metadata_.size(); }
  std::size_t num_tensors() const noexcept { return tensors_.size(); }

  // Writes the file (through `path` + ".partial", renamed into place once complete). Throws
  // std::runtime_error naming the path when it cannot be written.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> dims;
    GgmlType type;
    std::vector<std::byte> data;
  };

  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
  std::set<std::string> keys_;
  std::set<std::string> tensor_names_;
  std::uint64_t alignment_ = 32;
};

}  // namespace pagedllm::model
