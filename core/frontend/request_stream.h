// One request's output as a client sees it: per sample, the tokens detokenized incrementally and
// cut at the first stop string (TextStream), each token held back while its text is, and the
// logprob tokens decoded here, once. Every frontend goes through it: the serving engine (an
// update per step, streamed over HTTP) and offline generate (the updates gathered).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/request_output.h"
#include "core/frontend/text_stream.h"
#include "core/tokenizer/tokenizer.h"

namespace pagedllm::frontend {

// A generated token with its logprob and the top alternatives, as text (a token may hold part of
// a character: its bytes are the text's bytes).
struct TokenLogprob {
  std::string token;
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;
};

// New output of one completion (sample) since the last update.
struct CompletionUpdate {
  int32_t index = 0;                   // the sample's index within the request
  std::string text;                    // new text (held back while it may become a stop string)
  std::vector<TokenId> tokens;         // new tokens, released with their text
  std::vector<TokenLogprob> logprobs;  // per new token, when logprobs were asked
  std::string finish_reason;           // "stop", "length", "abort"; empty while running
};

// Why a request ended without its output: the status a frontend answers follows from it.
enum class RequestError : uint8_t {
  none,
  invalid_request,  // refused by validation, or it can never fit the KV cache (HTTP 400)
  shutting_down,    // the engine stopped before the request ended (HTTP 503)
  engine_failed,    // a step threw: our bug (HTTP 500)
};

struct RequestUpdate {
  std::vector<CompletionUpdate> completions;  // those with news
  bool finished = false;
  int32_t num_prompt_tokens = 0;
  int64_t num_output_tokens = 0;  // every sample's tokens so far
  RequestError error = RequestError::none;
  std::string error_message;
};

// "stop", "length", "abort" (a rejected request reads as aborted), "" for none.
std::string finish_reason_text(sched::FinishReason reason);

struct RequestStreamOptions {
  TextStreamOptions text;      // each sample's (stop strings, min_tokens, decode options)
  int32_t num_samples = 1;     // n
  bool beam_search = false;    // beams reorder until the search ends: nothing goes out before
  bool with_logprobs = false;  // fill CompletionUpdate::logprobs
};

class RequestStream {
 public:
  RequestStream(tokenizer::Tokenizer tokenizer, RequestStreamOptions options);

  // What the engine's output for this request (a delta) adds. A sample whose text reaches a stop
  // string is stopped in `engine` at once (its blocks freed, the others go on); once every sample
  // is done, the request is aborted there too. Nothing (nullopt) while a beam search runs.
  // `update.finished` tells that the request is over.
  std::optional<RequestUpdate> on_output(const engine::RequestOutput& output, engine::Engine& engine);

  int64_t num_output_tokens() const { return num_output_tokens_; }

 private:
  struct Sample {
    TextStream text;
    CompletionUpdate held;  // tokens whose text is still held back, with their logprobs
    bool finished = false;  // its final update went out
  };

  void decode_logprobs(const engine::Completion& completion, size_t i, CompletionUpdate& held) const;

  tokenizer::Tokenizer tokenizer_;
  RequestStreamOptions options_;
  std::vector<Sample> samples_;  // created as samples appear
  int64_t num_output_tokens_ = 0;
};

}  // namespace pagedllm::frontend
