#include "tools/server/openai_request.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <span>
#include <string_view>
#include <utility>

#include "core/common/json_value.h"
#include "tools/server/openai_refused_fields.h"
#include "tools/server/openai_structured_outputs.h"
#include "tools/server/openai_tools.h"

namespace pagedllm::server {

using nlohmann::json;

namespace {

constexpr int32_t kMaxCompletionLogprobs = 5;  // OpenAI's bound for the legacy "logprobs"
constexpr size_t kMaxQuotedBytes = 64;         // of a client's string repeated in an error message
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// A client's string, quoted, cut to a few dozen bytes at a character boundary.
// Appended piece by piece: GCC 12's -Wrestrict misfires on "..." + std::string once inlined.
std::string quote(const std::string& text) {
  size_t cut = text.size();
  if (cut > kMaxQuotedBytes) {
    cut = kMaxQuotedBytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // continuation byte
  }
  std::string quoted(1, '"');
  quoted.append(text, 0, cut);
  if (cut < text.size()) quoted += "...";
  quoted += '"';
  return quoted;
}

// Every refusal names the field's path ("max_tokens", "messages[2].role"); parse_request turns it
// into a 400 whose message starts with the path ("max_tokens: expected an integer, got string").
[[noreturn]] void refuse(const std::string& path, const std::string& what) { throw JsonError(path, what); }
[[noreturn]] void refuse_unsupported(const std::string& path) { refuse(path, "not supported by this server"); }

// A required member: JSON null counts as absent (some clients send every field, unset ones null).
JsonValue required(const JsonValue& object, std::string_view key) {
  std::optional<JsonValue> value = object.find(key);
  if (!value) refuse(std::string(key), "required");
  return *value;
}

int32_t int32_in(const JsonValue& value, int64_t min, int64_t max) {
  return static_cast<int32_t>(value.integer_in(min, max));
}

// A float of the request: finite and within float's range, so the narrowing stays finite.
float finite_float(const JsonValue& value) {
  const double v = value.number();
  if (std::abs(v) > std::numeric_limits<float>::max()) value.fail("must be a finite number, got " + format_number(v));
  return static_cast<float>(v);
}

// Everything one request's fields fill, whichever endpoint.
struct Parsed {
  GenerationRequest generation;
  std::vector<CompletionPrompt> prompts;  // completions
  bool echo = false;
  std::vector<chat::ChatMessage> messages;  // chat
  chat::ChatPromptOptions prompt_options;
  bool chat_logprobs = false;  // chat's "logprobs": true
  std::optional<int32_t> top_logprobs;
  std::optional<int64_t> best_of;
  bool use_beam_search = false;
  StructuredOutputFields structured;  // one constraint at most, checked after every field is read
  ToolRequest tools;                  // chat
};

// --- readers of the fields that need more than one line ------------------------------------

void read_stop(const JsonValue& stop, const ProtocolLimits& limits, Parsed& out) {
  if (stop.json().is_string()) {
    if (stop.string().empty()) stop.fail("stop sequences must not be empty");
    out.generation.sampling.stop = {stop.string()};
    return;
  }
  if (!stop.json().is_array()) stop.fail_type("a string or an array of strings");
  if (stop.size() > static_cast<size_t>(limits.max_stop_sequences)) {
    stop.fail("at most " + std::to_string(limits.max_stop_sequences) + " stop sequences are allowed, got " +
              std::to_string(stop.size()));
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    const std::string& text = stop.at(i).string();
    if (text.empty()) stop.at(i).fail("stop sequences must not be empty");
    out.generation.sampling.stop.push_back(text);
  }
}

// OpenAI's {"token id": bias}; biases clamped to [-100, 100] as vLLM does. Two keys naming one
// token ("7", "07") are refused rather than one of them dropped. Ids are checked against the
// vocabulary by the engine's validation.
void read_logit_bias(const JsonValue& value, Parsed& out) {
  value.expect_object();
  std::map<TokenId, float> biases;
  for (const auto& [key, bias_json] : value.json().items()) {
    int64_t id = -1;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (key.empty() || error != std::errc{} || end != key.data() + key.size() || id < 0 || id > kInt32Max) {
      value.fail("keys must be token ids (non-negative decimal integers), got " + quote(key));
    }
    const JsonValue bias_value = value.derived(bias_json, "logit_bias[" + quote(key) + "]");
    const double bias = std::clamp(bias_value.number(), -100.0, 100.0);
    if (!biases.emplace(static_cast<TokenId>(id), static_cast<float>(bias)).second) {
      value.fail("token id " + std::to_string(id) + " appears twice");
    }
  }
  out.generation.sampling.logit_bias.assign(biases.begin(), biases.end());
}

std::vector<TokenId> read_token_list(const JsonValue& list) {
  if (list.size() == 0) list.fail("a token prompt must not be empty");
  std::vector<TokenId> ids;
  ids.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) ids.push_back(list.at(i).token_id());
  return ids;
}

// "prompt": a string, an array of strings, an array of token ids, or an array of such arrays.
void read_prompt(const JsonValue& prompt, const ProtocolLimits& limits, Parsed& out) {
  if (prompt.json().is_string()) {
    out.prompts = {CompletionPrompt{prompt.string(), {}}};
    return;
  }
  if (!prompt.json().is_array()) {
    prompt.fail_type("a string, an array of strings, an array of token ids or an array of such arrays");
  }
  if (prompt.size() == 0) prompt.fail("must not be empty");
  const json& first = prompt.json().front();
  if (first.is_number()) {  // one token prompt
    out.prompts = {CompletionPrompt{std::nullopt, read_token_list(prompt)}};
    return;
  }
  if (prompt.size() > static_cast<size_t>(limits.max_prompts)) {
    prompt.fail("at most " + std::to_string(limits.max_prompts) + " prompts per request, got " +
                std::to_string(prompt.size()));
  }
  // A batch is all strings or all token arrays, as the first element says.
  const bool text = first.is_string();
  if (!text && !first.is_array()) prompt.at(0).fail_type("a string, a token id or an array of token ids");
  for (size_t i = 0; i < prompt.size(); ++i) {
    const JsonValue item = prompt.at(i);
    if (text) {
      out.prompts.push_back(CompletionPrompt{item.string(), {}});
    } else {
      if (!item.json().is_array()) item.fail_type("an array of token ids");
      out.prompts.push_back(CompletionPrompt{std::nullopt, read_token_list(item)});
    }
  }
}

// Content as a string, or an array of {"type": "text", "text": ...} parts joined by "\n" (as
// vLLM joins them).
std::string read_content(const JsonValue& content) {
  if (content.json().is_string()) return content.string();
  if (!content.json().is_array()) content.fail_type("a string or an array of content parts");
  std::string joined;
  for (size_t i = 0; i < content.size(); ++i) {
    const JsonValue part = content.at(i);
    part.expect_object();
    const std::optional<JsonValue> type = part.find("type");
    if (!type) refuse(part.path() + ".type", "required");
    if (type->string() != "text") type->fail("only \"text\" content parts are supported, got " + quote(type->string()));
    const std::optional<JsonValue> text = part.find("text");
    if (!text) refuse(part.path() + ".text", "required");
    if (i > 0) joined += '\n';
    joined += text->string();
  }
  return joined;
}

// An assistant message's tool_calls: [{id, type: "function", function: {name, arguments}}], the
// arguments as JSON text (kept as sent: the template gets them parsed when they parse).
std::vector<chat::ToolCall> read_message_tool_calls(const JsonValue& calls) {
  calls.expect_array();
  std::vector<chat::ToolCall> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const JsonValue call = calls.at(i);
    call.expect_object();
    if (const auto type = call.find("type"); type && type->string() != "function") {
      type->fail("must be \"function\", got " + quote(type->string()));
    }
    const JsonValue function = call.at("function");
    function.expect_object();
    out.push_back({.id = call.at("id").string(),
                   .name = function.at("name").string(),
                   .arguments = function.at("arguments").string()});
  }
  return out;
}

void read_messages(const JsonValue& messages, Parsed& out) {
  messages.expect_array();
  if (messages.size() == 0) messages.fail("must not be empty");
  out.messages.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const JsonValue message = messages.at(i);
    message.expect_object();
    const std::optional<JsonValue> role_value = message.find("role");
    if (!role_value) refuse(message.path() + ".role", "required");
    std::string role = role_value->string();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    if (role == "function") {
      role_value->fail("\"function\" messages (deprecated function calling) are not supported: use \"tool\"");
    }
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      role_value->fail("must be one of system, developer, user, assistant, tool, got " + quote(role));
    }
    chat::ChatMessage parsed;
    if (const auto name = message.find("name")) name->string();  // checked, then ignored
    if (const auto calls = message.find("tool_calls")) {
      if (role != "assistant") calls->fail("only assistant messages carry tool calls");
      parsed.tool_calls = read_message_tool_calls(*calls);
    }
    if (const auto id = message.find("tool_call_id")) {
      if (role != "tool") id->fail("only tool messages answer a tool call");
      parsed.tool_call_id = id->string();
    } else if (role == "tool") {
      refuse(message.path() + ".tool_call_id", "required in a tool message");
    }
    if (const auto call = message.find("function_call")) refuse_unsupported(call->path());
    if (const auto content = message.find("content")) {
      parsed.content = read_content(*content);
    } else if (role != "assistant") {  // an assistant turn may be empty (OpenAI: null content)
      refuse(message.path() + ".content", "required");
    }
    parsed.role = std::move(role);
    out.messages.push_back(std::move(parsed));
  }
}

void read_max_tokens(const JsonValue& value, Parsed& out) {
  out.generation.max_tokens = int32_in(value, 1, kInt32Max);
  out.generation.sampling.max_tokens = *out.generation.max_tokens;
}

// --- the field table ---------------------------------------------------------------------------
// Every field either endpoint reads, in the order they are read (a later reader may use what an
// earlier one set; cross-field rules run after the table). A member of the body that no reader
// of its route takes goes to refuse_unread_field (openai_refused_fields.cpp): a field of OpenAI's
// or vLLM's schemas that this server does not act on passes only when its value asks for nothing,
// and any other member is refused as unknown.

using Reader = void (*)(const JsonValue& value, const ProtocolLimits& limits, Parsed& out);

struct Field {
  std::string_view name;
  RequestRoutes endpoints;
  Reader read;
};

constexpr Field kFields[] = {
    {"model", kBothRoutes, [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.generation.model = v.string(); }},
    {"n", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits& limits, Parsed& out) {
       out.generation.sampling.n = int32_in(v, 1, limits.max_n);
     }},
    // OpenAI's range; the engine takes any non-negative temperature.
    {"temperature", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.sampling.temperature = static_cast<float>(v.number_in(0.0, 2.0));
     }},
    // The engine's validation checks the ranges of these (once, for every frontend).
    {"top_p", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.generation.sampling.top_p = finite_float(v); }},
    {"top_k", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.sampling.top_k = int32_in(v, -kInt32Max, kInt32Max);
     }},
    {"min_p", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.generation.sampling.min_p = finite_float(v); }},
    {"presence_penalty", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.sampling.presence_penalty = finite_float(v);
     }},
    {"frequency_penalty", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.sampling.frequency_penalty = finite_float(v);
     }},
    {"repetition_penalty", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.sampling.repetition_penalty = finite_float(v);
     }},
    // vLLM takes any signed 64-bit seed; a negative one keeps its bits (two's complement).
    {"seed", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.sampling.seed = static_cast<uint64_t>(v.integer());
     }},
    {"stop", kBothRoutes, read_stop},
    {"stop_token_ids", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       v.expect_array();
       for (size_t i = 0; i < v.size(); ++i) out.generation.sampling.stop_token_ids.push_back(v.at(i).token_id());
     }},
    {"ignore_eos", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.generation.sampling.ignore_eos = v.boolean(); }},
    {"min_tokens", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.sampling.min_tokens = int32_in(v, 0, kInt32Max);
     }},
    // vLLM's beam search: n beams, all returned, best first (temperature, top_p, top_k, min_p and
    // the penalties do not apply to it).
    {"length_penalty", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.sampling.length_penalty = finite_float(v);
     }},
    {"use_beam_search", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.use_beam_search = v.boolean(); }},
    {"skip_special_tokens", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.generation.skip_special_tokens = v.boolean(); }},
    {"include_stop_str_in_output", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.include_stop_str_in_output = v.boolean();
     }},
    {"bad_words", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       v.expect_array();
       for (size_t i = 0; i < v.size(); ++i) {
         const std::string& word = v.at(i).string();
         if (word.find_first_not_of(" \t\n\r\f\v") == std::string::npos) {
           v.at(i).fail("must hold a word, got " + quote(word));
         }
         out.generation.bad_words.push_back(word);
       }
     }},
    {"truncate_prompt_tokens", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       const int32_t keep = int32_in(v, -1, kInt32Max);
       if (keep == 0) v.fail("must be -1 (the model's context length) or at least 1, got 0");
       out.generation.truncate_prompt_tokens = keep;
     }},
    {"priority", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.generation.priority = int32_in(v, -kInt32Max, kInt32Max);
     }},
    {"stream", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.generation.stream = v.boolean(); }},
    {"stream_options", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       v.expect_object();
       if (!out.generation.stream) v.fail("only allowed when stream is true");
       // Other keys (include_obfuscation, vLLM's continuous_usage_stats) change nothing here.
       if (const auto usage = v.find("include_usage")) out.generation.include_usage = usage->boolean();
     }},
    // Identifiers for the client's own bookkeeping and OpenAI's abuse monitoring: checked, and
    // by their meaning they change no output.
    {"user", kBothRoutes, [](const JsonValue& v, const ProtocolLimits&, Parsed&) { v.string(); }},
    {"safety_identifier", kChatRoute, [](const JsonValue& v, const ProtocolLimits&, Parsed&) { v.string(); }},
    {"metadata", kChatRoute, [](const JsonValue& v, const ProtocolLimits&, Parsed&) { v.expect_object(); }},
    // A routing hint for OpenAI's prompt cache; this server's prefix cache needs none.
    {"prompt_cache_key", kChatRoute, [](const JsonValue& v, const ProtocolLimits&, Parsed&) { v.string(); }},
    // vLLM's extra: the response id becomes "cmpl-<id>" / "chatcmpl-<id>".
    {"request_id", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       if (v.string().empty()) v.fail("must not be empty");
       out.generation.request_id = v.string();
     }},
    {"logit_bias", kBothRoutes, [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_logit_bias(v, out); }},
    {"allowed_token_ids", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       v.expect_array();
       if (v.size() == 0) v.fail("must not be empty (leave it out to allow every token)");
       for (size_t i = 0; i < v.size(); ++i) out.generation.sampling.allowed_token_ids.push_back(v.at(i).token_id());
     }},
    // Completions only.
    {"prompt", kCompletionsRoute, read_prompt},
    {"max_tokens", kBothRoutes, [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_max_tokens(v, out); }},
    {"logprobs", kCompletionsRoute,
     [](const JsonValue& v, const ProtocolLimits& limits, Parsed& out) {
       out.generation.sampling.logprobs = int32_in(v, 0, std::min(kMaxCompletionLogprobs, limits.max_logprobs));
       out.generation.logprobs = true;
     }},
    {"echo", kCompletionsRoute, [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.echo = v.boolean(); }},
    {"best_of", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.best_of = v.integer(); }},
    // An empty suffix asks for nothing.
    {"suffix", kCompletionsRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed&) {
       if (!v.string().empty()) refuse_unsupported(v.path());
     }},
    // Chat only.
    {"messages", kChatRoute, [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_messages(v, out); }},
    // vLLM's extras: how the prompt ends. Continuing the final (assistant) message replaces the
    // generation prompt; the template checks that the final message is the assistant's.
    {"add_generation_prompt", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.prompt_options.add_generation_prompt = v.boolean();
     }},
    {"continue_final_message", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) {
       out.prompt_options.continue_final_message = v.boolean();
     }},
    // max_completion_tokens is the current name, max_tokens the deprecated one: both are checked,
    // and the current name wins when both are given (vLLM).
    {"max_completion_tokens", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_max_tokens(v, out); }},
    {"logprobs", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.chat_logprobs = v.boolean(); }},
    {"top_logprobs", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits& limits, Parsed& out) {
       out.top_logprobs = int32_in(v, 0, limits.max_logprobs);
     }},
    // Tool calling (openai_tools.h). The deprecated functions / function_call are refused rather
    // than ignored, since ignoring them would return something the client did not ask for; the
    // spellings that mean "none" pass.
    {"tools", kChatRoute, [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_tools(v, out.tools); }},
    {"parallel_tool_calls", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { out.tools.parallel_tool_calls = v.boolean(); }},
    {"tool_choice", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_tool_choice(v, out.tools); }},
    {"functions", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed&) {
       if (v.size() > 0) v.fail("deprecated function calling is not supported: give \"tools\"");
     }},
    {"function_call", kChatRoute,
     [](const JsonValue& v, const ProtocolLimits&, Parsed&) {
       if (!(v.json().is_string() && v.string() == "none")) v.fail("not supported by this server (only \"none\")");
     }},
    // Structured outputs (openai_structured_outputs.h).
    {"response_format", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_response_format(v, out.structured); }},
    {"structured_outputs", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_structured_outputs(v, out.structured); }},
    {"guided_json", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_guided_json(v, out.structured); }},
    {"guided_regex", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_guided_regex(v, out.structured); }},
    {"guided_choice", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_guided_choice(v, out.structured); }},
    {"guided_grammar", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_guided_grammar(v, out.structured); }},
    {"guided_whitespace_pattern", kBothRoutes,
     [](const JsonValue& v, const ProtocolLimits&, Parsed& out) { read_guided_whitespace_pattern(v, out.structured); }},
    // One backend here: the choice of vLLM's (xgrammar, guidance, outlines) is read and ignored.
    {"guided_decoding_backend", kBothRoutes, [](const JsonValue& v, const ProtocolLimits&, Parsed&) { v.string(); }},
};

bool reads(std::string_view name, RequestRoutes route) {
  for (const Field& field : kFields) {
    if (field.name == name && (field.endpoints & route) != 0) return true;
  }
  return false;
}

Parsed parse_request(const json& body, const ProtocolLimits& limits, RequestRoutes endpoint) {
  const JsonValue request(body, "", {.whole_numbers_as_integers = true});  // pydantic's rule, so vLLM's
  if (!body.is_object()) {
    throw invalid_request("", "the request body must be a JSON object, got " + json_type_name(body));
  }
  Parsed out;
  try {
    for (const Field& field : kFields) {
      if ((field.endpoints & endpoint) == 0) continue;
      if (const std::optional<JsonValue> value = request.find(field.name)) field.read(*value, limits, out);
    }
    for (const auto& [name, member] : body.items()) {
      if (member.is_null() || reads(name, endpoint)) continue;
      refuse_unread_field(name, request.derived(member, name), endpoint,
                          reads(name, static_cast<RequestRoutes>(kBothRoutes & ~endpoint)));
    }
    // Required fields, and the rules between fields.
    required(request, "model");
    required(request, endpoint == kChatRoute ? "messages" : "prompt");
    GenerationRequest& generation = out.generation;
    if (out.use_beam_search) {
      generation.sampling.beam_width = generation.sampling.n;
      // The engine ranks whole beams and cannot cut one at a string.
      if (!generation.sampling.stop.empty()) refuse("stop", "stop strings are not supported with use_beam_search");
    }
    // vLLM's rule: min_tokens beyond max_tokens could never be honoured.
    if (generation.max_tokens && generation.sampling.min_tokens > *generation.max_tokens) {
      refuse("min_tokens", "must be at most max_tokens (" + std::to_string(*generation.max_tokens) + "), got " +
                               std::to_string(generation.sampling.min_tokens));
    }
    if (out.best_of && *out.best_of != generation.sampling.n) {
      refuse("best_of", "not supported unless equal to n (" + std::to_string(generation.sampling.n) + "), got " +
                            std::to_string(*out.best_of));
    }
    if (out.prompt_options.continue_final_message && out.prompt_options.add_generation_prompt) {
      refuse("continue_final_message", "cannot be true while add_generation_prompt is true (set it to false)");
    }
    // OpenAI's echo with logprobs scores the prompt's tokens too, which needs prompt logprobs.
    if (out.echo && generation.logprobs) {
      refuse("echo", "not supported together with logprobs (prompt logprobs are not returned)");
    }
    if (out.top_logprobs && !out.chat_logprobs) refuse("top_logprobs", "requires logprobs to be true");
    generation.output_constraint = resolve_output_constraint(std::move(out.structured));
    check_tool_choice(out.tools, generation.output_constraint.has_value());
    if (out.chat_logprobs) {
      generation.logprobs = true;
      generation.sampling.logprobs = out.top_logprobs.value_or(0);
    }
  } catch (const JsonError& error) {
    throw invalid_request(error.path(), error.what());
  }
  return out;
}

}  // namespace

CompletionRequest parse_completion_request(const json& body, const ProtocolLimits& limits) {
  Parsed parsed = parse_request(body, limits, kCompletionsRoute);
  return CompletionRequest{std::move(parsed.generation), std::move(parsed.prompts), parsed.echo};
}

ChatRequest parse_chat_request(const json& body, const ProtocolLimits& limits) {
  Parsed parsed = parse_request(body, limits, kChatRoute);
  return ChatRequest{std::move(parsed.generation), std::move(parsed.messages), parsed.prompt_options,
                     std::move(parsed.tools)};
}

}  // namespace pagedllm::server
