#include "tools/pagedllm/sim_setup.h"

#include <algorithm>
#include <boost/program_options/errors.hpp>
#include <chrono>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "cpu_ref/cpu_executor.h"
#include "sim/profile_cost_model.h"
#include "sim/sim_executor.h"
#include "sim/step_profile.h"
#include "tools/pagedllm/default_model.h"

namespace pagedllm::cli {

SimModel resolve_sim_model(const std::string& argument) {
  for (const model::ModelShape& preset : model::model_shape_presets()) {
    if (preset.name == argument) return {preset, std::nullopt};
  }
  frontend::ModelBundle bundle = frontend::open_model(resolve_model_argument(argument));
  model::ModelShape shape = model::model_shape_from_config(bundle.config, bundle.source.path);
  return {std::move(shape), std::move(bundle)};
}

std::string simulated_model_argument(const std::string& model, bool model_given, const std::string& sim_model) {
  if (sim_model.empty()) return model;
  if (model_given && model != sim_model) {
    throw boost::program_options::error("--sim-model " + sim_model + " and --model " + model +
                                        " name two models: give one (here --model takes a shape preset too)");
  }
  return sim_model;
}

sim::RooflineConfig make_roofline(const ExecutorOptions& options, const model::ModelShape& shape, int32_t block_size) {
  sim::RooflineConfig roofline;
  roofline.hardware = sim::find_hardware(options.hardware);
  roofline.model = shape;
  roofline.tensor_parallel = options.tensor_parallel;
  roofline.block_size = block_size;
  try {
    roofline.linear_model = sim::parse_linear_model(options.gemm_model);
  } catch (const std::invalid_argument& error) {
    throw boost::program_options::error(std::string("--gemm-model: ") + error.what());
  }
  sim::validate(roofline);
  return roofline;
}

std::string cost_model_name(const ExecutorOptions& options) {
  if (!options.profile.empty()) return "profile " + options.profile;
  return options.gemm_model == "roofline" ? "roofline" : "roofline, " + options.gemm_model;
}

namespace {

// Device blocks from GPU memory (unless config.cache.num_device_blocks is set already), host
// blocks from --swap-space; both capped where a small model on a large GPU would get tens of
// millions. Fills backend.cache and backend.sizing. Throws when the weights leave no KV memory.
void size_sim_cache(const sim::RooflineConfig& roofline, const sim::RooflineConfig* draft,
                    const ExecutorOptions& options, const engine::EngineConfig& config, SimBackend& backend) {
  backend.cache = config.cache;
  kv::KvCacheConfig& cache = backend.cache;
  // A preset shape (no model files) brings its window here: the engine releases blocks past it.
  if (cache.sliding_window == 0) {
    cache.sliding_window = static_cast<int32_t>(std::min<int64_t>(roofline.model.sliding_window, INT32_MAX));
  }
  if (cache.num_device_blocks == 0) {
    cache.num_device_blocks = sim::num_device_blocks(roofline, options.gpu_memory_utilization, 0, draft);
    if (cache.num_device_blocks <= 0) {
      throw std::invalid_argument(
          "the weights of " + roofline.model.name + (draft ? " and its draft" : "") + " (" +
          std::to_string((roofline.model.weight_bytes() + (draft ? draft->model.weight_bytes() : 0.0)) / 1e9) +
          " GB) leave no KV memory on " + roofline.hardware.name + " at tensor parallel " +
          std::to_string(roofline.tensor_parallel));
    }
  }
  const auto swap_bytes = static_cast<int64_t>(gib_to_bytes(swap_space_gib_for(options, "sim")));
  cache.num_host_blocks = sim::num_host_blocks(roofline, swap_bytes);
  // More than every sequence at full length, twice over (for the prefix cache), changes nothing
  // but memory: a tiny model on a large GPU would otherwise get tens of millions of blocks.
  const int64_t blocks_per_sequence = (config.scheduler.max_model_len + cache.block_size - 1) / cache.block_size;
  const auto cap = static_cast<int32_t>(
      std::min<int64_t>(kv::kMaxBlocksPerTier, 2LL * config.scheduler.max_num_seqs * blocks_per_sequence));
  const bool capped = cache.num_device_blocks > cap;
  cache.num_device_blocks = std::min(cache.num_device_blocks, cap);
  cache.num_host_blocks = std::min(cache.num_host_blocks, cap);
  std::ostringstream description;
  description << "GPU blocks: " << cache.num_device_blocks << " ("
              << static_cast<int64_t>(cache.num_device_blocks) * cache.block_size
              << " tokens), CPU blocks: " << cache.num_host_blocks
              << (capped ? " (capped at 2 x max-num-seqs x max-model-len)" : "");
  backend.sizing = description.str();
}

// The draft model's shape (--speculative-config's "model"); a draft must share the target's
// vocabulary. Throws po::error otherwise.
model::ModelShape draft_shape_for(const engine::EngineConfig& config, const model::ModelShape& target) {
  model::ModelShape draft = resolve_sim_model(config.speculative.draft_model).shape;
  if (draft.vocab_size != target.vocab_size) {
    throw boost::program_options::error("--speculative-config: model: the draft " + draft.name + " has " +
                                        std::to_string(draft.vocab_size) + " tokens, " + target.name + " " +
                                        std::to_string(target.vocab_size) + ": a draft must share the tokenizer");
  }
  return draft;
}

// The draft's KV cache beside the target's `cache` (spec::draft_cache_config), in its own window.
kv::KvCacheConfig draft_cache_for(const kv::KvCacheConfig& cache, const model::ModelShape& draft) {
  return spec::draft_cache_config(cache, static_cast<int32_t>(std::min<int64_t>(draft.sliding_window, INT32_MAX)));
}

SimBackend make_roofline_backend(const ExecutorOptions& options, const model::ModelShape& shape,
                                 const engine::EngineConfig& config) {
  const sim::RooflineConfig roofline = make_roofline(options, shape, config.cache.block_size);
  std::optional<sim::RooflineConfig> draft;
  if (config.speculative.method == spec::SpeculativeMethod::draft_model) {
    draft = make_roofline(options, draft_shape_for(config, shape), config.cache.block_size);
  }
  SimBackend backend;
  size_sim_cache(roofline, draft ? &*draft : nullptr, options, config, backend);
  if (draft) {
    backend.draft = SimDraft{.cost_model = std::make_shared<const sim::RooflineCostModel>(*draft),
                             .cache = draft_cache_for(backend.cache, draft->model)};
  }
  backend.cost_model = std::make_shared<const sim::RooflineCostModel>(roofline);
  backend.model_name = shape.name;
  backend.device = roofline.hardware.name;
  backend.tensor_parallel = roofline.tensor_parallel;
  backend.usd_per_gpu_hour = roofline.hardware.usd_per_gpu_hour;
  const bool per_gemm = roofline.linear_model == sim::LinearModel::per_gemm;
  backend.description = std::string(per_gemm ? "sim (roofline, GEMMs priced per shape), " : "sim (roofline), ") +
                        shape.name + " on " + roofline.hardware.name + " x" + std::to_string(roofline.tensor_parallel);
  if (draft) backend.description += ", draft model " + draft->model.name;
  return backend;
}

// A measured profile read from `path` (named by `option` in errors), checked against the model
// shape simulated, the tensor parallel size and the block size.
sim::StepProfile read_checked_profile(const std::string& option, const std::string& path,
                                      const ExecutorOptions& options, const model::ModelShape& shape,
                                      int32_t block_size) {
  const std::string where = option + " " + path + ": ";
  sim::StepProfile profile = sim::read_step_profile(path);
  if (options.tensor_parallel != profile.tensor_parallel) {
    throw std::invalid_argument(where + "measured at tensor parallel " + std::to_string(profile.tensor_parallel) +
                                ", the simulation asks for --tensor-parallel-size " +
                                std::to_string(options.tensor_parallel));
  }
  if (!profile.model.same_shape(sim::ProfileModel::of(shape))) {
    const std::string remedy = option == "--profile"
                                   ? "give --model " + profile.model.name
                                   : "profile the draft itself (pagedllm profile --model " + shape.name + ")";
    throw std::invalid_argument(where + "measured on model '" + profile.model.name + "', whose shape differs from " +
                                "the model simulated ('" + shape.name + "'); " + remedy);
  }
  if (profile.block_size != block_size) {
    throw std::invalid_argument(where + "measured with block size " + std::to_string(profile.block_size) +
                                ", the engine has --block-size " + std::to_string(block_size));
  }
  return profile;
}

// The simulator on a measured profile: the profile must come from this model shape and block
// size, and the KV tiers are those the profiled executor would have, so that the simulated run
// has the real run's blocks. A draft model runs on its own profile (--draft-profile), from the
// same kind of executor.
SimBackend make_profile_backend(const ExecutorOptions& options, const model::ModelShape& shape,
                                const model::ModelConfig* model_config, const engine::EngineConfig& config) {
  const std::string where = "--profile " + options.profile + ": ";
  kv::KvCacheConfig cache = config.cache;
  sim::StepProfile profile = read_checked_profile("--profile", options.profile, options, shape, cache.block_size);
  std::optional<model::ModelShape> draft_shape;
  std::optional<sim::StepProfile> draft_profile;
  if (config.speculative.method == spec::SpeculativeMethod::draft_model) {
    draft_shape = draft_shape_for(config, shape);
    draft_profile =
        read_checked_profile("--draft-profile", options.draft_profile, options, *draft_shape, cache.block_size);
    if (draft_profile->executor != profile.executor) {
      throw std::invalid_argument("--draft-profile " + options.draft_profile + ": measured on " +
                                  draft_profile->executor + ", the target's profile on " + profile.executor +
                                  ": the two models run on one kind of executor");
    }
  }
  if (profile.executor == "cpu_ref") {
    if (model_config == nullptr) {
      throw std::invalid_argument(where + "the CPU engine sizes its KV cache from the model's config: give --model " +
                                  "as the model the profile was measured on ('" + profile.model.name +
                                  "'), not a shape preset");
    }
    if (cache.num_device_blocks == 0) {
      cache.num_device_blocks = cpu_ref::num_kv_blocks_for_bytes(*model_config, cache.block_size,
                                                                 static_cast<uint64_t>(options.kv_cache_mib) << 20);
    }
    cache.num_host_blocks = cpu_ref::num_kv_blocks_for_bytes(*model_config, cache.block_size,
                                                             gib_to_bytes(swap_space_gib_for(options, "cpu")));
  }
  SimBackend backend;
  const bool cpu = profile.executor == "cpu_ref";
  if (!cpu) {
    // A GPU's profile (measured by the cuda executor, or imported): the KV tiers as vLLM sizes
    // them on --hardware at this tensor parallel size (or --num-gpu-blocks-override).
    const sim::RooflineConfig gpu = make_roofline(options, shape, cache.block_size);
    std::optional<sim::RooflineConfig> draft_gpu;
    if (draft_shape) draft_gpu = make_roofline(options, *draft_shape, cache.block_size);
    size_sim_cache(gpu, draft_gpu ? &*draft_gpu : nullptr, options, config, backend);
    cache = backend.cache;
    backend.tensor_parallel = profile.tensor_parallel;
    backend.usd_per_gpu_hour = gpu.hardware.usd_per_gpu_hour;
  }
  const auto cost_model = std::make_shared<const sim::ProfileCostModel>(
      sim::ProfileCostModelConfig{.profile = std::move(profile),
                                  .include_engine_overhead = options.profile_engine_overhead,
                                  .apply_load_factor = !options.profile_quiet});
  const sim::StepProfile& measured = cost_model->config().profile;
  backend.cache = cache;
  backend.cost_model = cost_model;
  backend.model_name = measured.model.name;
  backend.device = measured.device;
  backend.cpu_profile = cpu;
  if (cpu) backend.cpu_threads = measured.num_threads;
  std::ostringstream description;
  description << "sim (profile " << options.profile << ": " << measured.executor << ", ";
  if (cpu) description << measured.num_threads << " threads, ";
  description << measured.device << ", ";
  if (options.profile_quiet) {
    description << "quiet";
  } else {
    description << "load factor " << std::setprecision(3) << measured.load_factor;
  }
  description << (options.profile_engine_overhead ? ", with engine overhead" : "") << ")";
  if (draft_profile) {
    // The draft's passes run beside the engine's steps, not through them: no engine overhead.
    backend.draft = SimDraft{.cost_model = std::make_shared<const sim::ProfileCostModel>(
                                 sim::ProfileCostModelConfig{.profile = std::move(*draft_profile),
                                                             .include_engine_overhead = false,
                                                             .apply_load_factor = !options.profile_quiet}),
                             .cache = draft_cache_for(cache, *draft_shape)};
    description << ", draft model " << draft_shape->name << " (profile " << options.draft_profile << ")";
  }
  backend.description = description.str();
  if (cpu) {
    std::ostringstream sizing;
    sizing << "KV blocks: " << cache.num_device_blocks << " ("
           << static_cast<int64_t>(cache.num_device_blocks) * cache.block_size
           << " tokens), swap blocks: " << cache.num_host_blocks;
    backend.sizing = sizing.str();
  }
  return backend;
}

}  // namespace

SimBackend make_sim_backend(const ExecutorOptions& options, const model::ModelShape& shape,
                            const model::ModelConfig* model_config, const engine::EngineConfig& config) {
  const bool draft_model = config.speculative.method == spec::SpeculativeMethod::draft_model;
  if (!options.draft_profile.empty() && (!draft_model || options.profile.empty())) {
    throw boost::program_options::error(
        "--draft-profile: the draft model's profile goes with --profile and a draft model in --speculative-config");
  }
  if (draft_model) {
    if (!options.profile.empty() && options.draft_profile.empty()) {
      throw boost::program_options::error(
          "--profile: a profile prices one model; give the draft model's own with --draft-profile (pagedllm profile "
          "on the draft), or drop --profile to simulate both on the roofline of --hardware");
    }
    if (!config.speculative.simulated) {
      throw boost::program_options::error(
          "--speculative-config: the simulator runs the draft model's passes but draws the target's acceptance: give "
          "\"simulated_acceptance\", one rate per position (pagedllm replay prints them)");
    }
  }
  if (config.speculative.enabled() && !config.speculative.simulated) {
    throw boost::program_options::error(
        "--speculative-config: the simulator has no model to propose or verify with: give it the rates a real run "
        "measured, \"simulated_draft_rate\" and \"simulated_acceptance\" (pagedllm replay prints them)");
  }
  if (options.profile.empty()) return make_roofline_backend(options, shape, config);
  return make_profile_backend(options, shape, model_config, config);
}

std::unique_ptr<spec::DraftModelProposer> make_sim_draft_model(const SimDraft& draft,
                                                               const engine::EngineConfig& config, int32_t vocab_size) {
  return std::make_unique<spec::DraftModelProposer>(
      spec::DraftModelProposerConfig{.cache = draft.cache,
                                     .max_num_batched_tokens = config.scheduler.max_num_batched_tokens},
      std::make_unique<sim::SimExecutor>(
          sim::SimExecutorConfig{.cost_model = draft.cost_model, .tokens = sim::sim_tokens_for(config, vocab_size)},
          draft.cache));
}

SimRunOutput run_simulation(const SimRunSpec& spec, std::vector<sched::Request> requests) {
  engine::VectorRequestSource source(std::move(requests));
  return run_simulation(spec, source);
}

SimRunOutput run_simulation(const SimRunSpec& spec, engine::RequestSource& source) {
  sim::ClusterConfig cluster;
  cluster.num_replicas = spec.num_replicas;
  cluster.router = spec.router;
  cluster.engine = spec.config;
  cluster.host = spec.host;
  cluster.serving_path_seconds = spec.serving_path_seconds;
  cluster.on_progress = spec.on_progress;
  cluster.should_stop = spec.should_stop;
  cluster.on_arrival = spec.on_arrival;
  cluster.on_finished = spec.on_finished;
  cluster.on_refused = spec.on_refused;
  const engine::ScriptedExecutorConfig script = sim::sim_tokens_for(spec.config, spec.vocab_size);
  cluster.make_executor = [&spec, script](int32_t) {
    return std::make_unique<sim::SimExecutor>(sim::SimExecutorConfig{.cost_model = spec.cost_model, .tokens = script},
                                              spec.config.cache);
  };
  if (spec.draft) {
    cluster.make_draft_model = [&spec](int32_t) {
      return make_sim_draft_model(*spec.draft, spec.config, spec.vocab_size);
    };
  }
  SimRunOutput output;
  output.cluster = std::make_unique<sim::ClusterSimulation>(std::move(cluster));
  output.result = output.cluster->run(source);
  return output;
}

std::function<bool()> wall_clock_limit(double seconds) {
  if (!(seconds >= 0.0)) throw std::invalid_argument("--max-wall-seconds: expected 0 (no limit) or more");
  if (seconds == 0.0) return {};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  return [deadline] { return std::chrono::steady_clock::now() >= deadline; };
}

}  // namespace pagedllm::cli
