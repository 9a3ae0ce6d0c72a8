// The text of one completion as its tokens arrive: detokenized incrementally (never a broken
// UTF-8 character), cut at the first stop string, and held back while its end could still turn
// into a stop string, so that a client never receives text that a stop string later removes.
#pragma once

#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/tokenizer/incremental_detokenizer.h"
#include "core/tokenizer/tokenizer.h"

namespace pagedllm::frontend {

struct TextStreamOptions {
  // Stop strings (none empty): the text ends at the first one found. As vLLM, a stop string
  // counts only where it ends in the text of a token after the first `min_tokens`.
  std::vector<std::string> stop = {};
  int32_t min_tokens = 0;
  bool include_stop = false;  // the text ends after the stop string rather than before (OpenAI: before)
  tokenizer::DecodeOptions decode = {};
};

class TextStream {
 public:
  TextStream(tokenizer::Tokenizer tokenizer, TextStreamOptions options);

  // Adds one token; returns the text that may be sent now (possibly empty). After a stop string
  // matched, returns nothing more.
  std::string push(TokenId token);
  // The end of the output: whatever was held back (an unfinished character as U+FFFD).
  std::string finish();

  bool stopped() const { return stopped_; }
  // Text of the tokens so far is held back (a possible stop string, half a character): a caller
  // that pairs tokens with their text keeps those tokens back too.
  bool holding() const { return !pending_.empty() || detokenizer_.num_pending_bytes() > 0; }
  const std::string& matched_stop() const { return matched_stop_; }

 private:
  // Length of the longest end of pending_ that is a proper prefix of a stop string.
  size_t num_held_back() const;

  tokenizer::IncrementalDetokenizer detokenizer_;
  std::vector<std::string> stop_;
  int32_t min_tokens_ = 0;
  bool include_stop_ = false;
  int32_t num_tokens_ = 0;  // pushed so far
  std::string pending_;     // decoded, not yet sent: it may be the start of a stop string
  bool stopped_ = false;
  std::string matched_stop_;
};

}  // namespace pagedllm::frontend
