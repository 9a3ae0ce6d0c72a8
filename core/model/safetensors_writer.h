// Writes safetensors files (format: core/model/safetensors_file.h), single or sharded as Hugging
// Face does. Used by `pagedllm make-model` and by the tests.
//
// The header lists "__metadata__" first, then the tensors sorted by name, and is padded with
// spaces so that the data section starts 8-byte aligned. Data is laid out by element size
// (largest first), then name, so every tensor is aligned to its element size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/model/safetensors_file.h"

namespace pagedllm::model {

inline constexpr std::uint64_t kDefaultMaxShardBytes = 5'000'000'000;  // HF's "5GB"

class SafetensorsWriter {
 public:
  // Adds a tensor whose bytes are already in `dtype` (row-major, little endian). Throws
  // std::invalid_argument for an empty, reserved or repeated name, or when the byte count is not
  // product(shape) * element size.
  void add(std::string name, SafetensorsDtype dtype, std::vector<std::uint64_t> shape, std::vector<std::byte> data);
  // Adds fp32 values stored as `dtype` (F16 and BF16 round to nearest even).
  void add_f32(std::string name, std::vector<std::uint64_t> shape, std::span<const float> values,
               SafetensorsDtype dtype = SafetensorsDtype::f32);
  // Adds bf16 values (bits) stored as BF16.
  void add_bf16(std::string name, std::vector<std::uint64_t> shape, std::span<const std::uint16_t> values);
  void set_metadata(std::string key, std::string value);

  std::size_t num_tensors() const noexcept { return tensors_.size(); }
  std::uint64_t num_data_bytes() const noexcept;

  // Writes every tensor into one file. Throws std::runtime_error naming the path on I/O failure.
  void write(const std::string& path) const;
  // Writes model-0000i-of-0000n.safetensors files into `directory` (which must exist), each with
  // at most `max_shard_bytes` of tensor data unless one tensor alone is larger, in the order the
  // tensors were added, and model.safetensors.index.json ({"metadata": {"total_size"},
  // "weight_map"}). Returns the shard paths.
  std::vector<std::string> write_sharded(const std::string& directory,
                                         std::uint64_t max_shard_bytes = kDefaultMaxShardBytes) const;

 private:
  struct PendingTensor {
    std::string name;
    SafetensorsDtype dtype = SafetensorsDtype::f32;
    std::vector<std::uint64_t> shape;
    std::vector<std::byte> data;
  };

  void write_file(const std::string& path, std::vector<const PendingTensor*> tensors) const;

  std::vector<PendingTensor> tensors_;  // in the order added
  std::map<std::string, std::string> metadata_;
};

}  // namespace pagedllm::model
