// `pagedllm simulate`: a trace through a simulated cluster (R replicas of the engine's own core,
// each on the roofline cost model of a GPU or on a measured step profile), with replay's
// metrics, the memory view and cost.
#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/metrics/arrival_order_records.h"
#include "core/metrics/request_records.h"
#include "core/metrics/serving_metrics.h"
#include "core/trace/materialize.h"
#include "core/trace/request_stream.h"
#include "core/trace/trace_formats.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/engine_options.h"
#include "tools/pagedllm/executor_factory.h"
#include "tools/pagedllm/progress_bar.h"
#include "tools/pagedllm/run_report.h"
#include "tools/pagedllm/sim_setup.h"
#include "tools/pagedllm/subcommands.h"
#include "tools/pagedllm/trace_input.h"
#include "tools/pagedllm/trace_requests.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct SimulateOptions {
  TraceInputOptions trace;
  std::string model = "llama-2-7b";
  std::string time = "virtual";
  TraceRequestOptions requests;
  int32_t num_replicas = 1;
  std::string router = "round-robin";
  int32_t max_imbalance = 8;
  std::string allocator = "paged";
  double usd_per_gpu_hour = 0.0;
  int32_t host_cores = 0;
  double serving_cpu_us_per_token = 0.0;
  std::string host_interference;  // NAME=FRACTION,... (sim::HostInterference::parse)
  double serving_latency_ms = 0.0;
  double max_wall_seconds = 0.0;
  bool quiet = false;
  RunReportOptions report;
  EngineOptions engine;
  ExecutorOptions executor;
};

}  // namespace

int run_simulate(const std::vector<std::string>& args) {
  SimulateOptions options;
  po::options_description description(
      "pagedllm simulate: a trace through simulated GPUs running the engine's own scheduler and KV manager\n"
      "  pagedllm simulate --trace T --model llama-2-7b --hardware h100-sxm [--tensor-parallel-size N] [--replicas R "
      "--router ...]");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("model,m", po::value(&options.model)->default_value(options.model),
       ("a shape preset (" + model::model_shape_names() + ") or a model directory, .gguf, fetched name or 'tiny'").c_str())
      ("time", po::value(&options.time)->default_value(options.time), "virtual (arrivals as traced) or fast (all at time 0)")
      ("replicas", po::value(&options.num_replicas)->default_value(1), "engine replicas (each --tp GPUs)")
      ("router", po::value(&options.router)->default_value(options.router),
       "round-robin, least-outstanding or prefix-affinity")
      ("max-imbalance", po::value(&options.max_imbalance)->default_value(options.max_imbalance),
       "prefix-affinity: outstanding requests a replica may have over the least loaded")
      ("allocator", po::value(&options.allocator)->default_value(options.allocator),
       "paged (blocks of --block-size) or contiguous (max-model-len reserved per sequence: the pre-vLLM baseline)")
      ("usd-per-gpu-hour", po::value(&options.usd_per_gpu_hour)->default_value(0.0),
       "price of one GPU-hour (0 = the hardware preset's indicative price)")
      ("host-cores", po::value(&options.host_cores)->default_value(0),
       "with a CPU engine's --profile: the replicas share one host of this many cores; while k replicas step, "
       "each step runs at min(1, cores / (k x the profile's threads)) of its profiled speed (processor sharing; "
       "0 = each replica on its own hardware)")
      ("host-interference", po::value(&options.host_interference),
       "with --host-cores: how much longer a step takes beside one neighbour stepping at the same time, by what "
       "each does (caches, memory bandwidth): decode_by_decode=F,decode_by_prefill=F,prefill_by_decode=F,"
       "prefill_by_prefill=F (fractions, 0.15 = 15% longer; absent ones 0); measure them on the host "
       "(tools/bench/sim_vs_replicas.py)")
      ("serving-cpu-us-per-token", po::value(&options.serving_cpu_us_per_token)->default_value(0.0),
       "with --host-cores: CPU microseconds the host spends outside the engines per output token (the replicas' "
       "HTTP threads, a router, clients on the host), which compete with the replicas for its cores; measure it "
       "on the idle deployment")
      ("serving-latency-ms", po::value(&options.serving_latency_ms)->default_value(0.0),
       "per request, the client's time outside the engine (HTTP, tokenization, a router's hop, the SSE event), "
       "added to TTFT and end-to-end latency; measure it on the idle deployment")
      ("max-wall-seconds", po::value(&options.max_wall_seconds)->default_value(0.0),
       "stop after this much wall time (from the start, trace reading included) and report the requests "
       "finished by then (0 = no limit)")
      ("quiet,q", po::bool_switch(&options.quiet), "no progress bar");
  // clang-format on
  add_trace_input_options(description, options.trace);
  add_trace_request_options(description, options.requests);
  add_run_report_options(description, options.report);
  add_engine_options(description, options.engine);
  add_executor_options(description, options.executor);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  // The limit counts from here: reading the trace is part of the run.
  const std::function<bool()> past_deadline = wall_clock_limit(options.max_wall_seconds);
  const engine::TimeMode time_mode = engine::parse_time_mode(options.time);
  if (time_mode == engine::TimeMode::real) throw po::error("--time real: the simulator runs in virtual time only");
  const sim::RouterPolicy router = sim::parse_router_policy(options.router);
  if (options.allocator != "paged" && options.allocator != "contiguous") {
    throw po::error("--allocator: expected paged or contiguous, got '" + options.allocator + "'");
  }
  if (options.allocator == "contiguous" && !options.executor.profile.empty()) {
    throw po::error("--allocator contiguous: a profile is measured on paged blocks of its block size");
  }

  const SimModel model = resolve_sim_model(
      simulated_model_argument(options.model, !values["model"].defaulted(), options.executor.sim_model));
  const tokenizer::Tokenizer* tokenizer = model.bundle ? &model.bundle->tokenizer : nullptr;
  // A pagedllm JSONL trace whose arrivals are in order streams: one pass checks every line (the
  // report and the count below), the run reads it again as it goes, so memory follows the
  // requests in flight. Other formats, and a file out of order, are read whole (and sorted).
  trace::ReadReport read_report;
  std::optional<trace::Trace> whole_trace;
  bool streamed = false;
  if (trace::parse_trace_format(options.trace.format) == trace::TraceFormat::pagedllm) {
    trace::TraceScan scan = trace::scan_trace_jsonl(options.trace.path, read_options(options.trace));
    if (scan.first_out_of_order_line == 0) {
      streamed = true;
      read_report = std::move(scan.report);
      print_read_report(read_report, std::cerr);
    }
  }
  if (!streamed) {
    whole_trace = read_trace_input(options.trace, token_counter(tokenizer), read_report, std::cerr);
  }

  const int64_t context = model.shape.max_position_embeddings;
  if (context <= 0 && options.engine.max_model_len <= 0) {
    throw po::error("the model's context length is unknown: give --max-model-len");
  }
  engine::EngineConfig config = engine_config_from(
      options.engine,
      static_cast<int32_t>(std::max<int64_t>(std::min<int64_t>(context, 1 << 20), options.engine.max_model_len)));
  if (options.allocator == "contiguous") {
    // One block per sequence holding its whole context, reserved up front: what serving systems
    // before vLLM did. Nothing is shared, so the prefix cache has nothing to offer.
    config.cache.block_size = config.scheduler.max_model_len;
    config.cache.enable_prefix_caching = false;
  }
  config.cache.num_device_blocks = options.engine.num_gpu_blocks_override;
  config.output_kind = engine::OutputKind::final_only;  // only finished requests are read
  config.record_step_metrics = false;                   // the report reads the engine's step totals and timeline
  const SimBackend backend =
      make_sim_backend(options.executor, model.shape, model.bundle ? &model.bundle->config : nullptr, config);
  config.cache = backend.cache;
  if (options.host_cores < 0) throw po::error("--host-cores: expected 0 (none) or a number of cores");
  if (options.host_cores > 0 && !backend.cpu_profile) {
    throw po::error("--host-cores: only CPU replicas share a host's cores; it needs a --profile of the CPU engine");
  }
  if (!(options.serving_latency_ms >= 0.0)) throw po::error("--serving-latency-ms: expected 0 or more");
  if (!(options.serving_cpu_us_per_token >= 0.0) || !std::isfinite(options.serving_cpu_us_per_token)) {
    throw po::error("--serving-cpu-us-per-token: expected 0 or more");
  }
  if (options.serving_cpu_us_per_token > 0.0 && options.host_cores == 0) {
    throw po::error(
        "--serving-cpu-us-per-token: the serving path's CPU competes for a shared host's cores; "
        "it needs --host-cores");
  }
  sim::HostInterference interference;
  if (!options.host_interference.empty()) {
    if (options.host_cores == 0)
      throw po::error("--host-interference: replicas interfere on a shared host; it needs --host-cores");
    try {
      interference = sim::HostInterference::parse(options.host_interference);
    } catch (const std::invalid_argument& error) {
      throw po::error(std::string("--host-interference: ") + error.what());
    }
  }
  const sim::HostSharing host{
      .num_cores = options.host_cores,
      .threads_per_replica = backend.cpu_threads > 0 ? backend.cpu_threads : std::max(options.host_cores, 1),
      .serving_cpu_seconds_per_token = options.serving_cpu_us_per_token * 1e-6,
      .interference = interference};

  const int32_t vocab_size = static_cast<int32_t>(model.shape.vocab_size);
  const RequestTarget target{.max_model_len = config.scheduler.max_model_len,
                             .vocab_size = vocab_size,
                             .tokenizer = tokenizer,
                             .synthetic_prompts_unwritten = true};
  // The requests: streamed from the file, or materialized from the whole trace (prompts written
  // on arrival either way).
  std::unique_ptr<engine::RequestSource> source;
  trace::TraceRequestStream* stream = nullptr;
  trace::MaterializedTrace materialized;
  if (whole_trace) {
    materialized = materialize_trace(*whole_trace, options.trace.path, options.requests, target, std::cerr);
    whole_trace.reset();
    if (time_mode == engine::TimeMode::fast) {
      for (sched::Request& request : materialized.requests) request.arrival_time = 0.0;
    }
    source = std::make_unique<engine::VectorRequestSource>(std::move(materialized.requests));
  } else {
    int64_t expected = read_report.requests_accepted;
    if (options.trace.max_requests > 0) expected = std::min(expected, options.trace.max_requests);
    auto owned = std::make_unique<trace::TraceRequestStream>(
        trace::TraceStreamConfig{.path = options.trace.path,
                                 .read = read_options(options.trace),
                                 .materialize = materialize_config(options.requests, target),
                                 .max_requests = options.trace.max_requests,
                                 .arrivals_at_zero = time_mode == engine::TimeMode::fast,
                                 .expected_count = expected});
    stream = owned.get();
    source = std::move(owned);
  }

  // Each request's record is summed up (and its JSON entry spilled) once every earlier arrival
  // has ended: the run holds the records of the requests in flight, not of the trace.
  metrics::ServingMetricsAccumulator accumulator(metrics_options(options.report));
  std::optional<RequestsJsonSpill> spill;
  if (!options.report.output_json.empty()) spill.emplace(options.report.output_json + ".requests.partial");
  metrics::ArrivalOrderRecords records([&](metrics::RequestRecord&& record) {
    accumulator.add(record);
    if (spill) spill->add(record);
  });
  int64_t output_tokens = 0;
  int64_t num_ended = 0;

  ProgressBar progress("simulate", source->expected_count(), !options.quiet);
  SimRunSpec spec{.config = config,
                  .cost_model = backend.cost_model,
                  .draft = backend.draft,
                  .vocab_size = vocab_size,
                  .num_replicas = options.num_replicas,
                  .router = {.policy = router, .max_imbalance = options.max_imbalance},
                  .host = host,
                  .serving_path_seconds = options.serving_latency_ms / 1000.0,
                  .on_progress =
                      [&](const engine::ReplayProgress& p) {
                        std::ostringstream detail;
                        detail << "running " << p.num_running << ", waiting " << p.num_waiting << ", t=" << std::fixed
                               << std::setprecision(1) << p.now << " s";
                        progress.update(p.num_finished, detail.str());
                      },
                  .should_stop = past_deadline,
                  .on_arrival = [&](sched::Request& request) { records.arrived(request.id); },
                  .on_finished =
                      [&](engine::RequestOutput&& output) {
                        ++num_ended;
                        for (const engine::Completion& completion : output.completions)
                          output_tokens += static_cast<int64_t>(completion.tokens.size());
                        records.ended(metrics::to_request_record(std::move(output)));
                      },
                  .on_refused =
                      [&](engine::RefusedRequest&& refused) {
                        ++num_ended;
                        records.ended(metrics::to_request_record(refused));
                      }};
  SimRunOutput run = run_simulation(spec, *source);
  records.flush();
  const sim::ClusterSimulation& cluster = *run.cluster;
  const engine::ReplayResult& result = run.result;
  const double duration = result.end_time - result.start_time;
  const metrics::ServingMetrics serving =
      accumulator.finish(duration > 0.0 ? std::optional<double>(duration) : std::nullopt);
  progress.finish(result.stopped ? "stopped by --max-wall-seconds" : "done", num_ended);
  const trace::MaterializeReport& materialize_report =
      stream != nullptr ? stream->materialize_report() : static_cast<const trace::MaterializeReport&>(materialized);
  // The requests the run was given: a stream's lines less those it left out.
  int64_t num_requests = source->expected_count();
  if (stream != nullptr) {
    num_requests -= static_cast<int64_t>(materialize_report.rejected.size());
    for (const trace::TraceIssue& issue : materialize_report.rejected)
      std::cerr << "rejected: " << issue.to_string() << '\n';
  }
  if (result.stopped) {
    std::printf(
        "Stopped by --max-wall-seconds %g at simulated t=%.1f s: %lld of %lld requests finished; the metrics "
        "below cover those (the rest were still waiting or running)\n",
        options.max_wall_seconds, result.end_time, static_cast<long long>(num_ended),
        static_cast<long long>(num_requests));
  }

  std::ostringstream executor_description;
  executor_description << backend.description << " per replica, " << options.num_replicas << " replica(s), "
                       << sim::to_string(router) << ", " << options.allocator << " KV, " << backend.sizing;
  if (host.enabled()) {
    executor_description << ", sharing " << host.num_cores << " cores (" << host.threads_per_replica
                         << " thread(s) per replica";
    if (host.serving_cpu_seconds_per_token > 0.0)
      executor_description << ", serving path " << options.serving_cpu_us_per_token << " CPU us per token";
    if (host.interference.any()) executor_description << ", interference " << options.host_interference;
    executor_description << ")";
  }
  if (options.serving_latency_ms > 0.0)
    executor_description << ", serving path " << options.serving_latency_ms << " ms";
  RunReportInput input{.executor = "sim",
                       .executor_description = executor_description.str(),
                       .trace_path = options.trace.path,
                       .time_mode = engine::to_string(time_mode),
                       .read_report = &read_report,
                       .materialized = &materialize_report,
                       .result = nullptr,
                       .serving = &serving,
                       .requests_spill = spill ? &*spill : nullptr,
                       .engines = {}};
  for (int32_t i = 0; i < cluster.num_replicas(); ++i) input.engines.push_back(&cluster.replica(i));
  const double usd_per_gpu_hour = options.usd_per_gpu_hour > 0.0 ? options.usd_per_gpu_hour : backend.usd_per_gpu_hour;
  const int32_t num_gpus = options.num_replicas * backend.tensor_parallel;
  input.config = {{"model", backend.model_name},
                  {"hardware", backend.device},
                  {"cost_model", cost_model_name(options.executor)},
                  {"tensor_parallel", backend.tensor_parallel},
                  {"replicas", options.num_replicas},
                  {"router", sim::to_string(router)},
                  {"allocator", options.allocator},
                  {"rate_scale", options.requests.rate_scale},
                  {"block_size", config.cache.block_size},
                  {"num_device_blocks_per_replica", config.cache.num_device_blocks},
                  {"max_model_len", config.scheduler.max_model_len},
                  {"max_num_seqs", config.scheduler.max_num_seqs},
                  {"max_num_batched_tokens", config.scheduler.max_num_batched_tokens},
                  {"usd_per_gpu_hour", usd_per_gpu_hour},
                  {"host_cores", host.num_cores},
                  {"threads_per_replica", host.enabled() ? host.threads_per_replica : 0},
                  {"serving_latency_ms", options.serving_latency_ms},
                  {"serving_cpu_us_per_token", options.serving_cpu_us_per_token},
                  {"host_interference",
                   {{"decode_by_decode", host.interference.decode_by_decode},
                    {"decode_by_prefill", host.interference.decode_by_prefill},
                    {"prefill_by_decode", host.interference.prefill_by_decode},
                    {"prefill_by_prefill", host.interference.prefill_by_prefill}}},
                  {"simulated_events", cluster.counters().num_events()},
                  {"stopped_by_wall_limit", result.stopped},
                  {"unfinished_requests", num_requests - num_ended}};
  const int status = write_run_report(input, options.report, std::cout);
  const double gpu_hours = num_gpus * duration / 3600.0;
  if (usd_per_gpu_hour <= 0.0) {
    std::printf("Cost: %d device(s) for %.1f s; no price for %s (--usd-per-gpu-hour)\n", num_gpus, duration,
                backend.device.c_str());
    return status;
  }
  std::printf("Cost: %d GPU(s) x $%.2f/h for %.1f s = $%.4f; $%.3f per million output tokens\n", num_gpus,
              usd_per_gpu_hour, duration, gpu_hours * usd_per_gpu_hour,
              output_tokens > 0 ? gpu_hours * usd_per_gpu_hour / (static_cast<double>(output_tokens) / 1e6) : 0.0);
  return status;
}

}  // namespace pagedllm::cli
