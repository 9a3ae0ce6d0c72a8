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
  server::HttpServerConfig http;
  std::string api_key;
  std::string allowed_origins;  // vLLM's CORS flags, as JSON lists or comma-separated
  std::string allowed_methods = "*";
  std::string allowed_headers = "*";
  bool allow_credentials = false;
  int32_t max_pending_requests = 1024;
  EngineOptions engine;
  ExecutorOptions executor;
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
  if (options.executor.executor != "cpu") {
    throw po::error("--executor " + options.executor.executor +
                    ": serving needs an executor that computes tokens (cpu)");
  }
  const std::string served_name = options.served_model_name.empty() ? options.model : options.served_model_name;
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
                                                .cors = cors},
                        bundle, metrics);
  server::HttpServer http(options.http,
                          [&api](server::HttpRequest&& request, std::shared_ptr<server::Exchange> exchange) {
                            api.handle(std::move(request), std::move(exchange));
                          });
  // SIGINT / SIGTERM: stop accepting, end every request with a 503 (streams get an error event
  // and [DONE]), let the answers drain, then stop.
  std::mutex stop_mutex;
  std::condition_variable stop_signal;
  bool stop_requested = false;
  boost::asio::signal_set signals(http.io_context(), SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& error, int) {
    if (error) return;
    const std::lock_guard lock(stop_mutex);
    stop_requested = true;
    stop_signal.notify_all();
  });
  http.start();
  std::cerr << "pagedllm serve: listening on http://" << options.http.host << ":" << http.port() << " (model '"
            << served_name << "', open files limit " << open_files << "), loading weights\n";

  const auto model_max_len = frontend::context_length(bundle);
  frontend::ServingEngineConfig config;
  config.engine = engine_config_from(options.engine, model_max_len);
  config.engine.cache.num_device_blocks = options.engine.num_gpu_blocks_override;
  frontend::apply_model_limits(bundle, config.engine);
  config.max_pending_requests = options.max_pending_requests;
  ExecutorSetup setup = make_executor(options.executor, bundle, config.engine);
  config.engine.cache = setup.cache;
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
            << config.engine.scheduler.max_model_len << '\n'
            << std::flush;
  {
    std::unique_lock lock(stop_mutex);
    stop_signal.wait(lock, [&] { return stop_requested; });
  }
  std::cerr << "pagedllm serve: stopping\n";
  http.stop_accepting();
  engine.stop();  // every pending request's last update is posted to its connection
  const auto drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (http.stats().num_open_exchanges.load() > 0 && std::chrono::steady_clock::now() < drain_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  http.stop();
  std::cerr << "pagedllm serve: stopped\n";
  return 0;
}

}  // namespace pagedllm::cli
