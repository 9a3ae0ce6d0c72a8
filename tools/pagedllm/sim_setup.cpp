#include "tools/pagedllm/sim_setup.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "sim/sim_executor.h"
#include "tools/pagedllm/default_model.h"

namespace pagedllm::cli {

SimModel resolve_sim_model(const std::string& argument) {
  for (const sim::ModelShape& preset : sim::model_shape_presets()) {
    if (preset.name == argument) return {preset, std::nullopt};
  }
  frontend::ModelBundle bundle = frontend::open_model(resolve_model_argument(argument));
  sim::ModelShape shape = sim::model_shape_from_config(bundle.config, bundle.source.path);
  return {std::move(shape), std::move(bundle)};
}

sim::RooflineConfig make_roofline(const ExecutorOptions& options, const sim::ModelShape& shape, int32_t block_size) {
  sim::RooflineConfig roofline;
  roofline.hardware = sim::find_hardware(options.hardware);
  roofline.model = shape;
  roofline.tensor_parallel = options.tensor_parallel;
  roofline.block_size = block_size;
  sim::validate(roofline);
  return roofline;
}

std::string size_sim_cache(const sim::RooflineConfig& roofline, const ExecutorOptions& options,
                           engine::EngineConfig& config) {
  kv::KvCacheConfig& cache = config.cache;
  if (cache.num_device_blocks == 0) {
    cache.num_device_blocks = sim::num_device_blocks(roofline, options.gpu_memory_utilization, 0);
    if (cache.num_device_blocks <= 0) {
      throw std::invalid_argument("the weights of " + roofline.model.name + " (" +
                                  std::to_string(roofline.model.weight_bytes() / 1e9) + " GB) leave no KV memory on " +
                                  roofline.hardware.name + " at tensor parallel " +
                                  std::to_string(roofline.tensor_parallel));
    }
  }
  cache.num_host_blocks = sim::num_host_blocks(roofline, static_cast<int64_t>(options.swap_space_gib * (1LL << 30)));
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
              << static_cast<int64_t>(cache.num_device_blocks) * cache.block_size << " tokens), CPU blocks: "
              << cache.num_host_blocks << (capped ? " (capped at 2 x max-num-seqs x max-model-len)" : "");
  return description.str();
}

SimRunOutput run_simulation(const SimRunSpec& spec, std::vector<sched::Request> requests) {
  sim::ClusterConfig cluster;
  cluster.num_replicas = spec.num_replicas;
  cluster.router = spec.router;
  cluster.engine = spec.config;
  cluster.on_progress = spec.on_progress;
  engine::ScriptedExecutorConfig script = sim::default_sim_tokens();
  script.vocab_size = spec.vocab_size;
  cluster.make_executor = [&spec, script](int32_t) {
    return std::make_unique<sim::SimExecutor>(sim::SimExecutorConfig{.cost_model = spec.cost_model, .tokens = script},
                                              spec.config.cache);
  };
  SimRunOutput output;
  output.cluster = std::make_unique<sim::ClusterSimulation>(std::move(cluster));
  output.result = output.cluster->run(std::move(requests));
  return output;
}

}  // namespace pagedllm::cli
