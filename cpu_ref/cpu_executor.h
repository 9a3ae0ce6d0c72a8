// The CPU reference executor: runs the engine's step plans on a Llama-family model in fp32 over
// a paged KV cache in host memory.
//
// Per step: the plan's block operations (swap out, swap in, copies) are applied to the KV store,
// then one batched forward pass covers every scheduled sequence's new tokens (decodes and prompt
// chunks; prefix-cached blocks are read, not recomputed), then each sampled sequence draws its
// tokens from its own seeded stream. Results do not depend on batch composition, prompt
// chunking, preemption or thread count (see llama_model.h and sampler.h).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/engine/executor.h"
#include "core/kv/kv_cache_config.h"
#include "core/sampling/sampler.h"
#include "cpu_ref/host_kv_store.h"
#include "cpu_ref/llama_model.h"

namespace pagedllm::cpu_ref {

struct CpuExecutorConfig {
  kv::KvCacheConfig cache;  // must be the engine's: block size and both tiers' block counts
  int32_t num_threads = 0;  // OpenMP threads; 0 = OpenMP's default
  // Sees every logits row the executor samples from, before sampling (tests, scoring tools).
  std::function<void(const sched::ScheduledSequence&, std::span<const float> logits)> logits_observer{};
};

class CpuExecutor final : public engine::Executor {
 public:
  CpuExecutor(std::shared_ptr<const LlamaModel> model, const CpuExecutorConfig& config);

  sched::StepResult execute(const sched::StepPlan& plan) override;
  std::string name() const override { return "cpu_ref"; }

  const HostKvStore& kv_store() const noexcept { return cache_; }

 private:
  std::shared_ptr<const LlamaModel> model_;
  CpuExecutorConfig config_;
  HostKvStore cache_;
  ForwardBatch batch_;         // reused every step
  sampling::Sampler sampler_;  // keeps its buffers between steps
};

// The KV layout of a tier of `num_blocks` blocks for this model.
kv::KvLayout kv_layout_for(const model::ModelConfig& config, int32_t block_size, int32_t num_blocks);

// How many KV blocks of `block_size` tokens fit in `bytes` for this model in fp32.
int32_t num_kv_blocks_for_bytes(const model::ModelConfig& config, int32_t block_size, std::uint64_t bytes);

}  // namespace pagedllm::cpu_ref
