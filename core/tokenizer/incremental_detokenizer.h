// Streaming detokenization: text as tokens arrive, never a broken UTF-8 sequence.
//
// push(id) returns the text that is final once this token is known (possibly empty: a token
// may carry half a character); flush() returns the rest, an unfinished sequence as U+FFFD. The
// concatenation of every push() and the flush() equals Tokenizer::decode() of all the ids.
#pragma once

#include <span>
#include <string>

#include "core/common/types.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/utf8.h"

namespace pagedllm::tokenizer {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(Tokenizer tokenizer, DecodeOptions options = {})
      : tokenizer_(std::move(tokenizer)), options_(options) {}

  // Throws std::out_of_range for an id outside the vocabulary (nothing is consumed).
  std::string push(TokenId id);
  std::string push(std::span<const TokenId> ids);
  std::string flush();

  // Bytes held back: the start of a character whose remaining bytes have not arrived.
  std::size_t num_pending_bytes() const noexcept { return stream_.num_pending(); }

 private:
  Tokenizer tokenizer_;  // shares the compiled tokenizer
  DecodeOptions options_;
  Utf8LossyStream stream_;
};

}  // namespace pagedllm::tokenizer
