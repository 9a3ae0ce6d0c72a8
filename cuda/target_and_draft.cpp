#include "cuda/target_and_draft.h"

#include <stdexcept>
#include <utility>

#include "core/spec/draft_model_proposer.h"
#include "cuda/device_model.h"

namespace pagedllm::cuda {

TargetAndDraft make_target_and_draft(std::shared_ptr<const DeviceModel> target_model,
                                     std::shared_ptr<const DeviceModel> draft_model, const CudaExecutorConfig& config) {
  if (target_model == nullptr || draft_model == nullptr) throw std::invalid_argument("make_target_and_draft: no model");
  if (target_model->dtype() != draft_model->dtype()) {
    throw std::invalid_argument(std::string("cuda executor: the draft model's weights are ") +
                                dtype_name(draft_model->dtype()) + ", the target's " +
                                dtype_name(target_model->dtype()));
  }
  const int32_t draft_window = draft_model->config().attention_window();
  CudaExecutorConfig draft_config = config;
  draft_config.engine.speculative = {};  // the draft's passes sample one row per sequence
  draft_config.swap_space_bytes = 0;
  draft_config.companion_block_bytes = 0;
  draft_config.logits_observer = {};
  draft_config.engine.cache = spec::draft_cache_config(config.engine.cache, draft_window);
  draft_config.engine.cache.num_device_blocks = 1;
  auto probe = std::make_unique<CudaExecutor>(draft_model, draft_config);

  CudaExecutorConfig target_config = config;
  target_config.companion_block_bytes = kv_block_bytes(draft_model->config(), config.engine.cache.block_size);
  TargetAndDraft pair;
  pair.target = std::make_unique<CudaExecutor>(std::move(target_model), target_config);
  probe.reset();  // its memory was counted in the target's sizing; the draft below takes it back

  pair.draft_cache = spec::draft_cache_config(pair.target->cache_config(), draft_window);
  draft_config.engine.cache = pair.draft_cache;
  pair.draft = std::make_unique<CudaExecutor>(std::move(draft_model), draft_config);
  return pair;
}

}  // namespace pagedllm::cuda
