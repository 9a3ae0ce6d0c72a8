// Every field of OpenAI's and vLLM's request schemas, on each route that has it: the server acts
// on it (the parsed request changes), it changes no output by its meaning (the parsed request is
// the same), or it is refused with a 400 naming it. The field lists below are written from the
// schemas (OpenAI's CreateCompletionRequest / CreateChatCompletionRequest, vLLM's
// CompletionRequest / ChatCompletionRequest), not from the server's tables.
#include <boost/test/unit_test.hpp>
#include <set>
#include <string>
#include <vector>

#include "tools/server/openai_request.h"

namespace pagedllm::server {
namespace {

using nlohmann::json;

enum class Route { completions, chat };
enum class Treatment { acted_on, no_effect, refused };

struct FieldCase {
  Route route;
  std::string field;
  json value;  // a value that asks for something
  Treatment treatment;
  json base = json::object();  // other fields the value needs (stream_options needs stream)
};

json sampling_json(const sched::SamplingParams& s) {
  return {{"n", s.n},
          {"beam_width", s.beam_width},
          {"length_penalty", s.length_penalty},
          {"temperature", s.temperature},
          {"top_p", s.top_p},
          {"top_k", s.top_k},
          {"min_p", s.min_p},
          {"repetition_penalty", s.repetition_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"seed", s.seed ? json(*s.seed) : json()},
          {"max_tokens", s.max_tokens},
          {"min_tokens", s.min_tokens},
          {"stop", s.stop},
          {"stop_token_ids", s.stop_token_ids},
          {"ignore_eos", s.ignore_eos},
          {"logprobs", s.logprobs ? json(*s.logprobs) : json()},
          {"logit_bias", s.logit_bias},
          {"allowed_token_ids", s.allowed_token_ids},
          {"bad_words_token_ids", s.bad_words_token_ids}};
}

json constraint_json(const std::optional<OutputConstraintRequest>& constraint) {
  if (!constraint) return nullptr;
  const structured::ConstraintSpec& spec = constraint->spec;
  return {{"kind", structured::to_string(spec.kind)},
          {"field", constraint->field},
          {"regex", spec.regex},
          {"choices", spec.choices},
          {"grammar", spec.grammar},
          {"schema", spec.schema.dump()},
          {"schema_path", constraint->schema_path},
          {"any_whitespace", spec.layout.any_whitespace},
          {"whitespace_pattern", spec.layout.whitespace_pattern ? json(*spec.layout.whitespace_pattern) : json()}};
}

// Everything a parsed request carries, so that any effect of a field shows as a difference.
json generation_json(const GenerationRequest& g) {
  return {{"model", g.model},
          {"sampling", sampling_json(g.sampling)},
          {"max_tokens", g.max_tokens ? json(*g.max_tokens) : json()},
          {"stream", g.stream},
          {"include_usage", g.include_usage},
          {"logprobs", g.logprobs},
          {"priority", g.priority},
          {"skip_special_tokens", g.skip_special_tokens},
          {"include_stop_str_in_output", g.include_stop_str_in_output},
          {"truncate_prompt_tokens", g.truncate_prompt_tokens ? json(*g.truncate_prompt_tokens) : json()},
          {"bad_words", g.bad_words},
          {"request_id", g.request_id ? json(*g.request_id) : json()},
          {"output_constraint", constraint_json(g.output_constraint)}};
}

json parsed_json(Route route, const json& body) {
  if (route == Route::completions) {
    const CompletionRequest r = parse_completion_request(body, {});
    json prompts = json::array();
    for (const CompletionPrompt& p : r.prompts) prompts.push_back({p.text ? json(*p.text) : json(), p.token_ids});
    return {{"generation", generation_json(r.generation)}, {"prompts", prompts}, {"echo", r.echo}};
  }
  const ChatRequest r = parse_chat_request(body, {});
  json messages = json::array();
  for (const chat::ChatMessage& m : r.messages) {
    json calls = json::array();
    for (const chat::ToolCall& call : m.tool_calls) calls.push_back({call.id, call.name, call.arguments});
    messages.push_back({m.role, m.content, calls, m.tool_call_id});
  }
  // What the tools ask for: parallel_tool_calls means something only with tools to call.
  const json tools = r.tools.has_tools() ? json{{"names", r.tools.names},
                                                {"choice", static_cast<int>(r.tools.effective_choice())},
                                                {"named", r.tools.named_function},
                                                {"parallel", r.tools.parallel_tool_calls}}
                                         : json();
  return {{"generation", generation_json(r.generation)},
          {"messages", messages},
          {"tools", tools},
          {"add_generation_prompt", r.prompt.add_generation_prompt},
          {"continue_final_message", r.prompt.continue_final_message}};
}

json minimal(Route route) {
  if (route == Route::completions) return {{"model", "m"}, {"prompt", "x"}};
  return {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "x"}}})}};
}

std::vector<FieldCase> field_cases() {
  using enum Route;
  using enum Treatment;
  const json one_tool = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  const json assistant_last =
      json::array({{{"role", "user"}, {"content", "x"}}, {{"role", "assistant"}, {"content", "Sure"}}});
  std::vector<FieldCase> cases = {
      // OpenAI's completions schema.
      {completions, "model", "other", acted_on},
      {completions, "prompt", "y", acted_on},
      {completions, "best_of", 3, refused, {{"n", 2}}},  // equal to n it changes nothing (below)
      {completions, "echo", true, acted_on},
      {completions, "frequency_penalty", 0.5, acted_on},
      {completions, "logit_bias", {{"3", 5}}, acted_on},
      {completions, "logprobs", 2, acted_on},
      {completions, "max_tokens", 9, acted_on},
      {completions, "n", 2, acted_on},
      {completions, "presence_penalty", 0.5, acted_on},
      {completions, "seed", 3, acted_on},
      {completions, "stop", "!", acted_on},
      {completions, "stream", true, acted_on},
      {completions, "stream_options", {{"include_usage", true}}, acted_on, {{"stream", true}}},
      {completions, "suffix", "end", refused},
      {completions, "temperature", 0.5, acted_on},
      {completions, "top_p", 0.5, acted_on},
      {completions, "user", "u", no_effect},
      // OpenAI's chat schema.
      {chat, "messages", assistant_last, acted_on},
      {chat, "model", "other", acted_on},
      {chat, "audio", {{"voice", "alloy"}, {"format", "wav"}}, refused},
      {chat, "frequency_penalty", 0.5, acted_on},
      {chat, "function_call", "auto", refused},
      {chat, "functions", json::array({{{"name", "f"}}}), refused},
      {chat, "logit_bias", {{"3", 5}}, acted_on},
      {chat, "logprobs", true, acted_on},
      {chat, "max_completion_tokens", 9, acted_on},
      {chat, "max_tokens", 9, acted_on},
      {chat, "metadata", {{"k", "v"}}, no_effect},
      {chat, "modalities", json::array({"text", "audio"}), refused},
      {chat, "n", 2, acted_on},
      {chat, "parallel_tool_calls", false, no_effect},
      {chat, "prediction", {{"type", "content"}, {"content", "x"}}, refused},
      {chat, "presence_penalty", 0.5, acted_on},
      {chat, "prompt_cache_key", "k", no_effect},
      {chat, "reasoning_effort", "low", refused},
      {chat, "response_format", {{"type", "json_object"}}, acted_on},
      {chat, "safety_identifier", "s", no_effect},
      {chat, "seed", 3, acted_on},
      {chat, "service_tier", "flex", refused},
      {chat, "stop", "!", acted_on},
      {chat, "store", true, refused},
      {chat, "stream", true, acted_on},
      {chat, "stream_options", {{"include_usage", true}}, acted_on, {{"stream", true}}},
      {chat, "temperature", 0.5, acted_on},
      {chat, "tool_choice", "auto", refused},  // without tools; with them, below
      {chat, "tools", json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}}), acted_on},
      {chat, "top_logprobs", 2, acted_on, {{"logprobs", true}}},
      {chat, "top_p", 0.5, acted_on},
      {chat, "user", "u", no_effect},
      {chat, "verbosity", "low", refused},
      {chat, "web_search_options", json::object(), refused},
      // vLLM's chat extras that completions lack.
      {chat, "best_of", 3, refused, {{"n", 2}}},
      {chat, "echo", true, refused},
      {chat, "add_generation_prompt", false, acted_on},
      {chat, "continue_final_message", true, acted_on, {{"add_generation_prompt", false}}},
      {chat, "add_special_tokens", true, refused},
      {chat, "documents", json::array({{{"title", "t"}, {"text", "x"}}}), refused},
      {chat, "chat_template", "{{ messages }}", refused},
      {chat, "chat_template_kwargs", {{"enable_thinking", false}}, refused},
      {chat, "media_io_kwargs", {{"video", {{"num_frames", 4}}}}, refused},
      {chat, "include_reasoning", false, refused},
      {chat, "separate_reasoning", false, refused},
      {chat, "stream_reasoning", false, refused},
      // With tools to call.
      {chat, "tool_choice", "required", acted_on, {{"tools", one_tool}}},
      {chat, "parallel_tool_calls", false, acted_on, {{"tools", one_tool}}},
      // vLLM's completions extras that chat lacks.
      {completions, "add_special_tokens", false, refused},
      {completions, "prompt_embeds", "AAAA", refused},
      {completions, "response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}}}}, acted_on},
  };
  // vLLM's extras of both routes.
  struct Both {
    std::string field;
    json value;
    Treatment treatment;
    json base = json::object();
  };
  const std::vector<Both> both = {
      {"use_beam_search", true, acted_on},
      {"top_k", 5, acted_on},
      {"min_p", 0.1, acted_on},
      {"repetition_penalty", 1.2, acted_on},
      {"length_penalty", 0.5, acted_on},
      {"stop_token_ids", json::array({2}), acted_on},
      {"include_stop_str_in_output", true, acted_on},
      {"ignore_eos", true, acted_on},
      {"min_tokens", 2, acted_on},
      {"skip_special_tokens", false, acted_on},
      {"spaces_between_special_tokens", false, refused},
      {"truncate_prompt_tokens", 4, acted_on},
      {"prompt_logprobs", 1, refused},
      {"allowed_token_ids", json::array({1, 2}), acted_on},
      {"bad_words", json::array({"no"}), acted_on},
      {"guided_json", {{"type", "object"}}, acted_on},
      {"guided_regex", "[a-z]+", acted_on},
      {"guided_choice", json::array({"yes", "no"}), acted_on},
      {"guided_grammar", "root ::= \"a\"", acted_on},
      {"structural_tag", "{}", refused},
      {"guided_decoding_backend", "xgrammar", no_effect},  // one backend
      {"guided_whitespace_pattern", " *", no_effect},      // without a JSON constraint
      {"guided_whitespace_pattern", " *", acted_on, {{"guided_json", {{"type", "object"}}}}},
      {"structured_outputs", {{"choice", json::array({"yes", "no"})}}, acted_on},
      {"structured_outputs", {{"grammar", "root ::= \"a\""}}, acted_on},
      {"structured_outputs", {{"structural_tag", "{}"}}, refused},
      {"guided_regex", "a+", refused, {{"response_format", {{"type", "json_object"}}}}},  // two constraints
      {"priority", 1, acted_on},
      {"request_id", "r-1", acted_on},
      {"logits_processors", json::array({"my.Processor"}), refused},
      {"return_tokens_as_token_ids", true, refused},
      {"return_token_ids", true, refused},
      {"cache_salt", "salt", refused},
      {"kv_transfer_params", {{"do_remote_decode", true}}, refused},
      {"vllm_xargs", {{"k", 1}}, refused},
      {"no_stop_trim", true, refused},
      {"return_hidden_states", true, refused},
      {"mm_processor_kwargs", {{"k", 1}}, refused},
      {"best_of", 2, no_effect, {{"n", 2}}},
  };
  for (const Both& b : both) {
    for (Route route : {completions, chat}) cases.push_back({route, b.field, b.value, b.treatment, b.base});
  }
  return cases;
}

const char* route_name(Route route) { return route == Route::chat ? "chat" : "completions"; }

BOOST_AUTO_TEST_SUITE(request_fields)

BOOST_AUTO_TEST_CASE(every_schema_field_is_acted_on_or_changes_nothing_or_is_refused) {
  const std::vector<FieldCase> cases = field_cases();
  BOOST_TEST(cases.size() >= 130u);
  for (const FieldCase& c : cases) {
    BOOST_TEST_CONTEXT(route_name(c.route) << " " << c.field << " = " << c.value.dump()) {
      json base = minimal(c.route);
      base.update(c.base);
      json with = base;
      with[c.field] = c.value;
      const json without_field = parsed_json(c.route, base);
      if (c.treatment == Treatment::refused) {
        try {
          parsed_json(c.route, with);
          BOOST_ERROR("accepted");
        } catch (const ApiError& error) {
          BOOST_TEST(error.status() == 400);
          // The field, or a member of it ("structured_outputs.grammar").
          BOOST_TEST((error.param() == c.field || error.param().starts_with(c.field + ".")), error.param());
        }
        continue;
      }
      const json with_field = parsed_json(c.route, with);
      if (c.treatment == Treatment::acted_on) {
        BOOST_TEST(with_field != without_field, "the field changed nothing in the parsed request");
      } else {
        BOOST_TEST(with_field == without_field);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(refused_fields_pass_when_their_value_asks_for_nothing) {
  const std::vector<std::pair<std::string, json>> none = {{"store", false},
                                                          {"service_tier", "auto"},
                                                          {"modalities", json::array({"text"})},
                                                          {"echo", false},
                                                          {"add_special_tokens", false},
                                                          {"chat_template_kwargs", json::object()},
                                                          {"vllm_xargs", json::object()},
                                                          {"logits_processors", json::array()},
                                                          {"return_token_ids", false},
                                                          {"spaces_between_special_tokens", true},
                                                          {"include_reasoning", true},
                                                          {"guided_json", nullptr},
                                                          {"tools", json::array()},
                                                          {"tool_choice", "none"},
                                                          {"response_format", {{"type", "text"}}},
                                                          // vllm-router adds these to every chat body
                                                          {"no_stop_trim", false},
                                                          {"return_hidden_states", false},
                                                          {"separate_reasoning", true},
                                                          {"stream_reasoning", true},
                                                          {"continue_final_message", false},
                                                          {"skip_special_tokens", true},
                                                          {"logprobs", false},
                                                          {"stream", false}};
  const json baseline = parsed_json(Route::chat, minimal(Route::chat));
  for (const auto& [field, value] : none) {
    BOOST_TEST_CONTEXT(field << " = " << value.dump()) {
      json body = minimal(Route::chat);
      body[field] = value;
      BOOST_TEST(parsed_json(Route::chat, body) == baseline);
    }
  }
  json completion = minimal(Route::completions);
  completion["add_special_tokens"] = true;  // vLLM's default for completions
  BOOST_TEST(parsed_json(Route::completions, completion) ==
             parsed_json(Route::completions, minimal(Route::completions)));
}

BOOST_AUTO_TEST_CASE(unknown_fields_and_fields_of_the_other_route_are_refused_by_name) {
  const std::vector<std::tuple<Route, std::string, std::string>> cases = {
      {Route::chat, "temprature", "unknown field"},
      {Route::completions, "some_vendor_extension", "unknown field"},
      {Route::chat, "prompt", "not a field of /v1/chat/completions"},
      {Route::chat, "suffix", "not a field of /v1/chat/completions"},
      {Route::completions, "messages", "not a field of /v1/completions"},
      {Route::completions, "top_logprobs", "not a field of /v1/completions"},
      {Route::completions, "store", "not a field of /v1/completions"},  // a refused field of chat
      {Route::chat, "prompt_embeds", "not a field of /v1/chat/completions"},
  };
  for (const auto& [route, field, message] : cases) {
    BOOST_TEST_CONTEXT(route_name(route) << " " << field) {
      json body = minimal(route);
      body[field] = 1;
      try {
        parsed_json(route, body);
        BOOST_ERROR("accepted");
      } catch (const ApiError& error) {
        BOOST_TEST(error.param() == field);
        BOOST_TEST(std::string(error.what()).find(message) != std::string::npos, error.what());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(echo_with_logprobs_is_refused_since_the_prompt_would_need_scoring) {
  json body = minimal(Route::completions);
  body["echo"] = true;
  body["logprobs"] = 1;
  try {
    parsed_json(Route::completions, body);
    BOOST_ERROR("accepted");
  } catch (const ApiError& error) {
    BOOST_TEST(error.param() == "echo");
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::server
