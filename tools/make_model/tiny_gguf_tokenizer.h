// The tokenizer.ggml.* metadata of a GGUF file, from a byte-level BPE TokenizerSpec (the
// inverse of Tokenizer::from_gguf).
#pragma once

#include "core/model/gguf_writer.h"
#include "core/model/model_config.h"
#include "core/tokenizer/tokenizer_spec.h"

namespace pagedllm::make_model {

// Writes tokens, token types, merges, special ids and the pre-tokenizer name. Throws
// std::invalid_argument when the spec's pre-tokenizer has no GGUF name.
void add_gguf_tokenizer(model::GgufWriter& gguf, const tokenizer::TokenizerSpec& spec,
                        const model::ModelConfig& config);

}  // namespace pagedllm::make_model
