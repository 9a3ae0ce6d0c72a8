#include "tools/pagedllm/default_model.h"

#include <unistd.h>
#include <filesystem>
#include <string>
#include <system_error>

#include "core/model/model_source.h"
#include "tools/make_model/tiny_model.h"

namespace pagedllm::cli {

namespace {
// Bump when TinyModelSpec's defaults or the writer change, so a stale cached copy is not used.
constexpr std::string_view kTinyModelDirectory = "pagedllm-tiny-v1";
}  // namespace

std::string resolve_model_argument(const std::string& argument) {
  namespace fs = std::filesystem;
  if (argument != kDefaultModelName) return argument;
  const fs::path directory = fs::path(model::model_cache_dir()) / kTinyModelDirectory;
  std::error_code error;
  if (fs::exists(directory / "model.gguf", error)) return directory.string();
  fs::create_directories(directory.parent_path());
  // Written beside its final place and renamed: a reader never sees half a model.
  const fs::path staging = directory.string() + ".tmp" + std::to_string(::getpid());
  make_model::write_tiny_model(make_model::TinyModelSpec{}, staging.string());
  fs::rename(staging, directory, error);
  if (error) {
    fs::remove_all(staging);  // another process won the race; its copy is identical
    if (!fs::exists(directory / "model.gguf")) {
      throw std::runtime_error("cannot place the tiny model at " + directory.string() + ": " + error.message());
    }
  }
  return directory.string();
}

}  // namespace pagedllm::cli
