// The tokenizer of a GGUF file (llama.cpp's tokenizer.ggml.* keys) as a TokenizerSpec.
#pragma once

#include "core/model/gguf_file.h"
#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::tokenizer {

// GGUF token types (llama.cpp's llama_token_type).
enum class GgufTokenType : std::int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

// Reads tokenizer.ggml.{model, pre, tokens, merges, token_type, bos/eos/unknown/padding_token_id,
// add_bos_token, add_eos_token}. CONTROL and UNKNOWN tokens become special added tokens,
// USER_DEFINED ones plain added tokens (matched in the raw text, as llama.cpp does). Throws
// model::ModelFormatError naming the file and the key: a model other than "gpt2", an unknown
// pre-tokenizer name, a malformed merge, an id out of range.
TokenizerSpec read_gguf_tokenizer(const model::GgufFile& gguf);

}  // namespace pagedllm::tokenizer
