// The vocabulary a model's constraints are compiled over, read from its tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"

namespace pagedllm::structured {

// A tokenizer's vocabulary as constraints see it, over `vocab_size` ids (a model's logits may have
// more ids than its tokenizer: padding): each token's bytes, empty for special tokens and padding
// ids, so that no constraint allows them. What the server, `pagedllm token-masks` and the benchmark
// build their ConstraintCompiler (or TokenTrie) from.
std::vector<std::string> constraint_token_bytes(const tokenizer::Tokenizer& tokenizer, int32_t vocab_size);

}  // namespace pagedllm::structured
