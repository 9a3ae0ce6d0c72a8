#include "tools/server/api_server.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <stdexcept>

#include "core/sched/sampling_params.h"
#include "core/sched/scheduler_config.h"
#include "core/structured/constraint_vocabulary.h"
#include "core/structured/output_constraint.h"
#include "tools/server/tool_call_output.h"

namespace pagedllm::server {
namespace {

constexpr size_t kMaxStopStringBytes = 1024;
// Retry-After on a 503: a full queue frees a place as soon as any request ends (the header's
// smallest unit is a second); loading takes as long as reading the weights does.
constexpr int kQueueFullRetrySeconds = 1;
constexpr int kLoadingRetrySeconds = 5;
constexpr int kDrainingRetrySeconds = 1;  // a load balancer sends the retry to another replica
const std::string kNoText;

ApiError not_found(const std::string& message, std::string code = "") {
  return ApiError(404, "not_found_error", "", std::move(code), message);
}

// The answer to a request the engine ended without its output: refused (it can never fit the KV
// cache: 400), the server stopping (503), or a failed step (500, our bug).
ApiError api_error(frontend::RequestError kind, const std::string& message) {
  switch (kind) {
    case frontend::RequestError::shutting_down:
      return ApiError(503, "service_unavailable", "", "", message);
    case frontend::RequestError::engine_failed:
      return ApiError(500, "internal_server_error", "", "", message);
    case frontend::RequestError::invalid_request:
    case frontend::RequestError::none:
      break;
  }
  return ApiError(400, "invalid_request_error", "", "", message);
}

std::string make_request_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char text[64];
  std::snprintf(text, sizeof(text), "%s-%016llx%08llx", prefix, static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return text;
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One HTTP generation request: its engine requests (one per prompt), what has been said to the
// client, and the text gathered for a whole response. Runs on its connection's strand only: the
// handler calls submit() there, the engine's updates and the disconnect callback are posted there.
class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  struct Setup {
    ResponseHeader header;
    bool chat = false;
    bool stream = false;
    bool include_usage = false;
    bool with_logprobs = false;
    int32_t num_samples = 1;             // n
    std::vector<std::string> echo_text;  // per prompt, prepended to each choice ("" = none)
    std::vector<int32_t> num_prompt_tokens;
    ToolOutputMode tool_output;    // chat: what tool_choice makes of each choice's text
    std::string constraint_field;  // the field of the request's output constraint ("" = none)
  };

  GenerationJob(Setup setup, std::shared_ptr<Exchange> exchange, frontend::ServingEngine& engine)
      : setup_(std::move(setup)), exchange_(std::move(exchange)), engine_(engine) {
    const size_t num_choices = setup_.num_prompt_tokens.size() * static_cast<size_t>(setup_.num_samples);
    choices_.resize(num_choices);
    started_.assign(num_choices, false);
    for (size_t i = 0; i < num_choices; ++i) choices_[i].index = static_cast<int32_t>(i);
    for (size_t i = 0; i < num_choices; ++i) {
      tool_outputs_.emplace_back(setup_.tool_output, [] { return make_request_id("chatcmpl-tool"); });
    }
    prompt_done_.assign(setup_.num_prompt_tokens.size(), false);
  }

  // Submits every prompt; false when the engine's queue is full (nothing was left running).
  bool submit(std::vector<frontend::ValidatedRequest> requests) {
    auto self = shared_from_this();
    for (size_t prompt = 0; prompt < requests.size(); ++prompt) {
      std::optional<sched::RequestId> id =
          engine_.submit(std::move(requests[prompt]), [self, prompt](frontend::RequestUpdate&& update) {
            self->exchange_->post(
                [self, prompt, update = std::move(update)]() mutable { self->on_update(prompt, std::move(update)); });
          });
      if (!id) {
        finished_ = true;  // the caller answers; updates of prompts already submitted are dropped
        for (const sched::RequestId submitted : ids_) engine_.abort(submitted);
        return false;
      }
      ids_.push_back(*id);
    }
    exchange_->on_disconnect([self] {
      for (const sched::RequestId id : self->ids_) self->engine_.abort(id);
    });
    if (setup_.stream) {
      exchange_->start_stream();
      if (setup_.chat) {
        for (const ChoiceDelta& choice : choices_) {
          ChoiceDelta role_only;  // the first chunk of a choice: its role, no content yet
          role_only.index = choice.index;
          send(chat_chunk(setup_.header, role_only, false, true));
        }
        std::fill(started_.begin(), started_.end(), true);
      }
    }
    return true;
  }

 private:
  void on_update(size_t prompt, frontend::RequestUpdate&& update) {
    if (finished_) return;
    if (update.error != frontend::RequestError::none) {
      fail(update.error, update.error_message);
      return;
    }
    usage_.completion_tokens += update.num_output_tokens - output_tokens_seen(prompt, update.num_output_tokens);
    for (frontend::CompletionUpdate& news : update.completions) {
      const size_t index = prompt * static_cast<size_t>(setup_.num_samples) + static_cast<size_t>(news.index);
      if (index >= choices_.size()) continue;
      ChoiceDelta delta;
      delta.index = static_cast<int32_t>(index);
      const bool first = !started_[index];
      const std::string& echo = first ? setup_.echo_text[prompt] : kNoText;
      delta.text = echo + news.text;
      if (setup_.with_logprobs) delta.logprobs = std::move(news.logprobs);
      if (!news.finish_reason.empty()) delta.finish_reason = news.finish_reason;
      // The logprobs are the generated tokens': their text starts after any echoed prompt.
      delta.text_offset = static_cast<int32_t>(choices_[index].text.size() + echo.size());
      if (first) choices_[index].text_offset = static_cast<int32_t>(echo.size());
      started_[index] = true;
      ChoiceDelta& whole = choices_[index];
      whole.text += delta.text;
      whole.logprobs.insert(whole.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
      if (delta.finish_reason) whole.finish_reason = delta.finish_reason;
      if (setup_.stream) {
        if (setup_.chat) tool_outputs_[index].stream(delta);  // text -> content and tool call deltas
        if (!delta.text.empty() || !delta.tool_calls.empty() || !delta.logprobs.empty() || delta.finish_reason) {
          send(setup_.chat ? chat_chunk(setup_.header, delta, setup_.with_logprobs, first)
                           : completion_chunk(setup_.header, delta, setup_.with_logprobs));
        }
      }
    }
    if (!update.finished) return;
    prompt_done_[prompt] = true;
    usage_.prompt_tokens += update.num_prompt_tokens;
    for (const bool done : prompt_done_) {
      if (!done) return;
    }
    finish();
  }

  // The update carries a running total per prompt; the usage needs the sum over prompts.
  int64_t output_tokens_seen(size_t prompt, int64_t total) {
    output_tokens_by_prompt_.resize(std::max(output_tokens_by_prompt_.size(), prompt + 1), 0);
    const int64_t before = output_tokens_by_prompt_[prompt];
    output_tokens_by_prompt_[prompt] = total;
    return before;
  }

  void finish() {
    finished_ = true;
    if (setup_.stream) {
      if (setup_.include_usage) send(usage_chunk(setup_.header, setup_.chat, usage_));
      exchange_->send_chunk(std::string(kSseDone));
      exchange_->end_stream();
      return;
    }
    for (size_t i = 0; i < choices_.size(); ++i) {
      if (!choices_[i].finish_reason) choices_[i].finish_reason = "abort";
      if (setup_.chat) tool_outputs_[i].complete(choices_[i]);
    }
    respond_json(*exchange_, 200,
                 setup_.chat ? chat_response(setup_.header, choices_, usage_, setup_.with_logprobs)
                             : completion_response(setup_.header, choices_, usage_, setup_.with_logprobs));
  }

  void fail(frontend::RequestError kind, const std::string& message) {
    finished_ = true;
    for (const sched::RequestId id : ids_) engine_.abort(id);
    ApiError error = api_error(kind, message);
    if (kind == frontend::RequestError::invalid_request && !setup_.constraint_field.empty() &&
        message.starts_with(engine::kConstraintFailedPrefix)) {
      error = ApiError(400, "invalid_request_error", setup_.constraint_field, "", message);  // gave up mid-way
    }
    if (setup_.stream) {
      send(to_json(error));
      exchange_->send_chunk(std::string(kSseDone));
      exchange_->end_stream();
      return;
    }
    respond_error(*exchange_, error);
  }

  void send(const nlohmann::json& chunk) { exchange_->send_chunk(sse_event(chunk)); }

  Setup setup_;
  std::shared_ptr<Exchange> exchange_;
  frontend::ServingEngine& engine_;
  std::vector<sched::RequestId> ids_;
  std::vector<ChoiceDelta> choices_;          // the whole text so far, per choice
  std::vector<ToolCallOutput> tool_outputs_;  // per choice
  std::vector<bool> started_;                 // per choice: something was sent
  std::vector<bool> prompt_done_;
  std::vector<int64_t> output_tokens_by_prompt_;
  Usage usage_;
  bool finished_ = false;
};

std::string bearer_token(const HttpRequest& request) {
  const auto found = request.headers.find("authorization");
  if (found == request.headers.end()) return "";
  constexpr std::string_view kBearer = "Bearer ";
  return found->second.starts_with(kBearer) ? found->second.substr(kBearer.size()) : "";
}

// The methods a path takes, as an Allow header lists them ("" = no such route). HEAD rides on GET.
std::string allowed_methods(const std::string& path) {
  if (path == "/health" || path == "/metrics" || path == "/version" || path == "/v1/models" ||
      path.starts_with("/v1/models/")) {
    return "GET, HEAD, OPTIONS";
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions" || path == "/tokenize" || path == "/detokenize") {
    return "POST, OPTIONS";
  }
  return "";
}

// A path segment with its %XX escapes decoded ("" when an escape is malformed).
std::optional<std::string> percent_decoded(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      return std::nullopt;
    }
    out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return out;
}

// Constant-time comparison: the key's prefix must not leak through response times.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return difference == 0;
}

ApiError shutting_down() {
  return ApiError(503, "service_unavailable", "", "", "the server is shutting down: send the request elsewhere")
      .retry_after(kDrainingRetrySeconds);
}

}  // namespace

void respond_json(Exchange& exchange, int status, const nlohmann::json& body) {
  exchange.respond(status, "application/json", dump_json(body));
}

void respond_error(Exchange& exchange, const ApiError& error) {
  if (error.retry_after_seconds() > 0) exchange.add_header("Retry-After", std::to_string(error.retry_after_seconds()));
  respond_json(exchange, error.status(), to_json(error));
}

ApiServer::ApiServer(ApiServerConfig config, const frontend::ModelBundle& bundle, const ServerMetrics& metrics)
    : config_(std::move(config)), bundle_(bundle), metrics_(metrics), created_(unix_seconds()) {
  tool_call_format_ = config_.tool_call_format;
  if (!tool_call_format_ && bundle_.chat_template && bundle_.chat_template->is_jinja()) {
    tool_call_format_ = chat::detect_tool_call_format(bundle_.chat_template->jinja_text());
  }
}

void ApiServer::attach(frontend::ServingEngine& engine) { engine_ = &engine; }

void ApiServer::handle(HttpRequest&& request, std::shared_ptr<Exchange> exchange) {
  // Every answer but a preflight's carries the CORS headers: errors too, or a page could not
  // read why it was refused.
  if (!is_cors_preflight(request)) {
    for (auto& [name, value] : cors_response_headers(config_.cors, request)) exchange->add_header(name, value);
  }
  try {
    route(request, exchange);
  } catch (const ApiError& error) {
    respond_error(*exchange, error);
  } catch (const sched::InvalidRequestError& error) {
    respond_error(*exchange, invalid_request(error.field(), error.what()));
  } catch (const chat::ChatTemplateError& error) {
    respond_error(*exchange, invalid_request("messages", error.what()));
  } catch (const std::exception& error) {
    respond_error(*exchange,
                  ApiError(500, "internal_server_error", "", "", std::string("internal error: ") + error.what()));
  }
}

void ApiServer::route(HttpRequest& request, const std::shared_ptr<Exchange>& exchange) {
  const std::string& path = request.path;
  const std::string allow = allowed_methods(path);
  if (request.method == "OPTIONS" && !allow.empty()) {
    // A browser's preflight (before auth: it never carries a key), or a plain OPTIONS.
    if (is_cors_preflight(request) && cors_enabled(config_.cors)) {
      PreflightAnswer answer = answer_cors_preflight(config_.cors, request);
      for (auto& [name, value] : answer.headers) exchange->add_header(name, value);
      exchange->respond(answer.status, "text/plain", answer.body);
      return;
    }
    exchange->add_header("Allow", allow);
    exchange->respond(200, "", "");
    return;
  }
  if (path.starts_with("/v1/") && !config_.api_key.empty() && !same_secret(bearer_token(request), config_.api_key)) {
    throw ApiError(401, "authentication_error", "", "invalid_api_key", "Unauthorized: a wrong or missing API key");
  }
  if (allow.empty()) throw not_found("no route " + request.method + " " + path);  // after the key check, as vLLM
  const bool get_route = allow.starts_with("GET");
  const bool method_allowed =
      get_route ? request.method == "GET" || request.method == "HEAD"  // HttpServer drops a HEAD's body
                : request.method == "POST";
  if (!method_allowed) {
    exchange->add_header("Allow", allow);
    throw ApiError(405, "invalid_request_error", "", "",
                   request.method + " is not allowed on " + path + " (" + allow + ")");
  }
  if (path == "/health") {
    frontend::ServingEngine* engine = engine_.load();
    const bool healthy = engine != nullptr && engine->alive() && !draining_.load();
    exchange->respond(healthy ? 200 : 503, "text/plain",
                      healthy             ? ""
                      : engine == nullptr ? "loading"
                      : !engine->alive()  ? "engine loop died: " + engine->failure()
                                          : "draining: shutting down after the requests in flight");
    return;
  }
  if (path == "/metrics") {
    exchange->respond(200, std::string(kPrometheusContentType), metrics_.render());
    return;
  }
  if (path == "/version") {  // as vLLM's: no key needed, answered while loading
    respond_json(*exchange, 200, {{"version", config_.version}});
    return;
  }
  if (engine_.load() == nullptr) {
    throw ApiError(503, "service_unavailable", "", "", "the model is still loading").retry_after(kLoadingRetrySeconds);
  }
  if (path == "/v1/models") {
    respond_json(*exchange, 200, {{"object", "list"}, {"data", nlohmann::json::array({model_card()})}});
  } else if (path.starts_with("/v1/models/")) {  // OpenAI's retrieve; an id may hold slashes ("org/name")
    const std::optional<std::string> id = percent_decoded(path.substr(std::string_view("/v1/models/").size()));
    if (!id || *id != config_.served_model_name) {
      throw not_found("The model `" + id.value_or(path) + "` does not exist.", "model_not_found");
    }
    respond_json(*exchange, 200, model_card());
  } else if (path == "/v1/completions") {
    generate(request, exchange, false);
  } else if (path == "/v1/chat/completions") {
    generate(request, exchange, true);
  } else if (path == "/tokenize") {
    tokenize(request, exchange);
  } else {
    detokenize(request, exchange);
  }
}

nlohmann::json ApiServer::model_card() const {
  return {{"id", config_.served_model_name},
          {"object", "model"},
          {"created", created_},
          {"owned_by", "pagedllm"},
          {"root", bundle_.source.path},
          {"max_model_len", engine_.load()->engine_config().scheduler.max_model_len}};
}

void ApiServer::begin_drain() {
  draining_.store(true);
  // The engine's own flag is what counts: a request that passed the check in generate() before
  // this line is either submitted (and counted by num_pending) or refused by submit().
  if (frontend::ServingEngine* engine = engine_.load()) engine->begin_drain();
}

structured::ConstraintCompiler& ApiServer::constraint_compiler() {
  // Built on the first constrained request: the vocabulary's trie costs memory a server that
  // never sees one need not pay. Special tokens and the ids past the tokenizer's (padding of the
  // model's vocabulary) have no text, so no constraint allows them.
  std::call_once(constraint_compiler_built_, [&] {
    constraint_compiler_ = std::make_unique<structured::ConstraintCompiler>(
        structured::constraint_token_bytes(bundle_.tokenizer, engine_.load()->engine_config().vocab_size));
  });
  return *constraint_compiler_;
}

std::shared_ptr<structured::TokenMaskCache> ApiServer::compile_output_constraint(
    const std::string& body_text, const OutputConstraintRequest& request) {
  structured::ConstraintSpec spec = request.spec;
  if (!request.schema_path.empty()) {
    // The schema again, from the body as written: the order of its properties is the order the
    // output will have (nlohmann::json, which parsed the request, sorts keys).
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(body_text);
    const nlohmann::ordered_json* schema = &ordered;
    for (const std::string& key : request.schema_path) schema = &schema->at(key);
    spec.schema = *schema;
  }
  return compile_constraint(spec, request.field);
}

std::shared_ptr<structured::TokenMaskCache> ApiServer::compile_constraint(const structured::ConstraintSpec& spec,
                                                                          const std::string& field) {
  try {
    return constraint_compiler().compile(spec);
  } catch (const std::invalid_argument& error) {  // structured::ConstraintError, and any other refusal
    throw invalid_request(field, field + ": " + error.what());
  }
}

std::vector<TokenId> ApiServer::chat_prompt(const std::string& body_text, ChatRequest& request) const {
  // The tools as written (the parsed body sorts keys), as transformers hands them to the
  // template. "tools": [] asks for nothing: the template sees None, as with no tools.
  if (request.tools.has_tools()) {
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(body_text);
    if (const auto tools = ordered.find("tools"); tools != ordered.end() && !tools->is_null()) {
      request.prompt.tools = *tools;
    }
  }
  return frontend::encode_chat(bundle_, request.messages, request.prompt);
}

struct ApiServer::ToolOutputPlan {
  ToolOutputMode mode;
  std::shared_ptr<structured::TokenMaskCache> constraint;  // required and named
};

ApiServer::ToolOutputPlan ApiServer::plan_tool_output(const ChatRequest& request) {
  const ToolRequest& tools = request.tools;
  ToolOutputPlan plan;
  switch (tools.effective_choice()) {
    case ToolChoice::none:
      return plan;
    case ToolChoice::auto_call:
      if (!tool_call_format_) {
        throw invalid_request("tool_choice",
                              "tool_choice: \"auto\" reads the calls in the model's own format, and this model's "
                              "chat template shows none: serve with --tool-call-parser hermes or llama3_json, or "
                              "choose \"required\" or a named function (the output is then constrained)");
      }
      plan.mode = {.kind = ToolOutputMode::Kind::parsed, .format = *tool_call_format_, .function = ""};
      return plan;
    case ToolChoice::required:
    case ToolChoice::named:
      break;
  }
  // A forced call has tools, which chat_prompt() read in their written order.
  structured::ConstraintSpec spec;
  spec.kind = structured::ConstraintKind::json_schema;
  spec.schema = forced_call_schema(request.prompt.tools.value(), tools);
  // json.dumps' layout: how the chat templates write earlier calls back into the prompt, and no
  // room for a model to spend its tokens on whitespace.
  spec.layout.any_whitespace = false;
  std::string field = "tools";
  if (tools.effective_choice() == ToolChoice::named) {
    const auto named = std::find(tools.names.begin(), tools.names.end(), tools.named_function);
    field = "tools[" + std::to_string(named - tools.names.begin()) + "].function.parameters";
    plan.mode = {.kind = ToolOutputMode::Kind::named, .format = {}, .function = tools.named_function};
  } else {
    plan.mode = {.kind = ToolOutputMode::Kind::required, .format = {}, .function = ""};
  }
  plan.constraint = compile_constraint(spec, field);
  return plan;
}

void ApiServer::generate(const HttpRequest& request, const std::shared_ptr<Exchange>& exchange, bool chat) {
  if (draining_.load()) throw shutting_down();
  const nlohmann::json body = parse_json_body(request.body);
  GenerationRequest generation;
  std::vector<std::vector<TokenId>> prompts;
  std::vector<std::string> echo_text;
  ToolOutputPlan tool_output;
  if (chat) {
    ChatRequest parsed = parse_chat_request(body, config_.limits);
    generation = std::move(parsed.generation);
    if (generation.model != config_.served_model_name) {
      throw not_found("The model `" + generation.model + "` does not exist.", "model_not_found");
    }
    prompts.push_back(chat_prompt(request.body, parsed));
    echo_text.emplace_back();
    tool_output = plan_tool_output(parsed);
  } else {
    CompletionRequest parsed = parse_completion_request(body, config_.limits);
    generation = std::move(parsed.generation);
    if (generation.model != config_.served_model_name) {
      throw not_found("The model `" + generation.model + "` does not exist.", "model_not_found");
    }
    for (CompletionPrompt& prompt : parsed.prompts) {
      if (prompt.text) {
        prompts.push_back(frontend::encode_prompt(bundle_, *prompt.text));
      } else {
        for (const TokenId id : prompt.token_ids) {
          if (id < 0 || id >= bundle_.tokenizer.num_tokens()) {
            throw invalid_request("prompt", "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                                std::to_string(bundle_.tokenizer.num_tokens()) + ")");
          }
        }
        prompts.push_back(std::move(prompt.token_ids));
      }
      echo_text.push_back(parsed.echo ? (prompt.text ? *prompt.text : bundle_.tokenizer.decode(prompts.back())) : "");
    }
  }
  const sched::SchedulerConfig& scheduler = engine_.load()->engine_config().scheduler;
  if (generation.priority != 0 && scheduler.policy != sched::SchedulingPolicy::priority) {
    // vLLM's rule: a priority the scheduler would ignore is an error, not a silent no-op.
    throw invalid_request("priority", "priority scheduling is not enabled (serve --scheduling-policy priority)");
  }
  const int32_t max_model_len = scheduler.max_model_len;
  generation.sampling.bad_words_token_ids = frontend::encode_bad_words(bundle_, generation.bad_words);
  if (generation.output_constraint) {
    generation.sampling.output_constraint = compile_output_constraint(request.body, *generation.output_constraint);
  } else if (tool_output.constraint) {
    generation.sampling.output_constraint = tool_output.constraint;
  }
  if (generation.truncate_prompt_tokens) {
    // vLLM's truncation: the prompt's last tokens are kept (the echoed text stays the prompt as given).
    const int32_t keep = *generation.truncate_prompt_tokens == -1 ? max_model_len : *generation.truncate_prompt_tokens;
    for (std::vector<TokenId>& prompt : prompts) {
      if (static_cast<int64_t>(prompt.size()) > keep) prompt.erase(prompt.begin(), prompt.end() - keep);
    }
  }
  std::vector<frontend::ValidatedRequest> requests;
  GenerationJob::Setup setup;
  for (std::vector<TokenId>& prompt : prompts) {
    const auto num_prompt_tokens = static_cast<int32_t>(prompt.size());
    if (num_prompt_tokens == 0) throw invalid_request(chat ? "messages" : "prompt", "the prompt is empty");
    const int32_t max_tokens = generation.max_tokens.value_or(chat ? max_model_len - num_prompt_tokens : 16);
    const int64_t num_requested_tokens = int64_t{num_prompt_tokens} + max_tokens;
    if (num_prompt_tokens >= max_model_len || num_requested_tokens > max_model_len) {
      throw invalid_request(chat ? "messages" : "prompt",
                            "This model's maximum context length is " + std::to_string(max_model_len) +
                                " tokens. However, you requested " + std::to_string(num_requested_tokens) +
                                " tokens (" + std::to_string(num_prompt_tokens) + " in the " +
                                (chat ? "messages" : "prompt") + ", " + std::to_string(max_tokens) +
                                " in the completion). Please reduce the length of the " +
                                (chat ? "messages" : "prompt") + " or completion.",
                            "context_length_exceeded");
    }
    frontend::ServingRequest serving;
    serving.priority = generation.priority;
    serving.decode.skip_special_tokens = generation.skip_special_tokens;
    serving.include_stop_str_in_output = generation.include_stop_str_in_output;
    serving.sampling = generation.sampling;
    serving.sampling.max_tokens = max_tokens;
    setup.num_prompt_tokens.push_back(num_prompt_tokens);
    serving.prompt_tokens = std::move(prompt);
    // The one validation (the engine's limits: context, logprobs, vocabulary), every prompt's
    // before any is submitted.
    requests.push_back(engine_.load()->validate(std::move(serving)));
  }
  setup.header = {.id = generation.request_id ? std::string(chat ? "chatcmpl-" : "cmpl-") + *generation.request_id
                                              : make_request_id(chat ? "chatcmpl" : "cmpl"),
                  .created = unix_seconds(),
                  .model = generation.model};
  setup.chat = chat;
  setup.stream = generation.stream;
  setup.include_usage = generation.include_usage;
  setup.with_logprobs = generation.logprobs;
  setup.num_samples = generation.sampling.n;
  setup.echo_text = std::move(echo_text);
  setup.tool_output = std::move(tool_output.mode);
  if (generation.output_constraint) setup.constraint_field = generation.output_constraint->field;
  for (const std::string& stop : generation.sampling.stop) {
    // Text is held back while it could still become a stop string: bound how much.
    if (stop.size() > kMaxStopStringBytes) {
      throw invalid_request("stop", "stop strings may have at most " + std::to_string(kMaxStopStringBytes) + " bytes");
    }
  }
  frontend::ServingEngine& engine = *engine_.load();
  auto job = std::make_shared<GenerationJob>(std::move(setup), exchange, engine);
  if (!job->submit(std::move(requests))) {
    if (!engine.alive()) {
      throw ApiError(503, "service_unavailable", "", "", "the engine loop died: " + engine.failure());
    }
    if (engine.draining()) throw shutting_down();
    throw ApiError(
        503, "service_unavailable", "", "",
        "the server's queue is full (" + std::to_string(engine.num_pending()) + " requests pending): retry later")
        .retry_after(kQueueFullRetrySeconds);
  }
}

void ApiServer::tokenize(const HttpRequest& request, const std::shared_ptr<Exchange>& exchange) {
  const nlohmann::json body = parse_json_body(request.body);
  std::vector<TokenId> tokens;
  if (body.contains("messages")) {
    nlohmann::json chat_body = body;
    chat_body["model"] = config_.served_model_name;
    ChatRequest parsed = parse_chat_request(chat_body, config_.limits);
    tokens = chat_prompt(request.body, parsed);
  } else if (body.contains("prompt")) {
    if (!body["prompt"].is_string()) throw invalid_request("prompt", "prompt: expected a string");
    bool add_special_tokens = true;
    if (body.contains("add_special_tokens")) {
      if (!body["add_special_tokens"].is_boolean()) {
        throw invalid_request("add_special_tokens", "add_special_tokens: expected a boolean");
      }
      add_special_tokens = body["add_special_tokens"].get<bool>();
    }
    tokens = add_special_tokens
                 ? frontend::encode_prompt(bundle_, body["prompt"].get<std::string>())
                 : bundle_.tokenizer.encode(body["prompt"].get<std::string>(), {.add_special_tokens = false});
  } else {
    throw invalid_request("prompt", "give prompt (a string) or messages");
  }
  respond_json(*exchange, 200,
               {{"tokens", tokens},
                {"count", tokens.size()},
                {"max_model_len", engine_.load()->engine_config().scheduler.max_model_len}});
}

void ApiServer::detokenize(const HttpRequest& request, const std::shared_ptr<Exchange>& exchange) {
  const nlohmann::json body = parse_json_body(request.body);
  if (!body.contains("tokens") || !body["tokens"].is_array())
    throw invalid_request("tokens", "tokens: expected an array of token ids");
  std::vector<TokenId> tokens;
  for (const nlohmann::json& token : body["tokens"]) {
    if (!token.is_number_integer() || token.get<int64_t>() < 0 ||
        token.get<int64_t>() >= bundle_.tokenizer.num_tokens()) {
      throw invalid_request("tokens", "tokens: every entry must be a token id in [0, " +
                                          std::to_string(bundle_.tokenizer.num_tokens()) + ")");
    }
    tokens.push_back(token.get<TokenId>());
  }
  respond_json(*exchange, 200, {{"prompt", bundle_.tokenizer.decode(tokens)}});
}

}  // namespace pagedllm::server
