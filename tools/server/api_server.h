// The OpenAI-compatible routes over the serving engine: /v1/completions, /v1/chat/completions
// (streaming or not), /v1/models (and /v1/models/{id}), /health, /metrics, /version, /tokenize,
// /detokenize; OPTIONS and CORS, API-key checks and OpenAI-shaped errors.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/frontend/model_bundle.h"
#include "core/frontend/serving_engine.h"
#include "core/structured/output_constraint.h"
#include "tools/server/cors.h"
#include "tools/server/http_server.h"
#include "tools/server/openai_request.h"
#include "tools/server/openai_response.h"
#include "tools/server/server_metrics.h"

namespace pagedllm::server {

struct ApiServerConfig {
  std::string served_model_name;  // the id of GET /v1/models; requests must name it
  std::string api_key;            // "" = no authentication
  ProtocolLimits limits;
  std::string version;  // GET /version's answer (the binary's version)
  CorsConfig cors;      // cross-origin access (none unless origins are named)
  // How tool_choice "auto" reads calls out of the model's text (--tool-call-parser); unset: the
  // format the model's chat template teaches, if it shows one.
  std::optional<chat::ToolCallFormat> tool_call_format{};
};

class ApiServer {
 public:
  // Everything passed must outlive the server. Until attach(), every route but /health,
  // /metrics and /version answers 503 (the model is loading).
  ApiServer(ApiServerConfig config, const frontend::ModelBundle& bundle, const ServerMetrics& metrics);

  void handle(HttpRequest&& request, std::shared_ptr<Exchange> exchange);
  // The engine, once the weights are loaded: the server is ready. It must outlive the server.
  void attach(frontend::ServingEngine& engine);
  // Graceful shutdown has begun: /health answers 503 ("draining") so that load balancers stop
  // sending, and new completions get 503 with Retry-After (another replica may take them); the
  // requests already submitted run on. Thread-safe, idempotent.
  void begin_drain();
  // The tool-call format "auto" reads (configured or detected); nullopt: "auto" is refused.
  std::optional<chat::ToolCallFormat> tool_call_format() const noexcept { return tool_call_format_; }

 private:
  void route(HttpRequest& request, const std::shared_ptr<Exchange>& exchange);
  void generate(const HttpRequest& request, const std::shared_ptr<Exchange>& exchange, bool chat);
  void tokenize(const HttpRequest& request, const std::shared_ptr<Exchange>& exchange);
  void detokenize(const HttpRequest& request, const std::shared_ptr<Exchange>& exchange);
  nlohmann::json model_card() const;
  // Structured outputs: the request's constraint compiled for the model (400 naming the field
  // when it cannot be), and the compiler that keeps the compiled ones (built on first use).
  std::shared_ptr<structured::TokenMaskCache> compile_output_constraint(const std::string& body_text,
                                                                        const OutputConstraintRequest& request);
  // A constraint compiled for the model; a refusal is a 400 naming `field`.
  std::shared_ptr<structured::TokenMaskCache> compile_constraint(const structured::ConstraintSpec& spec,
                                                                 const std::string& field);
  structured::ConstraintCompiler& constraint_compiler();
  // A chat request's prompt: its messages rendered with the tools as the body wrote them.
  std::vector<TokenId> chat_prompt(const std::string& body_text, ChatRequest& request) const;
  // What tool_choice makes of the output, and (required, named) the constraint it compiles to,
  // from the tools chat_prompt() read.
  struct ToolOutputPlan;
  ToolOutputPlan plan_tool_output(const ChatRequest& request);

  ApiServerConfig config_;
  const frontend::ModelBundle& bundle_;
  std::atomic<frontend::ServingEngine*> engine_{nullptr};
  std::atomic<bool> draining_{false};
  const ServerMetrics& metrics_;
  int64_t created_ = 0;  // unix seconds when the server started
  std::once_flag constraint_compiler_built_;
  std::unique_ptr<structured::ConstraintCompiler> constraint_compiler_;
  std::optional<chat::ToolCallFormat> tool_call_format_;
};

void respond_json(Exchange& exchange, int status, const nlohmann::json& body);
void respond_error(Exchange& exchange, const ApiError& error);

}  // namespace pagedllm::server
