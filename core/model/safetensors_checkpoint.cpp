#include "core/model/safetensors_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/model/model_errors.h"

namespace pagedllm::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelFormatError(path, "", "cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& error) {
    throw ModelFormatError(path, "", std::string("invalid JSON: ") + error.what());
  }
}

// Shard names stay inside the checkpoint's directory.
bool is_safe_relative(const fs::path& name) {
  if (name.empty() || name.is_absolute()) return false;
  for (const fs::path& part : name) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& path) : source_(path) {
  std::error_code error;
  if (fs::is_directory(path, error)) {
    const fs::path index = fs::path(path) / kSafetensorsIndexFile;
    const fs::path single = fs::path(path) / kSafetensorsSingleFile;
    if (fs::exists(index, error)) {
      open_index(index.string());
    } else if (fs::exists(single, error)) {
      open_single(single.string());
    } else {
      throw ModelFormatError(
          path, "",
          "holds neither " + std::string(kSafetensorsIndexFile) + " nor " + std::string(kSafetensorsSingleFile));
    }
  } else if (fs::path(path).extension() == ".json") {
    open_index(path);
  } else {
    open_single(path);
  }
}

void SafetensorsCheckpoint::open_single(const std::string& file) {
  source_ = file;
  shards_.emplace_back(file);
  for (const SafetensorsTensorInfo& tensor : shards_.front().tensors()) {
    locations_.emplace(tensor.name, Location{0, &tensor});
  }
}

void SafetensorsCheckpoint::open_index(const std::string& index_file) {
  source_ = index_file;
  const json index = read_json_file(index_file);
  const auto weight_map = index.find("weight_map");
  if (!index.is_object() || weight_map == index.end()) {
    throw ModelFormatError(index_file, "field 'weight_map'", "missing");
  }
  if (!weight_map->is_object()) {
    throw ModelFormatError(index_file, "field 'weight_map'",
                           std::string("expected an object, found ") + weight_map->type_name());
  }
  const fs::path directory = fs::path(index_file).parent_path();
  // Open each shard once, in order of name; remember which tensors the index puts in it.
  std::map<std::string, std::vector<std::string>> tensors_by_shard;
  for (const auto& [tensor, shard] : weight_map->items()) {
    if (!shard.is_string()) {
      throw ModelFormatError(index_file, tensor_subject(tensor),
                             std::string("shard: expected a file name, found ") + shard.type_name());
    }
    const std::string& shard_name = shard.get_ref<const std::string&>();
    if (!is_safe_relative(shard_name)) {
      throw ModelFormatError(index_file, tensor_subject(tensor),
                             "shard '" + shard_name + "' is not a file inside " +
                                 (directory.empty() ? std::string(".") : directory.string()));
    }
    tensors_by_shard[shard_name].push_back(tensor);
  }
  shards_.reserve(tensors_by_shard.size());
  for (const auto& [shard_name, tensors] : tensors_by_shard) {
    const fs::path shard_path = directory / shard_name;
    std::error_code error;
    if (!fs::is_regular_file(shard_path, error)) {
      throw ModelFormatError(index_file, tensor_subject(tensors.front()),
                             "shard '" + shard_name + "' does not exist (looked for " + shard_path.string() + ")");
    }
    shards_.emplace_back(shard_path.string());
  }
  std::size_t shard = 0;
  for (const auto& [shard_name, tensors] : tensors_by_shard) {
    for (const std::string& name : tensors) {
      const SafetensorsTensorInfo* tensor = shards_[shard].find_tensor(name);
      if (tensor == nullptr) {
        throw ModelFormatError(shards_[shard].path(), tensor_subject(name),
                               "not in this shard, though " + index_file + " places it here");
      }
      locations_.emplace(name, Location{shard, tensor});
    }
    ++shard;
  }
}

std::vector<std::string> SafetensorsCheckpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(locations_.size());
  for (const auto& [name, location] : locations_) names.push_back(name);
  return names;
}

const SafetensorsTensorInfo* SafetensorsCheckpoint::find_tensor(std::string_view name) const {
  const auto found = locations_.find(name);
  return found == locations_.end() ? nullptr : found->second.tensor;
}

const SafetensorsCheckpoint::Location& SafetensorsCheckpoint::locate(std::string_view name) const {
  const auto found = locations_.find(name);
  if (found == locations_.end()) {
    throw ModelFormatError(source_, tensor_subject(name), "not in this checkpoint");
  }
  return found->second;
}

const SafetensorsTensorInfo& SafetensorsCheckpoint::tensor(std::string_view name) const { return *locate(name).tensor; }

const std::string& SafetensorsCheckpoint::shard_path(std::string_view name) const {
  return shards_[locate(name).shard].path();
}

std::span<const std::byte> SafetensorsCheckpoint::tensor_data(std::string_view name) const {
  const Location& location = locate(name);
  return shards_[location.shard].tensor_data(*location.tensor);
}

std::shared_ptr<const MappedFile> SafetensorsCheckpoint::mapping(std::string_view name) const {
  return shards_[locate(name).shard].mapping();
}

std::vector<float> SafetensorsCheckpoint::read_f32(std::string_view name) const {
  const Location& location = locate(name);
  return tensor_to_f32(*location.tensor, shards_[location.shard].tensor_data(*location.tensor));
}

std::vector<std::uint16_t> SafetensorsCheckpoint::read_bf16(std::string_view name) const {
  const Location& location = locate(name);
  return tensor_to_bf16(*location.tensor, shards_[location.shard].tensor_data(*location.tensor));
}

}  // namespace pagedllm::model
