// Speculative decoding with a draft model on the GPU: the target and its draft on one device, each
// on an executor of its own, sized as vLLM sizes the pair: both models' weights and both profiling
// passes are in memory before the KV blocks are counted, and each block of the target's cache is
// paired with one of the draft's (the draft's cache holds whatever the target's holds:
// spec::draft_cache_config). The draft's cache has no host tier.
#pragma once

#include <memory>

#include "core/kv/kv_cache_config.h"
#include "cuda/cuda_executor.h"

namespace pagedllm::cuda {

struct TargetAndDraft {
  std::unique_ptr<CudaExecutor> target;  // on target->cache_config() (sized, or as configured)
  std::unique_ptr<CudaExecutor> draft;   // on draft_cache
  kv::KvCacheConfig draft_cache;         // spec::draft_cache_config of the target's
};

// `config` is the target's (its engine config names the draft model in engine.speculative; its
// cache block counts are sized when 0, as CudaExecutor does). The draft executor runs the same
// dtype, device and scheduler limits, samples one row per sequence and logs no logits.
//   1. a probe executor of the draft with one KV block: its activations and profiling pass in place;
//   2. the target, sized with the draft's block bytes as its companion (kv_sizing.h);
//   3. the probe freed, the draft executor on the target's block count.
// Throws as CudaExecutor does, and std::invalid_argument when the models' dtypes differ.
TargetAndDraft make_target_and_draft(std::shared_ptr<const DeviceModel> target_model,
                                     std::shared_ptr<const DeviceModel> draft_model, const CudaExecutorConfig& config);

}  // namespace pagedllm::cuda
