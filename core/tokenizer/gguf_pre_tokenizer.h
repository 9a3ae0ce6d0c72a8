// The pre-tokenizers named by GGUF's `tokenizer.ggml.pre`, as HF pre-tokenizer steps, with the
// settings llama.cpp (llama-vocab.cpp) ties to each name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::tokenizer {

// Llama 3's split pattern (HF tokenizer.json of Meta-Llama-3).
inline constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2's: Llama 3's with single digits.
inline constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct GgufPreTokenizer {
  std::vector<PreTokenizerStep> steps;
  bool ignore_merges = false;
  bool add_bos = false;  // llama.cpp's default when tokenizer.ggml.add_bos_token is absent
};

// nullopt for a name pagedllm does not know.
std::optional<GgufPreTokenizer> gguf_pre_tokenizer(std::string_view name);

// The known names, comma-separated (for error messages).
std::string known_gguf_pre_tokenizers();

}  // namespace pagedllm::tokenizer
