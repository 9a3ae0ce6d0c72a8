// Everything an engine is built from, in one struct.
#pragma once

#include <cstdint>
#include <optional>

#include "core/common/types.h"
#include "core/kv/kv_cache_config.h"
#include "core/sched/scheduler_config.h"

namespace pagedllm::engine {

struct EngineConfig {
  kv::KvCacheConfig cache;
  sched::SchedulerConfig scheduler;
  std::optional<TokenId> eos_token_id;  // the model's end-of-sequence token
  int32_t max_logprobs = 20;
  bool record_step_metrics = true;      // keep one StepMetrics per step
};

}  // namespace pagedllm::engine
