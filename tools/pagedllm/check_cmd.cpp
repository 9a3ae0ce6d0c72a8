// `pagedllm check`: the lockstep cross-check. The same requests through several executors, all
// under the simulator's virtual clock and one token script (sim/lockstep.h); their KV event logs
// must be identical byte for byte. Prints the first differing line and fails otherwise.
#include <algorithm>
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/frontend/model_bundle.h"
#include "core/model/model_shape.h"
#include "core/trace/materialize.h"
#include "cpu_ref/cpu_executor.h"
#include "sim/lockstep.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"
#include "tools/pagedllm/cli_options.h"
#include "tools/pagedllm/cuda_setup.h"
#include "tools/pagedllm/default_model.h"
#include "tools/pagedllm/engine_options.h"
#include "tools/pagedllm/executor_factory.h"
#include "tools/pagedllm/subcommands.h"
#include "tools/pagedllm/trace_input.h"
#include "tools/pagedllm/trace_requests.h"

namespace pagedllm::cli {
namespace {

namespace po = boost::program_options;

struct CheckOptions {
  ModelTraceOptions input;  // --model, the trace, and how its requests are made
  std::string executors = "sim,cpu";
  std::string kv_events_dir;
  EngineOptions engine;
  // The CPU engine's sizing applies to every executor (their block counts must agree); the
  // simulator's cost model is the clock. Smaller defaults than a run's: a check wants preemption.
  ExecutorOptions executor = [] {
    ExecutorOptions defaults;
    defaults.kv_cache_mib = 64;
    defaults.swap_space_gib = 0.0625;
    return defaults;
  }();
};

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream stream(text);
  for (std::string name; std::getline(stream, name, ',');) {
    if (name != "sim" && name != "cpu" && name != "cuda") {
      throw po::error("--executors: unknown executor '" + name + "' (sim, cpu, cuda)");
    }
    if (name == "cuda") require_cuda_executor();
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      throw po::error("--executors: '" + name + "' is named twice");
    }
    names.push_back(name);
  }
  if (names.size() < 2) throw po::error("--executors: name at least two executors to compare, e.g. sim,cpu");
  return names;
}

}  // namespace

int run_check(const std::vector<std::string>& args) {
  CheckOptions options;
  po::options_description description(
      "pagedllm check: run a trace through several executors in lockstep (the simulator's clock, one token\n"
      "script) and compare their KV event logs byte for byte\n"
      "  pagedllm check --trace traces/mooncake_like.jsonl --executors sim,cpu --num-gpu-blocks-override 256");
  // clang-format off
  description.add_options()
      ("help,h", "show this help")
      ("executors", po::value(&options.executors)->default_value(options.executors), "comma-separated: sim, cpu, cuda")
      ("model,m", po::value(&options.input.model)->default_value(options.input.model), "the model cpu runs ('tiny' = embedded)")
      ("kv-events-dir", po::value(&options.kv_events_dir), "also write each executor's log to DIR/<executor>.jsonl");
  // clang-format on
  add_trace_input_options(description, options.input.trace);
  add_trace_request_options(description, options.input.requests, /*length_and_eos=*/false);
  add_engine_options(description, options.engine);
  // Every executor gets the blocks cpu's --kv-cache-mib and --swap-space give (fp32 KV) unless
  // --num-gpu-blocks-override; the clock is the roofline of --hardware on the model's shape.
  add_cpu_options(description, options.executor);
  add_sim_options(description, options.executor);
  add_memory_options(description, options.executor);
  add_cuda_options(description, options.executor.cuda);
  po::variables_map values;
  if (!parse_options(args, description, values)) return 0;
  const std::vector<std::string> executors = split_names(options.executors);

  const ModelTrace input_trace = read_model_trace(options.input, std::cerr);
  const frontend::ModelBundle& bundle = input_trace.bundle;

  const auto model_max_len = frontend::context_length(bundle);
  engine::EngineConfig config = engine_config_from(options.engine, model_max_len);
  if (config.speculative.method == spec::SpeculativeMethod::draft_model) {
    throw po::error(
        "--speculative-config: the lockstep check runs one token script on every executor, so a draft model has "
        "nothing to propose from; check speculation with the ngram method");
  }
  frontend::apply_model_limits(bundle, config);
  kv::KvCacheConfig& cache = config.cache;
  cache.num_device_blocks =
      options.engine.num_gpu_blocks_override > 0
          ? options.engine.num_gpu_blocks_override
          : cpu_ref::num_kv_blocks_for_bytes(bundle.config, cache.block_size,
                                             static_cast<uint64_t>(options.executor.kv_cache_mib) << 20);
  cache.num_host_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, cache.block_size,
                                                           gib_to_bytes(swap_space_gib_for(options.executor, "cpu")));

  const trace::MaterializedTrace requests =
      input_trace.requests(options.input.requests, config.scheduler.max_model_len, std::cerr);

  sim::RooflineConfig roofline;
  roofline.hardware = sim::find_hardware(options.executor.hardware);
  roofline.model = options.executor.sim_model.empty()
                       ? model::model_shape_from_config(bundle.config, bundle.source.path)
                       : model::find_model_shape(options.executor.sim_model);
  roofline.block_size = cache.block_size;
  const auto cost_model = std::make_shared<const sim::RooflineCostModel>(roofline);
  const engine::ScriptedExecutorConfig script =
      sim::sim_tokens_for(config, static_cast<int32_t>(bundle.config.vocab_size));

  std::cout << "check: " << requests.requests.size() << " requests from " << options.input.trace.path << "; block size "
            << cache.block_size << ", device blocks " << cache.num_device_blocks << ", host blocks "
            << cache.num_host_blocks << "; clock: roofline, " << roofline.model.name << " on " << roofline.hardware.name
            << '\n';
  // The GPU engine is set up before anything runs, so that a machine that cannot run it (no GPU, a
  // head size the kernels lack) says so at once; it keeps the others' block counts.
  std::optional<CudaExecutorSetup> cuda;
  if (std::find(executors.begin(), executors.end(), "cuda") != executors.end()) {
    engine::EngineConfig cuda_config = config;
    const CudaOptions cuda_options = cuda_options_of(options.executor);
    cuda = make_cuda_executor(cuda_options, frontend::load_weights(bundle, {.dtype = host_weight_dtype(cuda_options)}),
                              cuda_config);
  }
  std::shared_ptr<const cpu_ref::LlamaModel> weights;
  std::vector<sim::LockstepRun> runs;
  for (const std::string& name : executors) {
    sim::LockstepRun run;
    if (name == "sim") {
      sim::SimExecutor executor({.cost_model = cost_model, .tokens = script}, cache);
      run = sim::run_lockstep(requests.requests, config, executor);
    } else if (name == "cuda") {
      sim::LockstepExecutor executor(*cuda->executor, {.cost_model = cost_model, .tokens = script}, cache);
      run = sim::run_lockstep(requests.requests, config, executor);
    } else {
      if (!weights) weights = std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(bundle));
      cpu_ref::CpuExecutor cpu(weights, {.cache = cache, .num_threads = options.executor.num_threads});
      sim::LockstepExecutor executor(cpu, {.cost_model = cost_model, .tokens = script}, cache);
      run = sim::run_lockstep(requests.requests, config, executor);
    }
    const auto lines = std::count(run.event_log.begin(), run.event_log.end(), '\n');
    std::printf(
        "  %-8s %7lld steps, %8lld log lines, preemptions %lld recompute / %lld swap, %lld prefix-hit tokens, "
        "%.1f s virtual, %.2f s wall\n",
        name.c_str(), static_cast<long long>(run.num_steps), static_cast<long long>(lines),
        static_cast<long long>(run.preemptions_recompute), static_cast<long long>(run.preemptions_swap),
        static_cast<long long>(run.prefix_hit_tokens), run.virtual_seconds, run.wall_seconds);
    if (!options.kv_events_dir.empty()) {
      const std::string path = options.kv_events_dir + "/" + name + ".jsonl";
      std::ofstream file(path, std::ios::binary);
      file << run.event_log;
      if (!file) throw std::runtime_error(path + ": cannot write");
    }
    runs.push_back(std::move(run));
  }

  int status = 0;
  for (size_t i = 1; i < runs.size(); ++i) {
    const std::string pair = executors[0] + " vs " + executors[i];
    if (const auto difference = sim::first_difference(runs[0].event_log, runs[i].event_log)) {
      std::cout << "FAILED: " << pair << ": KV event logs differ at line " << difference->line << ":\n  "
                << executors[0] << ": " << difference->expected << "\n  " << executors[i] << ": " << difference->actual
                << '\n';
      status = 1;
    } else if (const auto output = sim::first_output_difference(runs[0], runs[i])) {
      std::cout << "FAILED: " << pair << ": " << *output << '\n';
      status = 1;
    } else {
      std::cout << "ok: " << pair << ": KV event logs identical (" << runs[0].event_log.size()
                << " bytes), output tokens identical\n";
    }
  }
  return status;
}

}  // namespace pagedllm::cli
