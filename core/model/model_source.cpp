#include "core/model/model_source.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/model/model_errors.h"

namespace pagedllm::model {
namespace {

constexpr std::array<KnownModel, 1> kKnownModels = {{
    {"smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf",
     "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"},
}};

bool starts_with_gguf_magic(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 'G' && magic[1] == 'G' && magic[2] == 'U' && magic[3] == 'F';
}

}  // namespace

const KnownModel* find_known_model(std::string_view name) {
  for (const KnownModel& model : kKnownModels) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

std::string model_cache_dir() {
  if (const char* cache = std::getenv("PAGEDLLM_CACHE"); cache != nullptr && *cache != '\0') {
    return std::string(cache) + "/models";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/pagedllm/models";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/pagedllm/models";
}

ModelSource resolve_model_source(const std::string& argument) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path path(argument);
  if (fs::is_directory(path, error)) {
    if (!fs::exists(path / "config.json", error)) {
      throw ModelFormatError(argument, "config.json",
                             "missing: a model directory holds config.json, *.safetensors and "
                             "tokenizer.json (or pass a .gguf file)");
    }
    return {ModelFormat::hf_directory, path.string()};
  }
  if (fs::is_regular_file(path, error)) {
    if (!starts_with_gguf_magic(path)) {
      throw ModelFormatError(argument, "magic", "not a GGUF file; pass a GGUF file or a Hugging Face model directory");
    }
    return {ModelFormat::gguf, path.string()};
  }
  if (const KnownModel* known = find_known_model(argument)) {
    const fs::path cached = fs::path(model_cache_dir()) / known->file_name;
    if (fs::is_regular_file(cached, error)) return {ModelFormat::gguf, cached.string()};
    throw ModelFormatError(
        argument, "",
        "not in the cache (" + cached.string() + "); fetch it with: tools/fetch_model.py " + std::string(known->name));
  }
  throw ModelFormatError(argument, "",
                         "no such file or directory, and not a known model name "
                         "(known: smollm2-135m-instruct)");
}

}  // namespace pagedllm::model
