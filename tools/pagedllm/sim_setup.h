// The simulator's setup shared by `replay --executor sim`, `simulate` and `plan`: which model
// shape (a preset, or any model's config), the cost model (the roofline on the chosen hardware,
// or a measured profile), and the KV blocks a replica gets (sized as vLLM sizes them on a GPU, or
// as the profiled executor sizes its own).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/engine_config.h"
#include "core/frontend/model_bundle.h"
#include "core/model/model_shape.h"
#include "sim/cluster.h"
#include "sim/roofline_cost_model.h"
#include "tools/pagedllm/executor_factory.h"

namespace pagedllm::cli {

// A shape preset ("llama-2-7b"), or a model (directory, .gguf, fetched name, 'tiny') whose config
// gives the shape and whose tokenizer is then at hand for text prompts.
struct SimModel {
  model::ModelShape shape;
  std::optional<frontend::ModelBundle> bundle;
};
SimModel resolve_sim_model(const std::string& argument);

// The model `simulate` and `plan` simulate: --model, or --sim-model (what `replay --executor sim`
// calls it) given instead. Throws po::error when both are given and differ. `model_given`: --model
// was on the command line (not its default).
std::string simulated_model_argument(const std::string& model, bool model_given, const std::string& sim_model);

// The roofline of --hardware at --tensor-parallel-size on `shape`, for engines of `block_size`
// (validated: throws std::invalid_argument naming the field).
sim::RooflineConfig make_roofline(const ExecutorOptions& options, const model::ModelShape& shape, int32_t block_size);

// What prices the steps, as reports name it: "roofline", "roofline, per-gemm" or "profile PATH".
std::string cost_model_name(const ExecutorOptions& options);

// A simulated draft model (speculative method draft_model): the roofline of its shape on the
// target's hardware, which prices its passes, and its KV cache (spec::draft_cache_config of the
// target's, sized with it: both models' weights and KV share the GPU).
struct SimDraft {
  std::shared_ptr<const sim::CostModel> cost_model;
  kv::KvCacheConfig cache;
};

// What one simulated replica runs on: the roofline of --hardware at --tensor-parallel-size, or
// the step profile given by --profile (measured by `pagedllm profile`).
struct SimBackend {
  std::shared_ptr<const sim::CostModel> cost_model;
  std::string description;  // the cost model and what it stands for, in words
  kv::KvCacheConfig cache;  // the KV tiers it sized: the engine must run with these
  std::string sizing;       // those tiers, in words
  std::string model_name;
  std::string device;               // the hardware preset's name, or the profiled device
  int32_t tensor_parallel = 1;      // GPUs per replica
  double usd_per_gpu_hour = 0.0;    // the hardware preset's indicative price; 0 for a profile
  bool cpu_profile = false;         // a profile of the CPU engine (replicas that may share a host)
  int32_t cpu_threads = 0;          // its OpenMP threads (0 = all cores)
  std::optional<SimDraft> draft{};  // with a draft model
};

// Builds the backend for `shape` and sizes the KV tiers of the engine `config` for it (a
// num_device_blocks already set is kept), returned in backend.cache.
// `model_config` is the model's own config where there is one (null for a shape preset); a
// profile of the CPU engine needs it, as the CPU engine sizes its KV tiers from it. Throws
// std::invalid_argument when the profile was measured on another shape or block size.
SimBackend make_sim_backend(const ExecutorOptions& options, const model::ModelShape& shape,
                            const model::ModelConfig* model_config, const engine::EngineConfig& config);

// The draft model of an engine `config`, on a SimExecutor over draft.cost_model with the engine's
// token script of `vocab_size` tokens.
std::unique_ptr<spec::DraftModelProposer> make_sim_draft_model(const SimDraft& draft,
                                                               const engine::EngineConfig& config, int32_t vocab_size);

// One simulation: `num_replicas` engines of `config`, each on a SimExecutor over `cost_model`.
struct SimRunSpec {
  engine::EngineConfig config;
  std::shared_ptr<const sim::CostModel> cost_model;
  std::optional<SimDraft> draft{};  // with a draft model (SimBackend's)
  int32_t vocab_size = 0;           // of the token script
  int32_t num_replicas = 1;
  sim::RouterConfig router;
  sim::HostSharing host;              // CPU replicas sharing one host's cores
  double serving_path_seconds = 0.0;  // per request, the client's time outside the engine
  std::function<void(const engine::ReplayProgress&)> on_progress;
  std::function<bool()> should_stop;                // a wall-clock limit (sim::ClusterConfig::should_stop)
  std::function<void(sched::Request&)> on_arrival;  // sim::ClusterConfig::on_arrival
  // Optional, both or neither: outputs and refusals as they end (sim::ClusterConfig::on_finished).
  std::function<void(engine::RequestOutput&&)> on_finished{};
  std::function<void(engine::RefusedRequest&&)> on_refused{};
};

struct SimRunOutput {
  std::unique_ptr<sim::ClusterSimulation> cluster;  // its engines hold the KV and scheduling state
  engine::ReplayResult result;
};

SimRunOutput run_simulation(const SimRunSpec& spec, std::vector<sched::Request> requests);
// The same, pulling the requests from `source` (a trace read as it is consumed).
SimRunOutput run_simulation(const SimRunSpec& spec, engine::RequestSource& source);

// --max-wall-seconds: a check that turns true once `seconds` of wall time have passed since this
// call (SimRunSpec::should_stop); empty for 0, no limit. Throws std::invalid_argument when negative.
std::function<bool()> wall_clock_limit(double seconds);

}  // namespace pagedllm::cli
