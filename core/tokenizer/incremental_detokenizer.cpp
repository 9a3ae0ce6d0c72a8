#include "core/tokenizer/incremental_detokenizer.h"

namespace pagedllm::tokenizer {

std::string IncrementalDetokenizer::push(TokenId id) {
  if (options_.skip_special_tokens && tokenizer_.is_special(id)) return {};
  return stream_.push(tokenizer_.token_bytes(id));
}

std::string IncrementalDetokenizer::push(std::span<const TokenId> ids) {
  std::string bytes;
  for (const TokenId id : ids) {
    if (options_.skip_special_tokens && tokenizer_.is_special(id)) continue;
    bytes.append(tokenizer_.token_bytes(id));
  }
  return stream_.push(bytes);
}

std::string IncrementalDetokenizer::flush() { return stream_.finish(); }

}  // namespace pagedllm::tokenizer
