// Offline generation with text, as vLLM's LLM.generate: requests in, run to completion, texts
// back. Stop strings apply (a sample stops once its text reaches one, and its blocks are freed
// at once), as in the HTTP server: both go through RequestStream. engine::generate is the same
// without a tokenizer (token ids only; it refuses stop strings).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine_config.h"
#include "core/engine/executor.h"
#include "core/frontend/request_stream.h"
#include "core/sched/sampling_params.h"
#include "core/spec/draft_model_proposer.h"
#include "core/tokenizer/tokenizer.h"

namespace pagedllm::frontend {

struct TextRequest {
  std::vector<TokenId> prompt;
  sched::SamplingParams params;  // stop strings included
  int32_t priority = 0;
  tokenizer::DecodeOptions decode{.skip_special_tokens = true};
  bool include_stop_str_in_output = false;
};

struct TextCompletion {
  int32_t index = 0;
  std::string text;
  std::vector<TokenId> tokens;  // up to and including the token that completed a stop string
  std::string finish_reason;    // "stop", "length", "abort"
};

struct TextOutput {
  int32_t num_prompt_tokens = 0;
  std::vector<TextCompletion> completions;  // by sample index
  RequestError error = RequestError::none;  // invalid_request: the KV cache can never hold it
  std::string error_message;
};

struct GenerateConfig {
  engine::EngineConfig engine;
  engine::Clock* clock = nullptr;  // null: a virtual clock advanced by the executor's step times
  // Called after each step for every request with news (its index in the input), e.g. to print
  // a single request's text as it comes.
  std::function<void(size_t request, const RequestUpdate& update)> on_update{};
  engine::EngineCounters* counters = nullptr;       // when set: receives the engine's counters at the end
  spec::DraftModelProposer* draft_model = nullptr;  // with engine.speculative's draft_model method
};

// All requests arrive at once (ids 0..n-1). Returns one output per request, in input order.
// Throws sched::InvalidRequestError for an invalid request before running any.
std::vector<TextOutput> generate(std::span<const TextRequest> requests, engine::Executor& executor,
                                 const tokenizer::Tokenizer& tokenizer, const GenerateConfig& config);

}  // namespace pagedllm::frontend
