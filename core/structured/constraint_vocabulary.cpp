#include "core/structured/constraint_vocabulary.h"

namespace pagedllm::structured {

std::vector<std::string> constraint_token_bytes(const tokenizer::Tokenizer& tokenizer, int32_t vocab_size) {
  std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
  for (TokenId id = 0; id < vocab_size && id < tokenizer.num_tokens(); ++id) {
    if (!tokenizer.is_special(id)) bytes[static_cast<size_t>(id)] = tokenizer.token_bytes(id);
  }
  return bytes;
}

}  // namespace pagedllm::structured
