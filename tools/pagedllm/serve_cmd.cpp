// `pagedllm serve`: the OpenAI-compatible HTTP server over the engine (tools/server/).
#include <boost/asio/signal_set.hpp>
#include <boost/program_options.hpp>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/frontend/model_bundle.h"
#include "core/frontend/serving_engine.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/engine_options.h"
#include "tools/pagedllm/executor_factory.h"
#include "tools/pagedllm/subcommands.h"
#include "tools/server/api_server.h"
#include "tools/server/http_server.h"
#include "tools/server/server_metrics.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct ServeOptions {
  std::string model = std::string(kDefaultModelName);
  std::string served_model_name;
  std::string chat_template;
  std::string tool_call_parser = "auto";  // hermes | llama3_json | auto (the chat template's)
  server::HttpServerConfig http;
  std::string api_key;
  std::string allowed_origins;  // vLLM's CORS flags, as JSON lists or comma-separated
  std::string allowed_methods = "*";
  std::string allowed_headers = "*";
  bool allow_credentials = false;
  int32_t max_pending_requests = 1024;
  double shutdown_timeout = 30.0;  // seconds the requests in flight get after SIGTERM
  EngineOptions engine;
  ExecutorOptions executor;
};

constexpr double kMaxShutdownTimeout = 86400.0;  // a day: beyond it the deadline arithmetic could overflow

// SIGINT and SIGTERM, counted: the first begins a graceful drain, a second stops at once.
class ShutdownSignals {
 public:
  explicit ShutdownSignals(boost::asio::io_context& io) : signals_(io, SIGINT, SIGTERM) { arm(); }

  // Blocks until `count` signals have arrived or `deadline` passed; returns how many arrived.
  int wait_until(int count, std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    arrived_.wait_until(lock, deadline, [&] { return count_ >= count; });
    return count_;
  }
  void wait(int count) {
    std::unique_lock lock(mutex_);
    arrived_.wait(lock, [&] { return count_ >= count; });
  }

 private:
  void arm() {
    signals_.async_wait([this](const boost::system::error_code& error, int) {
      if (error) return;
      {
        const std::lock_guard lock(mutex_);
        ++count_;
      }
      arrived_.notify_all();
      arm();
    });
  }

  boost::asio::signal_set signals_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int count_ = 0;
};

}  // namespace

int run_serve(const std::vector<std::string>& args) {
  ServeOptions options;
  int32_t port = options.http.port;
  po::options_description description(
      "pagedllm serve: an OpenAI-compatible HTTP server (completions, chat, streaming, /metrics)\n"
      "  pagedllm serve --model M [--host 127.0.0.1] [--port 8000] [--api-key K] [engine options]");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("model,m", po::value(&options.model)->default_value(options.model),
       "a .gguf file, a Hugging Face directory, a fetched model's name, or 'tiny' (the embedded test model)")
      ("served-model-name", po::value(&options.served_model_name),
       "the model id clients name (default: --model as given)")
      ("chat-template", po::value(&options.chat_template), "a named chat format or a template file instead of the model's")
      ("tool-call-parser", po::value(&options.tool_call_parser)->default_value(options.tool_call_parser),
       "how tool_choice \"auto\" reads tool calls: hermes, llama3_json, or auto (the chat template's format)")
      ("host", po::value(&options.http.host)->default_value(options.http.host),
       "address to bind (0.0.0.0 for every interface: mind who can reach it)")
      ("port", po::value(&port)->default_value(port), "TCP port (0 = any free port, printed at start)")
      ("api-key", po::value(&options.api_key), "require `Authorization: Bearer KEY` on /v1 routes")
      ("allowed-origins", po::value(&options.allowed_origins),
       "origins whose web pages may call the API (CORS), as a JSON list or comma-separated; '*' for any "
       "(vLLM's default; here none unless given)")
      ("allowed-methods", po::value(&options.allowed_methods)->default_value(options.allowed_methods),
       "CORS: methods allowed across origins")
      ("allowed-headers", po::value(&options.allowed_headers)->default_value(options.allowed_headers),
       "CORS: request headers allowed across origins")
      ("allow-credentials", po::bool_switch(&options.allow_credentials), "CORS: allow cookies and credentials")
      ("max-pending-requests", po::value(&options.max_pending_requests)->default_value(options.max_pending_requests),
       "requests queued or running at most; beyond it 503")
      ("shutdown-timeout", po::value(&options.shutdown_timeout)->default_value(options.shutdown_timeout),
       "seconds the requests in flight get to finish after SIGTERM or SIGINT (meanwhile /health and new "
       "requests answer 503); then the rest end with an error; a second signal stops at once")
      ("io-threads", po::value(&options.http.num_io_threads)->default_value(options.http.num_io_threads), "HTTP threads")
      ("max-body-bytes", po::value(&options.http.max_body_bytes)->default_value(options.http.max_body_bytes),
       "larger request bodies get 413");
  // clang-format on
  add_engine_options(description, options.engine);
  add_executor_options(description, options.executor);
  add_cuda_options(description, options.executor.cuda);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  if (port < 0 || port > 65535) throw po::error("--port: expected 0..65535, got " + std::to_string(port));
  options.http.port = static_cast<uint16_t>(port);
  if (options.executor.executor == "sim") {
    throw po::error("--executor sim: serving needs an executor that computes tokens (cpu or cuda)");
  }
  if (!(options.shutdown_timeout >= 0.0 && options.shutdown_timeout <= kMaxShutdownTimeout)) {
    throw po::error("--shutdown-timeout: expected 0 to " + std::to_string(static_cast<int>(kMaxShutdownTimeout)) +
                    " seconds, got " + std::to_string(options.shutdown_timeout));
  }
  const std::string served_name = options.served_model_name.empty() ? options.model : options.served_model_name;
  std::optional<chat::ToolCallFormat> tool_call_format;
  if (options.tool_call_parser != "auto") {
    try {
      tool_call_format = chat::tool_call_format_named(options.tool_call_parser);
    } catch (const std::invalid_argument& error) {
      throw po::error(std::string("--tool-call-parser: ") + error.what() + " or auto");
    }
  }
  server::CorsConfig cors;
  try {
    cors = {.allowed_origins = server::parse_cors_list(options.allowed_origins, "--allowed-origins"),
            .allowed_methods = server::parse_cors_list(options.allowed_methods, "--allowed-methods"),
            .allowed_headers = server::parse_cors_list(options.allowed_headers, "--allowed-headers"),
            .allow_credentials = options.allow_credentials};
  } catch (const std::invalid_argument& error) {
    throw po::error(error.what());
  }

  frontend::ModelBundle bundle =
      frontend::open_model(resolve_model_argument(options.model), {.chat_template = options.chat_template});
  const uint64_t open_files = server::raise_open_file_limit();
  server::ServerMetrics metrics(served_name);
  // The server listens while the weights load: /health answers 503 until they are in.
  server::ApiServer api(server::ApiServerConfig{.served_model_name = served_name,
                                                .api_key = options.api_key,
                                                .limits = {},
                                                .version = PAGEDLLM_VERSION,
                                                .cors = cors,
                                                .tool_call_format = tool_call_format},
                        bundle, metrics);
  server::HttpServer http(options.http,
                          [&api](server::HttpRequest&& request, std::shared_ptr<server::Exchange> exchange) {
                            api.handle(std::move(request), std::move(exchange));
                          });
  // SIGINT / SIGTERM: drain (below), then stop.
  ShutdownSignals signals(http.io_context());
  http.start();
  std::cerr << "pagedllm serve: listening on http://" << options.http.host << ":" << http.port() << " (model '"
            << served_name << "', open files limit " << open_files << ", tool calls read as "
            << (api.tool_call_format() ? std::string(chat::to_string(*api.tool_call_format())) : "none: no auto")
            << "), loading weights\n";

  const auto model_max_len = frontend::context_length(bundle);
  frontend::ServingEngineConfig config;
  config.engine = engine_config_from(options.engine, model_max_len);
  config.engine.cache.num_device_blocks = options.engine.num_gpu_blocks_override;
  frontend::apply_model_limits(bundle, config.engine);
  config.max_pending_requests = options.max_pending_requests;
  ExecutorSetup setup = make_executor(options.executor, bundle, config.engine);
  config.engine.cache = setup.cache;
  config.draft_model = setup.draft_model.get();
  // As vLLM: a context the KV cache cannot hold once is refused at start, not per request.
  const int64_t num_cache_tokens = int64_t{config.engine.cache.num_device_blocks} * config.engine.cache.block_size;
  if (config.engine.scheduler.max_model_len > num_cache_tokens) {
    throw po::error("the model's max model len (" + std::to_string(config.engine.scheduler.max_model_len) +
                    ") is larger than the KV cache holds (" + std::to_string(num_cache_tokens) +
                    " tokens): give more --kv-cache-mib or a smaller --max-model-len");
  }
  frontend::ServingEngine engine(config, *setup.executor, bundle.tokenizer, &metrics);
  api.attach(engine);
  std::cerr << "pagedllm serve: ready: " << setup.description << ", max model len "
            << config.engine.scheduler.max_model_len;
  if (config.engine.speculative.enabled())
    std::cerr << ", speculative decoding " << spec::describe(config.engine.speculative);
  std::cerr << '\n' << std::flush;
  signals.wait(1);
  // Graceful drain, as Kubernetes expects of a pod it stops: the load balancer sees /health fail
  // and sends elsewhere, new requests get 503, the requests in flight run to completion within
  // --shutdown-timeout; the rest then end with the shutdown error (streams: an error event and
  // [DONE]). A second signal cuts the wait short.
  api.begin_drain();
  std::cerr << "pagedllm serve: draining " << engine.num_pending() << " requests in flight (up to "
            << options.shutdown_timeout << " s; a second signal stops at once)\n";
  const auto drain_deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(options.shutdown_timeout));
  int num_signals = 1;
  while (engine.num_pending() > 0 && num_signals < 2 && std::chrono::steady_clock::now() < drain_deadline) {
    num_signals = signals.wait_until(
        2, std::min(drain_deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
  }
  if (engine.num_pending() > 0) {
    std::cerr << "pagedllm serve: stopping with " << engine.num_pending() << " requests unfinished ("
              << (num_signals >= 2 ? "second signal" : "--shutdown-timeout reached") << ")\n";
  }
  http.stop_accepting();
  engine.stop();  // every pending request's last update is posted to its connection
  // The final answers just posted go out and their connections close (milliseconds, bounded: 5 s,
  // 1 s after a second signal). Stopping the I/O threads with writes pending would leave each such
  // exchange's handlers, and what they own, unreleased.
  const auto write_deadline =
      std::chrono::steady_clock::now() + (num_signals >= 2 ? std::chrono::seconds(1) : std::chrono::seconds(5));
  while (http.stats().num_open_exchanges.load() > 0 && std::chrono::steady_clock::now() < write_deadline) {
    signals.wait_until(3, std::chrono::steady_clock::now() + std::chrono::milliseconds(10));
  }
  http.stop();
  std::cerr << "pagedllm serve: stopped\n";
  return 0;
}

}  // namespace pagedllm::cli
