// OpenAI's requests (and vLLM's extras) parsed and checked into engine terms: one table of the
// fields each endpoint takes, each with its reader; cross-field rules after. Pure functions over
// JSON: no sockets, no engine.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/common/types.h"
#include "core/sched/sampling_params.h"
#include "tools/server/openai_errors.h"
#include "tools/server/openai_structured_outputs.h"
#include "tools/server/openai_tools.h"

namespace pagedllm::server {

struct ProtocolLimits {
  int32_t max_n = 128;        // parallel samples per request
  int32_t max_logprobs = 20;  // top logprobs per token (completions: 5, as OpenAI)
  int32_t max_stop_sequences = 16;
  int32_t max_prompts = 256;  // prompts in one /v1/completions batch
};

// What both endpoints share. max_tokens stays unset when the client gave none: the server then
// uses the room the context leaves (chat) or 16 (completions, OpenAI's default).
struct GenerationRequest {
  std::string model;
  sched::SamplingParams sampling;  // n, temperature, top_p, top_k, min_p, penalties, seed, stop,
                                   // stop_token_ids, ignore_eos, min_tokens, logit_bias,
                                   // allowed_token_ids, beams, logprobs (as top-k count); the
                                   // server fills bad_words_token_ids from bad_words
  std::optional<int32_t> max_tokens;
  bool stream = false;
  bool include_usage = false;               // stream_options.include_usage (only with stream)
  bool logprobs = false;                    // chat: return logprobs; completions: logprobs was given
  int32_t priority = 0;                     // vLLM's extra: lower runs first (needs --scheduling-policy priority)
  bool skip_special_tokens = true;          // vLLM's extra: special tokens left out of the text
  bool include_stop_str_in_output = false;  // vLLM's extra: the text keeps the stop string
  // vLLM's extra: keep only the prompt's last this-many tokens; -1 = max_model_len.
  std::optional<int32_t> truncate_prompt_tokens;
  std::vector<std::string> bad_words;     // vLLM's extra: tokenized by the server (encode_bad_words)
  std::optional<std::string> request_id;  // vLLM's extra: the response id's suffix
  // Structured outputs (response_format, structured_outputs, guided_*), compiled by the server
  // for its model into sampling.output_constraint.
  std::optional<OutputConstraintRequest> output_constraint;
};

// "prompt": a string, an array of strings, an array of token ids, or an array of such arrays.
struct CompletionPrompt {
  std::optional<std::string> text;  // set for a text prompt
  std::vector<TokenId> token_ids;   // set for a token prompt
};

struct CompletionRequest {
  GenerationRequest generation;
  std::vector<CompletionPrompt> prompts;  // at least one
  bool echo = false;                      // prepend the prompt to the text
};

struct ChatRequest {
  GenerationRequest generation;
  std::vector<chat::ChatMessage> messages;  // content as a string, or text parts joined
  chat::ChatPromptOptions prompt;           // add_generation_prompt, continue_final_message; the
                                            // server fills tools from the body as written
  ToolRequest tools;                        // tools, tool_choice, parallel_tool_calls
};

// Throw ApiError 400 naming the first field at fault: a wrong type, a value out of range, n above
// the limit, two output constraints, a field this server does not act on whose value asks for
// something ("functions", "suffix", "best_of" > n, "structural_tag", "prompt_logprobs";
// openai_refused_fields.h), or a field in neither OpenAI's nor vLLM's schema.
// The param is the field's path ("max_tokens", "messages[1].content[0].type", "prompt[2]") and
// the message starts with it ("max_tokens: expected an integer, got string"). JSON null in an
// optional field means absent. Types are strict,
// except that a float with no fractional part (2.0) passes as an integer (pydantic's rule, so
// vLLM's). A negative seed keeps its bits: static_cast<uint64_t>. sampling.max_tokens is set
// only when the client gave max_tokens (else it keeps its default and the server sets it).
CompletionRequest parse_completion_request(const nlohmann::json& body, const ProtocolLimits& limits);
ChatRequest parse_chat_request(const nlohmann::json& body, const ProtocolLimits& limits);

}  // namespace pagedllm::server
