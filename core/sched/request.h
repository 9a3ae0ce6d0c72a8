// A generation request as the engine receives it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/common/types.h"
#include "core/kv/block_hash.h"
#include "core/sched/sampling_params.h"
#include "core/sched/synthetic_prompt.h"

namespace pagedllm::sched {

using RequestId = int64_t;

struct Request {
  RequestId id = 0;
  std::vector<TokenId> prompt_tokens;
  SamplingParams params;
  double arrival_time = 0.0;  // seconds on the engine clock
  int32_t priority = 0;       // priority policy: lower runs first (as vLLM), ties by arrival
  uint64_t cache_salt = 0;    // requests with different salts never share prefix-cache blocks
  // Optional: the prompt's leading tokens named by content ids (a trace's prefix block ids), so
  // the prefix cache hashes its blocks from the ids instead of reading the tokens.
  kv::PromptContentIds content_ids = {};
  // Optional: a synthetic prompt given by what it is made from. prompt_tokens may then be empty:
  // the prompt is the content_ids.num_named_tokens() tokens content_ids names, made by this where
  // they are read (write_prompt for all of them; an engine whose executor runs no model makes
  // only its last block).
  std::optional<SyntheticTokens> prompt_synthesis = {};
};

// The prompt's length, its tokens written or not.
inline int32_t prompt_length(const Request& request) {
  if (request.prompt_tokens.empty() && request.prompt_synthesis) return request.content_ids.num_named_tokens();
  return static_cast<int32_t>(request.prompt_tokens.size());
}

// Writes a described prompt's tokens (a request that has its tokens is left as it is).
void write_prompt(Request& request);

enum class FinishReason : uint8_t {
  none,      // still running
  stop,      // EOS or a stop token
  length,    // max_tokens or the model's context length
  abort,     // aborted by the client
  rejected,  // can never fit in the KV cache
};
const char* to_string(FinishReason reason);

}  // namespace pagedllm::sched
