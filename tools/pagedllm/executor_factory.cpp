#include "tools/pagedllm/executor_factory.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "cpu_ref/cpu_executor.h"
#include "sim/model_shape.h"
#include "sim/profile_cost_model.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"
#include "sim/step_profile.h"

namespace pagedllm::cli {

namespace po = boost::program_options;

void add_executor_options(po::options_description& description, ExecutorOptions& options) {
  po::options_description executor("executor");
  executor.add_options()
      ("executor", po::value(&options.executor)->default_value(options.executor),
       "cpu (the CPU reference engine, real weights) or sim (the simulator's cost model)")
      ("threads", po::value(&options.num_threads)->default_value(0), "cpu: OpenMP threads (0 = all cores)")
      ("kv-cache-mib", po::value(&options.kv_cache_mib)->default_value(options.kv_cache_mib), "cpu: fp32 KV cache memory")
      ("swap-space-mib", po::value(&options.swap_space_mib)->default_value(options.swap_space_mib),
       "cpu: host tier for swapped-out KV")
      ("hardware", po::value(&options.hardware)->default_value(options.hardware),
       ("sim: " + sim::hardware_names()).c_str())
      ("sim-model", po::value(&options.sim_model),
       ("sim: a model shape preset instead of --model's config: " + sim::model_shape_names()).c_str())
      ("tensor-parallel-size,tp", po::value(&options.tensor_parallel)->default_value(1), "sim: GPUs per replica")
      ("gpu-memory-utilization", po::value(&options.gpu_memory_utilization)->default_value(options.gpu_memory_utilization),
       "sim: fraction of GPU memory for weights, activations and KV")
      ("swap-space", po::value(&options.swap_space_gib)->default_value(options.swap_space_gib), "sim: GiB of host swap per GPU")
      ("profile", po::value(&options.profile),
       "sim: a measured step profile (pagedllm profile) instead of the roofline; KV blocks as the profiled "
       "executor sizes them (cpu: --kv-cache-mib, --swap-space-mib) unless --num-gpu-blocks-override")
      ("profile-engine-overhead", po::bool_switch(&options.profile_engine_overhead),
       "sim with --profile: add the engine's own time per step that the profile measured (to predict --time real)")
      ("profile-quiet", po::bool_switch(&options.profile_quiet),
       "sim with --profile: predict an undisturbed machine (the tables' lower quartiles) rather than the mean "
       "step times of the machine as busy as it was while profiling (times the profile's load factor)");
  description.add(executor);
}

namespace {

ExecutorSetup make_cpu_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                                engine::EngineConfig& config) {
  kv::KvCacheConfig& cache = config.cache;
  if (cache.num_device_blocks == 0) {
    cache.num_device_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, cache.block_size,
                                                               static_cast<uint64_t>(options.kv_cache_mib) << 20);
  }
  cache.num_host_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, cache.block_size,
                                                           static_cast<uint64_t>(options.swap_space_mib) << 20);
  auto model = std::make_shared<const cpu_ref::LlamaModel>(frontend::load_weights(bundle));
  ExecutorSetup setup;
  setup.executor = std::make_unique<cpu_ref::CpuExecutor>(
      model, cpu_ref::CpuExecutorConfig{.cache = cache, .num_threads = options.num_threads});
  std::ostringstream description;
  description << "cpu_ref, " << bundle.source.path << ", KV blocks: " << cache.num_device_blocks << " ("
              << static_cast<int64_t>(cache.num_device_blocks) * cache.block_size << " tokens), swap blocks: "
              << cache.num_host_blocks;
  setup.description = description.str();
  return setup;
}

sim::ProfileModel profile_model_of(const model::ModelConfig& config) {
  return {.name = "",
          .num_layers = config.num_layers,
          .hidden_size = config.hidden_size,
          .num_heads = config.num_heads,
          .num_kv_heads = config.num_kv_heads,
          .head_dim = config.head_dim,
          .intermediate_size = config.intermediate_size,
          .vocab_size = config.vocab_size};
}

// The simulator on a measured profile: the profile must come from this model and block size, and
// the KV tiers are those the profiled executor would have, so the simulated run has the same
// blocks as the real one.
ExecutorSetup make_profile_sim_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                                        engine::EngineConfig& config) {
  if (!options.sim_model.empty()) throw po::error("--profile: the profile fixes the model; drop --sim-model");
  sim::StepProfile profile = sim::read_step_profile(options.profile);
  if (!profile.model.same_shape(profile_model_of(bundle.config))) {
    throw po::error("--profile " + options.profile + ": measured on model '" + profile.model.name +
                    "', whose shape differs from --model " + bundle.source.path);
  }
  kv::KvCacheConfig& cache = config.cache;
  if (profile.block_size != cache.block_size) {
    throw po::error("--profile " + options.profile + ": measured with block size " +
                    std::to_string(profile.block_size) + ", the engine has --block-size " +
                    std::to_string(cache.block_size));
  }
  if (profile.executor == "cpu_ref") {
    if (cache.num_device_blocks == 0) {
      cache.num_device_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, cache.block_size,
                                                                 static_cast<uint64_t>(options.kv_cache_mib) << 20);
    }
    cache.num_host_blocks = cpu_ref::num_kv_blocks_for_bytes(bundle.config, cache.block_size,
                                                             static_cast<uint64_t>(options.swap_space_mib) << 20);
  } else if (cache.num_device_blocks == 0) {
    throw po::error("--profile " + options.profile + ": a profile of '" + profile.executor +
                    "' needs --num-gpu-blocks-override (its KV sizing is not known here)");
  }
  const auto cost_model = std::make_shared<const sim::ProfileCostModel>(
      sim::ProfileCostModelConfig{.profile = std::move(profile),
                                  .include_engine_overhead = options.profile_engine_overhead,
                                  .apply_load_factor = !options.profile_quiet});
  const sim::StepProfile& measured = cost_model->config().profile;
  sim::SimExecutorConfig sim_config;
  sim_config.cost_model = cost_model;
  sim_config.tokens.vocab_size = static_cast<int32_t>(bundle.config.vocab_size);
  ExecutorSetup setup;
  setup.executor = std::make_unique<sim::SimExecutor>(sim_config, cache);
  std::ostringstream description;
  description << "sim (profile " << options.profile << ": " << measured.executor << ", " << measured.num_threads
              << " threads, " << measured.device << ", ";
  if (options.profile_quiet) {
    description << "quiet";
  } else {
    description << "load factor " << std::setprecision(3) << measured.load_factor;
  }
  description << (options.profile_engine_overhead ? ", with engine overhead" : "") << "), KV blocks: "
              << cache.num_device_blocks << " (" << static_cast<int64_t>(cache.num_device_blocks) * cache.block_size
              << " tokens), swap blocks: " << cache.num_host_blocks;
  setup.description = description.str();
  return setup;
}

ExecutorSetup make_sim_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                                engine::EngineConfig& config) {
  if (!options.profile.empty()) return make_profile_sim_executor(options, bundle, config);
  sim::RooflineConfig roofline;
  roofline.hardware = sim::find_hardware(options.hardware);
  roofline.model = options.sim_model.empty() ? sim::model_shape_from_config(bundle.config, bundle.source.path)
                                             : sim::find_model_shape(options.sim_model);
  roofline.tensor_parallel = options.tensor_parallel;
  roofline.block_size = config.cache.block_size;
  sim::validate(roofline);
  kv::KvCacheConfig& cache = config.cache;
  if (cache.num_device_blocks == 0) {
    cache.num_device_blocks = sim::num_device_blocks(roofline, options.gpu_memory_utilization, 0);
    if (cache.num_device_blocks <= 0) {
      throw po::error("--executor sim: the weights of " + roofline.model.name + " (" +
                      std::to_string(roofline.model.weight_bytes() / 1e9) + " GB) leave no KV memory on " +
                      roofline.hardware.name + " at tensor parallel " + std::to_string(options.tensor_parallel));
    }
  }
  cache.num_host_blocks = sim::num_host_blocks(roofline, static_cast<int64_t>(options.swap_space_gib * (1LL << 30)));
  // A tiny model on a large GPU would get tens of millions of blocks; more than every sequence
  // at full length (twice over, for the prefix cache) changes nothing but memory.
  const int64_t blocks_per_sequence = (config.scheduler.max_model_len + cache.block_size - 1) / cache.block_size;
  const auto block_cap = static_cast<int32_t>(
      std::min<int64_t>(kv::kMaxBlocksPerTier, 2LL * config.scheduler.max_num_seqs * blocks_per_sequence));
  const bool capped = cache.num_device_blocks > block_cap;
  cache.num_device_blocks = std::min(cache.num_device_blocks, block_cap);
  cache.num_host_blocks = std::min(cache.num_host_blocks, block_cap);
  sim::SimExecutorConfig sim_config;
  sim_config.cost_model = std::make_shared<sim::RooflineCostModel>(roofline);
  sim_config.tokens.vocab_size = static_cast<int32_t>(roofline.model.vocab_size);
  ExecutorSetup setup;
  setup.executor = std::make_unique<sim::SimExecutor>(sim_config, cache);
  std::ostringstream description;
  description << "sim (roofline), " << roofline.model.name << " on " << roofline.hardware.name << " x"
              << options.tensor_parallel << ", GPU blocks: " << cache.num_device_blocks << " ("
              << static_cast<int64_t>(cache.num_device_blocks) * cache.block_size << " tokens), CPU blocks: "
              << cache.num_host_blocks << (capped ? " (capped at 2 x max-num-seqs x max-model-len)" : "");
  setup.description = description.str();
  return setup;
}

}  // namespace

ExecutorSetup make_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                            engine::EngineConfig& config) {
  if (options.executor == "cpu") return make_cpu_executor(options, bundle, config);
  if (options.executor == "sim") return make_sim_executor(options, bundle, config);
  throw po::error("--executor: expected cpu or sim, got '" + options.executor + "'" +
                  (options.executor == "cuda" ? " (this build has no CUDA executor yet)" : ""));
}

}  // namespace pagedllm::cli
