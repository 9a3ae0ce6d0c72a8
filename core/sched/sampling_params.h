// Per-request sampling parameters, as vLLM's users know them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/common/types.h"
#include "core/spec/speculative_config.h"
#include "core/structured/token_mask.h"

namespace pagedllm::sched {

struct SamplingParams {
  int32_t n = 1;                    // parallel samples returned
  int32_t beam_width = 0;           // > 0: beam search with this many beams (n <= beam_width)
  float length_penalty = 1.0f;      // beam search: final ranking by cumulative logprob / length^this
  float temperature = 1.0f;         // 0 = greedy
  float top_p = 1.0f;               // nucleus mass kept, in (0, 1]
  int32_t top_k = 0;                // tokens kept; 0 or -1 = all
  float min_p = 0.0f;               // drop tokens below min_p * p(max), in [0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1 = off (divides positive logits of seen tokens)
  float presence_penalty = 0.0f;    // in [-2, 2]
  float frequency_penalty = 0.0f;   // in [-2, 2]
  std::optional<uint64_t> seed;     // per-request random stream; absent = engine-chosen
  int32_t max_tokens = 16;          // output tokens at most
  int32_t min_tokens = 0;           // the first this-many output tokens are never EOS or a stop id
  std::vector<std::string> stop;    // stop strings (matched on detokenized text by the frontend)
  std::vector<TokenId> stop_token_ids;
  bool ignore_eos = false;
  // Set by the engine on admission (vLLM's _all_stop_token_ids): stop_token_ids and the model's EOS
  // unless ignore_eos. Samplers give them no probability while fewer than min_tokens are out.
  std::vector<TokenId> all_stop_token_ids;
  std::optional<int32_t> logprobs;  // top logprobs per output token, 0..20
  // OpenAI's logit_bias: (token, bias) added to the token's logit before the penalties; the
  // server clamps biases to [-100, 100] as vLLM does. Not applied to beam search.
  std::vector<std::pair<TokenId, float>> logit_bias;
  // vLLM's allowed_token_ids: non-empty = only these tokens may be sampled.
  std::vector<TokenId> allowed_token_ids;
  // vLLM's bad_words, tokenized by the frontend (each word with and without a leading space): a
  // sequence's last token gets no mass where the output so far ends with the rest of it.
  std::vector<std::vector<TokenId>> bad_words_token_ids;
  // Structured outputs: the compiled constraint (a regex, a choice, a JSON schema) every output
  // must match, or null. Shared by the request's samples and beams, and by requests with the same
  // constraint; used on the engine's thread only (its masks are computed there, lazily).
  std::shared_ptr<structured::TokenMaskCache> output_constraint;
  // The simulator only: this request's measured speculation (a trace's simulated_speculation),
  // used instead of SpeculativeConfig::simulated's engine-wide rates. Null: those.
  std::shared_ptr<const spec::SimulatedAcceptance> simulated_speculation;

  bool use_beam_search() const { return beam_width > 0; }
  // Whether the token after num_output_tokens must not be a stop token (min_tokens not yet out).
  bool suppresses_stop_tokens(int32_t num_output_tokens) const {
    return num_output_tokens < min_tokens && !all_stop_token_ids.empty();
  }
  // Whether sampling the token after num_output_tokens changes the logits before temperature:
  // penalties, logit_bias, allowed_token_ids, bad words, min_tokens' suppression.
  bool adjusts_logits(int32_t num_output_tokens) const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f || !logit_bias.empty() ||
           !allowed_token_ids.empty() || !bad_words_token_ids.empty() || suppresses_stop_tokens(num_output_tokens);
  }
  // Sequences a group runs at once: beams, or parallel samples.
  int32_t num_sequences() const { return use_beam_search() ? beam_width : n; }
};

// A request that cannot be served as asked; the message names the field and the bound.
class InvalidRequestError : public std::invalid_argument {
 public:
  InvalidRequestError(std::string field, const std::string& message)
      : std::invalid_argument(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

struct RequestLimits {
  int32_t max_model_len = 0;  // prompt + output tokens the model accepts
  int32_t max_logprobs = 20;
  int32_t vocab_size = 0;  // > 0: token ids of logit_bias, allowed_token_ids, bad words must be below it
};

// Throws InvalidRequestError naming the first field out of range. A prompt that with max_tokens
// exceeds max_model_len is refused with the context length, the prompt and the completion tokens.
void validate(const SamplingParams& params, int32_t num_prompt_tokens, const RequestLimits& limits);

}  // namespace pagedllm::sched
