// The CUDA executor: runs the engine's step plans on one GPU, in bf16 (or fp16), over a paged KV
// cache in device memory with a pinned host tier for swapped-out blocks.
//
// Per step (execute):
//   1. the plan's block operations, in order: swap_out and swap_in as batched copies (one copy per
//      run of consecutive blocks per (layer, K|V)), then copy-on-write copies in one kernel;
//   2. the step's inputs (tokens, positions, slots, block tables, ...) flattened on the host
//      (step_batch.h) and uploaded with one copy;
//   3. one forward pass over every scheduled token: cuBLAS GEMMs for the fused projections
//      (qkv, o, gate_up, down, lm_head), the paged kernels for attention (decode rows and prefill
//      chunks in one step) and the fused small kernels; logits in fp32 only for sampled rows. Pure
//      decode steps replay a CUDA graph captured for the next batch-size bucket (unless
//      enforce_eager);
//   4. sampling on the device (greedy, temperature, top-k, top-p with the host sampler's per-request streams;
//      the sampled token's raw logprob): only token ids and logprobs come back. Rows that ask for
//      what the device sampler does not do (penalties, min_p, logprobs lists, parallel sampling's
//      first step, beam candidates) have their logits row copied back and go through core's host
//      sampler, so every request is served with the same semantics as on the CPU engine.
//
// KV sizing as vLLM: after the weights are uploaded, a profiling forward pass at the largest
// step (max_num_batched_tokens) runs; the device blocks are what gpu_memory_utilization of the
// device's memory leaves, the host blocks what swap_space holds (kv_sizing.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/engine/engine_config.h"
#include "core/engine/executor.h"
#include "core/kv/kv_cache_config.h"
#include "core/kv/kv_layout.h"
#include "core/model/model_weights.h"
#include "cuda/kernels/dtype.h"
#include "cuda/kv_sizing.h"

namespace pagedllm::cuda {
class DeviceModel;
}

namespace pagedllm::cuda {

struct CudaExecutorConfig {
  // The engine this executor serves; its limits size the executor: the block size, the step's
  // token budget (scheduler.max_num_batched_tokens: activations), scheduler.max_num_seqs (rows of
  // a step), scheduler.max_model_len (block-table width; decode graphs attend up to it).
  // cache.num_device_blocks 0 = sized from memory (gpu_memory_utilization), else used as given;
  // cache.num_host_blocks 0 = sized from swap_space_bytes.
  engine::EngineConfig engine;
  DType dtype = DType::bf16;
  int32_t device = 0;
  double gpu_memory_utilization = 0.9;
  std::uint64_t swap_space_bytes = std::uint64_t{4} << 30;  // vLLM's default, 4 GiB
  bool enforce_eager = false;                               // never capture CUDA graphs
  // Bytes of a draft model's KV block when a draft runs beside this executor on the same device
  // with as many blocks (make_target_and_draft): memory sizing pairs each block with one of them.
  std::uint64_t companion_block_bytes = 0;
  // Sees every logits row the executor samples from (copied to the host), before sampling.
  std::function<void(const sched::ScheduledSequence&, std::span<const float> logits)> logits_observer{};
};

class CudaExecutor final : public engine::Executor {
 public:
  // Uploads `weights` (fp32 or bf16 on the host), runs the profiling pass and allocates the KV
  // tiers. Throws std::runtime_error when no GPU is usable or the KV cache does not fit, and
  // std::invalid_argument for a model the kernels do not support (head_dim other than 64 / 128).
  CudaExecutor(const model::ModelWeights& weights, const CudaExecutorConfig& config);
  // Runs on weights already on config.device (several executors may share one upload: the
  // profiler builds one per measured shape; benchmarks draw random weights on the device).
  CudaExecutor(std::shared_ptr<const DeviceModel> model, const CudaExecutorConfig& config);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  sched::StepResult execute(const sched::StepPlan& plan) override;
  std::string name() const override { return "cuda"; }

  // The block counts the engine must use (sized, or as configured).
  const kv::KvCacheConfig& cache_config() const noexcept;
  // "GPU blocks: N (T tokens), CPU blocks: M, max concurrency for max_model_len L: X.XXx", and
  // the device's name.
  const std::string& sizing_description() const noexcept;

  struct State;  // everything on the device (cuda_executor.cpp)

 private:
  std::unique_ptr<State> state_;
};

// Makes config.device current (throws std::runtime_error naming the reason when there is no
// usable GPU) and uploads `weights` there as `config.dtype`.
std::shared_ptr<const DeviceModel> upload_model(const model::ModelWeights& weights, const CudaExecutorConfig& config);

// Decode batch sizes that get a CUDA graph: 1, 2, 4, 8, then every multiple of 8 up to
// max_num_seqs (capped at 256, as vLLM). A step of n sequences replays the smallest >= n.
std::vector<int32_t> decode_graph_batch_sizes(int32_t max_num_seqs);

// Whether the host sampler (core/sampling) must handle this row (its logits are copied to the host): penalties,
// logit_bias, allowed_token_ids, bad words, min_p, logprobs lists, several samples at once, beam candidates,
// stop tokens min_tokens still holds back.
bool needs_host_sampling(const sched::ScheduledSequence& scheduled);

}  // namespace pagedllm::cuda
