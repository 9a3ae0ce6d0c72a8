// The embedded tiny model (make-model's), written to a temporary directory and loaded for cpu_ref,
// as the suites' end-to-end tests use it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "core/frontend/model_bundle.h"
#include "cpu_ref/llama_model.h"
#include "tools/make_model/tiny_model.h"

namespace pagedllm::cpu_ref {

// `directory_name`: under the system's temporary directory, one per model variant and suite.
inline std::shared_ptr<const LlamaModel> write_and_load_tiny_model(const std::string& directory_name,
                                                                   const make_model::TinyModelSpec& spec = {}) {
  const auto directory = std::filesystem::temp_directory_path() / directory_name;
  make_model::write_tiny_model(spec, directory.string());
  return std::make_shared<const LlamaModel>(frontend::load_weights(frontend::open_model(directory.string())));
}

}  // namespace pagedllm::cpu_ref
