#include "tools/pagedllm/executor_factory.h"

#include <algorithm>
#include <sstream>

#include "cpu_ref/cpu_executor.h"
#include "sim/model_shape.h"
#include "sim/roofline_cost_model.h"
#include "sim/sim_executor.h"

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
      ("swap-space", po::value(&options.swap_space_gib)->default_value(options.swap_space_gib), "sim: GiB of host swap per GPU");
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

ExecutorSetup make_sim_executor(const ExecutorOptions& options, const frontend::ModelBundle& bundle,
                                engine::EngineConfig& config) {
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
