// `pagedllm bench`: load on an OpenAI-compatible server (ours, vLLM, ...) from a trace or vLLM's
// random dataset, streamed over HTTP, with the serving metrics `replay` reports (core/metrics:
// the same definitions, the same printed report).
#include <boost/program_options.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/metrics/serving_metrics.h"
#include "core/metrics/serving_metrics_json.h"
#include "core/metrics/serving_metrics_report.h"
#include "tools/bench/bench_requests.h"
#include "tools/bench/http_load_client.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/progress_bar.h"
#include "tools/pagedllm/run_report.h"
#include "tools/pagedllm/subcommands.h"
#include "tools/pagedllm/trace_input.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct BenchOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string endpoint = std::string(bench::kCompletionsPath);
  std::string model;  // "" = the first of GET /v1/models
  std::string api_key;
  TraceInputOptions trace;
  std::string dataset;  // "random" (without --trace)
  bench::RandomDatasetConfig random;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  double rate_scale = 1.0;
  int32_t max_concurrency = 0;
  uint64_t seed = 0;
  bool ignore_eos = true;
  std::string synthetic_token_range =
      std::to_string(bench::kDefaultSyntheticTokenBegin) + ":" + std::to_string(bench::kDefaultSyntheticTokenEnd);
  std::string extra_body;
  double request_timeout = 0.0;
  double idle_timeout = 600.0;
  bool quiet = false;
  RunReportOptions report;
};

std::pair<TokenId, TokenId> parse_token_range(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) throw po::error("--synthetic-token-range: expected BEGIN:END, got '" + text + "'");
  const double begin = parse_number(text.substr(0, colon), "--synthetic-token-range");
  const double end = parse_number(text.substr(colon + 1), "--synthetic-token-range");
  if (!(begin >= 0 && end > begin && end <= std::numeric_limits<int32_t>::max()) || begin != std::floor(begin) ||
      end != std::floor(end)) {
    throw po::error("--synthetic-token-range: need integers 0 <= BEGIN < END, got '" + text + "'");
  }
  return {static_cast<TokenId>(begin), static_cast<TokenId>(end)};
}

// The id of the first model GET /v1/models lists.
std::string first_served_model(const BenchOptions& options) {
  const std::string body = bench::http_get(options.base_url, "/v1/models", options.api_key);
  const nlohmann::json models = nlohmann::json::parse(body, nullptr, false);
  if (models.is_discarded() || !models.contains("data") || !models["data"].is_array() || models["data"].empty() ||
      !models["data"][0].contains("id") || !models["data"][0]["id"].is_string()) {
    throw std::runtime_error("GET " + options.base_url + "/v1/models lists no model; give --model");
  }
  return models["data"][0]["id"].get<std::string>();
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  BenchOptions options;
  po::options_description description(
      "pagedllm bench: load on an OpenAI-compatible server, with vLLM's serving metrics\n"
      "  pagedllm bench --trace traces/sharegpt_like.jsonl [--base-url http://127.0.0.1:8000] [--request-rate 4]\n"
      "  pagedllm bench --dataset random --num-prompts 200 --input-len 512 --output-len 128 --max-concurrency 32");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("base-url", po::value(&options.base_url)->default_value(options.base_url), "the server: http://host:port")
      ("endpoint", po::value(&options.endpoint)->default_value(options.endpoint),
       "/v1/completions or /v1/chat/completions (text prompts only)")
      ("model", po::value(&options.model), "the model named in requests (default: the first of GET /v1/models)")
      ("api-key", po::value(&options.api_key), "sent as Authorization: Bearer KEY")
      ("trace", po::value(&options.trace.path), "the trace to send (its arrival times, unless --request-rate)")
      ("dataset", po::value(&options.dataset), "random: vLLM's random dataset (without --trace)")
      ("num-prompts", po::value(&options.random.num_prompts)->default_value(options.random.num_prompts),
       "random: requests")
      ("input-len", po::value(&options.random.input_len)->default_value(options.random.input_len),
       "random: prompt tokens")
      ("output-len", po::value(&options.random.output_len)->default_value(options.random.output_len),
       "random: output tokens")
      ("random-range-ratio", po::value(&options.random.range_ratio)->default_value(0.0),
       "random: lengths uniform in [len * (1 - r), len * (1 + r)]")
      ("random-prefix-len", po::value(&options.random.prefix_len)->default_value(0),
       "random: tokens of a prefix every prompt shares")
      ("request-rate", po::value(&options.request_rate)->default_value(options.request_rate),
       "requests per second (inf: all at once); with --trace, replaces its arrival times")
      ("burstiness", po::value(&options.burstiness)->default_value(1.0),
       "gamma shape of the arrival gaps (1 = Poisson, < 1 burstier)")
      ("rate-scale", po::value(&options.rate_scale)->default_value(1.0), "--trace: divide its arrival times")
      ("max-concurrency", po::value(&options.max_concurrency)->default_value(0),
       "requests in flight at most (0 = unlimited)")
      ("seed", po::value(&options.seed)->default_value(0), "arrivals, random lengths and synthetic prompt content")
      ("ignore-eos", po::value(&options.ignore_eos)->default_value(true, "true"),
       "send \"ignore_eos\": true so outputs have the requested lengths (false: let requests stop at EOS)")
      ("synthetic-token-range", po::value(&options.synthetic_token_range)->default_value(options.synthetic_token_range),
       "BEGIN:END, the token ids of prompts given only by length (the API cannot tell the vocabulary; the "
       "default suits any vocabulary of 900+ tokens whose special tokens lie outside it, the tiny model's included)")
      ("extra-body", po::value(&options.extra_body), "JSON object merged into every request body")
      ("timeout", po::value(&options.request_timeout)->default_value(0.0),
       "seconds a request may take in all (0 = no limit)")
      ("idle-timeout", po::value(&options.idle_timeout)->default_value(options.idle_timeout),
       "seconds a request may wait for the server's next bytes")
      ("quiet,q", po::bool_switch(&options.quiet), "no progress bar");
  // clang-format on
  add_trace_input_options(description, options.trace, false);
  // replay's report options, with help that fits a run without an engine to summarize.
  po::options_description report("report");
  // clang-format off
  report.add_options()
      ("goodput", po::value(&options.report.goodput)->multitoken(),
       "service-level objectives for goodput, in ms: ttft:MS tpot:MS e2el:MS (as vLLM)")
      ("percentiles", po::value(&options.report.percentiles)->default_value(options.report.percentiles),
       "latency percentiles to report, comma-separated")
      ("output-json,o", po::value(&options.report.output_json),
       "write the config, the metrics and per-request latencies to this JSON file");
  // clang-format on
  description.add(report);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;

  if (options.endpoint != bench::kCompletionsPath && options.endpoint != bench::kChatCompletionsPath) {
    throw po::error("--endpoint: expected /v1/completions or /v1/chat/completions, got '" + options.endpoint + "'");
  }
  const double request_rate = parse_number(options.request_rate, "--request-rate", true);
  if (!(request_rate > 0.0)) throw po::error("--request-rate: must be positive (inf: all at once)");
  const metrics::MetricsOptions metric_options = metrics_options(options.report);
  const auto [token_begin, token_end] = parse_token_range(options.synthetic_token_range);
  nlohmann::json extra_body = nlohmann::json::object();
  if (!options.extra_body.empty()) {
    extra_body = nlohmann::json::parse(options.extra_body, nullptr, false);
    if (!extra_body.is_object()) throw po::error("--extra-body: expected a JSON object");
  }

  trace::Trace trace;
  trace::ReadReport read_report;
  std::string source;
  if (!options.trace.path.empty()) {
    if (!options.dataset.empty()) throw po::error("give --trace or --dataset, not both");
    // No tokenizer here: ShareGPT needs one (convert it with `pagedllm trace convert` first).
    trace = read_trace_input(options.trace, nullptr, read_report, std::cerr);
    source = options.trace.path;
  } else if (options.dataset == "random") {
    if (options.endpoint == bench::kChatCompletionsPath) {
      throw po::error("--dataset random: its prompts are token ids, which only " +
                      std::string(bench::kCompletionsPath) +
                      " takes (vLLM's bench turns them into text with the model's tokenizer; this client has none): "
                      "use --endpoint " +
                      std::string(bench::kCompletionsPath) + ", or a --trace with text prompts");
    }
    options.random.request_rate = request_rate;
    options.random.burstiness = options.burstiness;
    options.random.seed = options.seed;
    trace = bench::random_dataset(options.random);
    source = "random";
  } else {
    throw po::error(options.dataset.empty() ? "give --trace FILE or --dataset random"
                                            : "--dataset: only 'random' is built in (use --trace for others)");
  }

  bench::BenchRequestConfig request_config;
  request_config.body.endpoint = options.endpoint;
  request_config.body.model = options.model.empty() ? first_served_model(options) : options.model;
  request_config.body.ignore_eos = options.ignore_eos;
  request_config.body.extra_body = extra_body;
  request_config.synthetic_token_begin = token_begin;
  request_config.synthetic_token_end = token_end;
  request_config.seed = options.seed;
  request_config.rate_scale = options.rate_scale;
  // A trace keeps its own arrivals unless a rate is asked for; the random dataset has its own.
  if (!options.trace.path.empty() && !values["request-rate"].defaulted()) {
    request_config.request_rate = request_rate;
    request_config.burstiness = options.burstiness;
  }
  const bench::BenchRequests prepared = bench::build_bench_requests(trace, request_config, source);
  for (const trace::TraceIssue& issue : prepared.rejected) std::cerr << "rejected: " << issue.to_string() << '\n';
  if (prepared.requests.empty()) throw std::runtime_error(source + ": no request to send");

  std::cerr << "bench: " << prepared.requests.size() << " requests from " << source << " to " << options.base_url
            << options.endpoint << " (model " << request_config.body.model << "), max concurrency "
            << (options.max_concurrency > 0 ? std::to_string(options.max_concurrency) : "unlimited") << '\n';
  const auto num_requests = static_cast<int64_t>(prepared.requests.size());
  ProgressBar progress("bench", num_requests, !options.quiet);
  bench::LoadClientConfig client;
  client.base_url = options.base_url;
  client.api_key = options.api_key;
  client.max_concurrency = options.max_concurrency;
  client.request_timeout = options.request_timeout;
  client.idle_timeout = options.idle_timeout;
  client.on_finished = [&](int64_t num_finished, int64_t num_in_flight) {
    progress.update(num_finished, "in flight " + std::to_string(num_in_flight));
  };
  const bench::LoadResult result = bench::run_load(prepared.requests, client);
  progress.finish("done");

  metrics::MetricsOptions with_duration = metric_options;
  if (result.duration > 0.0) with_duration.duration = result.duration;
  const metrics::ServingMetrics serving = metrics::compute_serving_metrics(result.records, with_duration);
  std::cout << "Server: " << options.base_url << options.endpoint << " (model " << request_config.body.model << ")\n"
            << "Requests: " << source << ": " << num_requests << " sent";
  if (!prepared.rejected.empty()) std::cout << ", " << prepared.rejected.size() << " rejected before sending";
  std::cout << "; max concurrency "
            << (options.max_concurrency > 0 ? std::to_string(options.max_concurrency) : "unlimited") << " (reached "
            << result.max_in_flight << ")\n";
  metrics::print_serving_metrics(serving, std::cout);

  if (!options.report.output_json.empty()) {
    nlohmann::json document;
    document["config"] = {
        {"base_url", options.base_url},
        {"endpoint", options.endpoint},
        {"model", request_config.body.model},
        {"source", source},
        {"request_rate",
         request_config.request_rate || source == "random" ? nlohmann::json(request_rate) : nlohmann::json(nullptr)},
        {"burstiness", options.burstiness},
        {"rate_scale", options.rate_scale},
        {"max_concurrency", options.max_concurrency},
        {"max_in_flight", result.max_in_flight},
        {"seed", options.seed},
        {"ignore_eos", options.ignore_eos},
        {"rejected", prepared.rejected.size()}};
    document["metrics"] = metrics::to_json(serving);
    nlohmann::json requests = nlohmann::json::array();
    for (const metrics::RequestRecord& record : result.records) requests.push_back(request_json(record));
    document["requests"] = std::move(requests);
    std::ofstream file(options.report.output_json);
    if (!file) throw std::runtime_error(options.report.output_json + ": cannot open for writing");
    file << document.dump(2) << '\n';
  }
  // Nothing completed is a failed benchmark (scripts can tell); some failures are part of the report.
  return serving.num_completed > 0 ? 0 : 1;
}

}  // namespace pagedllm::cli
