#include "tools/server/openai_refused_fields.h"

#include <string>

namespace pagedllm::server {

using nlohmann::json;

namespace {

// Whether a value asks for nothing: the one spelling (besides null) that a client may send for a
// feature it does not use.
using AsksNothing = bool (*)(const json& value);

bool never(const json&) { return false; }
bool is_false(const json& value) { return value.is_boolean() && !value.get<bool>(); }
bool is_true(const json& value) { return value.is_boolean() && value.get<bool>(); }
bool is_empty(const json& value) {
  return (value.is_array() || value.is_object() || value.is_string()) && value.empty();
}

struct RefusedField {
  std::string_view name;
  RequestRoutes routes;
  AsksNothing asks_nothing;
  std::string_view why;  // completes "not supported by this server: ..."
};

// Sources: OpenAI's CreateCompletionRequest and CreateChatCompletionRequest, vLLM's
// CompletionRequest and ChatCompletionRequest (vllm/entrypoints/openai/protocol.py), and the
// SGLang fields vllm-router adds. Fields this server acts on are read by openai_request.cpp's
// table and never reach this one.
constexpr RefusedField kRefusedFields[] = {
    // OpenAI.
    {"audio", kChatRoute, never, "no audio output"},
    {"modalities", kChatRoute, [](const json& v) { return v.is_array() && v.size() == 1 && v[0] == "text"; },
     "text output only (\"text\")"},
    {"prediction", kChatRoute, never, "no predicted outputs"},
    {"reasoning_effort", kChatRoute, never, "no reasoning controls"},
    {"verbosity", kChatRoute, never, "no verbosity control"},
    {"web_search_options", kChatRoute, never, "no web search"},
    {"store", kChatRoute, is_false, "completions are not stored (only false)"},
    {"service_tier", kChatRoute, [](const json& v) { return v == "auto" || v == "default"; },
     "one tier (only \"auto\" or \"default\")"},
    // vLLM: prompt logprobs and token-id outputs.
    {"prompt_logprobs", kBothRoutes, never, "prompt logprobs are not returned"},
    {"return_tokens_as_token_ids", kBothRoutes, is_false, "logprob tokens are always text (only false)"},
    {"return_token_ids", kBothRoutes, is_false, "token ids are not returned (only false)"},
    // vLLM: structured output beyond regex, choice, JSON and grammars (openai_structured_outputs.h).
    {"structural_tag", kBothRoutes, never, "structural tags are not supported yet"},
    // vLLM: prompt construction.
    {"echo", kChatRoute, is_false, "a chat reply does not repeat the last message (only false)"},
    {"documents", kChatRoute, never, "no documents passed to the chat template"},
    {"chat_template", kChatRoute, never, "the model's chat template is used"},
    {"chat_template_kwargs", kChatRoute, is_empty, "no extra chat template arguments"},
    {"mm_processor_kwargs", kBothRoutes, is_empty, "text-only models"},
    {"media_io_kwargs", kChatRoute, is_empty, "text-only models"},
    {"prompt_embeds", kCompletionsRoute, never, "no prompt embeddings"},
    // The tokenizer's own rule decides special tokens: the chat template's tokens for chat (vLLM's
    // default false), the model's BOS for completions (vLLM's default true).
    {"add_special_tokens", kChatRoute, is_false, "the chat template places special tokens (only false)"},
    {"add_special_tokens", kCompletionsRoute, is_true, "the model's BOS rule applies (only true)"},
    {"spaces_between_special_tokens", kBothRoutes, is_true, "only true"},
    {"include_reasoning", kChatRoute, is_true, "no reasoning parser (only true)"},
    // SGLang's fields, which vllm-router (a Rust router from SGLang's) adds to every body it
    // forwards, with these values: passed when they ask for nothing more than a plain answer.
    {"no_stop_trim", kBothRoutes, is_false, "stop strings are always trimmed (only false)"},
    {"return_hidden_states", kBothRoutes, is_false, "no hidden states (only false)"},
    {"separate_reasoning", kChatRoute, is_true, "no reasoning parser (only true)"},
    {"stream_reasoning", kChatRoute, is_true, "no reasoning parser (only true)"},
    // vLLM: engine extensions.
    {"logits_processors", kBothRoutes, is_empty, "no logits processors"},
    {"cache_salt", kBothRoutes, never, "the prefix cache is not salted per request"},
    {"kv_transfer_params", kBothRoutes, never, "no KV transfer"},
    {"vllm_xargs", kBothRoutes, is_empty, "no extensions"},
};

}  // namespace

void refuse_unread_field(std::string_view name, const JsonValue& value, RequestRoutes route, bool read_by_other_route) {
  for (const RefusedField& field : kRefusedFields) {
    if (field.name != name || (field.routes & route) == 0) continue;
    if (field.asks_nothing(value.json())) return;
    value.fail("not supported by this server: " + std::string(field.why));
  }
  const auto other = static_cast<RequestRoutes>(kBothRoutes & ~route);
  bool other_route = read_by_other_route;
  for (const RefusedField& field : kRefusedFields)
    other_route = other_route || (field.name == name && (field.routes & other) != 0);
  if (other_route) {
    value.fail(std::string("not a field of ") + (route == kChatRoute ? "/v1/chat/completions" : "/v1/completions"));
  }
  value.fail("unknown field (in neither OpenAI's nor vLLM's request schema)");
}

}  // namespace pagedllm::server
