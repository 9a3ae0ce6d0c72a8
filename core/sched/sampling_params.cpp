#include "core/sched/sampling_params.h"

#include <cmath>
#include <sstream>
#include <string>

namespace pagedllm::sched {
namespace {

template <typename Value>
[[noreturn]] void refuse(const std::string& field, const std::string& bound, Value value) {
  std::ostringstream message;
  message << field << " must be " << bound << ", got " << value;
  throw InvalidRequestError(field, message.str());
}

}  // namespace

void validate(const SamplingParams& params, int32_t num_prompt_tokens, const RequestLimits& limits) {
  if (params.n < 1) refuse("n", "at least 1", params.n);
  if (params.beam_width < 0) refuse("beam_width", "at least 0 (0 = no beam search)", params.beam_width);
  if (params.use_beam_search() && params.n > params.beam_width) {
    refuse("n", "at most beam_width (" + std::to_string(params.beam_width) + ") with beam search", params.n);
  }
  if (!std::isfinite(params.length_penalty)) refuse("length_penalty", "a finite number", params.length_penalty);
  if (!std::isfinite(params.temperature) || params.temperature < 0.0f) {
    refuse("temperature", "a non-negative number", params.temperature);
  }
  if (!(params.top_p > 0.0f && params.top_p <= 1.0f)) refuse("top_p", "in (0, 1]", params.top_p);
  if (params.top_k < -1) refuse("top_k", "-1, 0 (all tokens) or positive", params.top_k);
  if (!(params.min_p >= 0.0f && params.min_p <= 1.0f)) refuse("min_p", "in [0, 1]", params.min_p);
  if (!(params.repetition_penalty > 0.0f) || !std::isfinite(params.repetition_penalty)) {
    refuse("repetition_penalty", "a positive number", params.repetition_penalty);
  }
  if (!(params.presence_penalty >= -2.0f && params.presence_penalty <= 2.0f)) {
    refuse("presence_penalty", "in [-2, 2]", params.presence_penalty);
  }
  if (!(params.frequency_penalty >= -2.0f && params.frequency_penalty <= 2.0f)) {
    refuse("frequency_penalty", "in [-2, 2]", params.frequency_penalty);
  }
  if (params.max_tokens < 1) refuse("max_tokens", "at least 1", params.max_tokens);
  if (params.min_tokens < 0 || params.min_tokens > params.max_tokens) {
    refuse("min_tokens", "in [0, max_tokens=" + std::to_string(params.max_tokens) + "]", params.min_tokens);
  }
  if (params.logprobs && (*params.logprobs < 0 || *params.logprobs > limits.max_logprobs)) {
    refuse("logprobs", "in [0, " + std::to_string(limits.max_logprobs) + "]", *params.logprobs);
  }
  const auto check_token = [&](const std::string& field, TokenId token) {
    if (token < 0 || (limits.vocab_size > 0 && token >= limits.vocab_size)) {
      throw InvalidRequestError(
          field, field + " holds token id " + std::to_string(token) +
                     (limits.vocab_size > 0 ? ", outside the vocabulary [0, " + std::to_string(limits.vocab_size) + ")"
                                            : ", a negative id"));
    }
  };
  for (const auto& [token, bias] : params.logit_bias) {
    check_token("logit_bias", token);
    if (!std::isfinite(bias)) refuse("logit_bias", "finite numbers", bias);
  }
  if (!params.logit_bias.empty() && params.use_beam_search()) {
    throw InvalidRequestError("logit_bias", "logit_bias is not supported with beam search");
  }
  for (const TokenId token : params.allowed_token_ids) check_token("allowed_token_ids", token);
  if (!params.allowed_token_ids.empty() && params.use_beam_search()) {
    throw InvalidRequestError("allowed_token_ids", "allowed_token_ids is not supported with beam search");
  }
  for (const std::vector<TokenId>& word : params.bad_words_token_ids) {
    if (word.empty()) throw InvalidRequestError("bad_words", "a bad word must hold at least one token");
    for (const TokenId token : word) check_token("bad_words", token);
  }
  if (!params.bad_words_token_ids.empty() && params.use_beam_search()) {
    throw InvalidRequestError("bad_words", "bad_words is not supported with beam search");
  }
  for (const std::string& stop : params.stop) {
    if (stop.empty()) throw InvalidRequestError("stop", "stop strings must not be empty");
  }
  if (num_prompt_tokens < 1) throw InvalidRequestError("prompt", "the prompt must hold at least one token");
  if (static_cast<int64_t>(num_prompt_tokens) + params.max_tokens > limits.max_model_len) {
    std::ostringstream message;
    message << "this model's maximum context length is " << limits.max_model_len << " tokens; the request has "
            << num_prompt_tokens << " prompt tokens and asks for " << params.max_tokens << " completion tokens ("
            << static_cast<int64_t>(num_prompt_tokens) + params.max_tokens
            << " in all); shorten the prompt or lower max_tokens";
    throw InvalidRequestError(num_prompt_tokens > limits.max_model_len ? "prompt" : "max_tokens", message.str());
  }
}

}  // namespace pagedllm::sched
