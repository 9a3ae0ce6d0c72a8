// The simulator's setup shared by `replay --executor sim`, `simulate` and `plan`: which model
// shape (a preset, or any model's config), the roofline on the chosen hardware, and the KV blocks
// a replica gets, sized as vLLM sizes them.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/engine_config.h"
#include "core/frontend/model_bundle.h"
#include "sim/cluster.h"
#include "sim/model_shape.h"
#include "sim/roofline_cost_model.h"
#include "tools/pagedllm/executor_factory.h"

namespace pagedllm::cli {

// A shape preset ("llama-2-7b"), or a model (directory, .gguf, fetched name, 'tiny') whose config
// gives the shape and whose tokenizer is then at hand for text prompts.
struct SimModel {
  sim::ModelShape shape;
  std::optional<frontend::ModelBundle> bundle;
};
SimModel resolve_sim_model(const std::string& argument);

// --hardware, --tensor-parallel-size on `shape`, for engines of `block_size`.
sim::RooflineConfig make_roofline(const ExecutorOptions& options, const sim::ModelShape& shape, int32_t block_size);

// Device blocks from GPU memory (unless config.cache.num_device_blocks is set already), host
// blocks from --swap-space; both capped where a small model on a large GPU would get tens of
// millions. Returns a description of the sizing. Throws when the weights leave no KV memory.
std::string size_sim_cache(const sim::RooflineConfig& roofline, const ExecutorOptions& options,
                           engine::EngineConfig& config);

// One simulation: `num_replicas` engines of `config`, each on a SimExecutor over `cost_model`.
struct SimRunSpec {
  engine::EngineConfig config;
  std::shared_ptr<const sim::CostModel> cost_model;
  int32_t vocab_size = 0;                // of the token script
  int32_t num_replicas = 1;
  sim::RouterConfig router;
  std::function<void(const engine::ReplayProgress&)> on_progress;
};

struct SimRunOutput {
  std::unique_ptr<sim::ClusterSimulation> cluster;  // its engines hold the KV and scheduling state
  engine::ReplayResult result;
};

SimRunOutput run_simulation(const SimRunSpec& spec, std::vector<sched::Request> requests);

}  // namespace pagedllm::cli
