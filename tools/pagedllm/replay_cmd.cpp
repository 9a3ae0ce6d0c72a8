// `pagedllm replay`: a trace through the engine on an executor (the CPU reference engine or the
// simulator), with the serving metrics of vLLM's benchmark_serving and what the KV cache did.
#include <algorithm>
#include <boost/program_options.hpp>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/engine/clock.h"
#include "core/engine/engine.h"
#include "core/engine/replay.h"
#include "core/frontend/model_bundle.h"
#include "core/kv/kv_event_log.h"
#include "core/model/model_shape.h"
#include "core/trace/materialize.h"
#include "sim/step_prediction.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/default_model.h"
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

struct ReplayOptions {
  ModelTraceOptions input;  // --model, the trace, and how its requests are made
  std::string time = "virtual";
  RunReportOptions report;
  std::string kv_events;
  std::string check_profile;
  bool quiet = false;
  EngineOptions engine;
  ExecutorOptions executor;
};

// The table of --check-profile, and its JSON section.
nlohmann::json report_step_prediction(const sim::StepPredictionReport& report, const std::string& description,
                                      std::ostream& out) {
  out << "---------------Step prediction-----------------\n"
      << description << ": each real step against the profile's prediction for its plan\n";
  out << std::left << std::setw(9) << "steps" << std::right << std::setw(8) << "count" << std::setw(13) << "measured s"
      << std::setw(13) << "predicted s" << std::setw(9) << "error" << std::setw(14) << "median ratio" << '\n';
  nlohmann::json section = {{"profile", description}};
  const auto row = [&](const std::string& name, const sim::StepPredictionTally& tally) {
    out << std::left << std::setw(9) << name << std::right << std::setw(8) << tally.num_steps << std::fixed
        << std::setprecision(4) << std::setw(13) << tally.measured_seconds << std::setw(13) << tally.predicted_seconds
        << std::showpos << std::setprecision(1) << std::setw(8) << 100.0 * tally.total_error() << '%' << std::noshowpos
        << std::setprecision(3) << std::setw(14) << tally.median_ratio() << '\n';
    out.unsetf(std::ios::floatfield);
    section[name] = {{"steps", tally.num_steps},
                     {"measured_seconds", tally.measured_seconds},
                     {"predicted_seconds", tally.predicted_seconds},
                     {"error", tally.total_error()},
                     {"median_ratio", tally.median_ratio()}};
  };
  for (int32_t kind = 0; kind < sim::kNumStepKinds; ++kind) {
    row(sim::to_string(static_cast<sim::StepKind>(kind)), report.by_kind[static_cast<size_t>(kind)]);
  }
  row("all", report.all);
  out << "==================================================\n";
  return section;
}

}  // namespace

int run_replay(const std::vector<std::string>& args) {
  ReplayOptions options;
  po::options_description description(
      "pagedllm replay: a request trace through the engine, with vLLM's serving metrics\n"
      "  pagedllm replay --trace traces/sharegpt_like.jsonl [--executor cpu|cuda|sim] [--time virtual|real|fast]");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("model,m", po::value(&options.input.model)->default_value(options.input.model),
       "a .gguf file, a Hugging Face directory, a fetched model's name, or 'tiny' (the embedded test model)")
      ("time", po::value(&options.time)->default_value(options.time),
       "virtual (the executor's step times, idle gaps skipped), real (wall clock, waits for arrivals), "
       "fast (every request at time 0)")
      ("kv-events", po::value(&options.kv_events), "write the KV event log (JSONL) to this file")
      ("check-profile", po::value(&options.check_profile),
       "cpu: price every real step with this measured profile too and report its error by step kind (the "
       "simulator's error on the real schedule; --profile-quiet and --profile-engine-overhead apply)")
      ("quiet,q", po::bool_switch(&options.quiet), "no progress bar");
  // clang-format on
  add_trace_input_options(description, options.input.trace);
  add_trace_request_options(description, options.input.requests);
  add_run_report_options(description, options.report);
  add_engine_options(description, options.engine);
  add_executor_options(description, options.executor);
  add_cuda_options(description, options.executor.cuda);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  const engine::TimeMode time_mode = engine::parse_time_mode(options.time);
  if (time_mode == engine::TimeMode::real && options.executor.executor == "sim") {
    throw po::error("--time real: the simulator runs in virtual time only");
  }

  const ModelTrace input_trace = read_model_trace(options.input, std::cerr);
  const frontend::ModelBundle& bundle = input_trace.bundle;

  const auto model_max_len = frontend::context_length(bundle);
  // A simulated shape preset is not the --model: its context length is the user's to set.
  const bool preset_shape = options.executor.executor == "sim" && !options.executor.sim_model.empty();
  engine::EngineConfig config = engine_config_from(
      options.engine, preset_shape ? std::max(model_max_len, options.engine.max_model_len) : model_max_len);
  config.cache.num_device_blocks = options.engine.num_gpu_blocks_override;
  // replay_requests keeps only final outputs: a cumulative report per step would copy every
  // request's tokens each step (quadratic in the output length).
  config.output_kind = engine::OutputKind::final_only;
  config.record_step_metrics = false;  // the report reads the engine's step totals and timeline
  frontend::apply_model_limits(bundle, config);
  ExecutorSetup setup = make_executor(options.executor, bundle, config);
  config.cache = setup.cache;
  std::optional<sim::PredictingExecutor> predicting;
  std::string prediction_description;
  if (!options.check_profile.empty()) {
    if (options.executor.executor == "sim") throw po::error("--check-profile: prices the steps of a real executor");
    ExecutorOptions profile_options = options.executor;
    profile_options.profile = options.check_profile;
    // Sized already: the profile prices the steps, its sizing is not used.
    const SimBackend backend = make_sim_backend(
        profile_options, model::model_shape_from_config(bundle.config, bundle.source.path), &bundle.config, config);
    predicting.emplace(*setup.executor, backend.cost_model);
    prediction_description = backend.description;
  }
  engine::Executor& executor = predicting ? static_cast<engine::Executor&>(*predicting) : *setup.executor;

  trace::MaterializedTrace requests =
      input_trace.requests(options.input.requests, config.scheduler.max_model_len, std::cerr);

  std::ofstream kv_events_file;
  std::optional<kv::KvEventLog> kv_events;
  if (!options.kv_events.empty()) {
    kv_events_file.open(options.kv_events, std::ios::binary);
    if (!kv_events_file) throw std::runtime_error(options.kv_events + ": cannot open for writing");
    kv_events.emplace(kv_events_file);
  }
  engine::VirtualClock virtual_clock;
  engine::WallClock wall_clock;
  engine::Clock& clock = time_mode == engine::TimeMode::real ? static_cast<engine::Clock&>(wall_clock) : virtual_clock;
  engine::Engine engine(config, executor, clock, kv_events ? &*kv_events : nullptr, setup.draft_model.get());

  std::cerr << "replay: " << input_trace.trace.requests.size() << " requests from " << options.input.trace.path
            << " on " << setup.description << ", " << engine::to_string(time_mode) << " time\n";
  const auto num_requests = static_cast<int64_t>(requests.requests.size());
  ProgressBar progress("replay", num_requests, !options.quiet);
  engine::ReplayConfig replay_config;
  replay_config.on_progress = [&](const engine::ReplayProgress& p) {
    std::ostringstream detail;
    detail << "running " << p.num_running << ", waiting " << p.num_waiting << ", t=" << std::fixed
           << std::setprecision(1) << p.now << " s";
    progress.update(p.num_finished, detail.str());
  };
  engine::ReplayResult result =
      engine::replay_requests(engine, clock, std::move(requests.requests), time_mode, replay_config);
  progress.finish("done");

  RunReportInput input{.executor = options.executor.executor,
                       .executor_description = setup.description,
                       .trace_path = options.input.trace.path,
                       .time_mode = engine::to_string(time_mode),
                       .read_report = &input_trace.read_report,
                       .materialized = &requests,
                       .result = &result,
                       .engines = {&engine}};
  input.config = {{"model", bundle.source.path},
                  {"rate_scale", options.input.requests.rate_scale},
                  {"over_length", options.input.requests.over_length},
                  {"seed", options.input.requests.seed},
                  {"block_size", config.cache.block_size},
                  {"max_model_len", config.scheduler.max_model_len},
                  {"max_num_seqs", config.scheduler.max_num_seqs},
                  {"max_num_batched_tokens", config.scheduler.max_num_batched_tokens},
                  {"chunked_prefill", config.scheduler.enable_chunked_prefill},
                  {"prefix_caching", config.cache.enable_prefix_caching},
                  {"preemption_mode", options.engine.preemption_mode}};
  std::ostringstream prediction_text;  // printed after the serving report
  if (predicting) {
    input.sections["step_prediction"] =
        report_step_prediction(predicting->report(), prediction_description, prediction_text);
  }
  const int status = write_run_report(input, options.report, std::cout);
  std::cout << prediction_text.str();
  return status;
}

}  // namespace pagedllm::cli
