// The OpenAI-compatible API's wire format: requests parsed and checked into engine terms, and
// responses, stream chunks and errors built as OpenAI (and vLLM's server) shape them. Pure
// functions over JSON: no sockets, no engine.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/chat_template.h"
#include "core/common/types.h"
#include "core/frontend/request_stream.h"
#include "core/sched/sampling_params.h"

namespace pagedllm::server {

// An error the client gets as {"error": {"message", "type", "param", "code"}} with `status`.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string param, std::string code, const std::string& message)
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }    // "invalid_request_error", "authentication_error", ...
  const std::string& param() const { return param_; }  // the field at fault ("" = none: JSON null)
  const std::string& code() const { return code_; }    // "context_length_exceeded", ... ("" = JSON null)
  // Seconds a client should wait before it tries again (a Retry-After header; 0 = none).
  int retry_after_seconds() const { return retry_after_seconds_; }
  ApiError& retry_after(int seconds) {
    retry_after_seconds_ = seconds;
    return *this;
  }

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
  int retry_after_seconds_ = 0;
};

// 400 invalid_request_error naming `param`.
ApiError invalid_request(std::string param, const std::string& message, std::string code = "");
nlohmann::json to_json(const ApiError& error);

// The body as JSON. Throws ApiError 400 for malformed JSON, invalid UTF-8, nesting deeper than
// kMaxJsonDepth, or a top level that is not an object; the message says where (byte offset) as
// nlohmann reports it.
nlohmann::json parse_json_body(std::string_view body);
inline constexpr int32_t kMaxJsonDepth = 128;  // nlohmann's dump and copy recurse per level

// JSON text for the wire: compact, UTF-8 kept as is, and never throwing on invalid UTF-8 (a
// token's text can hold half a character): bad bytes become U+FFFD. Dump every response with it.
std::string dump_json(const nlohmann::json& value);

struct ProtocolLimits {
  int32_t max_n = 128;               // parallel samples per request
  int32_t max_logprobs = 20;         // top logprobs per token (completions: 5, as OpenAI)
  int32_t max_stop_sequences = 16;
  int32_t max_prompts = 256;         // prompts in one /v1/completions batch
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
  bool include_usage = false;      // stream_options.include_usage (only with stream)
  bool logprobs = false;           // chat: return logprobs; completions: logprobs was given
  int32_t priority = 0;            // vLLM's extra: lower runs first (needs --scheduling-policy priority)
  bool skip_special_tokens = true;          // vLLM's extra: special tokens left out of the text
  bool include_stop_str_in_output = false;  // vLLM's extra: the text keeps the stop string
  // vLLM's extra: keep only the prompt's last this-many tokens; -1 = max_model_len.
  std::optional<int32_t> truncate_prompt_tokens;
  std::vector<std::string> bad_words;  // vLLM's extra: tokenized by the server (encode_bad_words)
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
  chat::ChatPromptOptions prompt;           // add_generation_prompt, continue_final_message
};

// Throw ApiError 400 naming the first field at fault: a wrong type, a value out of range, an
// unknown or unsupported field where silence would mislead (e.g. "tools", "suffix", "best_of" >
// n, "response_format" other than text), n above the limit.
// The param is the field's path ("max_tokens", "messages[1].content[0].type", "prompt[2]") and
// the message starts with it ("max_tokens: expected an integer, got string"). JSON null in an
// optional field means absent. Unknown fields are ignored (clients send extras). Types are strict,
// except that a float with no fractional part (2.0) passes as an integer (pydantic's rule, so
// vLLM's). A negative seed keeps its bits: static_cast<uint64_t>. sampling.max_tokens is set
// only when the client gave max_tokens (else it keeps its default and the server sets it).
CompletionRequest parse_completion_request(const nlohmann::json& body, const ProtocolLimits& limits);
ChatRequest parse_chat_request(const nlohmann::json& body, const ProtocolLimits& limits);

// --- responses ---

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};
nlohmann::json to_json(const Usage& usage);  // with total_tokens

// Logprobs below this (-inf included) are sent as it, as vLLM does: JSON has no infinity.
inline constexpr float kMinLogprob = -9999.0f;

// One output token with its logprob and, when asked, the top alternatives (best first; the
// builders send them as given).
using frontend::TokenLogprob;  // a token's text and logprob, with the top alternatives

struct ChoiceDelta {
  int32_t index = 0;
  std::string text;                          // new text (streaming) or the whole text
  std::optional<std::string> finish_reason;  // "stop", "length", "abort"; unset while running
  std::vector<TokenLogprob> logprobs;        // for the tokens behind `text`, when asked
  int32_t text_offset = 0;                   // completions' logprobs.text_offset of the first token
};

struct ResponseHeader {
  std::string id;      // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0; // unix seconds
  std::string model;
};

// POST /v1/completions: "object": "text_completion"; logprobs as the legacy format (tokens,
// token_logprobs, top_logprobs as {token: logprob}, text_offset) or null. text_offset counts
// bytes: text_offset, then that plus each earlier token's byte length.
nlohmann::json completion_response(const ResponseHeader& header, const std::vector<ChoiceDelta>& choices,
                                   const Usage& usage, bool with_logprobs);
// A chunk's logprobs cover the tokens behind its text; a chunk with none (the chat role chunk, a
// bare finish) has logprobs null. A chunk has no "usage" key (see usage_chunk).
nlohmann::json completion_chunk(const ResponseHeader& header, const ChoiceDelta& choice, bool with_logprobs);

// POST /v1/chat/completions: "object": "chat.completion"; message {role: assistant, content};
// logprobs {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]} or null.
nlohmann::json chat_response(const ResponseHeader& header, const std::vector<ChoiceDelta>& choices, const Usage& usage,
                             bool with_logprobs);
// "object": "chat.completion.chunk"; the first chunk of a choice carries delta {role: assistant,
// content: ""}; later ones delta {content}; the last one an empty delta and finish_reason
// (or {content} and finish_reason when it still carries text).
nlohmann::json chat_chunk(const ResponseHeader& header, const ChoiceDelta& choice, bool with_logprobs,
                          bool first_of_choice);

// The stream's last chunk with stream_options.include_usage: "choices": [] and the usage.
nlohmann::json usage_chunk(const ResponseHeader& header, bool chat, const Usage& usage);

// One server-sent event: "data: <json>\n\n"; and the terminator "data: [DONE]\n\n".
std::string sse_event(const nlohmann::json& chunk);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace pagedllm::server
