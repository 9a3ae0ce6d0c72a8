// A Hugging Face checkpoint in safetensors: one model.safetensors, or shards listed by
// model.safetensors.index.json ({"metadata": {...}, "weight_map": {"<tensor>": "<shard file>"}}).
// Every shard is mapped once; tensors are looked up by name across shards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/safetensors_file.h"

namespace pagedllm::model {

inline constexpr std::string_view kSafetensorsSingleFile = "model.safetensors";
inline constexpr std::string_view kSafetensorsIndexFile = "model.safetensors.index.json";

class SafetensorsCheckpoint {
 public:
  // `path`: a model directory (holding model.safetensors.index.json or model.safetensors; the
  // index wins when both exist), a .safetensors file, or an index .json file. Shard names in
  // the index are relative to the index's directory. Throws ModelFormatError naming the index
  // and shard when a shard is missing or lacks a tensor the index places in it.
  explicit SafetensorsCheckpoint(const std::string& path);

  const std::string& source() const noexcept { return source_; }  // what was opened
  std::size_t num_shards() const noexcept { return shards_.size(); }
  std::size_t num_tensors() const noexcept { return locations_.size(); }
  std::vector<std::string> tensor_names() const;  // sorted

  const SafetensorsTensorInfo* find_tensor(std::string_view name) const;
  // Throws ModelFormatError naming the checkpoint and the tensor when it is absent.
  const SafetensorsTensorInfo& tensor(std::string_view name) const;
  const std::string& shard_path(std::string_view name) const;  // the file that holds the tensor
  std::span<const std::byte> tensor_data(std::string_view name) const;
  // The mapping of the shard that holds the tensor (tensor_data points into it).
  std::shared_ptr<const MappedFile> mapping(std::string_view name) const;

  std::vector<float> read_f32(std::string_view name) const;
  std::vector<std::uint16_t> read_bf16(std::string_view name) const;

 private:
  struct Location {
    std::size_t shard = 0;
    const SafetensorsTensorInfo* tensor = nullptr;  // inside shards_[shard]'s header
  };

  void open_single(const std::string& file);
  void open_index(const std::string& index_file);
  const Location& locate(std::string_view name) const;

  std::string source_;                   // what was opened, for error messages
  std::vector<SafetensorsFile> shards_;  // never resized after opening (Location points in)
  std::map<std::string, Location, std::less<>> locations_;
};

}  // namespace pagedllm::model
