// The CUDA executor for every subcommand that takes `--executor cuda` (replay, serve, generate,
// profile, check, score): its options and its construction. In a build without nvcc the options
// still parse and building the executor fails with a message that says why.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/engine/engine_config.h"
#include "core/engine/executor.h"
#include "core/model/model_weights.h"
#include "core/sched/step_plan.h"

namespace pagedllm::cli {

struct CudaOptions {
  std::string dtype = "bf16";           // bf16 | fp16: weights, activations and KV on the device
  int32_t device = 0;                   // CUDA device index
  bool enforce_eager = false;           // no CUDA graphs for decode steps
  double gpu_memory_utilization = 0.9;  // vLLM's default
  double swap_space_gib = 4.0;          // pinned host memory for swapped-out KV, vLLM's default
  // Set by code, not by an option: sees every logits row the executor samples from (score).
  std::function<void(const sched::ScheduledSequence&, std::span<const float> logits)> logits_observer{};
};

// --dtype, --cuda-device, --enforce-eager. The memory options (--gpu-memory-utilization,
// --swap-space) are the executor group's (add_memory_options, executor_factory.h).
void add_cuda_options(boost::program_options::options_description& description, CudaOptions& options);

bool cuda_executor_available() noexcept;

// The dtype to load weights in on the host for the device's: bf16 as is (half the host memory),
// fp32 when the device runs fp16 (rounded once, on upload).
inline model::WeightDType host_weight_dtype(const CudaOptions& options) {
  return options.dtype == "fp16" ? model::WeightDType::f32 : model::WeightDType::bf16;
}
// Throws boost::program_options::error saying why when this build has no CUDA executor (call it
// before loading weights for one).
void require_cuda_executor();

struct CudaExecutorSetup {
  std::unique_ptr<engine::Executor> executor;
  kv::KvCacheConfig cache;  // the tiers it sized: the engine must run with these
  std::string description;  // the device, dtype and the KV sizing line
};

// Weights on the GPU, shared by several executors (the profiler builds one per measured shape).
struct CudaModel;  // opaque: the device copy of the weights
std::shared_ptr<const CudaModel> upload_cuda_model(const CudaOptions& options, const model::ModelWeights& weights,
                                                   const engine::EngineConfig& config);

// Uploads `weights`, profiles and sizes the KV cache for the engine `config` (a num_device_blocks
// or num_host_blocks already set is kept), returning the tiers in setup.cache. Throws
// boost::program_options::error in a build without CUDA; std::runtime_error when no GPU is usable
// or the KV cache does not fit.
CudaExecutorSetup make_cuda_executor(const CudaOptions& options, const model::ModelWeights& weights,
                                     const engine::EngineConfig& config);
// The same on weights already uploaded.
CudaExecutorSetup make_cuda_executor(const CudaOptions& options, const std::shared_ptr<const CudaModel>& model,
                                     const engine::EngineConfig& config);

// Speculative decoding with a draft model: the target's executor and the draft's on one GPU, the
// KV blocks sized for both caches at once (cuda/target_and_draft.h).
struct CudaTargetAndDraftSetup {
  CudaExecutorSetup target;
  std::unique_ptr<engine::Executor> draft;
  kv::KvCacheConfig draft_cache;  // the draft's tiers: the target's block count, no host tier
  std::string draft_description;  // the draft's weights and KV on the device
};
CudaTargetAndDraftSetup make_cuda_executor_with_draft(const CudaOptions& options,
                                                      const std::shared_ptr<const CudaModel>& target,
                                                      const std::shared_ptr<const CudaModel>& draft,
                                                      const engine::EngineConfig& config);

}  // namespace pagedllm::cli
