#include "core/model/safetensors_writer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "core/model/half.h"
#include "core/model/safetensors_checkpoint.h"

namespace pagedllm::model {
namespace {

namespace fs = std::filesystem;

std::uint64_t num_elements(const std::vector<std::uint64_t>& shape) {
  std::uint64_t count = 1;
  for (const std::uint64_t dim : shape) {
    if (dim != 0 && count > UINT64_MAX / dim) throw std::invalid_argument("shape overflows");
    count *= dim;
  }
  return count;
}

template <typename T>
std::vector<std::byte> to_bytes(std::span<const T> values) {
  std::vector<std::byte> bytes(values.size_bytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::string shard_name(std::size_t index, std::size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace

void SafetensorsWriter::add(std::string name, SafetensorsDtype dtype, std::vector<std::uint64_t> shape,
                            std::vector<std::byte> data) {
  if (name.empty() || name == "__metadata__") {
    throw std::invalid_argument("safetensors: invalid tensor name '" + name + "'");
  }
  for (const PendingTensor& tensor : tensors_) {
    if (tensor.name == name) throw std::invalid_argument("safetensors: tensor '" + name + "' added twice");
  }
  const std::uint64_t expected = num_elements(shape) * dtype_size(dtype);
  if (data.size() != expected) {
    throw std::invalid_argument("safetensors: tensor '" + name + "' needs " + std::to_string(expected) +
                                " bytes, given " + std::to_string(data.size()));
  }
  tensors_.push_back({std::move(name), dtype, std::move(shape), std::move(data)});
}

void SafetensorsWriter::add_f32(std::string name, std::vector<std::uint64_t> shape, std::span<const float> values,
                                SafetensorsDtype dtype) {
  if (dtype == SafetensorsDtype::f32) {
    add(std::move(name), dtype, std::move(shape), to_bytes(values));
    return;
  }
  std::vector<std::uint16_t> narrowed(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    narrowed[i] = dtype == SafetensorsDtype::f16 ? float_to_fp16(values[i]) : float_to_bf16(values[i]);
  }
  add(std::move(name), dtype, std::move(shape), to_bytes(std::span<const std::uint16_t>(narrowed)));
}

void SafetensorsWriter::add_bf16(std::string name, std::vector<std::uint64_t> shape,
                                 std::span<const std::uint16_t> values) {
  add(std::move(name), SafetensorsDtype::bf16, std::move(shape), to_bytes(values));
}

void SafetensorsWriter::set_metadata(std::string key, std::string value) {
  metadata_[std::move(key)] = std::move(value);
}

std::uint64_t SafetensorsWriter::num_data_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const PendingTensor& tensor : tensors_) total += tensor.data.size();
  return total;
}

void SafetensorsWriter::write(const std::string& path) const {
  std::vector<const PendingTensor*> all;
  for (const PendingTensor& tensor : tensors_) all.push_back(&tensor);
  write_file(path, std::move(all));
}

std::vector<std::string> SafetensorsWriter::write_sharded(const std::string& directory,
                                                          std::uint64_t max_shard_bytes) const {
  // Greedy in insertion order, so that a layer's tensors stay together as HF's splitter keeps them.
  std::vector<std::vector<const PendingTensor*>> shards;
  std::uint64_t shard_bytes = 0;
  for (const PendingTensor& tensor : tensors_) {
    if (shards.empty() || (shard_bytes + tensor.data.size() > max_shard_bytes && shard_bytes > 0)) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&tensor);
    shard_bytes += tensor.data.size();
  }
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::string name = shard_name(i, shards.size());
    paths.push_back((fs::path(directory) / name).string());
    for (const PendingTensor* tensor : shards[i]) entries.emplace_back(tensor->name, name);
    write_file(paths.back(), shards[i]);
  }
  std::sort(entries.begin(), entries.end());
  for (const auto& [tensor, shard] : entries) weight_map[tensor] = shard;
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", num_data_bytes()}};
  index["weight_map"] = std::move(weight_map);
  write_text((fs::path(directory) / kSafetensorsIndexFile).string(), index.dump(2) + "\n");
  return paths;
}

void SafetensorsWriter::write_file(const std::string& path, std::vector<const PendingTensor*> tensors) const {
  // Data order: larger elements first, then by name (keeps every tensor element-aligned).
  std::sort(tensors.begin(), tensors.end(), [](const PendingTensor* a, const PendingTensor* b) {
    const std::size_t size_a = dtype_size(a->dtype);
    const std::size_t size_b = dtype_size(b->dtype);
    return size_a != size_b ? size_a > size_b : a->name < b->name;
  });
  std::map<std::string, nlohmann::ordered_json> entries;  // header order: by name
  std::uint64_t offset = 0;
  for (const PendingTensor* tensor : tensors) {
    nlohmann::ordered_json entry;
    entry["dtype"] = std::string(to_string(tensor->dtype));
    entry["shape"] = tensor->shape;
    entry["data_offsets"] = {offset, offset + tensor->data.size()};
    entries.emplace(tensor->name, std::move(entry));
    offset += tensor->data.size();
  }
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  for (auto& [name, entry] : entries) header[name] = std::move(entry);
  std::string text = header.dump();
  text.append((8 - (text.size() % 8)) % 8, ' ');  // 8 + N is a multiple of 8

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::uint64_t length = text.size();  // little endian on every supported host
  out.write(reinterpret_cast<const char*>(&length), sizeof length);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const PendingTensor* tensor : tensors) {
    out.write(reinterpret_cast<const char*>(tensor->data.data()), static_cast<std::streamsize>(tensor->data.size()));
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace pagedllm::model
