// The embedded default model: `--model tiny` (the default of replay) is make-model's tiny
// checkpoint, written on first use into the model cache, so the main job needs no download.
#pragma once

#include <string>
#include <string_view>

namespace pagedllm::cli {

inline constexpr std::string_view kDefaultModelName = "tiny";

// "tiny" becomes the directory of the tiny model in the cache (written if absent, atomically, so
// concurrent runs are safe); any other argument is returned unchanged.
std::string resolve_model_argument(const std::string& argument);

}  // namespace pagedllm::cli
