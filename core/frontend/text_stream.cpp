#include "core/frontend/text_stream.h"

#include <algorithm>
#include <stdexcept>

namespace pagedllm::frontend {

TextStream::TextStream(tokenizer::Tokenizer tokenizer, TextStreamOptions options)
    : detokenizer_(std::move(tokenizer), options.decode),
      stop_(std::move(options.stop)),
      min_tokens_(options.min_tokens),
      include_stop_(options.include_stop) {
  for (const std::string& text : stop_) {
    if (text.empty()) throw std::invalid_argument("text stream: stop strings must not be empty");
  }
}

std::string TextStream::push(TokenId token) {
  if (stopped_) return {};
  const size_t old_size = pending_.size();
  pending_ += detokenizer_.push(token);
  ++num_tokens_;
  // Every match starts inside pending_: what was sent never ended in the start of a stop string.
  // A match counts only if it ends in this token's text, and not while min_tokens holds (vLLM:
  // a stop string completed then stays in the text).
  size_t first_match = std::string::npos;
  if (num_tokens_ > min_tokens_) {
    for (const std::string& text : stop_) {
      const size_t at = pending_.find(text, old_size >= text.size() ? old_size - text.size() + 1 : 0);
      if (at < first_match) {
        first_match = at;
        matched_stop_ = text;
      }
    }
  }
  if (first_match != std::string::npos) {
    stopped_ = true;
    std::string sent = pending_.substr(0, first_match + (include_stop_ ? matched_stop_.size() : 0));
    pending_.clear();
    return sent;
  }
  const size_t keep = num_held_back();
  std::string sent = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return sent;
}

std::string TextStream::finish() {
  if (stopped_) return {};
  std::string rest = std::move(pending_);
  pending_.clear();
  rest += detokenizer_.flush();
  return rest;
}

size_t TextStream::num_held_back() const {
  size_t longest = 0;
  for (const std::string& text : stop_) {
    const size_t limit = std::min(pending_.size(), text.size() - 1);
    for (size_t length = limit; length > longest; --length) {
      if (pending_.compare(pending_.size() - length, length, text, 0, length) == 0) {
        longest = length;
        break;
      }
    }
  }
  return longest;
}

}  // namespace pagedllm::frontend
