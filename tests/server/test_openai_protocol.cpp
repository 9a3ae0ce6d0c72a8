#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/server/openai_request.h"
#include "tools/server/openai_response.h"

namespace pagedllm::server {
namespace {

using nlohmann::json;

std::optional<ApiError> error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const ApiError& e) {
    return e;
  }
  return std::nullopt;
}

CompletionRequest parse_completion(const std::string& body, const ProtocolLimits& limits = {}) {
  return parse_completion_request(parse_json_body(body), limits);
}

ChatRequest parse_chat(const std::string& body, const ProtocolLimits& limits = {}) {
  return parse_chat_request(parse_json_body(body), limits);
}

enum class Endpoint { completions, chat };

struct BadBody {
  Endpoint endpoint;
  std::string body;
  std::string param;    // "" = the body as a whole (JSON null)
  std::string message;  // a part the message must contain
};

// Completions bodies are built around a valid base so that each one is wrong in one field only.
std::string completion(const std::string& fields) { return R"({"model": "m", "prompt": "hi", )" + fields + "}"; }
std::string chat(const std::string& fields) {
  return R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], )" + fields + "}";
}
std::string chat_messages(const std::string& messages) { return R"({"model": "m", "messages": )" + messages + "}"; }

const std::vector<BadBody>& bad_bodies() {
  static const std::vector<BadBody> cases = {
      // The body as a whole.
      {Endpoint::completions, R"({"model": "m", "prompt": )", "", "parse error"},
      {Endpoint::completions, R"({"model": "m",, "prompt": "x"})", "", "byte 15"},
      {Endpoint::completions, "", "", "invalid JSON body"},
      {Endpoint::completions, R"({"model": "m"} trailing)", "", "invalid JSON body"},
      {Endpoint::completions, "{\"model\": \"m\", \"prompt\": \"caf\xC3\"}", "", "UTF-8"},
      {Endpoint::completions, "{\"model\": \"m\", \"prompt\": \"\xFF\xFE\"}", "", "UTF-8"},
      {Endpoint::completions, R"({"model": "m", "prompt": "\ud800"})", "", "surrogate"},
      {Endpoint::completions, R"(["model", "m"])", "", "must be a JSON object, got array"},
      {Endpoint::chat, R"("hello")", "", "must be a JSON object, got string"},
      {Endpoint::completions, std::string(100000, '['), "", "nested deeper than 128"},
      // Shared fields.
      {Endpoint::completions, R"({"prompt": "hi"})", "model", "model: required"},
      {Endpoint::completions, R"({"model": 7, "prompt": "hi"})", "model", "model: expected a string, got integer"},
      {Endpoint::completions, completion(R"("max_tokens": "16")"), "max_tokens",
       "max_tokens: expected an integer, got string"},
      {Endpoint::completions, completion(R"("max_tokens": -1)"), "max_tokens",
       "max_tokens: must be at least 1, got -1"},
      {Endpoint::completions, completion(R"("max_tokens": 0)"), "max_tokens", "must be at least 1"},
      {Endpoint::completions, completion(R"("max_tokens": 1.5)"), "max_tokens", "expected an integer, got number"},
      {Endpoint::completions, completion(R"("max_tokens": 3000000000)"), "max_tokens", "must be at most 2147483647"},
      {Endpoint::completions, completion(R"("n": 0)"), "n", "n: must be between 1 and 128, got 0"},
      {Endpoint::completions, completion(R"("n": 1000000)"), "n", "must be between 1 and 128"},
      {Endpoint::completions, completion(R"("n": true)"), "n", "expected an integer, got boolean"},
      {Endpoint::completions, completion(R"("temperature": 2.5)"), "temperature",
       "temperature: must be between 0 and 2, got 2.5"},
      {Endpoint::completions, completion(R"("temperature": -0.1)"), "temperature", "got -0.1"},
      {Endpoint::completions, completion(R"("temperature": "0.7")"), "temperature", "expected a number, got string"},
      {Endpoint::completions, completion(R"("temperature": 1e999)"), "", "number overflow"},
      {Endpoint::completions, completion(R"("top_p": 0)"), "top_p", "top_p must be in (0, 1], got 0"},
      {Endpoint::completions, completion(R"("top_p": 1.01)"), "top_p", "must be in (0, 1]"},
      {Endpoint::completions, completion(R"("top_k": -2)"), "top_k", "got -2"},
      {Endpoint::completions, completion(R"("top_k": 2.5)"), "top_k", "expected an integer"},
      {Endpoint::completions, completion(R"("min_p": 1.5)"), "min_p", "must be in [0, 1]"},
      {Endpoint::completions, completion(R"("presence_penalty": -2.01)"), "presence_penalty", "in [-2, 2]"},
      {Endpoint::completions, completion(R"("frequency_penalty": 3)"), "frequency_penalty", "in [-2, 2]"},
      {Endpoint::completions, completion(R"("repetition_penalty": 0)"), "repetition_penalty", "a positive number"},
      {Endpoint::completions, completion(R"("repetition_penalty": 1e300)"), "repetition_penalty", "finite"},
      {Endpoint::completions, completion(R"("seed": "42")"), "seed", "seed: expected an integer, got string"},
      {Endpoint::completions, completion(R"("seed": 18446744073709551615)"), "seed", "must be between"},
      {Endpoint::completions, completion(R"("seed": 1e30)"), "seed", "must be between"},
      {Endpoint::completions, completion(R"("stop": 5)"), "stop", "expected a string or an array of strings"},
      {Endpoint::completions, completion(R"("stop": "")"), "stop", "must not be empty"},
      {Endpoint::completions, completion(R"("stop": ["a", ""])"), "stop[1]", "must not be empty"},
      {Endpoint::completions, completion(R"("stop": ["a", 3])"), "stop[1]", "expected a string, got integer"},
      {Endpoint::completions,
       completion(R"("stop": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"])"), "stop",
       "at most 16 stop sequences"},
      {Endpoint::completions, completion(R"("stop_token_ids": [1, -5])"), "stop_token_ids[1]", "non-negative"},
      {Endpoint::completions, completion(R"("stop_token_ids": 5)"), "stop_token_ids", "expected an array"},
      {Endpoint::completions, completion(R"("ignore_eos": 1)"), "ignore_eos", "expected a boolean, got integer"},
      {Endpoint::completions, completion(R"("min_tokens": -1)"), "min_tokens", "at least 0"},
      {Endpoint::completions, completion(R"("max_tokens": 4, "min_tokens": 5)"), "min_tokens",
       "must be at most max_tokens (4), got 5"},
      {Endpoint::completions, completion(R"("stream": "true")"), "stream", "expected a boolean, got string"},
      {Endpoint::completions, completion(R"("stream_options": {"include_usage": true})"), "stream_options",
       "only allowed when stream is true"},
      {Endpoint::chat, chat(R"("stream": false, "stream_options": {"include_usage": true})"), "stream_options",
       "only allowed when stream is true"},
      {Endpoint::completions, completion(R"("stream": true, "stream_options": {"include_usage": "yes"})"),
       "stream_options.include_usage", "expected a boolean, got string"},
      {Endpoint::completions, completion(R"("stream": true, "stream_options": true)"), "stream_options",
       "expected an object"},
      {Endpoint::completions, completion(R"("user": 12)"), "user", "expected a string"},
      {Endpoint::completions, completion(R"("logit_bias": [1])"), "logit_bias", "expected an object"},
      {Endpoint::completions, completion(R"("logit_bias": {"abc": 1})"), "logit_bias",
       R"(keys must be token ids (non-negative decimal integers), got "abc")"},
      {Endpoint::completions, completion(R"("logit_bias": {"-3": 1})"), "logit_bias", R"(got "-3")"},
      {Endpoint::completions, completion(R"("logit_bias": {"7x": 1})"), "logit_bias", R"(got "7x")"},
      {Endpoint::completions, completion(R"("logit_bias": {"": 1})"), "logit_bias", R"(got "")"},
      {Endpoint::completions, completion(R"("logit_bias": {"4294967296": 1})"), "logit_bias", "got \"4294967296\""},
      {Endpoint::chat, chat(R"("logit_bias": {"5": "-100"})"), R"(logit_bias["5"])", "expected a number, got string"},
      {Endpoint::completions, completion(R"("logit_bias": {"7": 1, "07": 2})"), "logit_bias",
       "token id 7 appears twice"},
      {Endpoint::chat, chat(R"("continue_final_message": true)"), "continue_final_message",
       "cannot be true while add_generation_prompt is true"},
      {Endpoint::chat, chat(R"("add_generation_prompt": "no")"), "add_generation_prompt", "expected a boolean"},
      {Endpoint::completions, completion(R"("truncate_prompt_tokens": 0)"), "truncate_prompt_tokens",
       "must be -1 (the model's context length) or at least 1, got 0"},
      {Endpoint::chat, chat(R"("truncate_prompt_tokens": -2)"), "truncate_prompt_tokens", "got -2"},
      {Endpoint::completions, completion(R"("bad_words": "no")"), "bad_words", "expected an array"},
      {Endpoint::chat, chat(R"("bad_words": ["ok", 3])"), "bad_words[1]", "expected a string, got integer"},
      {Endpoint::completions, completion(R"("bad_words": ["ok", " \n"])"), "bad_words[1]", "must hold a word"},
      {Endpoint::completions, completion(R"("allowed_token_ids": [])"), "allowed_token_ids", "must not be empty"},
      {Endpoint::completions, completion(R"("allowed_token_ids": 5)"), "allowed_token_ids", "expected an array"},
      {Endpoint::chat, chat(R"("allowed_token_ids": [3, -1])"), "allowed_token_ids[1]", "non-negative"},
      {Endpoint::completions, completion(R"("use_beam_search": "yes")"), "use_beam_search", "expected a boolean"},
      {Endpoint::completions, completion(R"("use_beam_search": true, "stop": ["x"])"), "stop",
       "not supported with use_beam_search"},
      {Endpoint::chat, chat(R"("use_beam_search": true, "stop": "x")"), "stop", "not supported with use_beam_search"},
      {Endpoint::completions, completion(R"("length_penalty": "1")"), "length_penalty", "expected a number"},
      {Endpoint::completions, completion(R"("priority": 1.5)"), "priority", "expected an integer"},
      {Endpoint::completions, completion(R"("skip_special_tokens": 0)"), "skip_special_tokens", "expected a boolean"},
      {Endpoint::chat, chat(R"("include_stop_str_in_output": "no")"), "include_stop_str_in_output",
       "expected a boolean"},
      {Endpoint::chat, chat(R"("priority": 4294967296)"), "priority", "must be at most 2147483647"},
      {Endpoint::completions, completion(R"("length_penalty": 1e300)"), "length_penalty", "finite number"},
      // Completions only.
      {Endpoint::completions, R"({"model": "m"})", "prompt", "prompt: required"},
      {Endpoint::completions, R"({"model": "m", "prompt": []})", "prompt", "prompt: must not be empty"},
      {Endpoint::completions, R"({"model": "m", "prompt": 5})", "prompt", "got integer"},
      {Endpoint::completions, R"({"model": "m", "prompt": [1, -2]})", "prompt[1]", "non-negative, got -2"},
      {Endpoint::completions, R"({"model": "m", "prompt": [1, "a"]})", "prompt[1]", "expected a token id"},
      {Endpoint::completions, R"({"model": "m", "prompt": [1, 2.5]})", "prompt[1]", "expected an integer"},
      {Endpoint::completions, R"({"model": "m", "prompt": [1, 4294967296]})", "prompt[1]", "out of range"},
      {Endpoint::completions, R"({"model": "m", "prompt": [[1, 2], []]})", "prompt[1]", "must not be empty"},
      {Endpoint::completions, R"({"model": "m", "prompt": [[1, 2], [3, -1]]})", "prompt[1][1]", "non-negative"},
      {Endpoint::completions, R"({"model": "m", "prompt": ["a", 1]})", "prompt[1]", "expected a string, got integer"},
      {Endpoint::completions, R"({"model": "m", "prompt": [[1], "a"]})", "prompt[1]", "expected an array of token"},
      {Endpoint::completions, R"({"model": "m", "prompt": [{"text": "a"}]})", "prompt[0]", "got object"},
      {Endpoint::completions, completion(R"("logprobs": 6)"), "logprobs", "logprobs: must be between 0 and 5, got 6"},
      {Endpoint::completions, completion(R"("logprobs": true)"), "logprobs", "expected an integer, got boolean"},
      {Endpoint::completions, completion(R"("echo": "yes")"), "echo", "expected a boolean"},
      {Endpoint::completions, completion(R"("best_of": 3)"), "best_of", "not supported unless equal to n (1)"},
      {Endpoint::completions, completion(R"("suffix": " the end")"), "suffix", "not supported"},
      // Chat only.
      {Endpoint::chat, R"({"model": "m"})", "messages", "messages: required"},
      {Endpoint::chat, chat_messages("[]"), "messages", "must not be empty"},
      {Endpoint::chat, chat_messages(R"("hi")"), "messages", "expected an array, got string"},
      {Endpoint::chat, chat_messages("[1]"), "messages[0]", "expected an object, got integer"},
      {Endpoint::chat, chat_messages(R"([{"content": "hi"}])"), "messages[0].role", "required"},
      {Endpoint::chat, chat_messages(R"([{"role": "robot", "content": "hi"}])"), "messages[0].role",
       "must be one of system, developer, user, assistant, tool, got \"robot\""},
      {Endpoint::chat, chat_messages(R"([{"role": 1, "content": "hi"}])"), "messages[0].role", "expected a string"},
      {Endpoint::chat, chat_messages(R"([{"role": "user", "content": "a"}, {"role": "tool", "content": "r"}])"),
       "messages[1].tool_call_id", "required in a tool message"},
      {Endpoint::chat, chat_messages(R"([{"role": "function", "name": "f", "content": "r"}])"), "messages[0].role",
       "use \"tool\""},
      {Endpoint::chat, chat_messages(R"([{"role": "user", "content": "a", "tool_call_id": "c"}])"),
       "messages[0].tool_call_id", "only tool messages"},
      {Endpoint::chat, chat_messages(R"([{"role": "user"}])"), "messages[0].content", "required"},
      {Endpoint::chat, chat_messages(R"([{"role": "user", "content": 5}])"), "messages[0].content",
       "expected a string or an array of content parts"},
      {Endpoint::chat, chat_messages(R"([{"role": "user", "content": [{"type": "text", "text": "a"},
                                                      {"type": "image_url", "image_url": {"url": "x"}}]}])"),
       "messages[0].content[1].type", "only \"text\" content parts are supported, got \"image_url\""},
      {Endpoint::chat, chat_messages(R"([{"role": "user", "content": [{"type": "text"}]}])"),
       "messages[0].content[0].text", "required"},
      {Endpoint::chat, chat_messages(R"([{"role": "user", "content": [{"type": "text", "text": 5}]}])"),
       "messages[0].content[0].text", "expected a string"},
      {Endpoint::chat, chat_messages(R"([{"role": "user", "content": ["hi"]}])"), "messages[0].content[0]",
       "expected an object"},
      {Endpoint::chat, chat_messages(R"([{"role": "user", "content": "hi", "name": 3}])"), "messages[0].name",
       "expected a string"},
      {Endpoint::chat,
       chat_messages(R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function"}]}])"),
       "messages[0].tool_calls[0].function", "missing (required)"},
      {Endpoint::chat,
       chat_messages(
           R"([{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}]}])"),
       "messages[0].tool_calls[0].function.arguments", "expected a string, got object"},
      {Endpoint::chat,
       chat_messages(R"([{"role": "user", "content": "a", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}])"),
       "messages[0].tool_calls", "only assistant messages"},
      {Endpoint::chat, chat(R"("top_logprobs": 2)"), "top_logprobs", "requires logprobs to be true"},
      {Endpoint::chat, chat(R"("logprobs": false, "top_logprobs": 0)"), "top_logprobs", "requires logprobs"},
      {Endpoint::chat, chat(R"("logprobs": true, "top_logprobs": 21)"), "top_logprobs", "between 0 and 20"},
      {Endpoint::chat, chat(R"("logprobs": 3)"), "logprobs", "expected a boolean, got integer"},
      {Endpoint::chat, chat(R"("max_completion_tokens": 0)"), "max_completion_tokens", "at least 1"},
      {Endpoint::chat, chat(R"("max_tokens": 10, "max_completion_tokens": "5")"), "max_completion_tokens",
       "expected an integer, got string"},
      {Endpoint::chat, chat(R"("tools": [{"type": "custom", "custom": {"name": "f"}}])"), "tools[0].type",
       "only \"function\" tools"},
      {Endpoint::chat, chat(R"("tools": [{"type": "function"}])"), "tools[0].function", "required"},
      {Endpoint::chat, chat(R"("tools": [{"type": "function", "function": {"name": "get weather"}}])"),
       "tools[0].function.name", "1 to 64 characters"},
      {Endpoint::chat, chat(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}])"),
       "tools[0].function.parameters", "expected an object"},
      {Endpoint::chat, chat(R"("tools": [{"type": "function", "function": {"name": "f", "params": {}}}])"),
       "tools[0].function.params", "unknown field"},
      {Endpoint::chat,
       chat(
           R"("tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}])"),
       "tools[1].function.name", "two tools are named \"f\""},
      {Endpoint::chat, chat(R"("functions": [{"name": "f"}])"), "functions", "not supported"},
      {Endpoint::chat, chat(R"("tool_choice": "auto")"), "tool_choice", "needs tools"},
      {Endpoint::chat, chat(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "any")"),
       "tool_choice", "got \"any\""},
      {Endpoint::chat, chat(R"("tools": [{"type": "function", "function": {"name": "f"}}],
               "tool_choice": {"type": "function", "function": {"name": "g"}})"),
       "tool_choice.function.name", "no tool is named \"g\""},
      {Endpoint::chat, chat(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required",
               "response_format": {"type": "json_object"})"),
       "tool_choice", "cannot be combined"},
      {Endpoint::chat, chat(R"("function_call": {"name": "f"})"), "function_call", "not supported"},
      // Structured outputs.
      {Endpoint::chat, chat(R"("response_format": {"type": "xml"})"), "response_format.type", "got \"xml\""},
      {Endpoint::chat, chat(R"("response_format": {"type": "json_schema"})"), "response_format.json_schema",
       "required when type is \"json_schema\""},
      {Endpoint::chat, chat(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})"),
       "response_format.json_schema.name", "required"},
      {Endpoint::chat, chat(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": 3}})"),
       "response_format.json_schema.schema", "expected a JSON schema"},
      {Endpoint::chat, chat(R"("response_format": {"type": "json_object", "schema": {}})"), "response_format.schema",
       "unknown field"},
      {Endpoint::completions, completion(R"("structured_outputs": {"regex": "a", "choice": ["b"]})"),
       "structured_outputs.regex", "only one output constraint"},
      {Endpoint::completions, completion(R"("structured_outputs": {"grammar": ""})"), "structured_outputs.grammar",
       "must not be empty"},
      {Endpoint::completions, completion(R"("guided_grammar": 3)"), "guided_grammar", "expected a string"},
      {Endpoint::completions, completion(R"("structured_outputs": {"choice": []})"), "structured_outputs.choice",
       "at least one choice"},
      {Endpoint::completions, completion(R"("guided_json": "{not json")"), "guided_json", "not valid JSON text"},
      // A number past a double's range in schema text (the OpenAI request fuzzer's find): nlohmann
      // throws out_of_range there, not parse_error.
      {Endpoint::completions, completion(R"("guided_json": "{\"maximum\": 7e2222222}")"), "guided_json",
       "number overflow"},
      {Endpoint::completions, completion(R"("guided_regex": "")"), "guided_regex", "must not be empty"},
      {Endpoint::completions, completion(R"("structured_outputs": {"json_object": true, "colour": 1})"),
       "structured_outputs.colour", "unknown field"},
      {Endpoint::chat, chat(R"("response_format": "text")"), "response_format", "expected an object"},
  };
  return cases;
}

BOOST_AUTO_TEST_SUITE(openai_protocol)

BOOST_AUTO_TEST_CASE(hostile_bodies_are_refused_with_400_naming_the_field) {
  BOOST_TEST(bad_bodies().size() >= 25u);
  for (size_t i = 0; i < bad_bodies().size(); ++i) {
    const BadBody& c = bad_bodies()[i];
    BOOST_TEST_CONTEXT("case " << i << ": " << c.body.substr(0, 160)) {
      // As the server answers: the request parsed, then validated once against the engine's
      // limits (the ranges of the sampling fields live there, for every frontend).
      const auto error = error_of([&] {
        const pagedllm::sched::SamplingParams sampling = c.endpoint == Endpoint::chat
                                                             ? parse_chat(c.body).generation.sampling
                                                             : parse_completion(c.body).generation.sampling;
        try {
          pagedllm::sched::validate(sampling, 1, {.max_model_len = 1 << 20, .max_logprobs = 20, .vocab_size = 0});
        } catch (const pagedllm::sched::InvalidRequestError& invalid) {
          throw invalid_request(invalid.field(), invalid.what());
        }
      });
      BOOST_TEST_REQUIRE(error.has_value());
      BOOST_TEST(error->status() == 400);
      BOOST_TEST(error->type() == "invalid_request_error");
      BOOST_TEST(error->param() == c.param);
      BOOST_TEST(std::string(error->what()).find(c.message) != std::string::npos, "message: " << error->what());
      // Every refusal renders as an OpenAI error body that dumps, even strictly (nlohmann quotes
      // the bad bytes of ill-formed UTF-8 in its message).
      const json rendered = to_json(*error);
      BOOST_TEST(rendered["error"]["param"] == (c.param.empty() ? json(nullptr) : json(c.param)));
      BOOST_CHECK_NO_THROW(rendered.dump());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_non_object_json_value_is_refused_by_the_request_parsers) {
  const auto completion_error = error_of([] { parse_completion_request(json::array({1, 2}), {}); });
  BOOST_TEST_REQUIRE(completion_error.has_value());
  BOOST_TEST(completion_error->status() == 400);
  const auto chat_error = error_of([] { parse_chat_request(json("x"), {}); });
  BOOST_TEST_REQUIRE(chat_error.has_value());
  BOOST_TEST(chat_error->param() == "");
}

BOOST_AUTO_TEST_CASE(non_finite_numbers_built_in_code_are_refused) {
  // parse_json_body refuses 1e999 itself; a body built in code can still hold infinity.
  json body = {{"model", "m"}, {"prompt", "x"}, {"temperature", std::numeric_limits<double>::infinity()}};
  const auto error = error_of([&] { parse_completion_request(body, {}); });
  BOOST_TEST_REQUIRE(error.has_value());
  BOOST_TEST(error->param() == "temperature");
  BOOST_TEST(std::string(error->what()) == "temperature: must be a finite number");
}

BOOST_AUTO_TEST_CASE(a_parse_error_says_where) {
  const auto error = error_of([] { parse_json_body(R"({"model": "m", "n": })"); });
  BOOST_TEST_REQUIRE(error.has_value());
  const std::string message = error->what();
  BOOST_TEST(message.find("byte 21") != std::string::npos, message);
  BOOST_TEST(message.find("line 1, column 21") != std::string::npos, message);
  BOOST_TEST(message.find("[json.exception") == std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(api_errors_render_as_openai_error_bodies) {
  const json with_code = to_json(invalid_request("messages", "too long", "context_length_exceeded"));
  BOOST_TEST(with_code == json::parse(R"({"error": {"message": "too long", "type": "invalid_request_error",
                                                    "param": "messages", "code": "context_length_exceeded"}})"));
  const json bare = to_json(ApiError(401, "authentication_error", "", "", "bad key"));
  BOOST_TEST(bare["error"]["message"] == "bad key");
  BOOST_TEST(bare["error"]["type"] == "authentication_error");
  BOOST_TEST(bare["error"]["param"].is_null());
  BOOST_TEST(bare["error"]["code"].is_null());
  BOOST_TEST(bare.size() == 1u);
  BOOST_TEST(bare["error"].size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_minimal_completion_request_takes_the_defaults) {
  const CompletionRequest r = parse_completion(R"({"model": "tiny", "prompt": "Hello"})");
  const GenerationRequest& g = r.generation;
  BOOST_TEST(g.model == "tiny");
  BOOST_TEST_REQUIRE(r.prompts.size() == 1u);
  BOOST_TEST(r.prompts[0].text.value_or("<none>") == "Hello");
  BOOST_TEST(r.prompts[0].token_ids.empty());
  BOOST_TEST(!g.max_tokens.has_value());
  BOOST_TEST(g.sampling.n == 1);
  BOOST_TEST(g.sampling.temperature == 1.0f);
  BOOST_TEST(g.sampling.top_p == 1.0f);
  BOOST_TEST(g.sampling.top_k == 0);
  BOOST_TEST(g.sampling.min_p == 0.0f);
  BOOST_TEST(g.sampling.repetition_penalty == 1.0f);
  BOOST_TEST(!g.sampling.seed.has_value());
  BOOST_TEST(g.sampling.stop.empty());
  BOOST_TEST(g.sampling.stop_token_ids.empty());
  BOOST_TEST(!g.sampling.logprobs.has_value());
  BOOST_TEST(!g.stream);
  BOOST_TEST(!g.include_usage);
  BOOST_TEST(!g.logprobs);
  BOOST_TEST(!r.echo);
}

BOOST_AUTO_TEST_CASE(a_completion_request_with_every_field_parses_each_one) {
  const CompletionRequest r = parse_completion(R"({
      "model": "tiny", "prompt": "Once", "n": 3, "best_of": 3, "max_tokens": 64, "temperature": 0.5,
      "top_p": 0.9, "top_k": 40, "min_p": 0.05, "presence_penalty": -0.5, "frequency_penalty": 1.5,
      "repetition_penalty": 1.2, "seed": 1234, "stop": ["\n\n", "END"], "stop_token_ids": [2, 7],
      "ignore_eos": true, "min_tokens": 8, "stream": true, "stream_options": {"include_usage": true},
      "logprobs": 5, "user": "u-1", "suffix": "", "request_id": "r-7"})");
  const GenerationRequest& g = r.generation;
  const sched::SamplingParams& s = g.sampling;
  BOOST_TEST(g.model == "tiny");
  BOOST_TEST_REQUIRE(r.prompts.size() == 1u);
  BOOST_TEST(*r.prompts[0].text == "Once");
  BOOST_TEST(s.n == 3);
  BOOST_TEST(g.max_tokens.value_or(-1) == 64);
  BOOST_TEST(s.max_tokens == 64);
  BOOST_TEST(s.temperature == 0.5f);
  BOOST_TEST(s.top_p == 0.9f);
  BOOST_TEST(s.top_k == 40);
  BOOST_TEST(s.min_p == 0.05f);
  BOOST_TEST(s.presence_penalty == -0.5f);
  BOOST_TEST(s.frequency_penalty == 1.5f);
  BOOST_TEST(s.repetition_penalty == 1.2f);
  BOOST_TEST(s.seed.value_or(0) == 1234u);
  BOOST_TEST(s.stop == (std::vector<std::string>{"\n\n", "END"}), boost::test_tools::per_element());
  BOOST_TEST(s.stop_token_ids == (std::vector<TokenId>{2, 7}), boost::test_tools::per_element());
  BOOST_TEST(s.ignore_eos);
  BOOST_TEST(s.min_tokens == 8);
  BOOST_TEST(g.stream);
  BOOST_TEST(g.include_usage);
  BOOST_TEST(g.logprobs);
  BOOST_TEST(s.logprobs.value_or(-1) == 5);
  BOOST_TEST(g.request_id.value_or("") == "r-7");
  BOOST_TEST(parse_completion(R"({"model": "m", "prompt": "x", "echo": true})").echo);
}

BOOST_AUTO_TEST_CASE(completion_prompts_of_every_shape_parse) {
  const CompletionRequest texts = parse_completion(R"({"model": "m", "prompt": ["a", "", "c"]})");
  BOOST_TEST_REQUIRE(texts.prompts.size() == 3u);
  BOOST_TEST(*texts.prompts[0].text == "a");
  BOOST_TEST(*texts.prompts[1].text == "");
  BOOST_TEST(*texts.prompts[2].text == "c");
  for (const CompletionPrompt& p : texts.prompts) BOOST_TEST(p.token_ids.empty());

  const CompletionRequest ids = parse_completion(R"({"model": "m", "prompt": [1, 0, 2147483647, 5.0]})");
  BOOST_TEST_REQUIRE(ids.prompts.size() == 1u);
  BOOST_TEST(!ids.prompts[0].text.has_value());
  BOOST_TEST(ids.prompts[0].token_ids == (std::vector<TokenId>{1, 0, 2147483647, 5}), boost::test_tools::per_element());

  const CompletionRequest batches = parse_completion(R"({"model": "m", "prompt": [[1, 2], [3], [4, 5, 6]]})");
  BOOST_TEST_REQUIRE(batches.prompts.size() == 3u);
  BOOST_TEST(batches.prompts[0].token_ids == (std::vector<TokenId>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(batches.prompts[1].token_ids == (std::vector<TokenId>{3}), boost::test_tools::per_element());
  BOOST_TEST(batches.prompts[2].token_ids == (std::vector<TokenId>{4, 5, 6}), boost::test_tools::per_element());
  for (const CompletionPrompt& p : batches.prompts) BOOST_TEST(!p.text.has_value());
}

BOOST_AUTO_TEST_CASE(nulls_mean_absent) {
  const CompletionRequest r = parse_completion(R"({
      "model": "m", "prompt": "x", "max_tokens": null, "temperature": null, "stop": null, "seed": null,
      "stream_options": null, "logprobs": null, "suffix": null, "best_of": null, "n": null, "logit_bias": {},
      "guided_json": null, "prompt_logprobs": null, "some_vendor_extension": null})");
  BOOST_TEST(!r.generation.max_tokens.has_value());
  BOOST_TEST(r.generation.sampling.temperature == 1.0f);
  BOOST_TEST(r.generation.sampling.stop.empty());
  BOOST_TEST(!r.generation.sampling.seed.has_value());
  BOOST_TEST(!r.generation.logprobs);
  BOOST_TEST(!r.generation.sampling.logprobs.has_value());
  BOOST_TEST(r.generation.sampling.n == 1);
}

BOOST_AUTO_TEST_CASE(integral_floats_pass_as_integers_and_negative_seeds_keep_their_bits) {
  const CompletionRequest r = parse_completion(R"({"model": "m", "prompt": "x", "max_tokens": 16.0, "n": 2.0,
                                                   "seed": -1, "top_k": -1, "temperature": 0})");
  BOOST_TEST(r.generation.max_tokens.value_or(0) == 16);
  BOOST_TEST(r.generation.sampling.n == 2);
  BOOST_TEST(r.generation.sampling.seed.value_or(0) == std::numeric_limits<uint64_t>::max());
  BOOST_TEST(r.generation.sampling.top_k == -1);
  BOOST_TEST(r.generation.sampling.temperature == 0.0f);

  const CompletionRequest big = parse_completion(R"({"model": "m", "prompt": "x", "seed": 9223372036854775807})");
  BOOST_TEST(big.generation.sampling.seed.value_or(0) == 9223372036854775807u);
  const CompletionRequest smallest = parse_completion(R"({"model": "m", "prompt": "x", "seed": -9223372036854775808})");
  BOOST_TEST(smallest.generation.sampling.seed.value_or(0) == 9223372036854775808u);
}

BOOST_AUTO_TEST_CASE(logit_bias_is_clamped_as_vllm_does_and_allowed_ids_kept_in_order) {
  const CompletionRequest r = parse_completion(
      R"({"model": "m", "prompt": "x", "logit_bias": {"50256": -150, "5": 2.5, "12": 100.5},
          "allowed_token_ids": [9, 3, 9]})");
  const std::vector<std::pair<TokenId, float>> expected{{5, 2.5f}, {12, 100.0f}, {50256, -100.0f}};
  BOOST_TEST_REQUIRE(r.generation.sampling.logit_bias.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    BOOST_TEST(r.generation.sampling.logit_bias[i].first == expected[i].first);
    BOOST_TEST(r.generation.sampling.logit_bias[i].second == expected[i].second);
  }
  BOOST_TEST(r.generation.sampling.allowed_token_ids == (std::vector<TokenId>{9, 3, 9}),
             boost::test_tools::per_element());
  const CompletionRequest words = parse_completion(R"({"model": "m", "prompt": "x", "bad_words": [" dragon", "a b"]})");
  BOOST_TEST(words.generation.bad_words == (std::vector<std::string>{" dragon", "a b"}),
             boost::test_tools::per_element());
  const ChatRequest chat_request = parse_chat(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                                  "logit_bias": {"0": -1}})");
  BOOST_TEST_REQUIRE(chat_request.generation.sampling.logit_bias.size() == 1u);
  BOOST_TEST(chat_request.generation.sampling.logit_bias[0].second == -1.0f);
}

BOOST_AUTO_TEST_CASE(chat_prompt_endings_default_to_a_generation_prompt) {
  const std::string messages =
      R"("messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "A"}])";
  const ChatRequest plain = parse_chat(R"({"model": "m", )" + messages + "}");
  BOOST_TEST(plain.prompt.add_generation_prompt);
  BOOST_TEST(!plain.prompt.continue_final_message);
  const ChatRequest continued = parse_chat(R"({"model": "m", "add_generation_prompt": false,
                                               "continue_final_message": true, )" +
                                           messages + "}");
  BOOST_TEST(!continued.prompt.add_generation_prompt);
  BOOST_TEST(continued.prompt.continue_final_message);
}

BOOST_AUTO_TEST_CASE(use_beam_search_runs_n_beams) {
  const CompletionRequest r =
      parse_completion(R"({"model": "m", "prompt": "x", "n": 3, "use_beam_search": true, "length_penalty": 0.5})");
  BOOST_TEST(r.generation.sampling.use_beam_search());
  BOOST_TEST(r.generation.sampling.beam_width == 3);
  BOOST_TEST(r.generation.sampling.n == 3);
  BOOST_TEST(r.generation.sampling.length_penalty == 0.5f);
  const CompletionRequest off = parse_completion(R"({"model": "m", "prompt": "x", "n": 3, "use_beam_search": false})");
  BOOST_TEST(!off.generation.sampling.use_beam_search());
}

BOOST_AUTO_TEST_CASE(text_options_default_as_vllm) {
  const GenerationRequest plain = parse_completion(R"({"model": "m", "prompt": "x"})").generation;
  BOOST_TEST(plain.skip_special_tokens);
  BOOST_TEST(!plain.include_stop_str_in_output);
  const GenerationRequest set =
      parse_completion(
          R"({"model": "m", "prompt": "x", "skip_special_tokens": false, "include_stop_str_in_output": true})")
          .generation;
  BOOST_TEST(!set.skip_special_tokens);
  BOOST_TEST(set.include_stop_str_in_output);
}

BOOST_AUTO_TEST_CASE(priority_is_an_integer_lower_first) {
  BOOST_TEST(parse_completion(R"({"model": "m", "prompt": "x"})").generation.priority == 0);
  BOOST_TEST(parse_completion(R"({"model": "m", "prompt": "x", "priority": -3})").generation.priority == -3);
}

BOOST_AUTO_TEST_CASE(stop_accepts_a_single_string) {
  const CompletionRequest r = parse_completion(R"({"model": "m", "prompt": "x", "stop": "###"})");
  BOOST_TEST(r.generation.sampling.stop == (std::vector<std::string>{"###"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(protocol_limits_bound_n_stops_prompts_and_logprobs) {
  ProtocolLimits limits;
  limits.max_n = 4;
  limits.max_stop_sequences = 2;
  limits.max_prompts = 2;
  limits.max_logprobs = 3;
  BOOST_TEST(parse_completion(R"({"model": "m", "prompt": "x", "n": 4})", limits).generation.sampling.n == 4);
  const auto n_error = error_of([&] { parse_completion(R"({"model": "m", "prompt": "x", "n": 5})", limits); });
  BOOST_TEST_REQUIRE(n_error.has_value());
  BOOST_TEST(n_error->param() == "n");

  const auto stop_error =
      error_of([&] { parse_completion(R"({"model": "m", "prompt": "x", "stop": ["a", "b", "c"]})", limits); });
  BOOST_TEST_REQUIRE(stop_error.has_value());
  BOOST_TEST(stop_error->param() == "stop");

  BOOST_TEST(parse_completion(R"({"model": "m", "prompt": ["a", "b"]})", limits).prompts.size() == 2u);
  const auto prompts_error =
      error_of([&] { parse_completion(R"({"model": "m", "prompt": ["a", "b", "c"]})", limits); });
  BOOST_TEST_REQUIRE(prompts_error.has_value());
  BOOST_TEST(prompts_error->param() == "prompt");
  // One token prompt is one prompt however long.
  BOOST_TEST(parse_completion(R"({"model": "m", "prompt": [1, 2, 3, 4]})", limits).prompts.size() == 1u);

  // Completions: min(5, max_logprobs); chat: max_logprobs.
  const auto completion_lp =
      error_of([&] { parse_completion(R"({"model": "m", "prompt": "x", "logprobs": 4})", limits); });
  BOOST_TEST_REQUIRE(completion_lp.has_value());
  BOOST_TEST(completion_lp->param() == "logprobs");
  const ChatRequest three = parse_chat(chat(R"("logprobs": true, "top_logprobs": 3)"), limits);
  BOOST_TEST(three.generation.sampling.logprobs.value_or(-1) == 3);
  const auto chat_lp = error_of([&] { parse_chat(chat(R"("logprobs": true, "top_logprobs": 4)"), limits); });
  BOOST_TEST_REQUIRE(chat_lp.has_value());
  BOOST_TEST(chat_lp->param() == "top_logprobs");
}

BOOST_AUTO_TEST_CASE(a_chat_request_with_every_field_parses_each_one) {
  const ChatRequest r = parse_chat(R"({
      "model": "chat-m",
      "messages": [
        {"role": "developer", "content": "Be terse."},
        {"role": "user", "name": "ann", "content": [{"type": "text", "text": "line one"},
                                                    {"type": "text", "text": "line two"}]},
        {"role": "assistant", "content": null, "tool_calls": []},
        {"role": "system", "content": []},
        {"role": "user", "content": "and now?"}
      ],
      "n": 2, "max_tokens": 100, "max_completion_tokens": 50, "temperature": 0.2, "top_p": 0.5, "top_k": 5,
      "min_p": 0.1, "presence_penalty": 0.25, "frequency_penalty": -0.25, "repetition_penalty": 1.1,
      "seed": 7, "stop": "STOP", "stop_token_ids": [0], "ignore_eos": false, "min_tokens": 3,
      "stream": true, "stream_options": {"include_usage": false, "continuous_usage_stats": true},
      "logprobs": true, "top_logprobs": 4, "user": "u", "tools": [], "tool_choice": "none",
      "response_format": {"type": "text"}, "parallel_tool_calls": false})");
  const GenerationRequest& g = r.generation;
  const sched::SamplingParams& s = g.sampling;
  BOOST_TEST(g.model == "chat-m");
  BOOST_TEST_REQUIRE(r.messages.size() == 5u);
  BOOST_TEST(r.messages[0].role == "system");
  BOOST_TEST(r.messages[0].content == "Be terse.");
  BOOST_TEST(r.messages[1].role == "user");
  BOOST_TEST(r.messages[1].content == "line one\nline two");
  BOOST_TEST(r.messages[2].role == "assistant");
  BOOST_TEST(r.messages[2].content == "");
  BOOST_TEST(r.messages[3].role == "system");
  BOOST_TEST(r.messages[3].content == "");
  BOOST_TEST(r.messages[4].content == "and now?");
  BOOST_TEST(s.n == 2);
  BOOST_TEST(g.max_tokens.value_or(0) == 50);  // max_completion_tokens wins
  BOOST_TEST(s.max_tokens == 50);
  BOOST_TEST(s.temperature == 0.2f);
  BOOST_TEST(s.top_p == 0.5f);
  BOOST_TEST(s.top_k == 5);
  BOOST_TEST(s.min_p == 0.1f);
  BOOST_TEST(s.presence_penalty == 0.25f);
  BOOST_TEST(s.frequency_penalty == -0.25f);
  BOOST_TEST(s.repetition_penalty == 1.1f);
  BOOST_TEST(s.seed.value_or(0) == 7u);
  BOOST_TEST(s.stop == (std::vector<std::string>{"STOP"}), boost::test_tools::per_element());
  BOOST_TEST(s.stop_token_ids == (std::vector<TokenId>{0}), boost::test_tools::per_element());
  BOOST_TEST(!s.ignore_eos);
  BOOST_TEST(s.min_tokens == 3);
  BOOST_TEST(g.stream);
  BOOST_TEST(!g.include_usage);
  BOOST_TEST(g.logprobs);
  BOOST_TEST(s.logprobs.value_or(-1) == 4);
}

BOOST_AUTO_TEST_CASE(chat_logprobs_without_top_logprobs_ask_for_zero_alternatives) {
  const ChatRequest with = parse_chat(chat(R"("logprobs": true)"));
  BOOST_TEST(with.generation.logprobs);
  BOOST_TEST(with.generation.sampling.logprobs.value_or(-1) == 0);
  const ChatRequest without = parse_chat(chat(R"("logprobs": false)"));
  BOOST_TEST(!without.generation.logprobs);
  BOOST_TEST(!without.generation.sampling.logprobs.has_value());
  const ChatRequest plain = parse_chat(chat(R"("max_tokens": 9)"));
  BOOST_TEST(plain.generation.max_tokens.value_or(0) == 9);
  BOOST_TEST(!plain.generation.stream);
  BOOST_TEST(!plain.generation.sampling.logprobs.has_value());
}

// --- responses ---

const ResponseHeader kHeader{"cmpl-42", 1700000000, "tiny"};

BOOST_AUTO_TEST_CASE(usage_carries_the_total) {
  const json usage = to_json(Usage{12, 30});
  BOOST_TEST(usage == json::parse(R"({"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42})"));
}

BOOST_AUTO_TEST_CASE(a_completion_response_has_openais_fields) {
  ChoiceDelta a;
  a.text = "Hello";
  a.finish_reason = "length";
  ChoiceDelta b;
  b.index = 1;
  b.text = " world";
  b.finish_reason = "stop";
  const json out = completion_response(kHeader, {a, b}, Usage{3, 4}, false);
  BOOST_TEST(out["id"] == "cmpl-42");
  BOOST_TEST(out["object"] == "text_completion");
  BOOST_TEST(out["created"] == 1700000000);
  BOOST_TEST(out["model"] == "tiny");
  BOOST_TEST_REQUIRE(out["choices"].size() == 2u);
  BOOST_TEST(out["choices"][0] ==
             json::parse(R"({"index": 0, "text": "Hello", "logprobs": null, "finish_reason": "length"})"));
  BOOST_TEST(out["choices"][1] ==
             json::parse(R"({"index": 1, "text": " world", "logprobs": null, "finish_reason": "stop"})"));
  BOOST_TEST(out["usage"]["total_tokens"] == 7);
  BOOST_TEST(out.size() == 6u);
}

BOOST_AUTO_TEST_CASE(completion_logprobs_use_the_legacy_format_with_byte_offsets) {
  ChoiceDelta choice;
  choice.text = "caf\xC3\xA9!";
  choice.text_offset = 10;
  choice.finish_reason = "stop";
  choice.logprobs = {TokenLogprob{"caf", -0.5f, {{"caf", -0.5f}, {"cat", -1.25f}}},
                     TokenLogprob{"\xC3\xA9", -0.25f, {{"\xC3\xA9", -0.25f}}},
                     TokenLogprob{"!", -std::numeric_limits<float>::infinity(), {}}};
  const json out = completion_response(kHeader, {choice}, Usage{}, true);
  const json& lp = out["choices"][0]["logprobs"];
  BOOST_TEST(lp["tokens"] == json::parse(R"(["caf", "é", "!"])"));
  BOOST_TEST(lp["token_logprobs"] == json::parse("[-0.5, -0.25, -9999.0]"));
  BOOST_TEST(lp["top_logprobs"] == json::parse(R"([{"caf": -0.5, "cat": -1.25}, {"é": -0.25}, {}])"));
  BOOST_TEST(lp["text_offset"] == json::parse("[10, 13, 15]"));  // é is two bytes
  BOOST_TEST(lp.size() == 4u);
  // -inf must not become null (what nlohmann writes for non-finite numbers).
  BOOST_TEST(dump_json(out).find("null") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(logprobs_are_sent_as_their_shortest_decimal_and_nan_is_clamped) {
  ChoiceDelta choice;
  choice.logprobs = {TokenLogprob{"a", -0.1f, {{"b", std::numeric_limits<float>::quiet_NaN()}}},
                     TokenLogprob{"c", -1e6f, {}}};
  const json out = chat_response(kHeader, {choice}, Usage{}, true);
  const json& content = out["choices"][0]["logprobs"]["content"];
  BOOST_TEST(content[0]["logprob"].get<double>() == -0.1);
  BOOST_TEST(content[0]["top_logprobs"][0]["logprob"].get<double>() == -9999.0);
  BOOST_TEST(content[1]["logprob"].get<double>() == -9999.0);
}

BOOST_AUTO_TEST_CASE(a_completion_chunk_streams_text_without_usage) {
  ChoiceDelta running;
  running.index = 2;
  running.text = "abc";
  running.logprobs = {TokenLogprob{"abc", -0.5f, {}}};
  running.text_offset = 7;
  const json chunk = completion_chunk(kHeader, running, true);
  BOOST_TEST(chunk["object"] == "text_completion");
  BOOST_TEST(chunk["id"] == "cmpl-42");
  BOOST_TEST(!chunk.contains("usage"));
  BOOST_TEST_REQUIRE(chunk["choices"].size() == 1u);
  const json& c = chunk["choices"][0];
  BOOST_TEST(c["index"] == 2);
  BOOST_TEST(c["text"] == "abc");
  BOOST_TEST(c["finish_reason"].is_null());
  BOOST_TEST(c["logprobs"]["text_offset"] == json::parse("[7]"));

  ChoiceDelta last;
  last.finish_reason = "length";
  const json final_chunk = completion_chunk(kHeader, last, true);
  BOOST_TEST(final_chunk["choices"][0]["finish_reason"] == "length");
  BOOST_TEST(final_chunk["choices"][0]["logprobs"].is_null());
  BOOST_TEST(completion_chunk(kHeader, running, false)["choices"][0]["logprobs"].is_null());
}

BOOST_AUTO_TEST_CASE(a_chat_response_has_the_assistant_message_and_usage) {
  ChoiceDelta choice;
  choice.text = "Hi there";
  choice.finish_reason = "stop";
  const json out = chat_response(ResponseHeader{"chatcmpl-1", 5, "m"}, {choice}, Usage{10, 2}, false);
  BOOST_TEST(out == json::parse(R"({
      "id": "chatcmpl-1", "object": "chat.completion", "created": 5, "model": "m",
      "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi there"}, "logprobs": null,
                   "finish_reason": "stop"}],
      "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})"));
}

BOOST_AUTO_TEST_CASE(chat_logprobs_carry_bytes_and_top_alternatives) {
  ChoiceDelta choice;
  choice.text = "\xC3\xA9x";
  choice.logprobs = {TokenLogprob{"\xC3\xA9", -0.5f, {{"\xC3\xA9", -0.5f}, {"e", -2.0f}}},
                     TokenLogprob{"x", -1.0f, {}}};
  const json out = chat_response(kHeader, {choice}, Usage{}, true);
  BOOST_TEST(out["choices"][0]["logprobs"] == json::parse(R"({"content": [
      {"token": "é", "logprob": -0.5, "bytes": [195, 169],
       "top_logprobs": [{"token": "é", "logprob": -0.5, "bytes": [195, 169]},
                        {"token": "e", "logprob": -2.0, "bytes": [101]}]},
      {"token": "x", "logprob": -1.0, "bytes": [120], "top_logprobs": []}]})"));
  // Asked for, with no tokens: an empty list, not null.
  BOOST_TEST(chat_response(kHeader, {ChoiceDelta{}}, Usage{}, true)["choices"][0]["logprobs"] ==
             json::parse(R"({"content": []})"));
}

BOOST_AUTO_TEST_CASE(a_chat_stream_opens_with_the_role_and_closes_with_the_finish_reason) {
  const ResponseHeader header{"chatcmpl-9", 77, "m"};
  ChoiceDelta opening;  // no text yet
  ChoiceDelta middle;
  middle.text = "Hel";
  middle.logprobs = {TokenLogprob{"Hel", -0.5f, {}}};
  ChoiceDelta closing;
  closing.finish_reason = "stop";

  const std::vector<json> chunks = {chat_chunk(header, opening, true, true), chat_chunk(header, middle, true, false),
                                    chat_chunk(header, closing, true, false)};
  for (const json& chunk : chunks) {
    BOOST_TEST(chunk["id"] == "chatcmpl-9");
    BOOST_TEST(chunk["object"] == "chat.completion.chunk");
    BOOST_TEST(chunk["created"] == 77);
    BOOST_TEST(chunk["model"] == "m");
    BOOST_TEST(!chunk.contains("usage"));
    BOOST_TEST(chunk["choices"].size() == 1u);
    BOOST_TEST(chunk["choices"][0]["index"] == 0);
  }
  BOOST_TEST(chunks[0]["choices"][0]["delta"] == json::parse(R"({"role": "assistant", "content": ""})"));
  BOOST_TEST(chunks[0]["choices"][0]["finish_reason"].is_null());
  BOOST_TEST(chunks[0]["choices"][0]["logprobs"].is_null());
  BOOST_TEST(chunks[1]["choices"][0]["delta"] == json::parse(R"({"content": "Hel"})"));
  BOOST_TEST(chunks[1]["choices"][0]["finish_reason"].is_null());
  BOOST_TEST(chunks[1]["choices"][0]["logprobs"]["content"][0]["token"] == "Hel");
  BOOST_TEST(chunks[2]["choices"][0]["delta"] == json::object());
  BOOST_TEST(chunks[2]["choices"][0]["finish_reason"] == "stop");
  BOOST_TEST(chunks[2]["choices"][0]["logprobs"].is_null());

  // The last text may ride with the finish reason.
  ChoiceDelta text_and_finish;
  text_and_finish.text = "lo";
  text_and_finish.finish_reason = "length";
  const json last = chat_chunk(header, text_and_finish, false, false);
  BOOST_TEST(last["choices"][0]["delta"] == json::parse(R"({"content": "lo"})"));
  BOOST_TEST(last["choices"][0]["finish_reason"] == "length");
}

BOOST_AUTO_TEST_CASE(the_usage_chunk_has_no_choices) {
  const json chat_usage = usage_chunk(kHeader, true, Usage{5, 6});
  BOOST_TEST(chat_usage["object"] == "chat.completion.chunk");
  BOOST_TEST(chat_usage["choices"] == json::array());
  BOOST_TEST(chat_usage["usage"] == to_json(Usage{5, 6}));
  BOOST_TEST(chat_usage["usage"]["total_tokens"] == 11);
  BOOST_TEST(chat_usage["id"] == "cmpl-42");
  const json completion_usage = usage_chunk(kHeader, false, Usage{1, 0});
  BOOST_TEST(completion_usage["object"] == "text_completion");
  BOOST_TEST(completion_usage["usage"]["total_tokens"] == 1);
}

BOOST_AUTO_TEST_CASE(server_sent_events_are_one_data_line_each) {
  ChoiceDelta choice;
  choice.text = "two\nlines";
  const json chunk = completion_chunk(kHeader, choice, false);
  const std::string event = sse_event(chunk);
  BOOST_TEST(event.rfind("data: ", 0) == 0u);
  BOOST_TEST(event.size() > 8u);
  BOOST_TEST(event.substr(event.size() - 2) == "\n\n");
  const std::string payload = event.substr(6, event.size() - 8);
  BOOST_TEST(payload.find('\n') == std::string::npos);  // the newline in the text is escaped
  BOOST_TEST(json::parse(payload) == chunk);
  BOOST_TEST(kSseDone == "data: [DONE]\n\n");
}

BOOST_AUTO_TEST_CASE(a_token_with_invalid_utf8_dumps_without_throwing) {
  ChoiceDelta choice;
  choice.text = "\xE2\x82";  // the first two bytes of "€"
  choice.logprobs = {TokenLogprob{"\xE2\x82", -0.5f, {{"\xE2\x82", -0.5f}, {"\xFF", -3.0f}}}};
  const std::vector<json> bodies = {chat_chunk(kHeader, choice, true, false),
                                    chat_response(kHeader, {choice}, {}, true), completion_chunk(kHeader, choice, true),
                                    completion_response(kHeader, {choice}, {}, true)};
  for (const json& body : bodies) {
    // A plain dump would throw: the builders keep the bytes as they are.
    BOOST_CHECK_THROW(body.dump(), json::type_error);
    std::string event;
    BOOST_CHECK_NO_THROW(event = sse_event(body));
    const std::string payload = event.substr(6, event.size() - 8);
    const json back = json::parse(payload);                         // valid UTF-8 again
    BOOST_TEST(payload.find("\xEF\xBF\xBD") != std::string::npos);  // U+FFFD
    BOOST_TEST(back["id"] == "cmpl-42");
  }
  // The exact bytes still reach the client.
  const json chat_lp = chat_chunk(kHeader, choice, true, false)["choices"][0]["logprobs"]["content"][0];
  BOOST_TEST(chat_lp["bytes"] == json::parse("[226, 130]"));
  BOOST_TEST(chat_lp["top_logprobs"][1]["bytes"] == json::parse("[255]"));
}

BOOST_AUTO_TEST_CASE(parsed_bodies_always_dump) {
  // nlohmann checks UTF-8 while parsing, so whatever parse_json_body returns dumps even strictly.
  const json body = parse_json_body("{\"model\": \"m\", \"prompt\": \"caf\xC3\xA9 \\u20ac \\ud83d\\ude00\"}");
  BOOST_CHECK_NO_THROW(body.dump());
  BOOST_TEST(body["prompt"] == "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  // Deep but allowed nesting parses; the limit counts brackets outside strings only.
  std::string nested = "{\"model\": \"m\", \"x\": " + std::string(kMaxJsonDepth - 1, '[') +
                       std::string(kMaxJsonDepth - 1, ']') + ", \"s\": \"" + std::string(500, '[') + "\\\"\"}";
  const json deep = parse_json_body(nested);
  BOOST_TEST(deep["model"] == "m");
  BOOST_TEST(deep["s"].get<std::string>().size() == 501u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace pagedllm::server
